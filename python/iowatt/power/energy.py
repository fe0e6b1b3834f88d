"""Energy arithmetic on power series: pure functions on arrays, no I/O.

A series is what one channel recorded: sample times (CLOCK_MONOTONIC ns) and either watts
(meters, IPMI, hwmon power) or a cumulative energy counter in joules (RAPL, hwmon energy).

- Power samples are integrated with the trapezoidal rule over the *actual* sample times. A step
  longer than ``max_gap_ns`` is a gap: it is not bridged, its length is reported, and the
  average power is taken over the covered time only.
- A counter already integrates: energy over a window is the difference of the counter at the
  window's edges (linearly interpolated between samples), exact across gaps, which are still
  reported.
- Window edges are interpolated, so a job that starts between two samples is charged only for
  its own part of the step.

Saving arithmetic follows the spec (``shared/spec/replay-and-power.md``, "Energy arithmetic"):
a faster run saves about time saved × (running power − idle power) × PUE.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

GAP_FACTOR = 3.0  # a step longer than 3 typical steps is a gap, not a sample interval
NS = 1e9


@dataclass
class Series:
    """One channel's samples, sorted by time. Exactly one of ``watts``/``joules`` is the
    measured quantity; for counters ``watts`` holds the derived rate."""

    mono_ns: IntArray
    watts: FloatArray
    joules: FloatArray | None = None

    @property
    def is_counter(self) -> bool:
        return self.joules is not None


@dataclass
class WindowEnergy:
    """What one channel spent over one window."""

    energy_j: float
    avg_w: float
    peak_w: float
    duration_s: float
    covered_s: float
    gap_s: float
    samples: int
    gaps: list[tuple[float, float]] = field(default_factory=list)  # (start, end) s from t0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def counter_series(mono_ns: IntArray, joules: FloatArray) -> Series:
    """A counter series with its rate: the watts of each step, stamped at the step's end."""
    order = np.argsort(mono_ns, kind="stable")
    t, j = mono_ns[order], joules[order]
    watts = np.full(len(t), np.nan)
    if len(t) > 1:
        dt = np.diff(t) / NS
        with np.errstate(divide="ignore", invalid="ignore"):
            watts[1:] = np.where(dt > 0, np.diff(j) / dt, np.nan)
    return Series(t, watts, j)


def power_series(mono_ns: IntArray, watts: FloatArray) -> Series:
    order = np.argsort(mono_ns, kind="stable")
    return Series(mono_ns[order], watts[order])


def max_gap_ns(mono_ns: IntArray, nominal_period_ns: float | None = None) -> float:
    """The longest step still counted as sampling: GAP_FACTOR × the typical (median) step,
    or × the nominal period when that is longer (a source polled slower than asked)."""
    steps = np.diff(mono_ns)
    typical = float(np.median(steps)) if len(steps) else 0.0
    return GAP_FACTOR * max(typical, nominal_period_ns or 0.0)


def _interp(t: IntArray, y: FloatArray, at: int) -> float:
    return float(np.interp(at, t, y))


def window_energy(
    s: Series, start_ns: int, end_ns: int, gap_ns: float, t0_ns: int | None = None
) -> WindowEnergy:
    """Energy of ``s`` over ``[start_ns, end_ns]``; see the module doc for gaps and edges."""
    t0 = start_ns if t0_ns is None else t0_ns
    duration = max(end_ns - start_ns, 0) / NS
    ok = np.isfinite(s.joules if s.joules is not None else s.watts)
    t = s.mono_ns[ok]
    if len(t) == 0 or end_ns <= start_ns:
        return WindowEnergy(0.0, float("nan"), float("nan"), duration, 0.0, duration, 0)
    # Points inside the window, plus the window's edges where samples straddle them.
    inside = (t > start_ns) & (t < end_ns)
    lo, hi = max(start_ns, int(t[0])), min(end_ns, int(t[-1]))
    knots = np.unique(np.concatenate([[lo], t[inside], [hi]])) if hi > lo else np.array([lo])
    gaps: list[tuple[float, float]] = []
    if lo - start_ns > gap_ns / 2:
        gaps.append(((start_ns - t0) / NS, (lo - t0) / NS))
    steps = np.diff(knots)
    # A step is a gap when the samples around it are far apart (not when it was cut short by
    # an edge), so test the distance between the real samples that bound it.
    left = np.searchsorted(t, knots[:-1], side="right") - 1
    right = np.searchsorted(t, knots[1:], side="left")
    span = t[np.minimum(right, len(t) - 1)] - t[np.maximum(left, 0)]
    in_gap = span > gap_ns
    for a, b in zip(knots[:-1][in_gap], knots[1:][in_gap], strict=True):
        gaps.append(((a - t0) / NS, (b - t0) / NS))
    if end_ns - hi > gap_ns / 2:
        gaps.append(((hi - t0) / NS, (end_ns - t0) / NS))
    covered = float(steps[~in_gap].sum()) / NS
    watts_ok = s.watts[ok]
    w_in = watts_ok[(t >= start_ns) & (t <= end_ns)]
    w_in = w_in[np.isfinite(w_in)]
    peak = float(w_in.max()) if len(w_in) else float("nan")
    if s.joules is not None:
        j = s.joules[ok]
        energy = _interp(t, j, hi) - _interp(t, j, lo) if hi > lo else 0.0
        span_s = (hi - lo) / NS
        avg = energy / span_s if span_s > 0 else float("nan")
    else:
        w = np.interp(knots, t, watts_ok)
        step_j = (w[:-1] + w[1:]) / 2 * steps / NS
        energy = float(step_j[~in_gap].sum())
        avg = energy / covered if covered > 0 else float("nan")
    return WindowEnergy(
        energy_j=energy,
        avg_w=avg,
        peak_w=peak,
        duration_s=duration,
        covered_s=covered,
        gap_s=float(sum(b - a for a, b in gaps)),
        samples=int(((t >= start_ns) & (t <= end_ns)).sum()),
        gaps=gaps,
    )


def dynamic_energy(energy_j: float, idle_w: float | None, duration_s: float) -> float | None:
    """Energy above the idle baseline: what the work itself cost."""
    if idle_w is None or not np.isfinite(idle_w):
        return None
    return energy_j - idle_w * duration_s


@dataclass
class Work:
    """One side of a comparison: how long the work took, what it cost, and the idle power."""

    seconds: float
    energy_j: float
    avg_w: float
    idle_w: float | None = None


def compare(baseline: Work, candidate: Work, pue: float) -> dict[str, Any]:
    """Time and energy saved by the candidate, measured and as the spec's estimate."""
    time_saved = baseline.seconds - candidate.seconds
    energy_saved = baseline.energy_j - candidate.energy_j
    idle = baseline.idle_w if baseline.idle_w is not None else candidate.idle_w
    estimate = None
    if idle is not None:
        # The spec's rule: the time saved is time the node would have kept running instead of
        # idling, at the baseline's running power, and every joule costs PUE joules at the wall.
        estimate = time_saved * (baseline.avg_w - idle) * pue
    faster = candidate.seconds < baseline.seconds
    return {
        "time_saved_s": time_saved,
        "time_saved_pct": _pct(time_saved, baseline.seconds),
        "energy_saved_j": energy_saved,
        "energy_saved_pct": _pct(energy_saved, baseline.energy_j),
        "pue": pue,
        "facility_energy_saved_j": energy_saved * pue,
        "estimated_saving_j": estimate,
        "idle_w": idle,
        "power_change_w": candidate.avg_w - baseline.avg_w,
        "faster_drew_more_power": bool(faster and candidate.avg_w > baseline.avg_w),
    }


def _pct(part: float, whole: float) -> float | None:
    return 100.0 * part / whole if whole else None
