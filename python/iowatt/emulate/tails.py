"""Measured tails for the emulated disk (``iowatt emulate mount --curve RUN --tails``): the shape
of a sweep's latency at each step, laid on the time the curve adds.

A sweep's ``latency.parquet`` holds each hold window's HDR histogram of its writes (128 KiB at
QD 16 by default, queueing included). Their absolute values do not transfer to another request
size or depth, so only their shape is used. In each pass the reference step is the one with the
best throughput (``mib_s``; the earliest of that pass on a tie): the disk's norm 1. For a step
s of the pass, X(u) = max(0, L_s(u) − L_ref(u)), from the two windows' quantile functions (the
rule of :mod:`iowatt.histogram`) at u = (i + ½) / n: what the stimulus added at each quantile.
X(u) need not rise with u (a difference of two rising functions), so its n values are sorted:
the quantile function of X(U) for a uniform U, the same distribution. The table the engine
draws from is m = X / mean(X): a request that starts slowed adds
(S / r − S) · m[floor(u · n)] for a uniform u, so E[m] = 1 keeps the mean on the curve. Where
mean(X) = 0 (the reference itself, a step no slower anywhere, a step without writes) the table is
all 1s: the constant S / r − S.

Several passes: a value's windows are pooled as draws of X, each pass equally likely — the n
values of each pass's X sorted together, and each successive group of (passes) averaged into
one of n entries. Each X is taken against its own pass's reference, so drift between passes
(warming, a fan that settled differently) does not turn into a tail; what is pooled is the
added time, whose mean is what the curve's mean over the passes gives. Averaging each pass's
normalised table instead would weigh a pass that barely slowed (X near 0, its shape noise) as
much as one that did, and give no rule for a pass with mean(X) = 0; the pooled mean is exact
(the average of the passes' E[X]) and one pass gives its own table unchanged.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from iowatt.errors import ConfigError

TAIL_POINTS = 256  # n: entries of each step's table

Table = list[tuple[float, list[float]]]  # what the engine's ``tails=`` takes


@dataclass(frozen=True)
class StepTail:
    """Which applied at one stimulus value of the sweep."""

    value: float
    applied: str  # "tail" (its table of m) or "constant" (all 1s: S / r − S)
    windows: int  # hold windows pooled (one per pass measuring the value, with writes)
    mean_extra_ns: float  # E[X] over them: the latency the stimulus added on average
    m_max: float  # the table's largest multiplier (1 for the constant)
    reason: str | None  # why constant

    def as_dict(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "applied": self.applied,
            "windows": self.windows,
            "mean_extra_ms": self.mean_extra_ns / 1e6,
            "m_max": self.m_max,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class Tails:
    """A sweep run's tails for one disk: ``tables`` for the engine, ``steps`` saying which
    applied at each value, and each pass's reference step."""

    run_id: str
    disk: str
    n: int
    tables: Table
    steps: tuple[StepTail, ...]
    references: dict[int, float]  # pass → the value of its best-throughput step

    def as_dict(self) -> dict[str, Any]:
        """For the ``emulate`` run's summary (its ``vibration.tails``)."""
        return {
            "run": self.run_id,
            "disk": self.disk,
            "points": self.n,
            "baseline": "best-throughput step of the same pass",
            "passes": "X pooled over passes",
            "references": {str(p): v for p, v in sorted(self.references.items())},
            "steps": [s.as_dict() for s in self.steps],
        }


def quantiles(
    values_ns: Sequence[int] | npt.NDArray[np.int64],
    counts: Sequence[int] | npt.NDArray[np.int64],
    n: int = TAIL_POINTS,
) -> npt.NDArray[np.float64]:
    """L(u) at u = (i + ½) / n, i = 0 … n − 1, of a bucketed histogram, in ns: percentile
    100·u by :func:`iowatt.histogram.percentiles` (the engine's rule). Zeros when empty."""
    from iowatt.histogram import percentiles

    ps = [100.0 * (i + 0.5) / n for i in range(n)]
    return np.asarray(percentiles(values_ns, counts, ps), dtype=np.float64)


def multipliers(extra_ns: Sequence[npt.NDArray[np.float64]], n: int) -> npt.NDArray[np.float64]:
    """One value's table from its windows' X (each n values, at u = (i + ½) / n): pooled,
    each window equally likely, and divided by its mean. All 1s when the mean is 0."""
    pooled = _pooled(extra_ns, n)
    mean = float(pooled.mean()) if pooled.size else 0.0
    if not mean > 0:
        return np.ones(n)
    return pooled / mean


def _pooled(extra_ns: Sequence[npt.NDArray[np.float64]], n: int) -> npt.NDArray[np.float64]:
    if not extra_ns:
        return np.zeros(0)
    k = len(extra_ns)
    together = np.sort(np.concatenate([np.asarray(x, dtype=np.float64) for x in extra_ns]))
    return together.reshape(n, k).mean(axis=1)


def _disk_of(run_dir: Path, steps: list[dict[str, Any]], disk: str | None) -> str:
    names = sorted({str(r["disk"]) for r in steps})
    if disk is None:
        if len(names) == 1:
            return names[0]
        raise ConfigError(
            f"run `{run_dir.name}` has {len(names)} disks: {', '.join(names)}",
            f"pick one: {run_dir.name}:{names[0] if names else 'DISK'}",
        )
    if disk not in names:
        raise ConfigError(
            f"run `{run_dir.name}` has no disk `{disk}` (its disks: {', '.join(names)})",
            f"give one of them: {run_dir.name}:{names[0] if names else 'DISK'}",
        )
    return disk


def _histograms(
    latency: Path, disk: str
) -> dict[tuple[int, int], tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]]:
    """Each hold window's (pass, step) histogram of ``disk``'s writes."""
    import pyarrow.parquet as pq

    table = pq.read_table(latency)
    names = set(table.column_names)
    if not {"pass_no", "step", "value_ns", "count", "workload"} <= names:
        return {}
    rows = table.select([c for c in ("workload", "flowop", "pass_no", "step", "value_ns",
                                     "count") if c in names]).to_pydict()  # fmt: skip
    buckets: dict[tuple[int, int], tuple[list[int], list[int]]] = defaultdict(lambda: ([], []))
    flowops = rows.get("flowop", [None] * len(rows["workload"]))
    for w, f, p, s, v, c in zip(
        rows["workload"], flowops, rows["pass_no"], rows["step"], rows["value_ns"],
        rows["count"], strict=True,
    ):  # fmt: skip
        if w != disk or f is not None or p is None or s is None:
            continue
        b = buckets[(int(p), int(s))]
        b[0].append(int(v))
        b[1].append(int(c))
    return {
        key: (np.asarray(v, dtype=np.int64), np.asarray(c, dtype=np.int64))
        for key, (v, c) in buckets.items()
    }


def measure_tails(run_dir: Path, disk: str | None = None, n: int = TAIL_POINTS) -> Tails | None:
    """The tails of ``disk`` (None: the run's one disk) in sweep run ``run_dir``, ``n`` entries
    per stimulus value, or None when the run has no latency histograms of it."""
    import pyarrow.parquet as pq

    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n = {n!r}: the tables need at least one entry")
    steps_path, latency_path = run_dir / "steps.parquet", run_dir / "latency.parquet"
    if not steps_path.is_file() or not latency_path.is_file():
        return None
    steps = pq.read_table(steps_path).to_pylist()
    disk = _disk_of(run_dir, steps, disk)
    hists = _histograms(latency_path, disk)
    if not any(int(c.sum()) > 0 for _, c in hists.values()):
        return None
    by_pass: dict[int, list[dict[str, Any]]] = defaultdict(list)
    values: set[float] = set()
    for r in steps:
        if r["disk"] == disk and r["value"] is not None and r["pass_no"] is not None:
            by_pass[int(r["pass_no"])].append(r)
            values.add(float(r["value"]))
    extra: dict[float, list[npt.NDArray[np.float64]]] = defaultdict(list)
    references: dict[int, float] = {}
    for pass_no, rows in sorted(by_pass.items()):
        rows.sort(key=lambda r: int(r["step"]))
        measured = [r for r in rows if _finite(r["mib_s"]) and (pass_no, r["step"]) in hists]
        if not measured or not max(float(r["mib_s"]) for r in measured) > 0:
            continue  # a pass that never wrote has no reference
        best = max(float(r["mib_s"]) for r in measured)
        ref = next(r for r in measured if float(r["mib_s"]) == best)
        references[pass_no] = float(ref["value"])
        l_ref = quantiles(*hists[(pass_no, int(ref["step"]))], n)
        for r in rows:
            hist = hists.get((pass_no, int(r["step"])))
            if hist is None or int(hist[1].sum()) == 0:
                continue  # no writes in this window: nothing to shape
            x = np.maximum(quantiles(*hist, n) - l_ref, 0.0)
            extra[float(r["value"])].append(x)
    tables: Table = []
    infos: list[StepTail] = []
    for value in sorted(values):
        xs = extra.get(value, [])
        pooled = _pooled(xs, n)
        mean = float(pooled.mean()) if pooled.size else 0.0
        if mean > 0:
            table = pooled / mean
            info = StepTail(value, "tail", len(xs), mean, float(table.max()), None)
        else:
            table = np.ones(n)
            why = _why_constant(value, xs, references)
            info = StepTail(value, "constant", len(xs), 0.0, 1.0, why)
        tables.append((value, [float(m) for m in table]))
        infos.append(info)
    return Tails(run_dir.name, disk, n, tables, tuple(infos), references)


def _finite(x: Any) -> bool:
    return x is not None and math.isfinite(float(x))


def _why_constant(value: float, xs: list[Any], references: dict[int, float]) -> str:
    if not xs:
        return "no writes in its hold windows"
    if references and all(v == value for v in references.values()):
        return "the reference step (X = 0)"
    return "no slower than the reference at any quantile (X = 0)"


def tails_from_run(run_dir: Path, disk: str | None, n: int = TAIL_POINTS) -> Table | None:
    """What the engine's ``tails=`` takes, from sweep run ``run_dir``'s ``disk``: per stimulus
    value (ascending) the n multipliers; None without latency histograms. :func:`measure_tails`
    gives the same with which applied at each value."""
    tails = measure_tails(run_dir, disk, n)
    return None if tails is None else tails.tables


def resolve_tails(
    ref: str, results: Path, kind: str | None = None, n: int = TAIL_POINTS
) -> Tails | None:
    """The tails of the curve ``--curve REF`` names (as
    :func:`iowatt.emulate.vibration.resolve_curve` resolves it): a sweep run's, ``RUN:DISK``'s
    or ``latest``'s; None for a curve file or a disk profile, which have no histograms, and for
    a run without them."""
    from iowatt.emulate.vibration import curve_run

    found = curve_run(ref, results, kind)
    return None if found is None else measure_tails(*found, n)
