"""``iowatt sim tasks``: predict how a node (or a cluster of them) finishes a set of
independent tasks with k per core, on a hard disk or an SSD — the high-throughput computing
study's question (docs/sim-tasks.md). One engine run per (set, disk, k); a set made of sets
runs them back to back, as separate batches; a k whose tasks would not fit in memory is
reported as out of memory rather than run.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from iowatt.errors import ConfigError
from iowatt.sim.model import load_extended, load_overridden
from iowatt.units import check_int, parse_int_list, parse_list

NODE = "node.toml"
SETS = "tasksets.toml"
DISKS = ("hdd", "ssd")


@dataclass
class TasksPlan:
    sets: dict[str, list[list[str]]]  # set → its batches, each the task types in queue order
    types: dict[str, dict[str, Any]]
    model: dict[str, Any]
    per_core: list[int]
    disks: list[str]
    nodes: int
    results: Path
    labels: dict[str, str] = field(default_factory=dict)

    def recorded(self) -> dict[str, Any]:
        """The manifest's ``config``: the simulator's whole input."""
        return {
            "sets": self.sets,
            "types": self.types,
            "model": self.model,
            "per_core": self.per_core,
            "disks": self.disks,
            "nodes": self.nodes,
        }


def load_sets(path: Path | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """(task types, sets): the shipped ones, extended by the set file ``path``'s."""
    return load_extended(SETS, path, "SET", ("types", "sets"), "set file", "a set file")


def batches(
    name: str,
    sets: dict[str, Any],
    types: dict[str, Any],
    rounds: int | None = None,
    seen: tuple[str, ...] = (),
) -> list[list[str]]:
    """Set ``name`` as batches run back to back, each its task types in queue order;
    ``rounds`` replaces every set's ``repeat``."""
    if name not in sets:
        raise ConfigError(f"set `{name}` is not defined", f"sets are {', '.join(sets)}")
    if name in seen:
        raise ConfigError(f"set `{name}` contains itself", "a set's `sets` name other sets")
    spec = sets[name]
    if not isinstance(spec, dict):
        raise ConfigError(f"set `{name}` is not a table", "e.g. io = { repeat = 50, tasks = […] }")
    if "sets" in spec:
        return [b for s in spec["sets"] for b in batches(s, sets, types, rounds, (*seen, name))]
    repeat = check_int(spec.get("repeat", 1), f"set `{name}` repeat", 1, 10**7, "repeat = 50")
    repeat = rounds or repeat
    tasks = spec.get("tasks") or []
    for t in tasks:
        if t not in types:
            raise ConfigError(
                f"set `{name}` names task type `{t}`, which is not defined",
                f"types are {', '.join(types)}",
            )
    if not tasks:
        raise ConfigError(f"set `{name}` has no tasks", 'e.g. tasks = ["analysis-heavy"]')
    return [[t for _ in range(repeat) for t in tasks]]


def plan(
    set_ref: str,
    *,
    per_core: str = "1,2",
    disk: str = "hdd,ssd",
    nodes: int = 1,
    model: Path | None = None,
    results: Path,
    labels: dict[str, str] | None = None,
) -> TasksPlan:
    path = Path(set_ref)
    types, sets = load_sets(path if path.is_file() else None)
    names = list(sets) if path.is_file() else parse_list(set_ref, "SET")
    chosen = {n: batches(n, sets, types) for n in names}
    disks = [d.lower() for d in parse_list(disk, "--disk")]
    for d in disks:
        if d not in DISKS:
            raise ConfigError(f"--disk `{d}` is neither hdd nor ssd", "e.g. --disk hdd,ssd")
    return TasksPlan(
        sets=chosen,
        types=types,
        model=load_overridden(NODE, model, "--model"),
        per_core=parse_int_list(per_core, "--per-core", 1, 64),
        disks=disks,
        nodes=check_int(nodes, "--nodes", 1, 100_000, "--nodes 10"),
        results=results,
        labels=labels or {},
    )


def simulate_batches(
    node: Mapping[str, Any],
    types: Mapping[str, Mapping[str, Any]],
    batches: Sequence[Sequence[str]],
    per_core: int,
    nodes: int,
    chunk_mb: float,
) -> dict[str, float]:
    """``batches`` (task types in queue order) run back to back on the engine, their makespans,
    energies and tasks added up; a ConfigError when a batch's tasks would not fit in memory."""
    from iowatt._engine import tasks_simulate

    total = {"makespan_s": 0.0, "energy_j": 0.0, "tasks": 0.0}
    for batch in batches:
        order = list(dict.fromkeys(batch))
        index = {t: i for i, t in enumerate(order)}
        r = tasks_simulate(
            {
                "node": node,
                "types": [
                    {
                        "name": t,
                        "cpu_s": float(types[t].get("cpu_s", 0.0)),
                        "input_mb": float(types[t].get("input_mb", 0.0)),
                        "memory_gb": float(types[t].get("memory_gb", 0.0)),
                    }
                    for t in order
                ],
                "queue": [index[t] for t in batch],
                "per_core": per_core,
                "nodes": nodes,
                "chunk_mb": chunk_mb,
            }
        )
        for key in total:
            total[key] += r[key]
    return total


def figures(makespan_s: float, energy_j: float, jobs: float) -> dict[str, float]:
    """The study's figures from a makespan, the energy spent in it and the jobs done."""
    return {
        "makespan_s": makespan_s,
        "jobs_per_h": jobs * 3600 / makespan_s,
        "avg_w": energy_j / makespan_s,
        "wh_per_job": energy_j / 3600 / jobs,
    }


def simulate(plan: TasksPlan) -> list[dict[str, Any]]:
    """One row per (set, disk, k): the metrics, or ``out_of_memory`` and nulls."""
    rows = []
    for name, batches in plan.sets.items():
        for disk in plan.disks:
            node = {**plan.model["node"], "disk": plan.model["disks"][disk]}
            for k in plan.per_core:
                row: dict[str, Any] = {
                    "set": name,
                    "disk": disk,
                    "per_core": k,
                    "nodes": plan.nodes,
                    "tasks": sum(len(b) for b in batches),
                }
                refused: str | None = None
                t: dict[str, float] | None = None
                try:
                    t = simulate_batches(
                        node, plan.types, batches, k, plan.nodes, plan.model["chunk_mb"]
                    )
                except ConfigError as e:
                    if "run out of memory" not in e.message:
                        raise
                    refused = e.message
                if t is not None and t["makespan_s"] > 0:
                    row.update(figures(t["makespan_s"], t["energy_j"], t["tasks"]))
                else:
                    row.update(dict.fromkeys(("makespan_s", "jobs_per_h", "avg_w", "wh_per_job")))
                rows.append({**row, "out_of_memory": refused})
    return rows


def run(plan: TasksPlan) -> tuple[Path, list[dict[str, Any]]]:
    """Simulates the plan and commits a run of kind ``sim-tasks``."""
    import pyarrow as pa

    from iowatt.store.catalog import publish
    from iowatt.store.schemas import TASKS_SIM_SCHEMA
    from iowatt.store.writer import RunWriter, new_run_id

    started_ns = time.time_ns()
    rows = simulate(plan)
    writer = RunWriter(plan.results, new_run_id("sim-tasks"))
    writer.finish(
        "sim-tasks",
        None,
        started_ns=started_ns,
        seed=0,
        labels=plan.labels,
        config=plan.recorded(),
        summary={"tasks": rows},
    )
    table = pa.Table.from_pylist([{"run_id": writer.run_id, **r} for r in rows], TASKS_SIM_SCHEMA)
    writer.write_table("tasks_sim.parquet", table)
    return publish(writer), rows


def grid_rows(plan: TasksPlan, model: dict[str, Any]) -> list[dict[str, Any]]:
    """One grid point (``iowatt.sim.grid``): the plan under the node model ``model``."""
    from dataclasses import replace

    return simulate(replace(plan, model=model))
