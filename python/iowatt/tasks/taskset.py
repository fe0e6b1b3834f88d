"""A task set as the runner takes it: the simulator's set files (``iowatt.sim.tasks``, the
shipped io, cpu, mixed and io-then-cpu sets) with what a real task needs besides — a command of
your own, or the built-in synthetic task that mimics the type's profile at ``--scale``.

A type's keys: ``cpu_s`` (CPU seconds), ``input_mb`` (MB of input read sequentially, 10⁶ bytes),
``memory_gb`` (peak footprint), ``command`` (a shell command; without it the synthetic task runs)
and ``input`` (a file of yours, copied fresh for every task; its size is the type's input).
A command may use ``{input}``, ``{output}`` (the summary file it should write), ``{cpu_s}``,
``{memory}`` (bytes) and ``{index}``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from string import Formatter
from typing import Any

from iowatt.errors import ConfigError
from iowatt.sim.tasks import batches, load_sets, own_sets
from iowatt.units import parse_list

# request_kb and pattern say how the simulator's disk serves the reads; the runner reads
# its input through as it comes.
KEYS = ("cpu_s", "input_mb", "memory_gb", "command", "input", "request_kb", "pattern")
MB = 1_000_000
PLACEHOLDERS = ("input", "output", "cpu_s", "memory", "index")


@dataclass(frozen=True)
class TaskType:
    name: str
    cpu_s: float
    input_mb: float
    memory_gb: float
    command: str | None = None
    input: Path | None = None

    @property
    def input_bytes(self) -> int:
        return round(self.input_mb * MB)

    @property
    def memory_bytes(self) -> int:
        return round(self.memory_gb * 1e9)

    def as_config(self) -> dict[str, Any]:
        return {
            "cpu_s": self.cpu_s,
            "input_mb": self.input_mb,
            "memory_gb": self.memory_gb,
            "command": self.command,
            "input": str(self.input) if self.input else None,
        }


@dataclass(frozen=True)
class TaskSet:
    """A set's tasks in queue order; ``batch`` of each says which batch it belongs to (a set of
    sets runs its batches back to back, each starting when the previous has ended)."""

    name: str
    tasks: tuple[str, ...]
    batch: tuple[int, ...]
    types: dict[str, TaskType]

    def footprints(self) -> list[float]:
        """Every task's memory in GB, largest first."""
        return sorted((self.types[t].memory_gb for t in self.tasks), reverse=True)


def load(set_ref: str, rounds: int | None = None, scale: float = 1.0) -> list[TaskSet]:
    """The sets ``set_ref`` names: shipped ones (a list) or every set of a TOML file."""
    path = Path(set_ref)
    is_file = path.is_file()
    if not is_file and path.suffix == ".toml":
        raise ConfigError(f"set file `{set_ref}` does not exist", "check the path")
    raw_types, sets = load_sets(path if is_file else None)
    names = list(own_sets(path) if is_file else parse_list(set_ref, "SET"))
    out = []
    for name in names:
        batch_list = batches(name, sets, raw_types, rounds).batches
        used = {t for b in batch_list for t in b}
        types = {
            t: _task_type(t, raw_types[t], scale, path.parent if is_file else None)
            for t in sorted(used)
        }
        tasks = tuple(t for b in batch_list for t in b)
        batch = tuple(i for i, b in enumerate(batch_list) for _ in b)
        out.append(TaskSet(name, tasks, batch, types))
    return out


def _task_type(name: str, spec: Any, scale: float, base: Path | None) -> TaskType:
    if not isinstance(spec, dict):
        raise ConfigError(f"task type `{name}` is not a table", "e.g. [types.NAME] cpu_s = 10")
    for key in spec:
        if key not in KEYS:
            raise ConfigError(
                f"task type `{name}` has unknown key `{key}`", f"keys are {', '.join(KEYS)}"
            )
    command = spec.get("command")
    if command is not None and not (isinstance(command, str) and command.strip()):
        raise ConfigError(f"task type `{name}`: command must be a non-empty string", None)
    if command is not None:
        _check_placeholders(name, command)
    given = spec.get("input")
    source = None
    if given is not None:
        if not (isinstance(given, str) and given.strip()):
            raise ConfigError(
                f"task type `{name}`: input = {given!r} is not a file name",
                'e.g. input = "data/run42.root"',
            )
        source = Path(given) if base is None or Path(given).is_absolute() else base / given
        if not source.is_file():
            raise ConfigError(
                f"task type `{name}`: input file `{given}` does not exist",
                "give a path to a readable file (relative paths are from the set file)",
            )
    # The synthetic task is scaled; a command of yours takes the time it takes.
    factor = scale if command is None else 1.0
    input_mb = source.stat().st_size / MB if source else _number(spec, name, "input_mb") * factor
    return TaskType(
        name=name,
        cpu_s=_number(spec, name, "cpu_s") * factor,
        input_mb=input_mb,
        memory_gb=_number(spec, name, "memory_gb"),
        command=command,
        input=source,
    )


def _number(spec: dict[str, Any], name: str, key: str) -> float:
    v = spec.get(key, 0.0)
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v < 0:
        raise ConfigError(
            f"task type `{name}`: {key} = {v!r} is not a number ≥ 0", f"e.g. {key} = 10.0"
        )
    return float(v)


def _check_placeholders(name: str, command: str) -> None:
    try:
        fields = [f for _, f, _, _ in Formatter().parse(command) if f is not None]
    except ValueError as e:
        raise ConfigError(
            f"task type `{name}`: command `{command}` is malformed ({e})",
            "write a literal brace as {{ or }}",
        ) from None
    for f in fields:
        if f not in PLACEHOLDERS:
            raise ConfigError(
                f"task type `{name}`: command uses `{{{f}}}`, which is not a placeholder",
                f"placeholders are {', '.join('{' + p + '}' for p in PLACEHOLDERS)}",
            )
