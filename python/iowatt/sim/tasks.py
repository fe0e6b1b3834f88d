"""``iowatt sim tasks``: predict how a node (or a cluster of them) finishes a set of
independent tasks with k per core, on a hard disk or an SSD — the high-throughput computing
study's question (docs/sim-tasks.md). One engine run per (set, disk, k, seed); a set made of
sets runs them back to back, as separate batches; a k whose tasks would not fit in memory is
reported as out of memory rather than run. Figures are given per task and per job, a job being
one instance of the set (the study's unit), each as its mean and 95 % interval over the seeds.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from iowatt.errors import ConfigError
from iowatt.sim.disks import load_disks
from iowatt.sim.model import load_extended, overlay, shipped
from iowatt.tomlfile import read_toml
from iowatt.units import check_int, parse_int_list, parse_list, parse_seeds

NODE = "node.toml"
SETS = "tasksets.toml"
DEFAULT_SPREAD = 0.1
SCHEDULERS = ("cfq", "deadline", "none")
PATTERNS = ("sequential", "scattered")
FLUID = ("seq_mb_s", "switch_s", "slice_mb", "active_w")
# What each row gives, per seed; the table and --json give each as a mean and interval.
FIGURES = (
    "makespan_s",
    "tasks_per_h",
    "jobs_per_h",
    "avg_w",
    "wh_per_task",
    "wh_per_job",
    "disk_w",
    "disk_busy",
    "cpu_busy",
)


@dataclass
class SetPlan:
    batches: list[list[str]]  # run back to back, each the task types in queue order
    tasks_per_job: int  # one instance of the set


@dataclass
class TasksPlan:
    sets: dict[str, SetPlan]
    types: dict[str, dict[str, Any]]
    model: dict[str, Any]
    disk_models: dict[str, dict[str, Any]]
    per_core: list[int]
    disks: list[str]
    nodes: int
    spread: float
    seeds: list[int]
    results: Path
    labels: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def recorded(self) -> dict[str, Any]:
        """The manifest's ``config``: the simulator's whole input."""
        return {
            "sets": {k: v.batches for k, v in self.sets.items()},
            "tasks_per_job": {k: v.tasks_per_job for k, v in self.sets.items()},
            "types": self.types,
            "model": self.model,
            "disk_models": {
                m: self.disk_models[m] for d in self.disks if (m := self.disk_model(d))
            },
            "per_core": self.per_core,
            "disks": self.disks,
            "nodes": self.nodes,
            "task_spread": self.spread,
            "seeds": self.seeds,
        }

    def disk_model(self, disk: str) -> str | None:
        return self.model["disks"][disk].get("model")

    def node(self, disk: str) -> dict[str, Any]:
        """The engine's node with ``disk`` as its data disk."""
        entry = self.model["disks"][disk]
        return {**self.model["node"], "disk": engine_disk(disk, entry, self.disk_models)}


def load_sets(path: Path | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """(task types, sets): the shipped ones, extended by the set file ``path``'s."""
    types, sets = load_extended(SETS, path, "SET", ("types", "sets"), "set file", "a set file")
    for name, t in types.items():
        if isinstance(t, dict):  # the runner names a type that is not a table
            check_type(name, t)
    return types, sets


def check_type(name: str, t: Mapping[str, Any]) -> None:
    """A type's numbers and pattern, named as the set file gives them."""
    for key, example in (
        ("cpu_s", "cpu_s = 80"),
        ("input_mb", "input_mb = 360"),
        ("memory_gb", "memory_gb = 0.4"),
        ("request_kb", "request_kb = 64"),
    ):
        if key not in t:
            continue
        value = t[key]
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(
                f"task type `{name}`: {key} = {value!r} is not a number", f"e.g. {example}"
            )
        least = 0.5 if key == "request_kb" else 0.0  # a request is at least a sector
        if not math.isfinite(value) or value < least:
            bound = "must be at least 0.5 (a 512-byte sector)" if least else "must be 0 or more"
            raise ConfigError(f"task type `{name}`: {key} = {value} {bound}", f"e.g. {example}")
    pattern = t.get("pattern", "sequential")
    if pattern not in PATTERNS:
        raise ConfigError(
            f"task type `{name}`: pattern `{pattern}` is not known",
            f"patterns are {', '.join(PATTERNS)}",
        )


def batches(
    name: str,
    sets: dict[str, Any],
    types: dict[str, Any],
    rounds: int | None = None,
    seen: tuple[str, ...] = (),
) -> SetPlan:
    """Set ``name`` as batches run back to back, each its task types in queue order, and the
    tasks of one instance (a set of sets: one instance of each); ``rounds`` replaces every
    set's ``repeat``."""
    if name not in sets:
        raise ConfigError(f"set `{name}` is not defined", f"sets are {', '.join(sets)}")
    if name in seen:
        raise ConfigError(f"set `{name}` contains itself", "a set's `sets` name other sets")
    spec = sets[name]
    if not isinstance(spec, dict):
        raise ConfigError(f"set `{name}` is not a table", "e.g. io = { repeat = 50, tasks = […] }")
    if "sets" in spec:
        parts = [batches(s, sets, types, rounds, (*seen, name)) for s in spec["sets"]]
        return SetPlan([b for p in parts for b in p.batches], sum(p.tasks_per_job for p in parts))
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
    return SetPlan([[t for _ in range(repeat) for t in tasks]], len(tasks))


def own_sets(path: Path) -> list[str]:
    """The sets a set file defines itself (its types may serve the shipped sets too)."""
    own = read_toml(path, "SET").get("sets") or {}
    if not isinstance(own, dict) or not own:
        raise ConfigError(
            f"set file `{path}` defines no sets", "add e.g. [sets] my = { tasks = [...] }"
        )
    return list(own)


def load_node(path: Path | None, notes: list[str], option: str = "--model") -> dict[str, Any]:
    """node.toml with the file ``path`` over it. Its ``[disks.NAME]`` tables replace or add
    disks whole (checked by :func:`engine_disk`); other keys override shipped ones only."""
    model = shipped(NODE)
    if path is None:
        return model
    extra = read_toml(path, option)
    disks = extra.pop("disks", {})
    if not isinstance(disks, dict):
        raise ConfigError(f"{option} `{path}`: `disks` must be a table", "e.g. [disks.hdd]")
    overlay(model, extra, "", path, option)
    for name, entry in disks.items():
        if not isinstance(entry, dict):
            raise ConfigError(f"{option} `{path}`: `disks.{name}` must be a table", "")
        if any(k in entry for k in FLUID):
            notes.append(
                f"[disks.{name}] gives a fluid rate (seq_mb_s, switch_s, slice_mb): read as "
                "before; name a disk `model` and a `scheduler` to serve requests "
                "(docs/sim-tasks.md)"
            )
            model["disks"][name] = entry
        else:
            model["disks"][name] = {**model["disks"].get(name, {}), **entry}
    return model


def engine_disk(
    name: str, entry: Mapping[str, Any], models: Mapping[str, Mapping[str, Any]]
) -> dict[str, Any]:
    """A node.toml ``[disks.NAME]`` table as the engine's disk: a model under a scheduler, or
    the fluid rate of old files."""
    where = f"[disks.{name}]"
    if any(k in entry for k in FLUID):
        missing = [k for k in FLUID if k not in entry]
        if missing:
            raise ConfigError(f"{where} lacks {', '.join(missing)}", "a fluid disk gives all four")
        return {"fluid": {k: float(entry[k]) for k in FLUID}}
    known = {
        "model",
        "scheduler",
        "slice_ms",
        "idle_ms",
        "ncq_depth",
        "readahead_kb",
        "drive_read_ahead",
    }
    unknown = sorted(set(entry) - known)
    if unknown:
        raise ConfigError(f"{where} has an unknown key `{unknown[0]}`", f"keys are {sorted(known)}")
    if "model" not in entry:
        raise ConfigError(f"{where} names no disk model", 'e.g. model = "barracuda-es2"')
    model = str(entry["model"])
    if model not in models:
        raise ConfigError(
            f"{where} model `{model}` is not a disk model",
            f"models are {', '.join(models)}; --disk-models FILE adds yours",
        )
    scheduler = str(entry.get("scheduler", "cfq")).lower()
    if scheduler == "cfq":
        sched: dict[str, Any] = {
            "name": "cfq",
            "slice_ms": float(entry.get("slice_ms", 100.0)),
            "idle_ms": float(entry.get("idle_ms", 8.0)),
        }
    elif scheduler == "none":
        sched = {"name": "none", "ncq_depth": int(entry.get("ncq_depth", 31))}
    elif scheduler == "deadline":
        sched = {"name": "deadline"}
    else:
        raise ConfigError(
            f"{where} scheduler `{scheduler}` is not known",
            f"schedulers are {', '.join(SCHEDULERS)}",
        )
    return {
        "requests": {
            "model": dict(models[model]),
            "scheduler": sched,
            "readahead_kb": float(entry.get("readahead_kb", 128.0)),
            "drive_read_ahead": bool(entry.get("drive_read_ahead", True)),
        }
    }


def disk_watts(
    entry: Mapping[str, Any], models: Mapping[str, Mapping[str, Any]]
) -> tuple[float, float]:
    """(W idle, W more while serving) of a ``[disks.NAME]`` table: a model's own, or a fluid
    disk's ``active_w`` (its idle draw being in the node's)."""
    if any(k in entry for k in FLUID):
        return 0.0, float(entry.get("active_w", 0.0))
    m = models[entry["model"]]

    def watts(p: Mapping[str, float]) -> float:
        return float(p.get("w", 12 * p.get("a12", 0.0) + 5 * p.get("a5", 0.0)))

    return watts(m["idle"]), watts(m["active"]) - watts(m["idle"])


def check_spread(value: float) -> float:
    if not 0.0 <= value <= 1.0:
        raise ConfigError(
            f"--task-spread {value:g} is outside 0..1",
            "a share of each type's CPU time and input, e.g. 0.1 for ±10 %; 0 for identical tasks",
        )
    return value


def plan(
    set_ref: str,
    *,
    per_core: str = "1,2",
    disk: str = "hdd,ssd",
    nodes: int = 1,
    model: Path | None = None,
    disk_model: str | None = None,
    disk_models: Path | None = None,
    task_spread: float = DEFAULT_SPREAD,
    seed: str = "1",
    seeds: int | None = None,
    results: Path,
    labels: dict[str, str] | None = None,
) -> TasksPlan:
    path = Path(set_ref)
    types, sets = load_sets(path if path.is_file() else None)
    names = own_sets(path) if path.is_file() else parse_list(set_ref, "SET")
    chosen = {n: batches(n, sets, types) for n in names}
    notes: list[str] = []
    node = load_node(model, notes)
    models = load_disks(disk_models)
    if disk_model is not None:
        if disk_model not in models:
            raise ConfigError(
                f"--disk-model `{disk_model}` is not a disk model",
                f"models are {', '.join(models)}; --disk-models FILE adds yours",
            )
        node["disks"]["hdd"] = {**node["disks"]["hdd"], "model": disk_model}
        for k in FLUID:
            node["disks"]["hdd"].pop(k, None)
    disks = [d.lower() for d in parse_list(disk, "--disk")]
    for d in disks:
        if d not in node["disks"]:
            raise ConfigError(
                f"--disk `{d}` is not a disk of the node",
                f"disks are {', '.join(node['disks'])} (node.toml's [disks.NAME])",
            )
    config = TasksPlan(
        sets=chosen,
        types=types,
        model=node,
        disk_models=models,
        per_core=parse_int_list(per_core, "--per-core", 1, 64),
        disks=disks,
        nodes=check_int(nodes, "--nodes", 1, 100_000, "--nodes 10"),
        spread=check_spread(task_spread),
        seeds=parse_seeds(seed, seeds),
        results=results,
        labels=labels or {},
        notes=notes,
    )
    for d in disks:
        config.node(d)  # a bad disk table is refused before anything runs
    return config


def engine_type(name: str, t: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "name": name,
        "cpu_s": float(t.get("cpu_s", 0.0)),
        "input_mb": float(t.get("input_mb", 0.0)),
        "memory_gb": float(t.get("memory_gb", 0.0)),
        "request_kb": float(t.get("request_kb", 128.0)),
        "pattern": t.get("pattern", "sequential"),
    }


def simulate_batches(
    node: Mapping[str, Any],
    types: Mapping[str, Mapping[str, Any]],
    batches: Sequence[Sequence[str]],
    per_core: int,
    nodes: int,
    chunk_mb: float,
    spread: float = 0.0,
    seed: int = 0,
) -> dict[str, float]:
    """``batches`` (task types in queue order) run back to back on the engine, their makespans,
    energies, busy times and tasks added up; a ConfigError when a batch's tasks would not fit
    in memory."""
    from iowatt._engine import tasks_simulate

    total = dict.fromkeys(("makespan_s", "energy_j", "disk_j", "disk_busy_s", "core_busy_s"), 0.0)
    total["tasks"] = 0.0
    for batch in batches:
        order = list(dict.fromkeys(batch))
        index = {t: i for i, t in enumerate(order)}
        r = tasks_simulate(
            {
                "node": node,
                "types": [engine_type(t, types[t]) for t in order],
                "queue": [index[t] for t in batch],
                "per_core": per_core,
                "nodes": nodes,
                "chunk_mb": chunk_mb,
                "spread": spread,
                "seed": seed,
            }
        )
        for key in total:
            total[key] += r[key]
    return total


def figures(t: Mapping[str, float], tasks_per_job: int, cores: int, nodes: int) -> dict[str, float]:
    """The study's figures from a run's totals: per task and per job (one set instance)."""
    span, energy, tasks = t["makespan_s"], t["energy_j"], t["tasks"]
    jobs = tasks / tasks_per_job
    return {
        "makespan_s": span,
        "tasks_per_h": tasks * 3600 / span,
        "jobs_per_h": jobs * 3600 / span,
        "avg_w": energy / span,
        "wh_per_task": energy / 3600 / tasks,
        "wh_per_job": energy / 3600 / jobs,
        "disk_w": t["disk_j"] / span,
        "disk_busy": t["disk_busy_s"] / (span * nodes),
        "cpu_busy": t["core_busy_s"] / (span * nodes * cores),
    }


def simulate(
    plan: TasksPlan, progress: Callable[[int, int], None] | None = None
) -> list[dict[str, Any]]:
    """One row per (set, disk, k, seed): the figures, or ``out_of_memory`` and nulls."""
    rows = []
    total = len(plan.sets) * len(plan.disks) * len(plan.per_core) * len(plan.seeds)
    for name, s in plan.sets.items():
        for disk in plan.disks:
            node = plan.node(disk)
            for k in plan.per_core:
                for seed in plan.seeds:
                    row: dict[str, Any] = {
                        "set": name,
                        "disk": disk,
                        "disk_model": plan.disk_model(disk),
                        "per_core": k,
                        "nodes": plan.nodes,
                        "seed": seed,
                        "tasks": sum(len(b) for b in s.batches),
                        "jobs": sum(len(b) for b in s.batches) / s.tasks_per_job,
                    }
                    refused: str | None = None
                    t = None
                    try:
                        t = simulate_batches(
                            node,
                            plan.types,
                            s.batches,
                            k,
                            plan.nodes,
                            plan.model["chunk_mb"],
                            plan.spread,
                            seed,
                        )
                    except ConfigError as e:
                        if "run out of memory" not in e.message:
                            raise
                        refused = e.message
                    if t is not None and t["makespan_s"] > 0:
                        cores = int(plan.model["node"]["cores"])
                        row.update(figures(t, s.tasks_per_job, cores, plan.nodes))
                    else:
                        row.update(dict.fromkeys(FIGURES))
                    rows.append({**row, "out_of_memory": refused})
                    if progress is not None:
                        progress(len(rows), total)
    return rows


def table(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One object per (set, disk, k): each figure's mean over the seeds and its 95 %
    interval (``NAME_ci95``; null with one seed)."""
    from iowatt.sim.tables import mean_ci

    groups: dict[tuple[str, str, int], list[Mapping[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["set"], r["disk"], r["per_core"]), []).append(r)
    out = []
    for rs in groups.values():
        first = rs[0]
        row: dict[str, Any] = {
            k: first[k] for k in ("set", "disk", "disk_model", "per_core", "nodes", "tasks", "jobs")
        }
        row["seeds"] = len(rs)
        for key in FIGURES:
            row[key], row[f"{key}_ci95"] = mean_ci([r[key] for r in rs])
        row["out_of_memory"] = first["out_of_memory"]
        out.append(row)
    return out


def run(
    plan: TasksPlan, progress: Callable[[int, int], None] | None = None
) -> tuple[Path, list[dict[str, Any]]]:
    """Simulates the plan and commits a run of kind ``sim-tasks``; returns it and the table."""
    import pyarrow as pa

    from iowatt.store.catalog import publish
    from iowatt.store.schemas import TASKS_SIM_SCHEMA
    from iowatt.store.writer import RunWriter, new_run_id

    started_ns = time.time_ns()
    rows = simulate(plan, progress)
    summary = table(rows)
    writer = RunWriter(plan.results, new_run_id("sim-tasks"))
    writer.finish(
        "sim-tasks",
        None,
        started_ns=started_ns,
        seed=plan.seeds[0],
        labels=plan.labels,
        config=plan.recorded(),
        summary={"tasks": summary, "notes": plan.notes},
    )
    columns = TASKS_SIM_SCHEMA.names
    table_ = pa.Table.from_pylist(
        [{"run_id": writer.run_id, **{k: r.get(k) for k in columns[1:]}} for r in rows],
        TASKS_SIM_SCHEMA,
    )
    writer.write_table("tasks_sim.parquet", table_)
    return publish(writer), summary


def grid_rows(plan: TasksPlan, model: dict[str, Any]) -> list[dict[str, Any]]:
    """One grid point (``iowatt.sim.grid``): the plan under the node model ``model``."""
    from dataclasses import replace

    return table(simulate(replace(plan, model=model)))
