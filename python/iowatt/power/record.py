"""``iowatt power record -- COMMAND``: wrap a command like ``perf stat`` and store its energy.

The sources are opened first (every configuration problem shows before anything runs), an idle
baseline is measured if asked, then the command runs while every source samples; the run is
written whatever happens — a Ctrl-C or SIGTERM leaves an incomplete run with what was measured.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from iowatt.errors import ConfigError, IowattError, RunInterrupted
from iowatt.live.board import board
from iowatt.power.recording import DRAIN_S, PowerData, Recording
from iowatt.power.sources import DEFAULT_HZ, SourceSpec
from iowatt.power.summary import Window, summarize, warnings
from iowatt.store.catalog import publish
from iowatt.store.schemas import event_table
from iowatt.store.writer import RunWriter, new_run_id
from iowatt.warnings import WarningSink


@dataclass
class RecordConfig:
    command: list[str]
    sources: list[SourceSpec]
    results: Path
    hz: float = DEFAULT_HZ
    idle_s: float = 0.0
    labels: dict[str, str] = field(default_factory=dict)
    report: bool = True


@dataclass
class Recorded:
    run_dir: Path
    exit_code: int
    summary: dict[str, Any]


def record(
    config: RecordConfig,
    on_phase: Callable[[str], None] | None = None,
    sink: WarningSink | None = None,
) -> Recorded:
    """Runs the command under the power sources and commits a ``power`` run; what is wrong with
    the power data goes to ``sink`` (by default stderr) and the run's events."""
    sink = sink or WarningSink()
    if not config.command:
        raise ConfigError("no command to record", "e.g. iowatt power record -- sleep 5")
    if not config.sources:
        raise ConfigError(
            "no power source", "add --source rapl (or hwmon, ipmi, meter, cmd, emulated)"
        )
    if shutil.which(config.command[0]) is None:
        raise ConfigError(
            f"command `{config.command[0]}` not found", "check its name, or give its full path"
        )
    rec = Recording(config.sources, config.hz)
    config.results.mkdir(parents=True, exist_ok=True)
    writer = RunWriter(config.results, new_run_id("power"))
    board().begin(writer.run_id, "power")
    started_ns = time.time_ns()
    t0 = time.monotonic_ns()
    rec.start()
    idle: Window | None = None
    exit_code: int | None = None
    failure: IowattError | None = None
    work_start = t0
    try:
        if config.idle_s > 0:
            _phase(on_phase, f"measuring idle power for {config.idle_s:g} s")
            idle_start = rec.mark("idle")
            rec.wait(config.idle_s)
            idle = Window(idle_start, time.monotonic_ns())
        work_start = rec.mark("work")
        proc = subprocess.Popen(config.command)
        try:
            while exit_code is None:
                try:
                    exit_code = proc.wait(timeout=DRAIN_S)
                except subprocess.TimeoutExpired:
                    rec.drain()
        except KeyboardInterrupt:
            proc.terminate()
            exit_code = proc.wait()
            failure = RunInterrupted("interrupted")
    except KeyboardInterrupt:
        failure = RunInterrupted("interrupted")
    work_end = rec.mark("end")
    data = rec.stop()
    power = summarize(data, t0, Window(work_start, work_end), idle)
    sink.extend(warnings(power))
    status = _exit_status(exit_code)
    sections = {
        "command": {
            "argv": config.command,
            "exit_code": status,
            "seconds": (work_end - work_start) / 1e9,
        },
        "power": power,
    }
    summary = writer.finish(
        "power",
        None if failure is None else failure.message,
        started_ns=started_ns,
        seed=None,
        labels=config.labels,
        config={
            "command": config.command,
            "hz": config.hz,
            "idle_s": config.idle_s,
            "sources": [s.describe() for s in config.sources],
        },
        summary=sections,
        clock_anchor=data.anchor,
    )
    run_dir = commit_power_run(writer, data, t0, config.report, sink)
    if failure is not None:
        raise failure
    return Recorded(run_dir, status, summary)


def _phase(on_phase: Callable[[str], None] | None, message: str) -> None:
    if on_phase:
        on_phase(message)


def _exit_status(code: int | None) -> int:
    # As a shell reports it: a command killed by signal N exits 128 + N.
    if code is None:
        return 1
    return 128 - code if code < 0 else code


def write_power_files(
    writer: RunWriter, data: PowerData, t0_ns: int, events: Sequence[dict[str, Any]] = ()
) -> None:
    """power.parquet, sensors.parquet and events.parquet (the sources' events and phase marks,
    with ``events`` of the run's own, such as its warnings)."""
    writer.write_table("power.parquet", data.power_table(writer.run_id, t0_ns))
    writer.write_table("sensors.parquet", data.sensor_table(writer.run_id, t0_ns))
    merged = sorted([*data.events, *events], key=lambda e: e["mono_ns"])
    writer.write_table("events.parquet", event_table(writer.run_id, t0_ns, merged))


def commit_power_run(
    writer: RunWriter, data: PowerData, t0_ns: int, report: bool, sink: WarningSink
) -> Path:
    """Writes the power files beside the run's manifest and summary, then publishes it."""
    write_power_files(writer, data, t0_ns, sink.events())
    run_dir = publish(writer)
    if report:
        from iowatt.report import write_report

        write_report([run_dir], run_dir / "report.html")
    return run_dir
