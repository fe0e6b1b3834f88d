"""Live progress for the terminal: one bar per workload and a running ops/s figure (on stderr,
so stdout stays clean for --json)."""

from __future__ import annotations

import time
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, TextColumn, TimeRemainingColumn
from rich.progress import Progress as Bars

from iowatt._engine import Progress
from iowatt.bench.config import WorkloadConfig
from iowatt.units import format_bytes, format_ns, format_rate


def bar(label: str, transient: bool = False) -> Bars:
    """iowatt's progress bar on stderr: a label, the bar, its percentage, the time left and a
    live text (the task's ``live`` field)."""
    return Bars(
        TextColumn(label),
        BarColumn(bar_width=30),
        TextColumn("{task.percentage:>3.0f}%"),
        TimeRemainingColumn(),
        TextColumn("{task.fields[live]}"),
        console=Console(stderr=True),
        transient=transient,
    )


class RichReporter:
    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console(stderr=True)
        self.bars = Bars(
            TextColumn("{task.description:<28}"),
            BarColumn(bar_width=30),
            TextColumn("{task.percentage:>3.0f}%"),
            TimeRemainingColumn(),
            TextColumn("{task.fields[live]}"),
            console=self.console,
            transient=False,
        )
        self.task: Any = None
        self.last: tuple[float, int, int] = (0.0, 0, 0)

    def workload_started(self, wl: WorkloadConfig) -> None:
        if not self.bars.live.is_started:
            self.bars.start()
        self.task = self.bars.add_task(wl.name, total=wl.runtime_s + wl.ramp_s, live="")
        self.last = (time.monotonic(), 0, 0)

    def update(self, wl: WorkloadConfig, progress: Progress) -> None:
        p = progress
        if p["phase"] == "preparing":
            total = p["prepare_total"] or 1
            live = f"laying out {format_bytes(p['prepared_bytes'])} / {format_bytes(total)}"
            self.bars.update(self.task, completed=0, live=live)
            return
        now = time.monotonic()
        t0, ops0, bytes0 = self.last
        dt = now - t0
        if dt < 0.5:
            return
        ops_s = (p["ops"] - ops0) / dt
        mib_s = (p["bytes"] - bytes0) / dt / (1 << 20)
        self.last = (now, p["ops"], p["bytes"])
        start = p["measure_start_ns"] - wl.ramp_s * 1e9
        elapsed = max(0.0, (time.monotonic_ns() - start) / 1e9)
        phase = "ramp " if p["phase"] == "ramp" else ""
        live = f"{phase}{format_rate(ops_s)} ops/s  {mib_s:,.1f} MiB/s"
        self.bars.update(self.task, completed=elapsed, live=live)

    def workload_finished(self, wl: WorkloadConfig, summary: dict[str, Any]) -> None:
        lat = summary["latency_ns"]
        live = (
            f"{format_rate(summary['ops_s'])} ops/s  {summary['mib_s']:,.1f} MiB/s  "
            f"p99 {format_ns(lat['p99'])}"
        )
        done = wl.runtime_s + wl.ramp_s
        if summary["status"] != "complete":
            # The bar stays where the run stopped: the measured time (a ramp counts if it
            # was passed).
            measured = summary["runtime_s"]
            done = min(done, measured + (wl.ramp_s if measured > 0 else 0.0))
            live = f"{summary['status']} after {measured:.1f} s  {live}"
        self.bars.update(self.task, completed=done, live=live)

    def note(self, message: str) -> None:
        self.console.print(message, markup=False, highlight=False)

    def close(self) -> None:
        if self.bars.live.is_started:
            self.bars.stop()
