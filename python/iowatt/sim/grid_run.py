"""A simulator's grid run on Dask: every point one task, their rows gathered into one run of
kind ``sim-grid`` (``grid.parquet``: a row per point and result row, the grid's keys as
columns; docs/run-store.md).

The plan is sent to the workers once (scattered), not with every point. A point that fails is
a row naming why, and the run is incomplete; Ctrl-C cancels the points not done and keeps the
rest.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from iowatt.errors import ConfigError, IowattError, RunInterrupted, one_line
from iowatt.fleet.spec import ClusterSpec
from iowatt.sim.grid import Axis, points, with_values

PointFn = Callable[[Any, dict[str, Any]], list[dict[str, Any]]]


def _point(fn: PointFn, plan: Any, model: Mapping[str, Any], values: Mapping[str, float]) -> Any:
    """One point on a worker; a failure is returned, not raised (Dask would log it)."""
    try:
        return [flat(r) for r in fn(plan, with_values(model, values))]
    except Exception as e:  # the engine refused a value: the point says which
        return one_line(e)


def flat(row: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """A result row as columns: a nested table's keys joined with ``_``."""
    out: dict[str, Any] = {}
    for k, v in row.items():
        if isinstance(v, Mapping):
            out.update(flat(v, f"{prefix}{k}_"))
        else:
            out[f"{prefix}{k}"] = v
    return out


def run_grid(
    simulator: str,
    plan: Any,
    model: Mapping[str, Any],
    axes: Sequence[Axis],
    fn: PointFn,
    *,
    cluster: ClusterSpec | None,
    results: Path,
    labels: Mapping[str, str],
    note: Callable[[str], None] = lambda _: None,
) -> tuple[Path, list[dict[str, Any]]]:
    """Simulates every point of the grid with ``fn(plan, model with the point's values)`` and
    commits one run; returns its directory and rows. Without a cluster, a LocalCluster of one
    worker process per core (at most one per point)."""
    from distributed import as_completed

    from iowatt.fleet.cluster import connect
    from iowatt.fleet.spec import parse
    from iowatt.store.writer import RunWriter, new_run_id

    grid = points(axes)
    spec = cluster or parse(f"local:{min(os.cpu_count() or 1, len(grid))}")
    writer = RunWriter(results, new_run_id("sim-grid"))
    started_ns = time.time_ns()
    rows: list[dict[str, Any]] = []
    failed: list[str] = []
    failure: IowattError | None = None
    try:
        with connect(spec, 1, note) as client:
            shared = client.scatter(plan, broadcast=True)
            tag = uuid.uuid4().hex[:8]
            futures = {
                client.submit(
                    _point, fn, shared, model, p, pure=False, key=f"iowatt-grid-{tag}-{i}"
                ): i
                for i, p in enumerate(grid)
            }
            done = 0
            try:
                for future in as_completed(futures):
                    i = futures[future]
                    try:
                        got = future.result()
                    except Exception as e:  # its worker died, or the task was lost
                        got = one_line(e)
                    keys = {"point": i, **grid[i]}
                    if isinstance(got, str):
                        failed.append(f"point {i} ({_describe(grid[i])}): {got}")
                        rows.append({**keys, "error": got})
                    else:
                        rows += [{**keys, **r, "error": None} for r in got]
                    done += 1
                    note(f"{done}/{len(grid)} points ({_describe(grid[i])})")
            except KeyboardInterrupt:
                for f in futures:
                    f.cancel()
                failure = RunInterrupted("interrupted")
    except BaseException:
        writer.abandon()
        raise
    rows.sort(key=lambda r: r["point"])
    if failed and failure is None:
        more = f" (and {len(failed) - 1} more)" if len(failed) > 1 else ""
        failure = ConfigError(f"{failed[0]}{more}", "the other points' rows are in the run")
    if not rows:
        writer.abandon()
        raise failure or RunInterrupted("interrupted")
    run_dir = _write(writer, simulator, plan, axes, rows, len(grid), failure, started_ns, labels)
    if failure is not None:
        raise failure
    return run_dir, rows


def _describe(point: Mapping[str, float]) -> str:
    return ", ".join(f"{k}={v:g}" for k, v in point.items())


def _write(
    writer: Any,
    simulator: str,
    plan: Any,
    axes: Sequence[Axis],
    rows: list[dict[str, Any]],
    total: int,
    failure: IowattError | None,
    started_ns: int,
    labels: Mapping[str, str],
) -> Path:
    import pyarrow as pa

    from iowatt.store.catalog import publish

    config = {
        "simulator": simulator,
        "axes": [{"key": a.key, "values": list(a.values)} for a in axes],
        "base": plan.recorded(),
    }
    writer.finish(
        "sim-grid",
        None if failure is None else failure.message,
        started_ns=started_ns,
        seed=0,
        labels=labels,
        config=config,
        summary={
            "simulator": simulator,
            "points": total,
            "done": len({r["point"] for r in rows}),
            "rows": rows,
        },
    )
    table = pa.Table.from_pylist([{"run_id": writer.run_id, **r} for r in rows])
    writer.write_table("grid.parquet", table)
    run_dir: Path = publish(writer)
    return run_dir
