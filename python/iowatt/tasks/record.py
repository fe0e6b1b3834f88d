"""A tasks run in the store (kind ``tasks``, docs/run-store.md): ``tasks.parquet`` (one row per
task), ``utilisation.parquet`` (the node every half second), ``power.parquet`` (measured, or
modelled with source ``model``), and summary.json's ``tasks`` section — the row that ``--json``
prints and the catalog's ``task_runs`` holds — with the segments it adds up."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from iowatt.hostinfo import smt_active
from iowatt.store.runs import read_summary
from iowatt.tasks.data import disk_totals
from iowatt.tasks.figures import totals
from iowatt.tasks.plan import RunSpec, TasksPlan

if TYPE_CHECKING:
    from iowatt.store.writer import RunWriter

TASK_KEYS = (
    "index",
    "type",
    "batch",
    "status",
    "exit_code",
    "start_ns",
    "end_ns",
    "cpu_s",
    "bytes_read",
    "rchar",
    "syscr",
    "max_rss_bytes",
    "host",
    "error",
    "summary",
)


def row_base(spec: RunSpec, plan: TasksPlan) -> dict[str, Any]:
    return {
        "set": spec.taskset.name,
        "disk": spec.location.name,
        "per_core": spec.per_core,
        "rep": spec.rep,
        "slots": plan.slots(spec.per_core),
        "cores": plan.cores,
        "tasks": len(spec.taskset.tasks),
        "key": spec.key,
    }


def labels(spec: RunSpec, plan: TasksPlan) -> dict[str, str]:
    """The user's labels, then what `compare` groups by: env is location and k."""
    return {
        **plan.labels,
        "set": spec.taskset.name,
        "disk": spec.location.name,
        "per_core": str(spec.per_core),
        "env": spec.env,
        "rep": str(spec.rep),
    }


def prior_state(run_dir: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]], Any]:
    """An interrupted run's finished tasks, its segments and its disk probe."""
    import pyarrow.parquet as pq

    summary = read_summary(run_dir)
    records = []
    for r in pq.read_table(run_dir / "tasks.parquet").to_pylist():
        if r["status"] == "ok":
            records.append(r)
    return records, summary["segments"], summary.get("probe")


def write_run(
    writer: RunWriter,
    plan: TasksPlan,
    spec: RunSpec,
    live: Any,
    started_ns: int,
    reason: str | None,
    prior: dict[str, Any] | None,
    cpu_group: dict[str, Any],
) -> tuple[Path, dict[str, Any]]:
    import pyarrow as pa

    from iowatt.store.catalog import publish
    from iowatt.store.schemas import POWER_SCHEMA, TASKS_SCHEMA, UTILISATION_SCHEMA

    run_id = writer.run_id
    tables = [s.pop("tables", None) for s in live.segments]
    row = {**row_base(spec, plan), **totals(live.records, live.segments)}
    config = {
        "set": spec.taskset.name,
        "tasks": list(spec.taskset.tasks),
        "batch": list(spec.taskset.batch),
        "types": {n: t.as_config() for n, t in spec.taskset.types.items()},
        "location": {"name": spec.location.name, "path": str(spec.location.path)},
        "per_core": spec.per_core,
        "cores": plan.cores,
        "slots": plan.slots(spec.per_core),
        "rep": spec.rep,
        "key": spec.key,
        "timeout_s": plan.timeout_s,
        "scale": plan.scale,
        "rounds": plan.rounds,
        "memory_gb": plan.memory_gb,
        "drop_caches": plan.drop_caches,
        "cluster": plan.cluster.describe() if plan.cluster else None,
        "power": [s.describe() for s in plan.power],
        "resumed_from": Path(prior["path"]).name if prior else None,
        "cpu_group": cpu_group,
    }
    writer.finish(
        "tasks",
        reason,
        started_ns=started_ns,
        seed=None,
        labels=labels(spec, plan),
        config=config,
        summary={
            "tasks": row,
            "segments": live.segments,
            "probe": live.probe,
            "smt": smt_active(),
            "emulated_disk": disk_totals(live.segments),
        },
    )
    first = min((r["start_ns"] for r in live.records), default=time.time_ns())
    writer.write_table("tasks.parquet", _tasks_table(run_id, live.records, first, TASKS_SCHEMA, pa))
    current = next((t for t in reversed(tables) if t is not None), None)
    if current is not None:
        writer.write_table("utilisation.parquet", _utilisation(run_id, current, UTILISATION_SCHEMA))
        writer.write_table("power.parquet", _power(run_id, current, POWER_SCHEMA))
    return publish(writer), row


def _tasks_table(
    run_id: str, records: list[dict[str, Any]], first: int, schema: Any, pa: Any
) -> Any:
    rows = []
    for r in sorted(records, key=lambda r: r["index"]):
        rows.append(
            {
                "run_id": run_id,
                **{k: r.get(k) for k in TASK_KEYS},
                "start_s": (r["start_ns"] - first) / 1e9,
                "end_s": (r["end_ns"] - first) / 1e9,
                "wall_s": (r["end_ns"] - r["start_ns"]) / 1e9,
            }
        )
    return pa.Table.from_pylist(rows, schema)


def _utilisation(run_id: str, t: dict[str, Any], schema: Any) -> Any:
    import pyarrow as pa

    s = t["samples"]
    return pa.table(
        {
            "run_id": [run_id] * len(s.mono_ns),
            "t_s": [(m - t["mono0"]) / 1e9 for m in s.mono_ns],
            "cpu_busy": s.cpu_busy,
            "disk_util": s.disk_util,
            "read_mb_s": s.read_mb_s,
            "mem_used_gb": s.mem_used_gb,
            "tasks_busy": s.tasks_busy,
        },
        schema=schema,
    )


def _power(run_id: str, t: dict[str, Any], schema: Any) -> Any:
    import pyarrow as pa

    if t["power_data"] is not None:
        return t["power_data"].power_table(run_id, t["mono0"])
    ends, watts = t["watts"]
    n = len(ends)
    return pa.table(
        {
            "run_id": [run_id] * n,
            "source": ["model"] * n,
            "channel": ["node"] * n,
            "scope": ["node"] * n,
            "mono_ns": np.asarray(ends, dtype=np.int64),
            "t_s": (np.asarray(ends) - t["mono0"]) / 1e9,
            "watts": watts,
            "joules": [None] * n,
        },
        schema=schema,
    )
