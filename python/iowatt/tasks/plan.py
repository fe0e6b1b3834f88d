"""``iowatt tasks``'s options, every one checked before anything runs, and the runs they make:
one per (repetition, set, data location, k), repetitions outermost so that each setting's runs
are spread over the session rather than run back to back."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from iowatt.errors import ConfigError
from iowatt.fleet.spec import ClusterSpec
from iowatt.fleet.spec import parse as parse_cluster
from iowatt.hostinfo import mem_bytes
from iowatt.power.sources import SourceSpec, parse_source
from iowatt.sim.tasks import load_node
from iowatt.tasks import data
from iowatt.tasks.data import Location
from iowatt.tasks.taskset import TaskSet, load
from iowatt.units import check_finite, check_int, parse_duration, parse_int_list, parse_size

RAPL = Path("/sys/class/powercap/intel-rapl")
NODE = "node.toml"
CHUNK = 4 << 20


@dataclass(frozen=True)
class RunSpec:
    """One run of the matrix; ``key`` identifies it across invocations (for resuming)."""

    taskset: TaskSet
    location: Location
    per_core: int
    rep: int
    key: str

    @property
    def env(self) -> str:
        return f"{self.location.name}-k{self.per_core}"


@dataclass
class TasksPlan:
    sets: list[TaskSet]
    locations: list[Location]
    per_core: list[int]
    repeat: int
    cores: int
    memory_gb: float
    timeout_s: float | None
    drop_caches: bool
    power: list[SourceSpec]
    power_hz: float
    power_model: dict[str, Any]  # node.toml's node and disks, for modelled power
    cluster: ClusterSpec | None
    memory_cgroup: bool
    resume: bool
    scale: float
    rounds: int | None
    results: Path
    labels: dict[str, str] = field(default_factory=dict)

    def slots(self, per_core: int) -> int:
        return per_core * self.cores

    def runs(self) -> list[RunSpec]:
        return [
            RunSpec(s, loc, k, rep, self._key(s, loc, k, rep))
            for rep in range(1, self.repeat + 1)
            for s in self.sets
            for loc in self.locations
            for k in self.per_core
        ]

    def _key(self, s: TaskSet, loc: Location, k: int, rep: int) -> str:
        what = {
            "set": s.name,
            "tasks": s.tasks,
            "batch": s.batch,
            "types": {n: t.as_config() for n, t in s.types.items()},
            "location": [loc.name, str(loc.path)],
            "k": k,
            "rep": rep,
            "cores": self.cores,
            "labels": self.labels,
        }
        return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:16]

    def refusal(self, s: TaskSet, k: int) -> str | None:
        """Why set ``s`` cannot run at ``k`` per core (its largest k × cores footprints would
        not fit in memory), or None."""
        need = sum(s.footprints()[: self.slots(k)])
        if need > self.memory_gb:
            return (
                f"set `{s.name}` at {k} per core needs {need:.2f} GB for its "
                f"{self.slots(k)} largest tasks at once; the node has {self.memory_gb:.2f} GB"
            )
        return None


def plan(
    set_ref: str,
    *,
    per_core: str,
    data_dirs: tuple[str, ...],
    repeat: int,
    cores: int | None,
    memory: str | None,
    timeout: str | None,
    drop_caches: bool,
    power: tuple[str, ...],
    power_hz: float,
    power_model: Path | None,
    cluster: str | None,
    resume: bool,
    scale: float,
    rounds: int | None,
    results: Path,
    labels: dict[str, str],
) -> TasksPlan:
    scale = check_finite(scale, "--scale", "--scale 0.01")
    if not 0 < scale <= 1000:
        raise ConfigError(f"--scale `{scale:g}` must be above 0", "e.g. --scale 0.01")
    if rounds is not None:
        rounds = check_int(rounds, "--rounds", 1, 10**6, "--rounds 4")
    sets = load(set_ref, rounds, scale)
    total = parse_size(memory, "--memory") if memory else mem_bytes()
    if not total:
        raise ConfigError("cannot read MemTotal from /proc/meminfo", "give --memory")
    memory_gb = total / 1e9
    for s in sets:
        for t in s.types.values():
            if t.memory_gb > memory_gb:
                raise ConfigError(
                    f"task type `{t.name}` needs {t.memory_gb:g} GB, more than the node's "
                    f"{memory_gb:.2f} GB",
                    "lower its memory_gb, or give the node more with --memory",
                )
    locations = data.parse_locations(data_dirs)
    for loc in locations:
        data.check_space(loc, max(sum(s.types[t].input_bytes for t in s.tasks) for s in sets))
    if drop_caches:
        data.check_drop_caches()
    sources = [parse_source(p) for p in power]
    if not sources and RAPL.is_dir():
        sources = [parse_source("rapl")]
    if not 0 < check_finite(power_hz, "--power-hz", "--power-hz 10") <= 10_000:
        raise ConfigError(f"--power-hz `{power_hz:g}` must be in (0, 10000]", "e.g. 10")
    timeout_s = parse_duration(timeout, "--timeout") if timeout else None
    if timeout_s is not None and timeout_s <= 0:
        raise ConfigError(f"--timeout `{timeout}` must be above 0", "e.g. --timeout 1h")
    return TasksPlan(
        sets=sets,
        locations=locations,
        per_core=parse_int_list(per_core, "--per-core", 1, 64),
        repeat=check_int(repeat, "--repeat", 1, 1000, "--repeat 3"),
        cores=check_int(cores, "--cores", 1, 4096, "--cores 8") if cores else os.cpu_count() or 1,
        memory_gb=memory_gb,
        timeout_s=timeout_s,
        drop_caches=drop_caches,
        power=sources,
        power_hz=power_hz,
        power_model=load_node(power_model, [], "--power-model"),
        cluster=parse_cluster(cluster) if cluster else None,
        memory_cgroup=memory is not None,
        resume=resume,
        scale=scale,
        rounds=rounds,
        results=results,
        labels=labels,
    )
