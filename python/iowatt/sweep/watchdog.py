"""The sweep's monitor thread: journals sensor readings and guards against overheating.

Every half second it drains the sensor recording into the journal. During a fan sweep it is
also the watchdog: when any temperature reaches ``--max-temp``, or a source that reports
temperatures has been silent for ``--stale`` (a BMC that stopped answering), it sets the
stimulus to its safe setting at once — from this thread, so a main thread blocked in a command
or waiting for an operator cannot delay it — and records why. The sweep loop sees
:attr:`Monitor.tripped` and ends the sweep.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from iowatt.power.recording import Recording
from iowatt.sweep.drivers import DriverError
from iowatt.sweep.journal import Journal

POLL_S = 0.5
DEFAULT_MAX_TEMP_C = 85.0
DEFAULT_STALE_S = 10.0


@dataclass(frozen=True)
class Limits:
    max_temp_c: float = DEFAULT_MAX_TEMP_C
    stale_s: float = DEFAULT_STALE_S


class Monitor:
    """See the module docstring; ``limits`` is ``None`` when nothing needs guarding."""

    def __init__(
        self,
        rec: Recording | None,
        journal: Journal,
        limits: Limits | None,
        on_trip: Callable[[], None],
    ) -> None:
        self.rec = rec
        self.journal = journal
        self.limits = limits
        self.on_trip = on_trip
        channels = rec.channels if rec is not None else []
        self.temps = {c["index"]: c for c in channels if c["unit"] == "C"}
        self.temp_sources = sorted({c["source"] for c in self.temps.values()})
        self.tripped: str | None = None
        self.safe_error: DriverError | None = None
        self.safe_done = threading.Event()
        self.latest: dict[str, float] = {}  # "source/channel" → °C, for progress lines
        # How to give control back after a trip (the driver's command), for the message.
        self.restore_hint: Callable[[], str] | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="iowatt-sweep-monitor", daemon=True)
        self._last_seen: dict[str, int] = {}

    def start(self) -> None:
        """Starts the recording, then the thread."""
        if self.rec is not None:
            self.rec.start()
        now = time.monotonic_ns()
        self._last_seen = dict.fromkeys(self.temp_sources, now)
        self._thread.start()

    def stop(self) -> None:
        """Stops the thread, then the recording, and journals its last readings."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        if self.rec is not None:
            self.check(self.rec.halt())

    def _loop(self) -> None:
        while not self._stop.wait(POLL_S):
            self.check()

    def check(self, chunk: dict[str, Any] | None = None) -> None:
        """One round: drain (or take the recording's last ``chunk``), journal, compare."""
        if self.rec is None:
            return
        chunk = chunk if chunk is not None else self.rec.drain()
        self.journal.readings(chunk)
        if self.limits is None or self.tripped is not None:
            return
        self._watch(chunk, self.limits)

    def _watch(self, chunk: dict[str, Any], limits: Limits) -> None:
        channels = np.asarray(chunk["channel"], np.int64)
        values = np.asarray(chunk["value"], np.float64)
        times = np.asarray(chunk["mono_ns"], np.int64)
        for index, c in self.temps.items():
            sel = (channels == index) & np.isfinite(values)
            if not sel.any():
                continue
            self._last_seen[c["source"]] = max(self._last_seen[c["source"]], int(times[sel].max()))
            hottest = float(values[sel].max())
            self.latest[f"{c['source']}/{c['channel']}"] = float(values[sel][-1])
            if hottest >= limits.max_temp_c:
                self.trip(
                    f"{c['channel']} ({c['source']}) read {hottest:g} °C, at or above "
                    f"--max-temp {limits.max_temp_c:g} °C"
                )
                return
        now = time.monotonic_ns()
        for source, seen in self._last_seen.items():
            silent = (now - seen) / 1e9
            if silent >= limits.stale_s:
                self.trip(
                    f"no temperature from `{source}` for {silent:.0f} s (--stale "
                    f"{limits.stale_s:g} s): the sensors stopped answering"
                )
                return

    def trip(self, reason: str) -> None:
        """Safe setting now, then tell the sweep why it must end."""
        self.tripped = reason
        self.journal.event("watchdog", f"{reason}; setting the safe stimulus")
        try:
            self.on_trip()
            self.journal.event("watchdog", "safe stimulus set")
        except DriverError as e:
            self.safe_error = e
            self.journal.event("watchdog", f"the safe stimulus could not be set: {e.message}")
        finally:
            self.safe_done.set()
