"""Runs a planned sweep: for each pass and step, set the stimulus, keep every disk saturated
through the settle window, measure the hold window, journal it; restore, whatever happens.

The order of things is the safety design (docs/sweep.md): sensors open first (every problem
shows before anything changes), the guardian starts before the driver takes control, the
monitor watches temperatures from its own thread, and the driver's ``restore`` runs in a
``finally`` with Ctrl-C and SIGTERM held off, so the stimulus is put back on a normal end, an
error, an interrupt or a watchdog trip — and by the guardian if this process is killed.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any, Protocol

from iowatt._engine import WorkloadResult, WorkloadRun, drive, result_failure
from iowatt.bench.summary import workload_summary
from iowatt.errors import ConfigError, IowattError, RunInterrupted, SafetyStop
from iowatt.hostinfo import host_facts, target_facts
from iowatt.interrupts import held
from iowatt.live.board import board
from iowatt.power.recording import Recording
from iowatt.power.sources import SourceSpec
from iowatt.store.writer import RunWriter, new_run_id
from iowatt.sweep import fleet
from iowatt.sweep.guard import Guardian
from iowatt.sweep.journal import Journal, finalize
from iowatt.sweep.plan import Disk, SweepConfig
from iowatt.sweep.watchdog import Monitor
from iowatt.warnings import Kind, RunWarning, WarningSink

LAYOUT_S = 1.0  # a directory's file is laid out and written once before the first step


class Reporter(Protocol):
    def step_started(self, pass_no: int, step: int, total: int, text: str) -> None: ...
    def step_finished(self, rows: list[dict[str, Any]], temps: dict[str, float]) -> None: ...
    def note(self, message: str) -> None: ...


class SilentReporter:
    def step_started(self, pass_no: int, step: int, total: int, text: str) -> None:
        pass

    def step_finished(self, rows: list[dict[str, Any]], temps: dict[str, float]) -> None:
        pass

    def note(self, message: str) -> None:
        pass


def run(
    config: SweepConfig, reporter: Reporter | None = None, sink: WarningSink | None = None
) -> Path:
    """Runs the sweep and commits its run; returns the run directory. The run is written
    whatever happens; the error that stopped it is raised after. Warnings go to ``sink`` (by
    default stderr); the journal keeps them among the run's events. A sweep across hosts
    (``config.fleet``) runs with its cluster up, its disks checked on their hosts first."""
    reporter = reporter or SilentReporter()
    sink = sink or WarningSink()
    if config.fleet is None:
        return _run(config, reporter, sink, None)
    from iowatt.fleet.cluster import connect

    with connect(config.fleet.cluster, 1, reporter.note) as client:
        return _run(config, reporter, sink, fleet.connect_hosts(client, config))


def _run(
    config: SweepConfig, reporter: Reporter, sink: WarningSink, hosts: fleet.Hosts | None
) -> Path:
    run_id = new_run_id("sweep")
    board().begin(run_id, "sweep", config.labels)
    sources = _sources(config)
    rec = Recording(sources, config.sensor_hz) if sources else None
    t0 = time.monotonic_ns()
    started_ns = time.time_ns()
    anchor = rec.clock_anchor() if rec is not None else (started_ns, t0)
    monitor_needed = config.limits is not None
    temps = [c for c in (rec.channels if rec else []) if c["unit"] == "C"]
    if monitor_needed and not temps:
        raise ConfigError(
            "nothing reads a temperature, so the fan sweep cannot be watched",
            "add --sensor hwmon (or ipmi:...), or pass --no-watchdog at your own risk",
        )
    writer = RunWriter(config.results, run_id)
    journal = Journal(writer.tmp)
    journal.begin(_plan(config, run_id, started_ns, t0, anchor, rec))
    guardian = Guardian(writer.tmp, config.report)
    monitor = Monitor(rec, journal, config.limits, config.driver.safe)
    monitor.restore_hint = getattr(config.driver, "restore_hint", None)
    workdirs: list[Path] = []
    failure: IowattError | None = None
    crash: Exception | None = None
    try:
        config.driver.prepare()
        if hosts is not None:
            # The emulated driver's cgroup throttles the processes in it: the generators run
            # in the workers' (a local cluster's, checked when planned).
            adopt = getattr(config.driver, "adopt", None)
            if adopt is not None:
                adopt(list(hosts.client.run(os.getpid).values()))
        guardian.arm(config.driver.guard_plan())
        monitor.start()
        workdirs = _layout(config, writer, hosts)
        _steps(config, journal, monitor, reporter, t0, hosts)
    except KeyboardInterrupt:
        failure = RunInterrupted("interrupted")
    except IowattError as e:
        failure = e
    except Exception as e:  # not the user's: still never a sweep recorded as complete
        crash = e
    finally:
        with held() as pending:
            failure = _finish(config, monitor, journal, workdirs, failure, sink, hosts)
            run_dir = finalize(writer.tmp, _reason(failure, crash, pending), report=config.report)
            guardian.done()
    if crash is not None:
        raise crash
    if failure is None and pending:
        failure = RunInterrupted("interrupted")
    if failure is not None:
        raise failure
    return run_dir


def _reason(failure: IowattError | None, crash: Exception | None, pending: object) -> str | None:
    if failure is not None:
        return failure.message
    if crash is not None:
        return f"internal failure: {crash!r}"
    return "interrupted" if pending else None


def _sources(config: SweepConfig) -> list[SourceSpec]:
    """The driver's sensors, unless ``--sensor`` names a source the same (the user's wins)."""
    mine = {s.name for s in config.sensors}
    return [s for s in config.driver.sensor_sources() if s.name not in mine] + config.sensors


def _plan(
    config: SweepConfig,
    run_id: str,
    started_ns: int,
    t0: int,
    anchor: tuple[int, int],
    rec: Recording | None,
) -> dict[str, Any]:
    # What the run's manifest will say that is known now: the journal outlives this process.
    manifest = {
        "run_id": run_id,
        "started_ns": started_ns,
        "clock_anchor": list(anchor),
        "seed": config.seed,
        "labels": config.labels,
        "config": config.describe(),
        "host": {
            **host_facts(None),
            "disks": {d.name: d.facts or target_facts(d.path) for d in config.disks},
        },
    }
    return {
        "manifest": manifest,
        "t0_ns": t0,
        "clock_anchor": list(anchor),
        "channels": rec.channels if rec is not None else [],
        "maps": {s.name: str(s.map) for s in (rec.specs if rec else []) if s.map},
        "watchdog": config.limits.__dict__ if config.limits else None,
    }


def _layout(config: SweepConfig, writer: RunWriter, hosts: fleet.Hosts | None) -> list[Path]:
    """Each directory gets a work directory of iowatt's own (recorded first, for `runs
    --check`), its file laid out and written once, so the first step measures the disk rather
    than the file's creation."""
    if hosts is not None:
        return fleet.layout(hosts, config, writer.run_id, LAYOUT_S)
    workdirs = []
    for disk in config.disks:
        if not disk.device:
            disk.workdir = writer.creates(disk.path / f"iowatt-{writer.run_id}")
            workdirs.append(disk.workdir)
    if workdirs:
        warm = [d for d in config.disks if not d.device]
        _generate(config, warm, 0.0, LAYOUT_S, None, None, served=False)
    return workdirs


def _steps(
    config: SweepConfig,
    journal: Journal,
    monitor: Monitor,
    reporter: Reporter,
    t0: int,
    hosts: fleet.Hosts | None,
) -> None:
    total = sum(len(values) for values in config.passes)
    done = 0
    for pass_no, values in enumerate(config.passes, 1):
        for step, value in enumerate(values):
            text = config.stimulus.describe(value)
            done += 1
            reporter.step_started(pass_no, step, total, text)
            _check(monitor)
            journal.event("stimulus", text)
            shown = value / 100 if config.stimulus.kind == "fan" else value  # duty as a ratio
            board().set_stimulus(config.stimulus.kind, shown, done, total)
            config.driver.apply(value)
            results = _generate(
                config, config.disks, config.settle_s, config.hold_s, monitor, hosts
            )
            rows = [_row(config, r, pass_no, step, value, t0) for r in results]
            for row, result in zip(rows, results, strict=True):
                journal.step(row, result)
            reporter.step_finished(rows, dict(monitor.latest))


def _check(monitor: Monitor) -> None:
    if monitor.tripped is not None:
        raise _tripped(monitor)


def _tripped(monitor: Monitor) -> SafetyStop:
    monitor.safe_done.wait()
    if monitor.safe_error is not None:
        hint = f"THE SAFE SETTING FAILED ({monitor.safe_error.message}): set it by hand now"
    else:
        hint = "the stimulus was set to its safe setting (fans to full) and left there"
        if monitor.restore_hint is not None:
            hint += f"; once it is cool, give control back with: {monitor.restore_hint()}"
    return SafetyStop(f"watchdog: {monitor.tripped}", hint)


def _generate(
    config: SweepConfig,
    disks: list[Disk],
    settle_s: float,
    hold_s: float,
    monitor: Monitor | None,
    hosts: fleet.Hosts | None,
    served: bool = True,
) -> list[WorkloadResult]:
    """Runs one generator per disk, all at once, for ``settle_s`` + ``hold_s``; returns each
    engine result. Stops them all on a watchdog trip, an interrupt or a failed disk. Unless
    ``served`` is false (laying the files out is not a step), the live metrics count them."""
    tripped = None if monitor is None else lambda: monitor.tripped is not None
    if hosts is not None:
        results = fleet.generate(hosts, config, disks, settle_s, hold_s, tripped, lambda _: None)
    else:
        runs = [
            WorkloadRun.fileio(config.workload(d, settle_s, hold_s).engine_spec(d.target, d.device))
            for d in disks
        ]
        for r in runs if served else ():
            board().watch_engine(r, workload=r.name)
        drive(runs, stop=tripped)
        results = [r.result() for r in runs]
    if monitor is not None:
        _check(monitor)
    for result in results:
        if result["status"] != "complete":
            raise result_failure(result)
    return results


def _row(
    config: SweepConfig,
    result: WorkloadResult,
    pass_no: int,
    step: int,
    value: float,
    t0: int,
) -> dict[str, Any]:
    s = workload_summary(result)
    start = result["measure_start_ns"]
    lat = s["latency_ns"]
    return {
        "disk": result["name"],
        "stimulus": config.stimulus.kind,
        "unit": config.stimulus.unit,
        "pass_no": pass_no,
        "step": step,
        "value": value,
        "start_mono_ns": start,
        "end_mono_ns": start + result["measured_ns"],
        "t_s": (start - t0) / 1e9,
        "hold_s": s["runtime_s"],
        "ops": s["ops"],
        "bytes": s["bytes"],
        "errors": s["errors"],
        "mib_s": s["mib_s"],
        "iops": s["ops_s"],
        "p50_ns": lat["p50"],
        "p99_ns": lat["p99"],
        "p999_ns": lat["p99.9"],
        "max_ns": lat["max"],
    }


def _finish(
    config: SweepConfig,
    monitor: Monitor,
    journal: Journal,
    workdirs: list[Path],
    failure: IowattError | None,
    sink: WarningSink,
    hosts: fleet.Hosts | None,
) -> IowattError | None:
    """Stops sensing, restores the stimulus and removes iowatt's files; returns the error that
    ended the sweep (the first one)."""
    if monitor.tripped is not None and not isinstance(failure, SafetyStop):
        failure = _tripped(monitor)
    try:
        config.driver.restore()
        journal.event("restore", "done")
    except IowattError as e:
        sink.warn(RunWarning(Kind.RESTORE_FAILED, f"restoring the stimulus failed: {e.message}"))
        journal.event("restore", f"failed: {e.message}")
        failure = failure or e
    monitor.stop()
    journal.close()
    if hosts is not None:
        fleet.clean_up(hosts, config)
    else:
        for workdir in workdirs:
            shutil.rmtree(workdir, ignore_errors=True)
    return failure
