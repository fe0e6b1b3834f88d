"""The run store: one directory per run, written atomically, indexed in a DuckDB catalog.

Layout and schemas are documented in docs/run-store.md. A run directory is assembled under a
hidden temporary name and renamed into place, so readers never see half a run; a run that
stopped early is still committed, with ``status: "incomplete"`` and the reason.
"""

from __future__ import annotations

import json
import os
import secrets
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from iowatt.errors import ConfigError, RunNotFoundError

DEFAULT_RESULTS = Path("iowatt-results")
CATALOG = "catalog.duckdb"

INTERVAL_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("workload", pa.string()),
        ("t_s", pa.float64()),
        ("duration_s", pa.float64()),
        ("mono_ns", pa.int64()),
        ("ops", pa.int64()),
        ("bytes", pa.int64()),
        ("errors", pa.int64()),
        ("ops_s", pa.float64()),
        ("mib_s", pa.float64()),
        ("p50_ns", pa.int64()),
        ("p99_ns", pa.int64()),
        ("p999_ns", pa.int64()),
        ("max_ns", pa.int64()),
        # Operations above each slow threshold (the run's ``slow_ns``, 100 and 200 ms by
        # default), counted from the interval's histogram by the rule latency.parquet follows.
        ("slow_ns", pa.list_(pa.int64())),
        ("slow_ops", pa.list_(pa.int64())),
    ]
)
LATENCY_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("workload", pa.string()),
        ("flowop", pa.string()),
        ("value_ns", pa.int64()),
        ("count", pa.int64()),
    ]
)
POWER_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("source", pa.string()),
        ("channel", pa.string()),
        ("scope", pa.string()),
        ("mono_ns", pa.int64()),
        ("t_s", pa.float64()),
        ("watts", pa.float64()),
        ("joules", pa.float64()),
    ]
)
SENSOR_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("source", pa.string()),
        ("channel", pa.string()),
        ("unit", pa.string()),
        ("mono_ns", pa.int64()),
        ("t_s", pa.float64()),
        ("value", pa.float64()),
    ]
)
EVENT_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("mono_ns", pa.int64()),
        ("t_s", pa.float64()),
        ("source", pa.string()),
        ("kind", pa.string()),
        ("message", pa.string()),
    ]
)
# A sweep's measurements: one row per pass, step and disk (the hold window of that step).
STEP_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("disk", pa.string()),
        ("stimulus", pa.string()),
        ("unit", pa.string()),
        ("pass_no", pa.int32()),
        ("step", pa.int32()),
        ("value", pa.float64()),
        ("start_mono_ns", pa.int64()),
        ("end_mono_ns", pa.int64()),
        ("t_s", pa.float64()),
        ("hold_s", pa.float64()),
        ("ops", pa.int64()),
        ("bytes", pa.int64()),
        ("errors", pa.int64()),
        ("mib_s", pa.float64()),
        ("iops", pa.float64()),
        ("p50_ns", pa.int64()),
        ("p99_ns", pa.int64()),
        ("p999_ns", pa.int64()),
        ("max_ns", pa.int64()),
    ]
)
# A sweep's curves: one row per disk and stimulus value, over every pass that measured it.
CURVE_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("disk", pa.string()),
        ("stimulus", pa.string()),
        ("unit", pa.string()),
        ("value", pa.float64()),
        ("passes", pa.int32()),
        ("mib_s", pa.float64()),
        ("mib_s_min", pa.float64()),
        ("mib_s_max", pa.float64()),
        ("mib_s_std", pa.float64()),
        ("norm", pa.float64()),
        ("norm_min", pa.float64()),
        ("norm_max", pa.float64()),
        ("iops", pa.float64()),
        ("p50_ns", pa.int64()),
        ("p99_ns", pa.int64()),
        ("max_ns", pa.int64()),
    ]
)
VIEWS = ("intervals", "latency", "power", "sensors", "events", "steps", "sweep")


def results_dir(path: str | Path | None = None) -> Path:
    """``--results``, else ``$IOWATT_RESULTS``, else ``./iowatt-results``."""
    return Path(path or os.environ.get("IOWATT_RESULTS") or DEFAULT_RESULTS)


def new_run_id(kind: str) -> str:
    return f"{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}-{kind}-{secrets.token_hex(3)}"


class RunWriter:
    """Collects a run's files in a temporary directory; :meth:`commit` publishes it."""

    def __init__(self, results: Path, run_id: str) -> None:
        self.results = results
        self.run_id = run_id
        self.final = results / run_id
        self.tmp = results / f".tmp-{run_id}"
        self.tmp.mkdir(parents=True)

    @classmethod
    def resume(cls, tmp: Path, run_id: str) -> RunWriter:
        """A writer for a temporary run directory that already exists (a sweep's journal)."""
        writer = cls.__new__(cls)
        writer.results = tmp.parent
        writer.run_id = run_id
        writer.final = tmp.parent / run_id
        writer.tmp = tmp
        return writer

    def write_json(self, name: str, data: Mapping[str, Any]) -> None:
        (self.tmp / name).write_text(json.dumps(data, indent=2, default=str) + "\n")

    def write_table(self, name: str, table: pa.Table) -> None:
        pq.write_table(table, self.tmp / name)

    def write_text(self, name: str, text: str) -> None:
        (self.tmp / name).write_text(text)

    def commit(self) -> Path:
        for f in self.tmp.iterdir():
            with open(f, "rb") as fh:
                os.fsync(fh.fileno())
        os.rename(self.tmp, self.final)
        dir_fd = os.open(self.results, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
        return self.final


def read_manifest(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "manifest.json").read_text())


def read_summary(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "summary.json").read_text())


# --- catalog ----------------------------------------------------------------------------------

_SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS runs (
  run_id VARCHAR PRIMARY KEY, kind VARCHAR, status VARCHAR, reason VARCHAR,
  started TIMESTAMP, ended TIMESTAMP, labels JSON, target VARCHAR, hostname VARCHAR,
  iowatt_version VARCHAR, path VARCHAR);
CREATE TABLE IF NOT EXISTS workloads (
  run_id VARCHAR, workload VARCHAR, personality VARCHAR, engine VARCHAR, iosize BIGINT,
  nthreads INTEGER, iodepth INTEGER, directio BOOLEAN, ops BIGINT, ops_s DOUBLE, mib_s DOUBLE,
  errors BIGINT, runtime_s DOUBLE, p50_ns BIGINT, p99_ns BIGINT, max_ns BIGINT);
CREATE TABLE IF NOT EXISTS flowops (
  run_id VARCHAR, workload VARCHAR, flowop VARCHAR, kind VARCHAR, io BOOLEAN, ops BIGINT,
  ops_s DOUBLE, mib_s DOUBLE, errors BIGINT, mean_ns DOUBLE, p50_ns BIGINT, p99_ns BIGINT,
  max_ns BIGINT);
CREATE TABLE IF NOT EXISTS energy (
  run_id VARCHAR, period VARCHAR, source VARCHAR, channel VARCHAR, scope VARCHAR,
  energy_j DOUBLE, avg_w DOUBLE, peak_w DOUBLE, duration_s DOUBLE, gap_s DOUBLE,
  idle_w DOUBLE, dynamic_j DOUBLE, j_per_op DOUBLE, j_per_byte DOUBLE);
"""


@contextmanager
def catalog(results: Path, read_only: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
    path = results / CATALOG
    if read_only and not path.exists():
        raise RunNotFoundError(
            f"no catalog at `{path}`", "run `iowatt bench` first, or pass --results DIR"
        )
    con = duckdb.connect(str(path), read_only=read_only)
    try:
        if not read_only:
            con.execute(_SCHEMA_SQL)
        yield con
    except RuntimeError as e:
        # DuckDB turns a Ctrl-C during a query into this error: it is still an interrupt.
        if str(e) == "Query interrupted":
            raise KeyboardInterrupt from None
        raise
    finally:
        con.close()


def index_run(results: Path, run_dir: Path) -> None:
    """Adds (or refreshes) a run in the catalog and points the Parquet views at every run."""
    index_runs(results, [run_dir])


def index_runs(results: Path, run_dirs: Sequence[Path]) -> None:
    """:func:`index_run` for many runs in one transaction, refreshing the views once."""
    with catalog(results) as con:
        con.execute("BEGIN")
        for run_dir in run_dirs:
            _index_one(con, run_dir)
        con.execute("COMMIT")
        _refresh_views(con, results)


def _index_one(con: duckdb.DuckDBPyConnection, run_dir: Path) -> None:
    manifest = read_manifest(run_dir)
    summary = read_summary(run_dir)
    run_id = manifest["run_id"]
    workloads_cfg = {w["name"]: w for w in manifest["config"].get("workloads", [])}
    for table in ("runs", "workloads", "flowops", "energy"):
        con.execute(f"DELETE FROM {table} WHERE run_id = ?", [run_id])
    con.execute(
        "INSERT INTO runs VALUES (?, ?, ?, ?, make_timestamp(?::BIGINT // 1000),"
        " make_timestamp(?::BIGINT // 1000), ?, ?, ?, ?, ?)",
        [
            run_id,
            manifest["kind"],
            manifest["status"],
            manifest.get("reason"),
            manifest["started_ns"],
            manifest["ended_ns"],
            json.dumps(manifest.get("labels", {})),
            manifest["config"].get("target"),
            manifest["host"].get("hostname"),
            manifest["iowatt_version"],
            str(run_dir.resolve()),
        ],
    )
    rows = []
    for name, w in summary.get("workloads", {}).items():
        cfg = workloads_cfg.get(name, {})
        lat = w["latency_ns"]
        rows.append(
            [
                run_id, name, cfg.get("personality"), cfg.get("engine"), cfg.get("iosize"),
                cfg.get("nthreads"), cfg.get("iodepth"), cfg.get("directio"), w["ops"],
                w["ops_s"], w["mib_s"], w["errors"], w["runtime_s"], lat["p50"], lat["p99"],
                lat["max"],
            ]
        )  # fmt: skip
    if rows:
        con.executemany(
            "INSERT INTO workloads VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows
        )
    flowops = [
        [
            run_id,
            name,
            fname,
            f.get("kind"),
            f.get("io", True),
            f.get("ops"),
            f.get("ops_s"),
            f.get("mib_s"),
            f.get("errors"),
            f.get("mean_ns"),
            f.get("p50_ns"),
            f.get("p99_ns"),
            f.get("max_ns"),
        ]
        for name, w in summary.get("workloads", {}).items()
        for fname, f in (w.get("flowops") or {}).items()
    ]
    if flowops:
        con.executemany(
            "INSERT INTO flowops VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", flowops
        )
    energy = [[run_id, *row] for row in energy_rows(summary.get("power") or {})]
    if energy:
        con.executemany(
            "INSERT INTO energy VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", energy
        )


def energy_rows(power: Mapping[str, Any]) -> Iterator[list[Any]]:
    """Catalog rows from a summary's ``power`` section: one per window and channel."""
    idle = (power.get("idle") or {}).get("channels", {})
    windows = {"work": power.get("work") or {}, **(power.get("workloads") or {})}
    for window, channels in windows.items():
        for key, e in channels.items():
            source, _, channel = key.partition("/")
            yield [
                window, source, channel, e.get("scope"), e["energy_j"], e["avg_w"], e["peak_w"],
                e["duration_s"], e["gap_s"], (idle.get(key) or {}).get("avg_w"),
                e.get("dynamic_j"), e.get("j_per_op"), e.get("j_per_byte"),
            ]  # fmt: skip


def _refresh_views(con: duckdb.DuckDBPyConnection, results: Path) -> None:
    root = results.resolve()
    for view in VIEWS:
        if any(root.glob(f"*/{view}.parquet")):
            glob = str(root / "*" / f"{view}.parquet").replace("'", "''")
            con.execute(
                f"CREATE OR REPLACE VIEW {view} AS "
                f"SELECT * FROM read_parquet('{glob}', union_by_name = true)"
            )


def parse_filters(labels: tuple[str, ...]) -> dict[str, str]:
    """``("env=rack", ...)`` → ``{"env": "rack"}``; a ConfigError for a malformed entry."""
    out = {}
    for item in labels:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"invalid label `{item}`", "labels are key=value, e.g. env=rack-a")
        out[key.strip()] = value.strip()
    return out


def list_runs(
    results: Path,
    labels: Mapping[str, str] | None = None,
    kind: str | None = None,
    status: str | None = None,
    limit: int | None = None,
) -> list[dict[str, Any]]:
    """Runs in the catalog, newest first, with their workloads' headline figures."""
    where, params = ["TRUE"], []
    for key, value in (labels or {}).items():
        where.append("json_extract_string(r.labels, ?) = ?")
        params += [f"$.{key}", value]
    if kind:
        where.append("r.kind = ?")
        params.append(kind)
    if status:
        where.append("r.status = ?")
        params.append(status)
    sql = f"""
        SELECT r.run_id, r.kind, r.status, r.reason, r.started, r.labels, r.target, r.path,
               count(w.workload) AS workloads, sum(w.ops) AS ops,
               list(w.workload ORDER BY w.workload) AS workload_names
        FROM runs r LEFT JOIN workloads w USING (run_id)
        WHERE {" AND ".join(where)}
        GROUP BY ALL ORDER BY r.started DESC, r.run_id DESC
    """
    if limit:
        sql += f" LIMIT {int(limit)}"
    with catalog(results, read_only=True) as con:
        cur = con.execute(sql, params)
        cols = [d[0] for d in cur.description]
        rows = [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]
    for row in rows:
        row["labels"] = json.loads(row["labels"] or "{}")
    return rows


def resolve_run(results: Path, ref: str) -> Path:
    """A run directory from a path, a run id, a unique run-id prefix or ``latest``."""
    as_path = Path(ref)
    if (as_path / "manifest.json").is_file():
        return as_path
    if ref == "latest":
        runs = sorted(p for p in results.glob("*/manifest.json"))
        if runs:
            return max((p.parent for p in runs), key=lambda p: read_manifest(p)["started_ns"])
    else:
        matches = sorted(p.parent for p in results.glob(f"{ref}*/manifest.json"))
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            raise RunNotFoundError(
                f"run `{ref}` is ambiguous ({len(matches)} runs match)", "give more of the run id"
            )
    raise RunNotFoundError(
        f"no run `{ref}` in `{results}`", "list runs with `iowatt runs`, or pass --results DIR"
    )


def event_table(run_id: str, t0_ns: int, events: Sequence[Mapping[str, Any]]) -> pa.Table:
    """events.parquet from event dicts (``mono_ns``, ``source``, ``kind``, ``message``)."""
    return pa.table(
        {
            "run_id": [run_id] * len(events),
            "mono_ns": [e["mono_ns"] for e in events],
            "t_s": [(e["mono_ns"] - t0_ns) / 1e9 for e in events],
            "source": [e["source"] for e in events],
            "kind": [e["kind"] for e in events],
            "message": [e["message"] for e in events],
        },
        schema=EVENT_SCHEMA,
    )
