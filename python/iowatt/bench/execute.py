"""Running a planned bench: prepare the target, run each workload on the engine, commit the run.

The run is written whatever happens — finished, stopped by Ctrl-C or SIGTERM, or failed — and
only then is the error that stopped it raised again.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from iowatt._engine import WorkloadRun, drive, result_failure
from iowatt.bench import filemacro
from iowatt.bench.config import BenchConfig, Outcome, Reporter, SilentReporter, WorkloadConfig
from iowatt.bench.power import BenchPower
from iowatt.bench.steps import StepFailed, Steps
from iowatt.bench.summary import rate_warning, workload_summary
from iowatt.bench.write import write_run
from iowatt.errors import ConfigError, IowattError, RunInterrupted, TargetError
from iowatt.hostinfo import host_facts
from iowatt.live.board import board
from iowatt.store.writer import RunWriter, new_run_id
from iowatt.target import (
    check_block_target,
    check_dir_target,
    check_free_space,
    device_size,
    supports_odirect,
)
from iowatt.warnings import Kind, RunWarning, WarningSink


def run(
    config: BenchConfig, reporter: Reporter | None = None, sink: WarningSink | None = None
) -> Path:
    """Runs every workload and commits the run; returns its directory.

    Warnings go to ``sink`` (by default printed on stderr) and into the run's events. The run
    is written whatever happens. After it is written, an error that stopped it is raised again
    (an interrupted run raises :class:`RunInterrupted`).
    """
    reporter = reporter or SilentReporter()
    sink = sink or WarningSink()
    run_id = new_run_id("bench")
    board().begin(run_id, "bench", config.labels)
    writer = RunWriter(config.results, run_id)
    started_ns = time.time_ns()
    config.clock_anchor = (started_ns, time.monotonic_ns())
    outcomes: list[Outcome] = []
    failure: IowattError | None = None
    scratch = None
    if config.target is None:
        scratch = writer.creates(Path(tempfile.gettempdir()) / f"iowatt-bench-{run_id}")
    target = config.target or scratch
    assert target is not None
    workdir: Path | None = None
    host: dict[str, Any] = {}
    device = False
    power = BenchPower(config)
    try:
        device = check_target(config.workloads, target, config.destroy_data)
        host = host_facts(target)
        _warn_about(config, host, sink)
        power.start(reporter.note)
        if not device:
            workdir = writer.creates(target / f"iowatt-{run_id}")
        for wl in config.workloads:
            where = workdir or target
            if wl.wml and workdir is not None:
                # Each workload file lays out its own filesets, often under the same names.
                where = workdir / wl.name
                where.mkdir()
            outcome, stopped = _run_workload(wl, where, device, reporter, power.drain, sink)
            if where != workdir and where != target:
                shutil.rmtree(where, ignore_errors=True)  # room for the next one
            outcomes.append(outcome)
            if stopped is not None:
                failure = stopped
                break
            if outcome.result["status"] != "complete":
                failure = result_failure(outcome.result)
                break
    except KeyboardInterrupt:
        failure = RunInterrupted("interrupted")
    except IowattError as e:
        failure = e
    except BaseException:
        writer.abandon()
        raise
    finally:
        power.stop()
        # iowatt deletes only what it created: its own work directory (or temp target).
        for path in (workdir, scratch):
            if path is not None:
                shutil.rmtree(path, ignore_errors=True)
    run_dir = write_run(writer, config, outcomes, failure, host, started_ns, device, power, sink)
    if failure is not None:
        raise failure
    return run_dir


def check_target(workloads: list[WorkloadConfig], target: Path, destroy_data: bool) -> bool:
    """Checks the target for these workloads and returns whether it is a block device."""
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        mode = 0
    if stat.S_ISBLK(mode):
        if any(wl.wml for wl in workloads):
            raise TargetError(
                f"FileBench workload files need a directory, and `{target}` is a block device",
                "mount a file system on it and pass the mount point as --target",
            )
        check_block_target(target, destroy_data)
        size = device_size(target)
        for wl in workloads:
            if wl.filesize > size:
                raise ConfigError(
                    f"--filesize `{wl.filesize}` is larger than `{target}` ({size} bytes)",
                    "use a smaller --filesize",
                )
        return True
    check_dir_target(target)
    for wl in workloads:
        if wl.wml:
            filemacro.check_space(wl, target)
    check_free_space(target, max(_bytes_needed(wl) for wl in workloads))
    if any(wl.directio for wl in workloads) and not supports_odirect(target):
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


def _warn_about(config: BenchConfig, host: dict[str, Any], sink: WarningSink) -> None:
    fs = (host.get("target") or {}).get("fs_type")
    if fs in ("tmpfs", "ramfs"):
        sink.warn(
            RunWarning(
                Kind.TMPFS_TARGET,
                f"the target is on {fs}: results measure memory, not a storage device",
            )
        )
    for wl in config.workloads:
        if wl.wml:
            sink.extend(filemacro.warnings(wl))


def _run_workload(
    wl: WorkloadConfig,
    where: Path,
    device: bool,
    reporter: Reporter,
    tick: Callable[[], None],
    sink: WarningSink,
) -> tuple[Outcome, StepFailed | None]:
    """Runs one workload (and a workload file's commands around it); a command that failed
    comes back with what was measured."""
    steps = filemacro.steps(wl, where, reporter.note, sink) if wl.wml else None
    if steps is not None:
        steps.through("setup")
        engine = WorkloadRun.model(filemacro.model(wl, where))
    else:
        engine = WorkloadRun.fileio(wl.engine_spec(where, device))
    board().watch_engine(engine, workload=wl.name)
    reporter.workload_started(wl)

    def on_tick() -> None:
        reporter.update(wl, engine.progress())
        tick()

    def stop() -> bool:
        """Runs the file's commands due while its processes run; true when one failed."""
        if steps is None or not steps.has("running"):
            return False
        p = engine.progress()
        if p["phase"] not in ("ramp", "running", "finishing", "done"):
            return False
        started_ns = p["measure_start_ns"] - round(wl.ramp_s * 1e9)
        return not steps.due((time.monotonic_ns() - started_ns) / 1e9)

    started = time.monotonic_ns()
    held = steps is not None and steps.has("laid_out")
    with contextlib.suppress(KeyboardInterrupt, StepFailed):  # the engine's result says so
        if steps is not None and held:
            _laid_out_first(engine, steps)
        drive([engine], on_tick, stop=stop, started=held)
    result = engine.result()
    summary = workload_summary(result)
    if (short := rate_warning(wl.name, summary)) is not None:
        sink.warn(short)
    # Laying out files and filesets happens before the clock starts: how long it took.
    measured_from = result["measure_start_ns"]
    summary["layout_s"] = (measured_from - started) / 1e9 if measured_from > started else None
    outcome = Outcome(wl, result, summary, engine.model_dict())
    reporter.workload_finished(wl, outcome.summary)
    if steps is not None and steps.failed is None and result["status"] == "complete":
        try:
            steps.due(float("inf"))  # what the file does after its processes, in order
            steps.through("after")
        except StepFailed:
            pass
    return outcome, steps.failed if steps is not None else None


def _laid_out_first(engine: WorkloadRun, steps: Steps) -> None:
    """Lays the filesets out, runs the file's commands that come after its `create files`,
    then lets the engine measure; the engine is left started (``drive`` waits for it)."""
    engine.hold()
    engine.start()
    try:
        while engine.progress()["phase"] != "ready":
            if engine.wait(0.02):
                return  # it ended while laying out: its result says why
        steps.through("laid_out")
    except BaseException:
        engine.cancel()
        while not engine.wait(0.1):
            pass
        raise
    finally:
        engine.release(time.time_ns())
