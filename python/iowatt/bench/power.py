"""Power around a bench: the idle baseline, the work, and the power section of summary.json."""

from __future__ import annotations

import time
from typing import Any

from iowatt.bench.config import BenchConfig, Outcome, Reporter
from iowatt.power.recording import PowerData, Recording
from iowatt.power.summary import Window, span, summarize


class BenchPower:
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
            reporter.note(f"measuring idle power for {self.config.idle_s:g} s before the work")
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
        """The power section of summary.json: energy per workload, above idle, per op."""
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
