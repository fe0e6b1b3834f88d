"""The DuckDB catalog of a results directory: one row per run, workload, flowop and energy
window, and views over every run's Parquet files."""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb

from iowatt.errors import RunNotFoundError
from iowatt.interrupts import held
from iowatt.store.runs import read_manifest, read_summary
from iowatt.store.writer import RunWriter

CATALOG = "catalog.duckdb"
VIEWS = ("intervals", "latency", "power", "sensors", "events", "steps", "sweep")

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


def publish(writer: RunWriter) -> Path:
    """Commits the run and indexes it, so a committed run is always in the catalog: Ctrl-C and
    SIGTERM wait until both are done, then take effect (inside an outer :func:`held` block,
    they reach that block)."""
    with held() as pending:
        run_dir = writer.commit()
        index_run(writer.results, run_dir)
    for sig in pending[:1]:
        signal.raise_signal(sig)
    return run_dir


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
    """The catalog's reading of summary.json's ``power`` section (written by
    ``iowatt.power.summary``): one row of the ``energy`` table per window and channel."""
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
