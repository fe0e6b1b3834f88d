"""Tail latency fractions, and how seconds with slow operations relate to throughput.

The study behind iowatt's storage workloads ("Tail latency fractions") found that a few
percent of I/Os above 200 ms cost 40 %+ of throughput: every I/O that slow stalled the clients
briefly. Averages and percentiles hide that; these functions measure it.

- :func:`share_above`: the exact fraction of operations above each threshold, from the stored
  HDR buckets. An operation is above T when its bucket's ``value_ns`` (the highest latency the
  bucket stands for) is strictly greater than T: the rule the engine uses for ``slow_ops``, so
  the per-interval counts of a run add up to its whole-run share.
- :func:`interval_relation`: per threshold, the mean ops/s of seconds with and without a slow
  operation, the loss between them, and Spearman's rank correlation (Spearman 1904; ties take
  their mean rank, as in ``scipy.stats.spearmanr``) between each second's slow share and its
  ops/s. Rank correlation is used because the relation is a stall, not a line: one slow I/O
  can halve a second's throughput, a few more change little.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from numpy.typing import ArrayLike

from iowatt.histogram import DEFAULT_SLOW_NS

# The study's thresholds: the fast run had ~11 % of I/O between 100 and 190 ms, the slow one
# 4-6 % above 200 ms.
DEFAULT_THRESHOLDS_NS = DEFAULT_SLOW_NS


def share_above(
    values_ns: ArrayLike, counts: ArrayLike, thresholds_ns: Sequence[int]
) -> list[float]:
    """The fraction of operations whose bucket value is strictly above each threshold.

    A value exactly at a threshold is not above it. An empty histogram has no fraction: each
    share is nan rather than 0, so "nothing measured" never reads as "nothing slow".
    """
    values = np.asarray(values_ns, dtype=np.int64)
    weights = np.asarray(counts, dtype=np.int64)
    if values.shape != weights.shape:
        raise ValueError(f"{values.size} bucket values but {weights.size} counts")
    total = int(weights.sum())
    if total == 0:
        return [math.nan] * len(thresholds_ns)
    return [int(weights[values > int(t)].sum()) / total for t in thresholds_ns]


@dataclass(frozen=True)
class SlowRelation:
    """How the seconds with an operation above ``threshold_ns`` compare with the others."""

    threshold_ns: int
    # intervals with at least one operation or a slow count (empty intervals say nothing)
    seconds: int
    # of those, intervals with at least one operation above the threshold
    seconds_slow: int
    # operations above the threshold / operations, over the whole series
    slow_share: float
    # mean ops/s of the intervals with none above (nan if there are none)
    ops_s_clean: float
    # mean ops/s of the intervals with any above (nan if there are none)
    ops_s_slow: float
    # 100 · (1 − ops_s_slow / ops_s_clean); nan when either mean is missing or clean is 0
    loss_pct: float
    # Spearman's rho between an interval's slow share and its ops/s; nan if either is constant
    rho: float


def mean_ranks(x: ArrayLike) -> npt.NDArray[np.float64]:
    """Ranks from 1, ties at their mean rank (``scipy.stats.rankdata``'s default, without
    importing scipy: the report uses this and must load quickly)."""
    a = np.ravel(np.asarray(x))
    order = np.argsort(a, kind="mergesort")
    inverse = np.empty(order.size, dtype=np.intp)
    inverse[order] = np.arange(order.size)
    sorted_ = a[order]
    first = np.r_[True, sorted_[1:] != sorted_[:-1]]
    dense = first.cumsum()[inverse]
    starts = np.r_[np.nonzero(first)[0], first.size]
    return 0.5 * (starts[dense] + starts[dense - 1] + 1)


def spearman(x: ArrayLike, y: ArrayLike) -> float:
    """Spearman's rank correlation of two equal-length samples, ties at their mean rank.

    nan when there are fewer than two pairs or either sample is constant: the coefficient is
    undefined then, and returning nan avoids the warning ``scipy.stats.spearmanr`` raises.
    """
    a = np.asarray(x, dtype=np.float64)
    b = np.asarray(y, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"spearman needs samples of equal length, got {a.size} and {b.size}")
    if a.size < 2 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return math.nan
    ra = mean_ranks(a) - (a.size + 1) / 2
    rb = mean_ranks(b) - (b.size + 1) / 2
    return float(np.dot(ra, rb) / math.sqrt(float(np.dot(ra, ra)) * float(np.dot(rb, rb))))


def _mean(values: npt.NDArray[np.float64]) -> float:
    return float(values.mean()) if values.size else math.nan


def interval_relation(
    ops_s: ArrayLike, ops: ArrayLike, slow_ns: Sequence[int], slow_ops: ArrayLike
) -> list[SlowRelation]:
    """One :class:`SlowRelation` per threshold of ``slow_ns``, over a series of intervals.

    ``ops_s`` and ``ops`` have one value per interval; ``slow_ops`` is intervals × thresholds
    (the ``slow_ops`` lists of ``intervals.parquet`` stacked). Intervals with neither an
    operation nor a slow count (a zero-length last interval, a workload that had ended) are
    left out: they would count as fast seconds at 0 ops/s.
    """
    rate = np.asarray(ops_s, dtype=np.float64).reshape(-1)
    done = np.asarray(ops, dtype=np.int64).reshape(-1)
    slow = np.asarray(slow_ops, dtype=np.int64)
    if slow.size == 0:
        slow = slow.reshape(rate.size, len(slow_ns))
    if rate.shape != done.shape or slow.shape != (rate.size, len(slow_ns)):
        raise ValueError(
            f"interval_relation needs ops_s and ops of one length and slow_ops of shape "
            f"(intervals, thresholds): got {rate.size}, {done.size} and {slow.shape} "
            f"for {len(slow_ns)} thresholds"
        )
    keep = (done > 0) | (slow > 0).any(axis=1)
    rate, done, slow = rate[keep], done[keep], slow[keep]
    total = int(done.sum())
    out = []
    for k, threshold in enumerate(slow_ns):
        counts = slow[:, k]
        hit = counts > 0
        clean_mean, slow_mean = _mean(rate[~hit]), _mean(rate[hit])
        loss = math.nan
        if clean_mean > 0 and not math.isnan(slow_mean):
            loss = 100.0 * (1.0 - slow_mean / clean_mean)
        # min(slow / ops, 1): a slow count without completed operations is a fully slow second.
        share = counts / np.maximum(done, np.maximum(counts, 1))
        out.append(
            SlowRelation(
                threshold_ns=int(threshold),
                seconds=int(rate.size),
                seconds_slow=int(hit.sum()),
                slow_share=int(counts.sum()) / total if total else math.nan,
                ops_s_clean=clean_mean,
                ops_s_slow=slow_mean,
                loss_pct=loss,
                rho=spearman(share, rate),
            )
        )
    return out
