"""What a running verb publishes for the live view: a board the verbs write to as they go and a
scrape reads whole (:meth:`Board.snapshot`).

Workload counters are read from the engines themselves on each snapshot — nothing is copied per
operation. A workload name that runs again (the next step of a sweep, the next run of a campaign)
carries on from where the last one ended, so every counter only grows and a ``rate()`` spans
steps and runs.
"""

from __future__ import annotations

import bisect
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from iowatt._engine import LiveCounts
from iowatt.bands import HEAT_EDGES_NS


def _no_bands() -> list[int]:
    return [0] * (len(HEAT_EDGES_NS) + 1)


@dataclass
class Latency:
    """A latency histogram by heatmap band, and the sum of its latencies."""

    bands: list[int] = field(default_factory=_no_bands)
    sum_s: float = 0.0

    def __add__(self, other: Latency) -> Latency:
        bands = [a + b for a, b in zip(self.bands, other.bands, strict=True)]
        return Latency(bands, self.sum_s + other.sum_s)


@dataclass
class Counts:
    """One series' totals so far: operations, bytes, errors (and by kind), and latencies by
    heatmap band; a replay's also has histograms beside its latency (``ttfb``, ``service``)."""

    ops: int = 0
    bytes: int = 0
    errors: int = 0
    bands: list[int] = field(default_factory=_no_bands)
    latency_sum_s: float = 0.0
    errors_by_kind: dict[str, int] = field(default_factory=dict)  # EIO, ENOSPC, timeout …
    beside: dict[str, Latency] = field(default_factory=dict)

    @classmethod
    def of(cls, live: LiveCounts) -> Counts:
        beside = live.get("beside", {})
        return cls(
            live["ops"],
            live["bytes"],
            live["errors"],
            list(live["bands"] or _no_bands()),
            live["sum_ns"] / 1e9,
            dict(live["errors_by_kind"]),
            {k: Latency(list(h["bands"]), h["sum_ns"] / 1e9) for k, h in beside.items()},
        )

    def __add__(self, other: Counts) -> Counts:
        kinds = dict(self.errors_by_kind)
        for kind, n in other.errors_by_kind.items():
            kinds[kind] = kinds.get(kind, 0) + n
        beside = dict(self.beside)
        for name, h in other.beside.items():
            beside[name] = beside[name] + h if name in beside else h
        return Counts(
            self.ops + other.ops,
            self.bytes + other.bytes,
            self.errors + other.errors,
            [a + b for a, b in zip(self.bands, other.bands, strict=True)],
            self.latency_sum_s + other.latency_sum_s,
            kinds,
            beside,
        )

    @property
    def measured(self) -> int:
        """Operations whose latency is in the bands (the measured phase's)."""
        return sum(self.bands)


# A series' labels, e.g. (("workload", "randomread"),); sorted, so equal label sets match.
Labels = tuple[tuple[str, str], ...]
Reader = Callable[[], Counts]


class Counted(Protocol):
    """An engine a scrape reads (``_engine.WorkloadRun``, ``_engine.Replay``)."""

    def live(self, edges_ns: Sequence[int]) -> LiveCounts: ...


def labels_of(labels: Mapping[str, str]) -> Labels:
    return tuple(sorted(labels.items()))


@dataclass
class Snapshot:
    """Everything the live view shows at one instant; also what a scrape of an endpoint or a
    stored run's second is read back into (:mod:`iowatt.live.feed`)."""

    t_s: float  # when it was taken: seconds on a clock of the reader's, what rates divide by
    elapsed_s: float = 0.0  # into the run (a campaign starts over with each run)
    run: dict[str, str] = field(default_factory=dict)  # run_id, kind, and the run's labels
    started_s: float | None = None  # the run's start, Unix seconds
    ended: bool = False
    series: dict[Labels, Counts] = field(default_factory=dict)
    joules: dict[str, float] = field(default_factory=dict)  # per power channel
    watts: dict[str, float] = field(default_factory=dict)
    fan_duty: dict[str, float] = field(default_factory=dict)  # 0..1
    fan_rpm: dict[str, float] = field(default_factory=dict)
    celsius: dict[str, float] = field(default_factory=dict)
    # A sweep's stimulus by kind, in its metric's unit: "fan" 0..1, "amplitude" g RMS, …
    stimulus: dict[str, float] = field(default_factory=dict)
    step: tuple[int, int] | None = None  # (step done or under way, 1-based; of how many)
    # An emulated disk's speed under its stimulus: the fraction r of its own it keeps, 0..1.
    speed: float | None = None


class Board:
    """The live state of one iowatt process; thread-safe (verbs write, the endpoint reads)."""

    def __init__(self, listened: bool = True) -> None:
        # Unlistened (nothing serves it), the board skips what costs per sample: readings.
        self.listened = listened
        self._lock = threading.Lock()
        self._t0 = time.monotonic()
        self._done: dict[Labels, Counts] = {}
        self._running: dict[Labels, Reader] = {}
        self._state = Snapshot(0.0)
        self._last_energy: dict[str, tuple[int, float]] = {}

    def begin(self, run_id: str, kind: str, labels: Mapping[str, str] | None = None) -> None:
        """A run starts (a campaign begins one per repeat): the run's info changes, the
        counters carry on. A label named ``run_id`` or ``kind`` does not hide the run's own."""
        with self._lock:
            self._state.run = {**(labels or {}), "run_id": run_id, "kind": kind}
            self._state.started_s = time.time()
            self._state.ended = False

    def end(self) -> None:
        with self._lock:
            self._state.ended = True

    def watch(self, read: Reader, **labels: str) -> None:
        """A series starts: ``read`` gives its totals so far on every snapshot. A series of the
        same labels that ran before is folded in first, so its counters keep growing."""
        key = labels_of(labels)
        with self._lock:
            if key in self._running:
                self._done[key] = self._done.get(key, Counts()) + self._running[key]()
            self._running[key] = read

    def watch_engine(self, engine: Counted, **labels: str) -> None:
        """An engine (a workload, the replayer) as a series, read on each snapshot."""
        self.watch(lambda: Counts.of(engine.live(HEAT_EDGES_NS)), **labels)

    def count(
        self, latency_s: float, nbytes: int = 0, failed: str | None = None, **labels: str
    ) -> None:
        """One operation ended (a task of ``tasks run``), pushed rather than read; ``failed``
        says how it failed."""
        one = Counts(
            1,
            nbytes,
            int(failed is not None),
            latency_sum_s=latency_s,
            errors_by_kind={failed: 1} if failed else {},
        )
        one.bands[bisect.bisect_left(HEAT_EDGES_NS, round(latency_s * 1e9))] = 1
        self.add(one, **labels)

    def add(self, counts: Counts, **labels: str) -> None:
        """Operations that ended, pushed rather than read (tasks; a stored run replayed)."""
        key = labels_of(labels)
        with self._lock:
            self._done[key] = self._done.get(key, Counts()) + counts

    def set_stimulus(
        self, name: str, value: float, step: int | None = None, steps: int | None = None
    ) -> None:
        """The stimulus in force; ``step`` of ``steps`` for a sweep (an emulated disk has none)."""
        with self._lock:
            self._state.stimulus = {name: value}
            if step is not None and steps is not None:
                self._state.step = (step, steps)

    def set_speed(self, r: float) -> None:
        """An emulated disk's speed at its stimulus, r in 0..1."""
        with self._lock:
            self._state.speed = r

    def readings(self, channels: Sequence[Mapping[str, Any]], chunk: Mapping[str, Any]) -> None:
        """Samples from a power recording's drain (``mono_ns``, ``channel``, ``value``):
        watts and joules per power channel, fan speeds, temperatures."""
        if not self.listened:
            return
        with self._lock:
            s = self._state
            for t, i, v in zip(chunk["mono_ns"], chunk["channel"], chunk["value"], strict=True):
                c = channels[i]
                name, unit = f"{c['source']}/{c['channel']}", c["unit"]
                if unit == "W":
                    s.watts[name] = v
                    self._integrate(name, t, v)
                elif unit == "J":
                    self._count_energy(name, t, v)
                elif unit == "RPM":
                    s.fan_rpm[name] = v
                elif unit == "ratio":  # hwmon's pwmN
                    s.fan_duty[name] = v
                elif unit == "C":
                    s.celsius[name] = v

    def _integrate(self, name: str, t_ns: int, watts: float) -> None:
        # Watts held since the last sample (left rectangle), as the power summary integrates.
        last = self._last_energy.get(name)
        if last is not None and t_ns > last[0]:
            joules = last[1] * (t_ns - last[0]) / 1e9
            self._state.joules[name] = self._state.joules.get(name, 0.0) + joules
        self._state.joules.setdefault(name, 0.0)
        self._last_energy[name] = (t_ns, watts)

    def _count_energy(self, name: str, t_ns: int, counter: float) -> None:
        # An energy counter (RAPL): joules are its increase; a wrap or reset adds nothing.
        last = self._last_energy.get(name)
        s = self._state
        s.joules.setdefault(name, 0.0)
        if last is not None and t_ns > last[0] and counter >= last[1]:
            s.joules[name] += counter - last[1]
            s.watts[name] = (counter - last[1]) / ((t_ns - last[0]) / 1e9)
        self._last_energy[name] = (t_ns, counter)

    def snapshot(self) -> Snapshot:
        """The board now, each running series read from its engine."""
        with self._lock:
            s = self._state
            series = dict(self._done)
            for key, read in self._running.items():
                series[key] = series.get(key, Counts()) + read()
            return Snapshot(
                t_s=time.monotonic() - self._t0,
                elapsed_s=time.time() - s.started_s if s.started_s is not None else 0.0,
                run=dict(s.run),
                started_s=s.started_s,
                ended=s.ended,
                series=series,
                joules=dict(s.joules),
                watts=dict(s.watts),
                fan_duty=dict(s.fan_duty),
                fan_rpm=dict(s.fan_rpm),
                celsius=dict(s.celsius),
                stimulus=dict(s.stimulus),
                step=s.step,
                speed=s.speed,
            )


_current = Board(listened=False)


def board() -> Board:
    """This process's board: the one every verb publishes to and ``--serve`` serves."""
    return _current


def fresh_board(listened: bool) -> Board:
    """Starts a new board for the command (a test runs many commands in one process; each
    serves only its own); ``listened`` when something serves it."""
    global _current
    _current = Board(listened)
    return _current
