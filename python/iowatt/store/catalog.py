"""The DuckDB catalog of a results directory: one row per run, workload, flowop and energy
window, and views over every run's Parquet files.

The catalog is derived from the run directories and never changed in place, so no process ever
needs a write lock on a file a reader may hold open (an open DuckDB connection, even read-only,
blocks every writer of its file). A process that adds runs builds the next catalog in a private
file — a copy of the current one plus the new runs — and renames it over ``catalog.duckdb``;
the processes that do so take turns on ``.catalog.lock``, which readers never touch. A reader
keeps the snapshot it opened until it reconnects. Every read first compares the catalog with the
run directories on disk, so a run committed but never indexed (its process was killed between
the two) is indexed by the next reader. docs/run-store.md has the design and the tables.
"""

from __future__ import annotations

import errno
import json
import os
import secrets
import shutil
import signal
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from iowatt.errors import RunNotFoundError, StoreError
from iowatt.interrupts import held
from iowatt.store.index import VIEW_FILES, RunRows, read_run
from iowatt.store.lock import CATALOG, writer_lock
from iowatt.store.runs import DamagedRun, run_dirs
from iowatt.store.writer import RunWriter, fsync_dir, write_atomic
from iowatt.warnings import Kind, RunWarning, WarningSink

VIEWS = tuple(VIEW_FILES)
LISTING = ".catalog.dirs"
# The catalog's own layout: a catalog of another format is rebuilt from the run directories.
FORMAT = "9"

_SCHEMA_SQL = """
CREATE TABLE runs (
  run_id VARCHAR, kind VARCHAR, status VARCHAR, reason VARCHAR, started TIMESTAMP,
  ended TIMESTAMP, labels JSON, target VARCHAR, hostname VARCHAR, iowatt_version VARCHAR,
  path VARCHAR, dir VARCHAR);
CREATE TABLE workloads (
  run_id VARCHAR, workload VARCHAR, personality VARCHAR, engine VARCHAR, iosize BIGINT,
  nthreads INTEGER, iodepth INTEGER, directio BOOLEAN, ops BIGINT, ops_s DOUBLE, mib_s DOUBLE,
  errors BIGINT, runtime_s DOUBLE, p50_ns BIGINT, p99_ns BIGINT, max_ns BIGINT);
CREATE TABLE flowops (
  run_id VARCHAR, workload VARCHAR, flowop VARCHAR, kind VARCHAR, io BOOLEAN, ops BIGINT,
  ops_s DOUBLE, mib_s DOUBLE, errors BIGINT, mean_ns DOUBLE, p50_ns BIGINT, p99_ns BIGINT,
  max_ns BIGINT);
CREATE TABLE energy (
  run_id VARCHAR, period VARCHAR, source VARCHAR, channel VARCHAR, scope VARCHAR,
  energy_j DOUBLE, avg_w DOUBLE, peak_w DOUBLE, duration_s DOUBLE, gap_s DOUBLE,
  idle_w DOUBLE, dynamic_j DOUBLE, j_per_op DOUBLE, j_per_byte DOUBLE);
CREATE TABLE replays (
  run_id VARCHAR, requests BIGINT, measured BIGINT, success_rate DOUBLE, log_success_rate DOUBLE,
  conns_s DOUBLE, max_open BIGINT, ttfb_p50_ns BIGINT, ttfb_p99_ns BIGINT,
  completion_p50_ns BIGINT, completion_p99_ns BIGINT, lateness_p99_ns BIGINT, speedup DOUBLE);
CREATE TABLE sim_server (
  run_id VARCHAR, workload VARCHAR, policy VARCHAR, seeds BIGINT, service_s DOUBLE,
  speedup_vs_dlb DOUBLE, batch_slowdown DOUBLE, socket_j DOUBLE, memory_j DOUBLE, fans_j DOUBLE,
  total_j DOUBLE, saving_total DOUBLE, peak_temp_c DOUBLE, gating_s DOUBLE, mean_pwm DOUBLE);
CREATE TABLE sim_raid (
  run_id VARCHAR, personality VARCHAR, seeds BIGINT, energy_j DOUBLE, saving_vs_raid0 DOUBLE,
  mean_w DOUBLE, latency_p50_s DOUBLE, latency_p99_s DOUBLE, latency_max_s DOUBLE,
  completion_p50_s DOUBLE, completion_p99_s DOUBLE, completion_max_s DOUBLE,
  success_rate DOUBLE, timeouts DOUBLE);
CREATE TABLE task_runs (
  run_id VARCHAR, set VARCHAR, disk VARCHAR, per_core INTEGER, slots INTEGER, cores INTEGER,
  rep INTEGER, tasks BIGINT, done BIGINT, failed BIGINT, makespan_s DOUBLE, jobs_per_h DOUBLE,
  avg_w DOUBLE, peak_w DOUBLE, wh_per_job DOUBLE, power VARCHAR, key VARCHAR,
  failed_tasks JSON, other_cpu_share DOUBLE);
CREATE TABLE files (run_id VARCHAR, view VARCHAR, path VARCHAR);
CREATE TABLE dirs (dir VARCHAR, run_id VARCHAR, indexed BOOLEAN, file VARCHAR, reason VARCHAR);
CREATE TABLE meta (key VARCHAR, value VARCHAR);
"""
_ROW_TABLES = (
    "runs",
    "workloads",
    "flowops",
    "energy",
    "replays",
    "sim_server",
    "sim_raid",
    "task_runs",
    "files",
)


@dataclass
class Refreshed:
    """What one refresh changed: run directories indexed, dropped (gone from disk) and set
    aside as broken (directory, file, reason); why the catalog had to be rebuilt (damaged,
    from another version, moved), if it had to."""

    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    broken: list[tuple[str, str, str]] = field(default_factory=list)
    rebuilt: str | None = None


def publish(writer: RunWriter, sink: WarningSink | None = None) -> Path:
    """Commits the run and indexes it. Ctrl-C and SIGTERM wait until both are done, then take
    effect (inside an outer :func:`held` block, they reach that block). A catalog that cannot
    be updated costs nothing: the run is committed and the next read indexes it."""
    with held() as pending:
        run_dir = writer.commit()
        try:
            _warn_broken(refresh(writer.results, expect=run_dir.name), sink)
        except (StoreError, OSError, duckdb.Error) as e:
            (sink or WarningSink()).warn(
                RunWarning(
                    Kind.CATALOG,
                    f"run `{run_dir.name}` is saved, but the catalog could not be updated"
                    f" ({_reason(e)}); the next `iowatt runs` indexes it",
                )
            )
    for sig in pending[:1]:
        signal.raise_signal(sig)
    return run_dir


def refresh(
    results: Path, changed: Sequence[Path] = (), rebuild: bool = False, expect: str | None = None
) -> Refreshed:
    """Brings the catalog in line with the run directories: indexes new ones (and those in
    ``changed``, rewritten in place), drops rows of directories that are gone, and replaces
    ``catalog.duckdb`` with the result. ``rebuild`` starts from nothing. A writer that only
    needs its run ``expect`` indexed stops waiting when another writer's refresh indexed it."""
    path = results / CATALOG

    def served() -> bool:
        known, _ = _known_dirs(path, results)
        return known is not None and expect in known

    with writer_lock(results, served if expect else None) as locked:
        if not locked:
            return Refreshed()
        for half in results.glob(".catalog-*.duckdb*"):
            half.unlink()  # a writer killed while building a catalog (writers hold the lock)
        disk = run_dirs(results)
        known, why = (None, None) if rebuild else _known_dirs(path, results)
        done = Refreshed(rebuilt=why)
        redo = sorted(p.name for p in changed if p.name in disk)
        if known is not None:
            done.added = sorted(disk.keys() - known)
            done.removed = sorted(known - disk.keys())
            if not (done.added or done.removed or redo):
                return done
        else:
            done.added = sorted(disk)
        _replace(path, results, disk, done, redo, fresh=known is None)
    return done


def _replace(
    path: Path,
    results: Path,
    disk: Mapping[str, Path],
    done: Refreshed,
    redo: list[str],
    fresh: bool,
) -> None:
    tmp = results / f".catalog-{secrets.token_hex(4)}.duckdb"
    try:
        if not fresh:
            shutil.copyfile(path, tmp)
        con = duckdb.connect(str(tmp))
        try:
            if fresh:
                con.execute(_SCHEMA_SQL)
            _apply(con, results, disk, done, redo)
            dirs = [d for (d,) in con.execute("SELECT dir FROM dirs").fetchall()]
        finally:
            con.close()
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        _write_listing(results, tmp, dirs)
        os.replace(tmp, path)
        fsync_dir(results)
    finally:
        for leftover in (tmp, Path(f"{tmp}.wal")):
            with suppress(FileNotFoundError):
                leftover.unlink()


def _apply(
    con: duckdb.DuckDBPyConnection,
    results: Path,
    disk: Mapping[str, Path],
    done: Refreshed,
    redo: list[str],
) -> None:
    drop = done.removed + redo
    taken = {r for (r,) in con.execute("SELECT run_id FROM dirs WHERE indexed").fetchall()}
    if drop:
        sql = "SELECT run_id FROM dirs WHERE list_contains(?, dir)"
        taken -= {r for (r,) in con.execute(sql, [drop]).fetchall()}
    found: list[RunRows] = []
    marks: list[list[Any]] = []
    for name in done.added + redo:
        try:
            rows = read_run(disk[name])
            if rows.run_id in taken:
                why = f"a copy: run id `{rows.run_id}` is already indexed"
                raise DamagedRun(disk[name], "manifest.json", why)
        except DamagedRun as b:
            done.broken.append((name, b.file, b.reason))
            marks.append([name, None, False, b.file, b.reason])
            continue
        taken.add(rows.run_id)
        found.append(rows)
        marks.append([name, rows.run_id, True, None, None])
    # Only the views whose files change are rewritten; the others stay as the copy has them.
    changed_views = {view for r in found for view in r.files}
    con.execute("BEGIN")
    if drop:
        gone = "SELECT run_id FROM dirs WHERE list_contains(?, dir)"
        sql = f"SELECT DISTINCT view FROM files WHERE run_id IN ({gone})"
        changed_views |= {view for (view,) in con.execute(sql, [drop]).fetchall()}
        for table in _ROW_TABLES:
            con.execute(f"DELETE FROM {table} WHERE run_id IN ({gone})", [drop])
        con.execute("DELETE FROM dirs WHERE list_contains(?, dir)", [drop])
    _insert(con, "runs", [r.run for r in found])
    _insert(con, "workloads", [w for r in found for w in r.workloads])
    _insert(con, "flowops", [f for r in found for f in r.flowops])
    _insert(con, "energy", [e for r in found for e in r.energy])
    _insert(con, "replays", [r.replay for r in found if r.replay])
    _insert(con, "sim_server", [row for r in found for row in r.sim_server])
    _insert(con, "sim_raid", [row for r in found for row in r.sim_raid])
    _insert(con, "task_runs", [r.task_run for r in found if r.task_run])
    _insert(con, "files", [[r.run_id, v, p] for r in found for v, p in r.files.items()])
    _insert(con, "dirs", marks)
    con.execute("DELETE FROM meta")
    _insert(con, "meta", [["format", FORMAT], ["root", str(results.resolve())]])
    con.execute("COMMIT")
    _refresh_views(con, changed_views)


# Up to this many rows go in one INSERT … VALUES statement; more go through Arrow.
_VALUES_ROWS = 32


def _insert(con: duckdb.DuckDBPyConnection, table: str, rows: list[list[Any]]) -> None:
    """Inserts rows: a few (one run's) in one statement, more through Arrow (DuckDB's
    executemany takes seconds for thousands, and one statement's parameters grow as slowly).
    Arrow's first batch costs ~10 ms to set up, many times a run's few rows."""
    if not rows:
        return
    if len(rows) <= _VALUES_ROWS:
        row = "(" + ", ".join("?" * len(rows[0])) + ")"
        sql = f"INSERT INTO {table} VALUES " + ", ".join([row] * len(rows))
        con.execute(sql, [value for r in rows for value in r])
        return
    import pyarrow as pa

    names = [c[0] for c in con.execute(f"DESCRIBE {table}").fetchall()]
    columns = zip(*rows, strict=True)
    batch = pa.table({n: pa.array(list(c)) for n, c in zip(names, columns, strict=True)})
    con.register("_rows", batch)
    try:
        con.execute(f"INSERT INTO {table} SELECT * FROM _rows")
    finally:
        con.unregister("_rows")


def _refresh_views(con: duckdb.DuckDBPyConnection, views: set[str]) -> None:
    """Each of ``views`` reads the files of the runs in this snapshot, named one by one: a glob
    would also read runs being written (``.tmp-*``) and break on any damaged file."""
    listed: dict[str, list[str]] = {view: [] for view in sorted(views) if view in VIEWS}
    if not listed:
        return
    sql = "SELECT view, path FROM files WHERE list_contains(?, view) ORDER BY view, path"
    for view, path in con.execute(sql, [list(listed)]).fetchall():
        listed[view].append(path)
    for view, paths in listed.items():
        if not paths:
            con.execute(f"DROP VIEW IF EXISTS {view}")
            continue
        quoted = ", ".join("'" + p.replace("'", "''") + "'" for p in paths)
        con.execute(
            f"CREATE OR REPLACE VIEW {view} AS "
            f"SELECT * FROM read_parquet([{quoted}], union_by_name = true)"
        )


def _write_listing(results: Path, catalog_file: Path, dirs: list[str]) -> None:
    """Writes the catalog's directory listing beside it, tied to the catalog file's identity:
    checking a catalog against the disk then costs a small read, not opening DuckDB."""
    listing = {"format": FORMAT, "root": str(results.resolve()), "catalog": _identity(catalog_file)}
    write_atomic(results / LISTING, json.dumps({**listing, "dirs": dirs}).encode())


def _read_listing(results: Path, path: Path) -> set[str] | None:
    """The listing's directories, if it describes the catalog file there now."""
    try:
        listing = json.loads((results / LISTING).read_bytes())
        if listing["catalog"] == _identity(path) and listing["format"] == FORMAT:
            return set(listing["dirs"]) if listing["root"] == str(results.resolve()) else None
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return None


def _identity(path: Path) -> list[int]:
    """Changes whenever the file is replaced or written to (a rename keeps it)."""
    st = os.stat(path)
    return [st.st_ino, st.st_size, st.st_mtime_ns]


def _known_dirs(path: Path, results: Path) -> tuple[set[str] | None, str | None]:
    """The run directories the catalog has seen, or None and why it must be rebuilt."""
    if not path.exists():
        return None, None
    listed = _read_listing(results, path)
    if listed is not None:
        return listed, None
    con = duckdb.connect()
    try:
        _attach(con, path)
        meta = dict(con.execute("SELECT key, value FROM iowatt.meta").fetchall())
        if meta.get("format") != FORMAT:
            return None, f"`{path}` was written by another version of iowatt"
        if meta.get("root") != str(results.resolve()):
            return None, f"the results directory moved (from `{meta.get('root')}`)"
        dirs = [d for (d,) in con.execute("SELECT dir FROM iowatt.dirs").fetchall()]
        with suppress(OSError):  # a read-only results directory: no listing, no harm
            _write_listing(results, path, dirs)  # its writer was killed before writing it
        return set(dirs), None
    except duckdb.Error as e:
        return None, f"`{path}` could not be read ({_reason(e)})"
    finally:
        con.close()


def indexed_dirs(results: Path) -> set[str]:
    """The run directories the catalog holds (none when it is missing or unreadable)."""
    path = results / CATALOG
    if not path.exists():
        return set()
    con = duckdb.connect()
    try:
        _attach(con, path)
        return {d for (d,) in con.execute("SELECT dir FROM iowatt.dirs WHERE indexed").fetchall()}
    except duckdb.Error:
        return set()
    finally:
        con.close()


def _attach(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    quoted = str(path).replace("'", "''")
    con.execute(f"ATTACH '{quoted}' AS iowatt (READ_ONLY)")


@contextmanager
def catalog(results: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    """A read-only connection to the catalog, brought up to date first. When the results
    directory cannot be written (an archive, a read-only mount), the catalog is built in memory
    for this connection instead."""
    if not results.is_dir():
        raise RunNotFoundError(
            f"no results directory `{results}`", "run `iowatt bench` first, or pass --results DIR"
        )
    con = duckdb.connect()
    try:
        _open(con, results)
        yield con
    except RuntimeError as e:
        # DuckDB turns a Ctrl-C during a query into this error: it is still an interrupt.
        if str(e) == "Query interrupted":
            raise KeyboardInterrupt from None
        raise
    except duckdb.Error as e:
        damaged = _damaged_file(results, str(e))
        if damaged is None:
            raise
        raise StoreError(
            f"run `{damaged.parent.name}`: its {damaged.name} cannot be read ({_reason(e)})",
            "`iowatt runs --check` sets the damaged run aside, so the others can be read",
        ) from None
    finally:
        con.close()


def _damaged_file(results: Path, message: str) -> Path | None:
    """The run file a failed query names, if it is one of this results directory's."""
    root = str(results.resolve())
    for word in message.replace('"', " ").replace("'", " ").split():
        if word.startswith(root + os.sep) and word.endswith(".parquet"):
            return Path(word)
    return None


def _open(con: duckdb.DuckDBPyConnection, results: Path) -> None:
    path = results / CATALOG
    disk = run_dirs(results)
    if not disk and not path.exists():
        raise RunNotFoundError(
            f"no runs in `{results}`", "run `iowatt bench` first, or pass --results DIR"
        )
    known, _ = _known_dirs(path, results)
    if known is None or known != disk.keys():
        try:
            _warn_broken(refresh(results), None)
        except OSError as e:
            if e.errno not in (errno.EROFS, errno.EACCES, errno.EPERM):
                raise StoreError(
                    f"cannot update the catalog in `{results}`: {_reason(e)}",
                    "free space in the results directory, or pass another --results",
                ) from None
            WarningSink().warn(
                RunWarning(
                    Kind.CATALOG,
                    f"`{results}` is read-only: its catalog is built in memory for this command",
                )
            )
            con.execute(_SCHEMA_SQL)
            _apply(con, results, disk, Refreshed(added=sorted(disk)), [])
            return
    _attach(con, path)
    con.execute("USE iowatt")


def _warn_broken(done: Refreshed, sink: WarningSink | None) -> None:
    sink = sink or WarningSink()
    if done.rebuilt:
        sink.warn(RunWarning(Kind.CATALOG, f"{done.rebuilt}: rebuilt it from the run directories"))
    for name, file, reason in done.broken:
        sink.warn(
            RunWarning(
                Kind.CATALOG,
                f"run `{name}` is left out of the catalog: its {file} is {reason}"
                " (`iowatt runs --check` lists such runs)",
            )
        )


def _reason(e: BaseException) -> str:
    if isinstance(e, OSError) and e.strerror:
        return e.strerror
    return str(e).splitlines()[0] if str(e) else type(e).__name__


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
    with catalog(results) as con:
        cur = con.execute(sql, params)
        cols = [d[0] for d in cur.description]
        rows = [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]
    for row in rows:
        row["labels"] = json.loads(row["labels"] or "{}")
    return rows
