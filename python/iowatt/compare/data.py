"""What a comparison reads: one row per (run, workload) from the catalog, with the operations
above each latency threshold counted in the stored histograms, all through DuckDB.

Only the catalog tables and the ``latency`` view are read (never the run directories one by
one), so a catalog of thousands of runs answers in seconds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import numpy as np
import numpy.typing as npt

from iowatt.errors import ConfigError
from iowatt.store.catalog import catalog

# What can be compared: column of the catalog's workloads (for replays, replays; for server
# simulations, sim_server, whose rows are "workload/policy"; for task runs, task_runs, whose
# rows are their sets) table → (name for people, unit).
METRICS: dict[str, tuple[str, str]] = {
    "ops_s": ("ops/s", "ops/s"),
    "mib_s": ("MiB/s", "MiB/s"),
    "p99_ns": ("p99 latency", "ns"),
    "completion_p99_ns": ("p99 completion", "ns"),
    "success_rate": ("success rate", "%"),
    "service_s": ("service time", "s"),
    "jobs_per_h": ("jobs/h", "jobs/h"),
    "wh_per_job": ("Wh/job", "Wh"),
    "avg_w": ("average power", "W"),
}
NO_GROUP = "(none)"
# `--by host`: the hosts of fleet runs, not a label.
HOST = "host"


@dataclass(frozen=True)
class Filters:
    """Which runs take part: label filters, run ids (or prefixes), workloads, status."""

    labels: Mapping[str, str] = field(default_factory=dict)
    runs: Sequence[str] = ()
    workloads: Sequence[str] = ()
    include_incomplete: bool = False

    def describe(self) -> str:
        parts = [f"{k}={v}" for k, v in self.labels.items()]
        parts += [f"run {r}" for r in self.runs] + [f"workload {w}" for w in self.workloads]
        return ", ".join(parts) or "no filter"


@dataclass(frozen=True)
class Rows:
    """One entry per (run, workload), ordered by workload, then start time, then run id."""

    run_id: npt.NDArray[np.object_]
    started_ns: npt.NDArray[np.int64]
    group: npt.NDArray[np.object_]
    workload: npt.NDArray[np.object_]
    metrics: dict[str, npt.NDArray[np.float64]]
    # Operations in the run's whole-workload histogram, and above each threshold (columns).
    ops_total: npt.NDArray[np.int64]
    ops_above: npt.NDArray[np.int64]
    thresholds_ns: tuple[int, ...]
    # Selected runs without the label being compared by.
    unlabelled: int

    def __len__(self) -> int:
        return int(self.run_id.size)


def load_rows(results: Path, filters: Filters, by: str, thresholds_ns: Sequence[int]) -> Rows:
    """The selected runs' rows; a ConfigError when nothing matches. ``by`` is a label, or
    ``host``: the hosts of fleet runs (``iowatt bench --cluster``), one row per host."""
    where, params = _where(filters)
    if by == HOST:
        sql = _host_sql(where)
    else:
        sql, params = _label_sql(where), [f"$.{by}", *params]
    with catalog(results) as con:
        if by == HOST and not _has_view(con, "hosts"):
            raise ConfigError(
                f"--by host: no run in `{results}` ran on a fleet",
                "--by host compares the hosts of runs made with `iowatt bench --cluster`",
            )
        con.execute(f"CREATE TEMP TABLE sel AS {sql}", params)
        total = _scalar(con, "SELECT count(*) FROM sel")
        if total == 0:
            raise ConfigError(
                f"no runs match ({filters.describe()}) in `{results}`",
                "list runs with `iowatt runs`; incomplete runs need --include-incomplete",
            )
        unlabelled = _scalar(con, "SELECT count(DISTINCT run_id) FROM sel WHERE grp IS NULL")
        con.execute("DELETE FROM sel WHERE grp IS NULL")
        if _scalar(con, "SELECT count(*) FROM sel") == 0:
            raise ConfigError(
                f"none of the {total} matching rows has a `{by}` label",
                f"label runs with --label {by}=NAME, or compare --by another label",
            )
        cols = con.execute("SELECT * FROM sel").fetchnumpy()
        total_ops, above = _tails(con, thresholds_ns, len(cols["run_id"]), by == HOST)
    return Rows(
        run_id=np.asarray(cols["run_id"], dtype=object),
        started_ns=np.asarray(cols["started_ns"], dtype=np.int64),
        group=np.asarray(cols["grp"], dtype=object),
        workload=np.asarray(cols["workload"], dtype=object),
        metrics={m: _floats(cols[m]) for m in METRICS},
        ops_total=total_ops,
        ops_above=above,
        thresholds_ns=tuple(thresholds_ns),
        unlabelled=unlabelled,
    )


def _host_sql(where: list[str]) -> str:
    """Each host of each fleet run that measured it, as a row grouped by its host."""
    return f"""
        SELECT r.run_id, epoch_us(r.started) * 1000 AS started_ns, w.host AS grp, w.workload,
               w.ops_s, w.mib_s, w.p99_ns, NULL::BIGINT AS completion_p99_ns,
               NULL::DOUBLE AS success_rate, NULL::DOUBLE AS service_s,
               NULL::DOUBLE AS jobs_per_h, NULL::DOUBLE AS wh_per_job, NULL::DOUBLE AS avg_w
        FROM runs r JOIN hosts w USING (run_id)
        WHERE w.status = 'complete' AND {" AND ".join(where)}
        ORDER BY w.workload, r.started, r.run_id, w.host
    """


def _label_sql(where: list[str]) -> str:
    return f"""
        SELECT r.run_id, epoch_us(r.started) * 1000 AS started_ns,
               json_extract_string(r.labels, ?) AS grp, w.workload,
               w.ops_s, w.mib_s, w.p99_ns, p.completion_p99_ns, p.success_rate, w.service_s,
               w.jobs_per_h, w.wh_per_job, w.avg_w
        FROM runs r JOIN (
            SELECT run_id, workload, ops_s, mib_s, p99_ns, NULL::DOUBLE AS service_s,
                   NULL::DOUBLE AS jobs_per_h, NULL::DOUBLE AS wh_per_job, NULL::DOUBLE AS avg_w
            FROM workloads
            UNION ALL
            SELECT run_id, workload || '/' || policy, NULL, NULL, NULL, service_s, NULL, NULL,
                   NULL
            FROM sim_server
            UNION ALL
            SELECT run_id, set, NULL, NULL, NULL, NULL, jobs_per_h, wh_per_job, avg_w
            FROM task_runs
        ) w USING (run_id) LEFT JOIN replays p USING (run_id)
        WHERE {" AND ".join(where)}
        ORDER BY w.workload, r.started, r.run_id
    """


def _where(filters: Filters) -> tuple[list[str], list[object]]:
    where: list[str] = []
    params: list[object] = []
    if not filters.include_incomplete:
        where.append("r.status = 'complete'")
    for key, value in filters.labels.items():
        where.append("json_extract_string(r.labels, ?) = ?")
        params += [f"$.{key}", value]
    if filters.runs:
        where.append("(" + " OR ".join("starts_with(r.run_id, ?)" for _ in filters.runs) + ")")
        params += list(filters.runs)
    if filters.workloads:
        where.append(f"w.workload IN ({', '.join('?' for _ in filters.workloads)})")
        params += list(filters.workloads)
    return where or ["TRUE"], params


def _tails(
    con: duckdb.DuckDBPyConnection, thresholds_ns: Sequence[int], n: int, hosts: bool
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Operations in each selected row's histogram and above each threshold (bucket value >
    threshold, the engine's rule), aligned with ``sel``'s rows; zeros without a histogram.
    Rows of hosts read each host's own histogram."""
    above = np.zeros((n, len(thresholds_ns)), dtype=np.int64)
    view, host, key = ("host_latency", "l.host AS grp, ", ", grp") if hosts else ("latency", "", "")
    if not _has_view(con, view):
        return np.zeros(n, dtype=np.int64), above
    counts = ", ".join(
        f"coalesce(sum(l.count) FILTER (WHERE l.value_ns > {int(t)}), 0) AS a{i}"
        for i, t in enumerate(thresholds_ns)
    )
    sql = f"""
        WITH t AS (
            SELECT l.run_id, {host}l.workload,
                   sum(l.count) AS total{", " + counts if counts else ""}
            FROM {view} l SEMI JOIN (SELECT DISTINCT run_id FROM sel) s USING (run_id)
            WHERE l.flowop IS NULL GROUP BY ALL)
        SELECT coalesce(t.total, 0) AS total
               {"".join(f", coalesce(t.a{i}, 0) AS a{i}" for i in range(len(thresholds_ns)))}
        FROM sel LEFT JOIN t USING (run_id, workload{key})
        ORDER BY sel.workload, sel.started_ns, sel.run_id, sel.grp
    """
    cols = con.execute(sql).fetchnumpy()
    for i in range(len(thresholds_ns)):
        above[:, i] = np.asarray(cols[f"a{i}"], dtype=np.int64)
    return np.asarray(cols["total"], dtype=np.int64), above


def _has_view(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    found = con.execute(
        "SELECT count(*) FROM duckdb_views() WHERE view_name = ? AND NOT internal", [name]
    ).fetchone()
    return bool(found and found[0])


def _scalar(con: duckdb.DuckDBPyConnection, sql: str) -> int:
    row = con.execute(sql).fetchone()
    return int(row[0]) if row else 0


def _floats(values: object) -> npt.NDArray[np.float64]:
    """A numeric column as floats, NULL as nan (DuckDB hands NULLs over as a masked array)."""
    if isinstance(values, np.ma.MaskedArray):
        return np.asarray(np.ma.filled(values.astype(np.float64), np.nan))
    return np.asarray(values, dtype=np.float64)
