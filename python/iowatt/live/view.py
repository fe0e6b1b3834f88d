"""What the live dashboard shows, computed from consecutive snapshots — kept apart from the
terminal so it is tested without one: per-second rates by a chosen breakdown, the columns of a
heatmap (the latency, or a histogram beside it: a replay's time to first byte), power, fans and
the stimulus, and the events a user should notice.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from iowatt.histogram import DEFAULT_SLOW_NS, HEAT_EDGES_NS
from iowatt.live.board import Counts, Labels, Latency, Snapshot
from iowatt.units import format_ns

# Bands above this edge are "slow" (the study's 100 ms).
SLOW_BAND = HEAT_EDGES_NS.index(DEFAULT_SLOW_NS[0]) + 1
SLOW_TEXT = format_ns(DEFAULT_SLOW_NS[0])
ALL = "all"
LATENCY = "latency"  # the heatmap of every series' latency; others are named as in Counts.beside
HISTORY_S = 600


@dataclass
class Row:
    """One group of the breakdown over the last second."""

    name: str
    ops_s: float
    mib_s: float
    slow_share: float | None  # of the measured operations; None when none were measured
    errors: int  # in the last second
    total_ops: int


@dataclass
class View:
    """The dashboard's state: the snapshots seen, the breakdown, and what to draw."""

    breakdown: str = "workload"
    group: str = ALL  # whose heatmap is drawn
    histogram: str = LATENCY  # which of their histograms
    last: Snapshot | None = None
    before: Snapshot | None = None
    # per second: each series' operations per heatmap band, by histogram
    seconds: deque[dict[Labels, dict[str, list[int]]]] = field(
        default_factory=lambda: deque(maxlen=HISTORY_S)
    )
    events: deque[str] = field(default_factory=lambda: deque(maxlen=200))
    slowing: set[Labels] = field(default_factory=set)  # series with slow operations lately

    def breakdowns(self) -> list[str]:
        """The labels series carry (workload, disk, flowop, host …), in a stable order."""
        if self.last is None:
            return [self.breakdown]
        names = {name for key in self.last.series for name, _ in key}
        return sorted(names) or [self.breakdown]

    def groups(self) -> list[str]:
        return [ALL, *sorted(_grouped(self.last, self.breakdown))] if self.last else [ALL]

    def next_breakdown(self) -> None:
        options = self.breakdowns()
        i = options.index(self.breakdown) if self.breakdown in options else -1
        self.breakdown = options[(i + 1) % len(options)]
        self.group = ALL

    def next_group(self, step: int = 1) -> None:
        options = self.groups()
        i = options.index(self.group) if self.group in options else 0
        self.group = options[(i + step) % len(options)]

    def histograms(self) -> list[str]:
        """The latency, then the histograms the series keep beside it (a replay's ``ttfb`` and
        ``service``)."""
        series = self.last.series.values() if self.last else ()
        return [LATENCY, *dict.fromkeys(name for c in series for name in c.beside)]

    def next_histogram(self) -> None:
        options = self.histograms()
        i = options.index(self.histogram) if self.histogram in options else -1
        self.histogram = options[(i + 1) % len(options)]

    def add(self, now: Snapshot) -> None:
        """The next snapshot: events, and a heatmap column of the time since the last one."""
        before, self.before, self.last = self.last, self.last, now
        if before is None or now.run.get("run_id") != before.run.get("run_id"):
            self._event(now, f"run {now.run.get('run_id', '?')} ({now.run.get('kind', '?')})")
        if before is None:
            return
        deltas = {key: _minus(c, before.series.get(key, Counts())) for key, c in now.series.items()}
        for key, d in deltas.items():
            name = ", ".join(v for _, v in key)
            if key not in before.series:
                self._event(now, f"{name} started")
            if d.errors:
                how = ", ".join(f"{k} {n:,}" for k, n in sorted(d.errors_by_kind.items()))
                self._event(now, f"{name}: {d.errors:,} errors" + (f" ({how})" if how else ""))
            # Said when slow operations start and when they stop, not every second.
            slow = sum(d.bands[SLOW_BAND:])
            if slow and key not in self.slowing:
                self._event(now, f"{name}: operations above {SLOW_TEXT} ({slow:,} this second)")
                self.slowing.add(key)
            elif not slow and key in self.slowing and d.measured:
                self._event(now, f"{name}: none above {SLOW_TEXT} again")
                self.slowing.discard(key)
        self.seconds.append(
            {
                key: {LATENCY: d.bands, **{name: h.bands for name, h in d.beside.items()}}
                for key, d in deltas.items()
            }
        )
        if now.step != before.step and now.step is not None:
            stimulus = ", ".join(f"{k} {v:g}" for k, v in now.stimulus.items())
            self._event(now, f"step {now.step[0]}/{now.step[1]}: {stimulus}")
        if now.ended and not before.ended:
            self._event(now, "run ended")

    def rows(self) -> list[Row]:
        """The last second (since the snapshot before) by the current breakdown."""
        if self.before is None or self.last is None:
            return []
        dt = max(self.last.t_s - self.before.t_s, 1e-9)
        was = _grouped(self.before, self.breakdown)
        out = []
        for name, c in sorted(_grouped(self.last, self.breakdown).items()):
            d = _minus(c, was.get(name, Counts()))
            slow = sum(d.bands[SLOW_BAND:])
            out.append(
                Row(
                    name,
                    d.ops / dt,
                    d.bytes / dt / 2**20,
                    slow / d.measured if d.measured else None,
                    d.errors,
                    c.ops,
                )
            )
        return out

    def columns(self) -> list[list[int]]:
        """The heatmap of the chosen group (or all) under the current breakdown, a column per
        second."""
        out = []
        for second in self.seconds:
            column = [0] * (len(HEAT_EDGES_NS) + 1)
            for key, histograms in second.items():
                bands = histograms.get(self.histogram)
                if bands and self.group in (ALL, dict(key).get(self.breakdown)):
                    column = [a + b for a, b in zip(column, bands, strict=True)]
            out.append(column)
        return out

    def _event(self, s: Snapshot, text: str) -> None:
        self.events.append(f"{_clock(s.elapsed_s)} {text}")


def _clock(t_s: float) -> str:
    t = max(0, int(t_s))
    return f"{t // 3600:d}:{t // 60 % 60:02d}:{t % 60:02d}"


def _grouped(s: Snapshot | None, label: str) -> dict[str, Counts]:
    out: dict[str, Counts] = {}
    for key, c in s.series.items() if s else ():
        name = dict(key).get(label, "")
        out[name] = out.get(name, Counts()) + c
    return out


def _minus(a: Counts, b: Counts) -> Counts:
    # A counter that went back (a new process on the same port) starts over from zero.
    if a.ops < b.ops:
        return a
    kinds = {k: n - b.errors_by_kind.get(k, 0) for k, n in a.errors_by_kind.items()}
    return Counts(
        a.ops - b.ops,
        a.bytes - b.bytes,
        a.errors - b.errors,
        _bands_minus(a.bands, b.bands),
        a.latency_sum_s - b.latency_sum_s,
        {k: n for k, n in kinds.items() if n > 0},
        {
            name: Latency(_bands_minus(h.bands, was.bands), h.sum_s - was.sum_s)
            for name, h in a.beside.items()
            for was in [b.beside.get(name, Latency())]
        },
    )


def _bands_minus(a: list[int], b: list[int]) -> list[int]:
    return [max(0, x - y) for x, y in zip(a, b, strict=True)]
