"""``iowatt bench``: run FileIO workloads on a directory or block device and store the run.

:func:`plan` turns what a user asked for into a fully resolved :class:`BenchConfig`;
:func:`run` executes it and returns the committed run directory. Both are what the CLI calls,
so a notebook gets the same result with ``iowatt.bench.run(iowatt.bench.plan(...))``.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import stat
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from iowatt import __version__, _core, filemacro
from iowatt.errors import ConfigError, IowattError, RunInterrupted, TargetError
from iowatt.fileio import (
    DEFAULT_RUNTIME,
    PERSONALITIES,
    PERSONALITY_DEFAULTS,
    QUICK_DEFAULTS,
    SUITE_DEFAULTS,
    SUITE_ENTRIES,
    SUITES,
    SuiteEntry,
)
from iowatt.histogram import DEFAULT_SLOW_NS
from iowatt.hostinfo import host_facts
from iowatt.power.record import write_power_files
from iowatt.power.recording import PowerData, Recording
from iowatt.power.sources import DEFAULT_HZ, SourceSpec
from iowatt.power.summary import Window, span, summarize
from iowatt.store import RunWriter, index_run, new_run_id
from iowatt.summary import fio_job, interval_table, latency_table, workload_summary
from iowatt.target import (
    check_block_target,
    check_dir_target,
    check_free_space,
    device_size,
    supports_odirect,
)
from iowatt.units import parse_duration, parse_size, parse_thresholds

ENGINES = ("psync", "io_uring")
POLL_S = 0.1


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
class Options:
    """What the user typed; ``None`` means "use the default for this workload"."""

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
    seed: int | None = None
    slow: str | None = None
    # NAME=VALUE variables for FileBench workload files.
    sets: tuple[str, ...] = ()


@dataclass
class Outcome:
    """What one workload produced: the engine's result and the summary computed from it."""

    wl: WorkloadConfig
    result: dict[str, Any]
    summary: dict[str, Any]
    model: dict[str, Any]


class Reporter(Protocol):
    """Receives progress while a bench runs (the CLI draws bars; tests may record)."""

    def workload_started(self, wl: WorkloadConfig) -> None: ...
    def update(self, wl: WorkloadConfig, progress: dict[str, Any]) -> None: ...
    def workload_finished(self, wl: WorkloadConfig, summary: dict[str, Any]) -> None: ...
    def warn(self, message: str) -> None: ...


class SilentReporter:
    def workload_started(self, wl: WorkloadConfig) -> None:
        pass

    def update(self, wl: WorkloadConfig, progress: dict[str, Any]) -> None:
        pass

    def workload_finished(self, wl: WorkloadConfig, summary: dict[str, Any]) -> None:
        pass

    def warn(self, message: str) -> None:
        pass


# --- planning ---------------------------------------------------------------------------------


def plan(
    what: str | None,
    opts: Options,
    *,
    suite: str | None = None,
    target: Path | None = None,
    results: Path,
    labels: dict[str, str] | None = None,
    destroy_data: bool = False,
) -> BenchConfig:
    """Resolves a personality, a suite workload, a FileBench workload file (``.f``) or a whole
    suite into a BenchConfig.

    With neither ``what`` nor ``suite``, runs the quick FileIO suite (2 s per workload, 64 MiB).
    """
    seed = opts.seed if opts.seed is not None else secrets.randbits(32)
    if what and suite:
        raise ConfigError(
            f"give a workload `{what}` or --suite `{suite}`, not both",
            "drop one of them",
        )
    wml = suite == filemacro.SUITE or (what is not None and filemacro.is_wml(what))
    if opts.sets and not wml:
        raise ConfigError(
            "--set applies to FileBench workload files",
            "e.g. iowatt bench fileserver.f --set nthreads=8, or --suite filemacro",
        )
    if suite == filemacro.SUITE:
        workloads = filemacro.plan_suite(opts, seed)
    elif what is not None and wml:
        workloads = [filemacro.plan_file(Path(what), opts, seed)]
    elif what is None:
        name = suite or "fileio"
        if name not in SUITES:
            known = ", ".join((*SUITES, filemacro.SUITE))
            raise ConfigError(f"unknown suite `{name}`", f"suites are: {known}")
        defaults: dict[str, Any] = SUITE_DEFAULTS if suite else QUICK_DEFAULTS
        workloads = [_from_entry(e, opts, defaults, seed) for e in SUITES[name]]
        suite = name
    elif what in SUITE_ENTRIES:
        workloads = [_from_entry(SUITE_ENTRIES[what], opts, SUITE_DEFAULTS, seed)]
    elif what in PERSONALITIES:
        workloads = [_from_personality(what, opts, seed)]
    else:
        known = ", ".join((*PERSONALITIES, *SUITE_ENTRIES))
        raise ConfigError(
            f"unknown personality `{what}`",
            f"choose one of: {known}; or give a FileBench workload file (.f)",
        )
    return BenchConfig(
        workloads=workloads,
        target=target,
        results=results,
        suite=suite,
        labels=labels or {},
        seed=seed,
        destroy_data=destroy_data,
    )


def _from_entry(
    e: SuiteEntry, opts: Options, defaults: dict[str, Any], seed: int
) -> WorkloadConfig:
    nthreads = e.nthreads if e.nthreads == 1 else opts.nthreads or defaults.get("nthreads")
    return _resolve(
        e.name,
        e.personality,
        opts,
        iosize=opts.iosize or e.iosize,
        filesize=opts.filesize or defaults["filesize"],
        nthreads=nthreads or e.nthreads,
        runtime=opts.runtime or defaults["runtime"],
        directio=e.directio if opts.directio is None else opts.directio,
        seed=seed,
    )


def _from_personality(personality: str, opts: Options, seed: int) -> WorkloadConfig:
    d = PERSONALITY_DEFAULTS[personality]
    return _resolve(
        personality,
        personality,
        opts,
        iosize=opts.iosize or d["iosize"],
        filesize=opts.filesize or d["filesize"],
        nthreads=opts.nthreads or 1,
        runtime=opts.runtime or DEFAULT_RUNTIME,
        directio=bool(opts.directio),
        seed=seed,
    )


def _resolve(
    name: str,
    personality: str,
    opts: Options,
    *,
    iosize: str,
    filesize: str,
    nthreads: int,
    runtime: str,
    directio: bool,
    seed: int,
) -> WorkloadConfig:
    engine = (opts.engine or "psync").replace("-", "_")
    if engine not in ENGINES:
        raise ConfigError(f"unknown engine `{opts.engine}`", f"engines are: {', '.join(ENGINES)}")
    iodepth = opts.iodepth or (32 if engine == "io_uring" else 1)
    if engine == "psync" and iodepth != 1:
        raise ConfigError(
            f"--iodepth `{iodepth}` needs an asynchronous engine",
            "psync keeps one operation in flight per thread; add --engine io_uring",
        )
    if iodepth < 1 or nthreads < 1:
        raise ConfigError("--iodepth and --nthreads must be at least 1", "e.g. --nthreads 4")
    if opts.rate is not None and opts.rate <= 0:
        raise ConfigError(f"--rate `{opts.rate}` must be positive", "e.g. --rate 5000 (ops/s)")
    wl = WorkloadConfig(
        name=name,
        personality=personality,
        iosize=parse_size(iosize, "--iosize"),
        filesize=parse_size(filesize, "--filesize"),
        nthreads=nthreads,
        directio=directio,
        dsync=opts.dsync,
        engine=engine,
        iodepth=iodepth,
        rate=opts.rate,
        seed=seed,
        **resolve_common(opts, default_runtime=runtime),
    )
    if wl.iosize <= 0:
        raise ConfigError(f"--iosize `{iosize}` must be at least one byte", "e.g. --iosize 4k")
    return wl


def resolve_common(opts: Options, default_runtime: str) -> dict[str, Any]:
    """The timing every kind of workload takes from the command line."""
    runtime = opts.runtime or default_runtime
    runtime_s = parse_duration(runtime, "--runtime")
    if runtime_s <= 0:
        raise ConfigError(f"--runtime `{runtime}` must be longer than zero", "e.g. --runtime 30s")
    return {
        "runtime_s": runtime_s,
        "ramp_s": parse_duration(opts.ramp or 0, "--ramp"),
        "slow_ns": parse_thresholds(opts.slow) if opts.slow else list(DEFAULT_SLOW_NS),
    }


# --- running ----------------------------------------------------------------------------------


def run(config: BenchConfig, reporter: Reporter | None = None) -> Path:
    """Runs every workload and commits the run; returns its directory.

    The run is written whatever happens. After it is written, an error that stopped it is
    raised again (an interrupted run raises :class:`RunInterrupted`).
    """
    reporter = reporter or SilentReporter()
    config.results.mkdir(parents=True, exist_ok=True)
    run_id = new_run_id("bench")
    writer = RunWriter(config.results, run_id)
    started_ns = time.time_ns()
    config.clock_anchor = (started_ns, time.monotonic_ns())
    outcomes: list[Outcome] = []
    failure: IowattError | None = None
    target, scratch = _target_dir(config.target)
    workdir: Path | None = None
    host: dict[str, Any] = {}
    device = False
    power = _Power(config)
    try:
        device = _check_target(config, target)
        host = host_facts(target)
        _warn_about(host, reporter)
        power.start(reporter)
        if not device:
            workdir = target / f"iowatt-{run_id}"
            workdir.mkdir()
        for wl in config.workloads:
            where = workdir or target
            if wl.wml and workdir is not None:
                # Each workload file lays out its own filesets, often under the same names.
                where = workdir / wl.name
                where.mkdir()
            outcome = _run_workload(wl, where, device, reporter, power.drain)
            if where != workdir and where != target:
                shutil.rmtree(where, ignore_errors=True)  # room for the next one
            outcomes.append(outcome)
            if outcome.result["status"] != "complete":
                failure = result_failure(outcome.result)
                break
    except KeyboardInterrupt:
        failure = RunInterrupted("interrupted")
    except IowattError as e:
        failure = e
    finally:
        power.stop()
        # iowatt deletes only what it created: its own work directory (or temp target).
        for path in (workdir, scratch):
            if path is not None:
                shutil.rmtree(path, ignore_errors=True)
    run_dir = _write_run(writer, config, outcomes, failure, host, started_ns, device, power)
    if failure is not None:
        raise failure
    return run_dir


def _target_dir(target: Path | None) -> tuple[Path, Path | None]:
    if target is not None:
        return target, None
    scratch = Path(tempfile.mkdtemp(prefix="iowatt-bench-"))
    return scratch, scratch


def _check_target(config: BenchConfig, target: Path) -> bool:
    """Checks the target and returns whether it is a block device."""
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        mode = 0
    if stat.S_ISBLK(mode):
        if any(wl.wml for wl in config.workloads):
            raise TargetError(
                f"FileBench workload files need a directory, and `{target}` is a block device",
                "mount a file system on it and pass the mount point as --target",
            )
        check_block_target(target, config.destroy_data)
        size = device_size(target)
        for wl in config.workloads:
            if wl.filesize > size:
                raise ConfigError(
                    f"--filesize `{wl.filesize}` is larger than `{target}` ({size} bytes)",
                    "use a smaller --filesize",
                )
        return True
    check_dir_target(target)
    for wl in config.workloads:
        if wl.wml:
            filemacro.check_space(wl, target)
    check_free_space(target, max(_bytes_needed(wl) for wl in config.workloads))
    if any(wl.directio for wl in config.workloads) and not supports_odirect(target):
        raise TargetError(
            f"O_DIRECT is not supported on `{target}`",
            "this file system has no direct I/O (ramfs, some FUSE); pass --buffered",
        )
    return False


def _bytes_needed(wl: WorkloadConfig) -> int:
    """Space laid out before the clock starts (sequential writes grow from empty files)."""
    if wl.wml:
        return 0  # checked per fileset by filemacro.check_space
    if wl.personality.endswith("streamwrite"):
        return 0
    return wl.filesize * (5 if wl.personality.startswith("multistream") else 1)


def _warn_about(host: dict[str, Any], reporter: Reporter) -> None:
    fs = (host.get("target") or {}).get("fs_type")
    if fs in ("tmpfs", "ramfs"):
        reporter.warn(f"the target is on {fs}: results measure memory, not a storage device")


def engine_spec(wl: WorkloadConfig, where: Path, device: bool) -> str:
    """The engine's JSON for a workload run in directory (or on device) ``where``."""
    spec = {**asdict(wl), "target": str(where), "device": device}
    spec["runtime_ns"] = round(wl.runtime_s * 1e9)
    spec["ramp_ns"] = round(wl.ramp_s * 1e9)
    return json.dumps(spec)


class _Power:
    """Power recording around a bench's workloads, when ``--power`` asked for it."""

    def __init__(self, config: BenchConfig) -> None:
        self.config = config
        self.rec: Recording | None = None
        self.t0 = time.monotonic_ns()
        self.idle: Window | None = None
        self.data: PowerData | None = None

    def start(self, reporter: Reporter) -> None:
        if not self.config.power:
            return
        self.rec = Recording(self.config.power, self.config.power_hz, self.config.clock_anchor)
        self.t0 = time.monotonic_ns()
        self.rec.start()
        if self.config.idle_s > 0:
            reporter.warn(f"measuring idle power for {self.config.idle_s:g} s before the work")
            start = self.rec.mark("idle")
            self.rec.wait(self.config.idle_s)
            self.idle = Window(start, time.monotonic_ns())
        self.rec.mark("work")

    def drain(self) -> None:
        if self.rec is not None:
            self.rec.drain()

    def stop(self) -> None:
        if self.rec is not None and self.data is None:
            self.rec.mark("end")
            self.data = self.rec.stop()

    def summary(self, outcomes: list[Outcome]) -> dict[str, Any] | None:
        if self.data is None:
            return None
        windows = {
            o.wl.name: Window(
                o.result["measure_start_ns"],
                o.result["measure_start_ns"] + o.result["measured_ns"],
                o.summary["ops"],
                o.summary["bytes"],
            )
            for o in outcomes
            if o.result["measured_ns"] > 0
        }
        work = span(list(windows.values())) if windows else Window(self.t0, self.t0)
        return summarize(self.data, self.t0, work, self.idle, windows)


def _run_workload(
    wl: WorkloadConfig,
    where: Path,
    device: bool,
    reporter: Reporter,
    tick: Callable[[], None],
) -> Outcome:
    if wl.wml:
        engine_run = _core.WorkloadRun.from_model(filemacro.model_json(wl, where))
    else:
        engine_run = _core.WorkloadRun(engine_spec(wl, where, device))
    reporter.workload_started(wl)
    engine_run.start()
    try:
        while not engine_run.wait(POLL_S):
            reporter.update(wl, engine_run.progress())
            tick()
    except KeyboardInterrupt:
        engine_run.cancel()
        while not engine_run.wait(POLL_S):
            pass
    result = engine_run.result()
    outcome = Outcome(wl, result, workload_summary(result), json.loads(engine_run.model_json()))
    reporter.workload_finished(wl, outcome.summary)
    return outcome


def result_failure(result: dict[str, Any]) -> IowattError:
    if result["status"] == "cancelled":
        return RunInterrupted("interrupted")
    errors = result["errors_by_kind"]
    no_space = "ENOSPC" in errors or "EDQUOT" in errors
    return TargetError(
        f"workload `{result['name']}` stopped: {result['reason']}",
        "free some space or use a smaller --filesize"
        if no_space
        else "the failed operations are counted by kind in the run's summary.json",
    )


def _write_run(
    writer: RunWriter,
    config: BenchConfig,
    outcomes: list[Outcome],
    failure: IowattError | None,
    host: dict[str, Any],
    started_ns: int,
    device: bool,
    power: _Power,
) -> Path:
    results = [o.result for o in outcomes]
    models = {o.wl.name: o.model for o in outcomes}
    summaries = {o.wl.name: o.summary for o in outcomes}
    status = "complete" if failure is None else "incomplete"
    manifest = {
        "run_id": writer.run_id,
        "kind": "bench",
        "status": status,
        "reason": None if failure is None else failure.message,
        "iowatt_version": __version__,
        "started_ns": started_ns,
        "ended_ns": time.time_ns(),
        "clock_anchor": config.clock_anchor,
        "seed": config.seed,
        "labels": config.labels,
        "config": {
            "target": str(config.target) if config.target else None,
            "device": device,
            "suite": config.suite,
            "campaign": config.campaign,
            # Each workload's parameters and, once it ran, the model the engine built from them.
            "workloads": [{**asdict(wl), "model": models.get(wl.name)} for wl in config.workloads],
            "power": {
                "sources": [s.describe() for s in config.power],
                "hz": config.power_hz,
                "idle_s": config.idle_s,
            }
            if config.power
            else None,
        },
        "host": host,
    }
    fio = {
        "fio version": f"iowatt-{__version__}",
        "timestamp": started_ns // 1_000_000_000,
        "jobs": [fio_job(o.wl.name, o.wl.personality, o.summary, o.result) for o in outcomes],
    }
    summary: dict[str, Any] = {
        "run_id": writer.run_id,
        "status": status,
        "workloads": summaries,
        "fio": fio,
    }
    power_summary = power.summary(outcomes)
    if power_summary is not None:
        summary["power"] = power_summary
    writer.write_json("manifest.json", manifest)
    writer.write_json("summary.json", summary)
    writer.write_table("intervals.parquet", interval_table(writer.run_id, results))
    writer.write_table("latency.parquet", latency_table(writer.run_id, results))
    if power.data is not None:
        write_power_files(writer, power.data, power.t0)
    run_dir = writer.commit()
    index_run(config.results, run_dir)
    if config.report and outcomes:
        from iowatt.report import write_report  # matplotlib is slow to import; only when needed

        write_report([run_dir], run_dir / "report.html")
    return run_dir
