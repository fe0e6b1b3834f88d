"""What a bench run is made of: the user's options and the fully resolved configuration."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from iowatt._engine import Progress, WorkloadResult
from iowatt.bands import DEFAULT_SLOW_NS, HEAT_EDGES_NS
from iowatt.errors import ConfigError
from iowatt.power.sources import DEFAULT_HZ, SourceSpec
from iowatt.units import (
    U32_MAX,
    U64_MAX,
    check_finite,
    check_int,
    parse_duration,
    parse_positive_size,
    parse_thresholds,
)

if TYPE_CHECKING:
    from iowatt.wml import Program

ENGINES = ("psync", "io_uring")
# io_uring's IORING_MAX_ENTRIES: a ring cannot hold more operations in flight.
MAX_IODEPTH = 32768
# --rate is ops/s across all threads. The engine spaces operations in whole nanoseconds, so
# above 1e9 a rate limits nothing; below 1e-3 (one operation per 17 minutes) the spacing
# overflows its clock arithmetic for many threads and the limit is silently lost.
MIN_RATE, MAX_RATE = 1e-3, 1e9
# How long a run with a schedule waits for the operations in flight at its deadline.
DEFAULT_DRAIN_S = 10.0
# Runs of one series (a campaign's repetitions × envs × workloads, or bench --repeat): the
# schedule is a list built at once, and more runs than this would take months.
MAX_RUNS = 10_000


@dataclass
class Options:
    """What the user typed for the workloads; ``None`` means "the workload's default"."""

    iosize: str | None = None
    filesize: str | None = None
    nthreads: int | None = None
    runtime: str | None = None
    ramp: str | None = None
    engine: str | None = None
    iodepth: int | None = None
    directio: bool | None = None
    dsync: bool = False
    rate: float | None = None
    # With a schedule: how long operations in flight at the deadline are waited for.
    drain: str | None = None
    seed: int | None = None
    slow: str | None = None
    # NAME=VALUE variables for FileBench workload files.
    sets: tuple[str, ...] = ()
    # Refuse workload files that run shell commands (`system`).
    no_system: bool = False


@dataclass
class WorkloadConfig:
    """One workload with every parameter resolved (recorded in the manifest as is)."""

    name: str
    personality: str
    iosize: int
    filesize: int
    nthreads: int
    directio: bool
    dsync: bool
    engine: str
    iodepth: int
    runtime_s: float
    ramp_s: float
    rate: float | None
    seed: int
    workingset: int = 0
    # Each interval counts the operations above these latencies (ns).
    slow_ns: list[int] = field(default_factory=lambda: list(DEFAULT_SLOW_NS))
    # A FileBench workload file (absolute path) instead of a FileIO personality, the --set
    # values given for it, and every variable's value once they were applied.
    wml: str | None = None
    overrides: dict[str, str] = field(default_factory=dict)
    variables: dict[str, str] = field(default_factory=dict)
    # The workload file as parsed when planning (not recorded: the manifest has its source).
    program: Program | None = field(default=None, repr=False, compare=False)
    # A workload with a schedule (a rate, or a workload file's event generator) waits this
    # long for the operations in flight at its deadline; None without one.
    drain_s: float | None = None

    def engine_spec(self, where: Path, device: bool) -> dict[str, Any]:
        """The engine's FileIO parameters for this workload run in directory (or on device)
        ``where``."""
        spec = {**self.recorded(), "target": str(where), "device": device}
        spec["runtime_ns"] = round(self.runtime_s * 1e9)
        spec["ramp_ns"] = round(self.ramp_s * 1e9)
        spec["heat_ns"] = list(HEAT_EDGES_NS)
        if self.drain_s is not None:
            spec["drain_ns"] = round(spec.pop("drain_s") * 1e9)
        return spec

    def recorded(self) -> dict[str, Any]:
        """The parameters as the manifest records them (a closed loop has no drain)."""
        return {
            f.name: copy.copy(getattr(self, f.name))
            for f in fields(self)
            if f.name != "program" and not (f.name == "drain_s" and self.drain_s is None)
        }


@dataclass
class BenchConfig:
    workloads: list[WorkloadConfig]
    target: Path | None
    results: Path
    suite: str | None = None
    labels: dict[str, str] = field(default_factory=dict)
    seed: int = 0
    destroy_data: bool = False
    report: bool = True
    power: list[SourceSpec] = field(default_factory=list)
    power_hz: float = DEFAULT_HZ
    idle_s: float = 0.0
    # (CLOCK_REALTIME ns, CLOCK_MONOTONIC ns) at the start: maps meter logs onto the run later.
    clock_anchor: tuple[int, int] | None = None
    # Where the run sits in a campaign (name, plan fingerprint, env, rep, entry), if it does.
    campaign: dict[str, Any] | None = None


@dataclass
class Outcome:
    """What one workload produced: the engine's result and the summary computed from it."""

    wl: WorkloadConfig
    result: WorkloadResult
    summary: dict[str, Any]
    model: dict[str, Any]


class Reporter(Protocol):
    """Receives progress while a bench runs (the CLI draws bars; tests may record)."""

    def workload_started(self, wl: WorkloadConfig) -> None: ...
    def update(self, wl: WorkloadConfig, progress: Progress) -> None: ...
    def workload_finished(self, wl: WorkloadConfig, summary: dict[str, Any]) -> None: ...
    def note(self, message: str) -> None: ...


class SilentReporter:
    def workload_started(self, wl: WorkloadConfig) -> None:
        pass

    def update(self, wl: WorkloadConfig, progress: Progress) -> None:
        pass

    def workload_finished(self, wl: WorkloadConfig, summary: dict[str, Any]) -> None:
        pass

    def note(self, message: str) -> None:
        pass


def check_options(opts: Options) -> None:
    """Refuses any option value the engine could not take, naming the option and the value: a
    notebook or a campaign file may hand any type where the CLI hands a number."""
    for name in ("iosize", "filesize"):
        value = getattr(opts, name)
        if value is not None:
            parse_positive_size(value, f"--{name}", "4k" if name == "iosize" else "256m")
    if opts.nthreads is not None:
        check_int(opts.nthreads, "--nthreads", 1, U32_MAX, "--nthreads 4")
    if opts.iodepth is not None:
        check_int(opts.iodepth, "--iodepth", 1, MAX_IODEPTH, "--iodepth 32")
    if opts.seed is not None:
        check_int(opts.seed, "--seed", 0, U64_MAX, "--seed 42")
    if opts.rate is not None:
        _check_rate(opts.rate)
    for name in ("runtime", "ramp"):
        value = getattr(opts, name)
        if value is not None:
            parse_duration(value, f"--{name}")
    if opts.drain is not None:
        try:
            parse_duration(opts.drain, "--drain")
        except ConfigError as e:
            raise ConfigError(
                e.message, "e.g. --drain 10s, or --drain 0s to wait for none"
            ) from None
    for name, example in (("slow", "100ms,200ms"), ("engine", "psync")):
        value = getattr(opts, name)
        if value is not None and not isinstance(value, str):
            raise ConfigError(f"--{name} `{value}` is not text", f"e.g. --{name} {example}")
    for name in ("directio", "dsync"):
        value = getattr(opts, name)
        if value is not None and not isinstance(value, bool):
            raise ConfigError(f"--{name} `{value}` is not true or false", f"e.g. {name} = true")
    if isinstance(opts.sets, str) or not all(isinstance(s, str) for s in opts.sets):
        raise ConfigError(f"--set `{opts.sets}` is not a list of NAME=VALUE", "e.g. nthreads=8")


def _check_rate(rate: object) -> float:
    value = check_finite(rate, "--rate", "--rate 5000 (ops/s)")
    if not MIN_RATE <= value <= MAX_RATE:
        raise ConfigError(
            f"--rate `{rate}` is outside {MIN_RATE:g} to {MAX_RATE:g} ops/s",
            "e.g. --rate 5000; leave --rate out to run as fast as the device goes",
        )
    return value


def resolve_common(
    opts: Options, default_runtime: str, default_ramp: float = 0.0, *, scheduled: bool = False
) -> dict[str, Any]:
    """The timing every kind of workload takes from the command line; a workload with a
    schedule (``scheduled``) drains after its deadline, ``--drain`` or 10 s."""
    runtime = opts.runtime or default_runtime
    runtime_s = parse_duration(runtime, "--runtime")
    if runtime_s <= 0:
        raise ConfigError(f"--runtime `{runtime}` must be longer than zero", "e.g. --runtime 30s")
    drain_s = None
    if scheduled:
        drain_s = parse_duration(opts.drain, "--drain") if opts.drain else DEFAULT_DRAIN_S
    return {
        "runtime_s": runtime_s,
        "ramp_s": parse_duration(opts.ramp, "--ramp") if opts.ramp else default_ramp,
        "slow_ns": parse_thresholds(opts.slow) if opts.slow else list(DEFAULT_SLOW_NS),
        "drain_s": drain_s,
    }


def check_drain(opts: Options, workloads: list[WorkloadConfig]) -> None:
    """Refuses --drain where no workload keeps a schedule: it would change nothing."""
    if opts.drain is None or any(wl.drain_s is not None for wl in workloads):
        return
    if all(wl.wml for wl in workloads):
        hint = (
            "a workload file keeps one with `eventgen rate=N` and a flowop that takes events "
            "(eventlimit, iopslimit …); drop --drain"
        )
    else:
        hint = "add --rate (e.g. --rate 200 --drain 10s), or drop --drain"
    raise ConfigError(
        f"--drain `{opts.drain}` applies to a bench with a schedule, and this one runs as "
        "fast as the device goes",
        hint,
    )
