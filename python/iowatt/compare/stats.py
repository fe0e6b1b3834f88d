"""Honest statistics for comparing benchmark runs: medians, their uncertainty, and tests.

Benchmark runs are few, skewed and sometimes disturbed, so everything here is built on the
median and on resampling rather than on means and normal theory:

- :func:`describe` gives the median, the quartiles and a bootstrap percentile confidence
  interval of the median (Efron & Tibshirani, *An Introduction to the Bootstrap*, 1993, ch. 13).
- :func:`difference` gives the % difference of medians, its bootstrap interval (both samples
  resampled independently) and a two-sided test: Mann-Whitney U (Mann & Whitney, 1947, via
  :func:`scipy.stats.mannwhitneyu`) or a permutation test on the difference of medians (Good,
  *Permutation, Parametric and Bootstrap Tests of Hypotheses*, 2005), exact when the number of
  splits is small and otherwise Monte Carlo with the (count + 1) / (resamples + 1) correction
  (Phipson & Smyth, 2010) so a p-value is never 0.

A p-value is ``nan`` when a test is impossible (an empty sample) and 1.0 when it is possible but
the data carry no evidence of a difference (every value equal). Every resampling is vectorised
with one draw from the caller's generator, so results are reproducible and a cell with hundreds
of runs answers in milliseconds.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from numpy.typing import ArrayLike

TESTS = ("mann-whitney", "permutation")

Floats = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Summary:
    """The median of a sample with its spread and the uncertainty of the median itself."""

    n: int
    median: float
    q1: float
    q3: float
    ci_low: float
    ci_high: float


@dataclass(frozen=True)
class Difference:
    """How much a sample's median differs from a control's, and whether it could be chance."""

    pct: float
    ci_low: float
    ci_high: float
    p_value: float
    test: str


def as_sample(x: ArrayLike, name: str = "x") -> Floats:
    """``x`` as a 1-D float array, refusing NaN and infinities: a failed run must be dropped
    (or counted) by the caller, not silently averaged into a median."""
    a = np.asarray(x, dtype=np.float64)
    if a.ndim != 1:
        raise ValueError(f"`{name}` must be one-dimensional, got shape {a.shape}")
    bad = np.flatnonzero(~np.isfinite(a))
    if bad.size:
        raise ValueError(f"`{name}` has a non-finite value `{a[bad[0]]}` at index {bad[0]}")
    return a


def describe(
    x: ArrayLike,
    *,
    confidence: float = 0.95,
    resamples: int = 2000,
    rng: np.random.Generator,
) -> Summary:
    """Median, quartiles and a bootstrap CI of the median; the CI is ``nan`` below two runs
    because one run says nothing about its own variability."""
    a = as_sample(x)
    _check_settings(confidence, resamples)
    if a.size == 0:
        return Summary(0, math.nan, math.nan, math.nan, math.nan, math.nan)
    q1, median, q3 = np.quantile(a, [0.25, 0.5, 0.75])
    low, high = math.nan, math.nan
    if a.size >= 2:
        low, high = _interval(_bootstrap_medians(a, resamples, rng), confidence)
    return Summary(a.size, float(median), float(q1), float(q3), low, high)


def difference(
    x: ArrayLike,
    control: ArrayLike,
    *,
    test: str = "mann-whitney",
    confidence: float = 0.95,
    resamples: int = 2000,
    rng: np.random.Generator,
) -> Difference:
    """The % difference of ``x``'s median from ``control``'s, its bootstrap CI and a p-value.

    The interval resamples both samples independently, as the runs of two environments are; it
    is ``nan`` when either sample has fewer than two runs or a resampled control median is 0.
    """
    if test not in TESTS:
        raise ValueError(f"unknown test `{test}`: expected one of {', '.join(TESTS)}")
    a, c = as_sample(x, "x"), as_sample(control, "control")
    _check_settings(confidence, resamples)
    pct = math.nan
    if a.size and c.size and np.median(c) != 0:
        pct = 100.0 * (float(np.median(a)) / float(np.median(c)) - 1.0)
    low, high = math.nan, math.nan
    if a.size >= 2 and c.size >= 2:
        low, high = _ratio_interval(a, c, confidence, resamples, rng)
    return Difference(pct, low, high, _p_value(a, c, test, resamples, rng), test)


def _check_settings(confidence: float, resamples: int) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence `{confidence}` must be between 0 and 1 (e.g. 0.95)")
    if resamples < 1:
        raise ValueError(f"resamples `{resamples}` must be at least 1")


def _bootstrap_medians(a: Floats, resamples: int, rng: np.random.Generator) -> Floats:
    """The medians of ``resamples`` bootstrap resamples of ``a``, drawn without building them.

    A resample draws ``sorted(a)[floor(U·n)]`` for n uniforms U, so its k-th smallest value is
    that of the k-th smallest uniform, which is Beta(k, n − k + 1); the next one up is that
    plus (1 − it)·Beta(1, n − k). Same distribution as resampling, at O(1) per resample instead
    of O(n): a cell of thousands of runs costs milliseconds, not seconds.
    """
    s = np.sort(a)
    n = s.size
    k = (n + 1) // 2  # the (lower) middle rank, 1-based
    u = rng.beta(k, n - k + 1, size=resamples)
    low = s[np.minimum((u * n).astype(np.int64), n - 1)]
    if n % 2:
        return low
    v = u + (1.0 - u) * rng.beta(1, n - k, size=resamples)
    return (low + s[np.minimum((v * n).astype(np.int64), n - 1)]) / 2.0


def _interval(estimates: Floats, confidence: float) -> tuple[float, float]:
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(estimates, [tail, 1.0 - tail])
    return float(low), float(high)


def _ratio_interval(
    a: Floats, c: Floats, confidence: float, resamples: int, rng: np.random.Generator
) -> tuple[float, float]:
    ma = _bootstrap_medians(a, resamples, rng)
    mc = _bootstrap_medians(c, resamples, rng)
    # A zero control median in any resample makes the ratio undefined, not infinite.
    if np.any(mc == 0):
        return math.nan, math.nan
    return _interval(100.0 * (ma / mc - 1.0), confidence)


def _p_value(a: Floats, c: Floats, test: str, resamples: int, rng: np.random.Generator) -> float:
    if a.size == 0 or c.size == 0:
        return math.nan
    pooled = np.concatenate([a, c])
    if np.ptp(pooled) == 0:
        # Every value equal: the test is possible and finds nothing; some implementations
        # divide by a zero variance here, so answer directly.
        return 1.0
    if test == "mann-whitney":
        from scipy import stats  # ~0.5 s to import: only when a test is computed

        return float(stats.mannwhitneyu(a, c, alternative="two-sided", method="auto").pvalue)
    return _permutation_p(pooled, a.size, resamples, rng)


def _permutation_p(pooled: Floats, n1: int, resamples: int, rng: np.random.Generator) -> float:
    """Two-sided permutation p of |median(first n1) − median(rest)| over splits of ``pooled``."""
    n = pooled.size
    observed = abs(float(np.median(pooled[:n1]) - np.median(pooled[n1:])))
    exact = math.comb(n, n1) <= resamples
    if exact:
        # Every split once, the observed one included, so p is exact (a multiple of 1/C).
        members = np.array(list(itertools.combinations(range(n), n1)))
        chosen = np.zeros((len(members), n), dtype=bool)
        np.put_along_axis(chosen, members, True, axis=1)
        order = np.argsort(~chosen, axis=1, kind="stable")
    else:
        order = rng.permuted(np.tile(np.arange(n), (resamples, 1)), axis=1)
    groups = pooled[order]
    null = np.abs(np.median(groups[:, :n1], axis=1) - np.median(groups[:, n1:], axis=1))
    # Medians of equal values computed in another order may differ in the last bit.
    hits = int(np.sum(null >= observed - 1e-12 * float(np.max(np.abs(pooled)))))
    return hits / len(order) if exact else (hits + 1) / (resamples + 1)
