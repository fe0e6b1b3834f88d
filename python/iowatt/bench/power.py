"""Power around a bench: the session (idle baseline, the work) and the power section of
summary.json."""

from __future__ import annotations

from typing import Any

from iowatt.bench.config import BenchConfig, Outcome
from iowatt.power.session import PowerSession


class BenchPower(PowerSession):
    """Power recording around a bench's workloads, when ``--power`` asked for it."""

    def __init__(self, config: BenchConfig) -> None:
        super().__init__(config.power, config.power_hz, config.idle_s, config.clock_anchor)

    def summary(self, outcomes: list[Outcome]) -> dict[str, Any] | None:
        """The power section of summary.json: energy per workload, above idle, per op."""
        if self.data is None:
            return None
        from iowatt.power.summary import Window, span, summarize  # numpy, Arrow: with --power

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
