"""Power recorded around a measuring verb's work (``bench --power``, ``replay --power``): an
idle baseline first when asked, phase marks, draining while the work runs, the data at the end."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from iowatt.power.sources import SourceSpec

if TYPE_CHECKING:
    # Recording loads the meters' parsers and Arrow: imported in start(), when there are
    # sources, so a run without --power does not pay for them.
    from iowatt.power.recording import PowerData, Recording
    from iowatt.power.summary import Window


class PowerSession:
    """Does nothing when there are no sources, so callers need no branch of their own."""

    def __init__(
        self,
        sources: list[SourceSpec],
        hz: float,
        idle_s: float,
        anchor: tuple[int, int] | None,
    ) -> None:
        self.sources, self.hz, self.idle_s, self.anchor = sources, hz, idle_s, anchor
        self.rec: Recording | None = None
        self.t0 = time.monotonic_ns()
        self.idle: Window | None = None
        self.data: PowerData | None = None

    def start(self, note: Callable[[str], None]) -> None:
        """Opens every source (their errors show before any work), then measures idle power
        for ``idle_s`` when asked."""
        if not self.sources:
            return
        from iowatt.power.recording import Recording
        from iowatt.power.summary import Window

        self.rec = Recording(self.sources, self.hz, self.anchor)
        self.t0 = time.monotonic_ns()
        self.rec.start()
        if self.idle_s > 0:
            note(f"measuring idle power for {self.idle_s:g} s before the work")
            start = self.rec.mark("idle")
            self.rec.wait(self.idle_s)
            self.idle = Window(start, time.monotonic_ns())
        self.rec.mark("work")

    def drain(self) -> None:
        if self.rec is not None:
            self.rec.drain()

    def stop(self) -> None:
        if self.rec is not None and self.data is None:
            self.rec.mark("end")
            self.data = self.rec.stop()
