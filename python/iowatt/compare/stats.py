"""Honest statistics for comparing benchmark runs: medians, their uncertainty, and tests.

Benchmark runs are few, skewed and sometimes disturbed, so everything here is built on the
median, on ranks and on resampling rather than on means and normal theory:

- :func:`describe` gives the median, the quartiles and the distribution-free confidence interval
  of the median between two order statistics (Conover, *Practical Nonparametric Statistics*,
  1999, §3.2; Hahn & Meeker, *Statistical Intervals*, 1991, ch. 5): [x₍ₖ₎, x₍ₙ₋ₖ₊₁₎] covers the
  true median with probability 1 − 2·P(B ≤ k − 1), B ~ Binomial(n, ½), whatever the
  distribution (at least that with ties). The widest k reaching the confidence is taken; below
  six runs even [min, max] cannot reach 95 % (it covers 1 − 2·0.5ⁿ: 75 % at 3 runs, 93.75 % at
  5), so the summary carries the coverage the interval has, for the outputs to show. A
  bootstrap percentile interval of the median would cover only about 90 % at 3 runs while
  calling itself 95 %.
- :func:`difference` gives the % difference of medians, its bootstrap percentile interval
  (Efron & Tibshirani, *An Introduction to the Bootstrap*, 1993, ch. 13; both samples resampled
  independently) and a two-sided test from :mod:`iowatt.compare.pvalues`: Mann-Whitney U, exact
  with ties, or a permutation test of the difference of medians.

A p-value is ``nan`` when a test is impossible (an empty sample) and 1.0 when it is possible but
the data carry no evidence of a difference (every value equal). Every resampling is vectorised
with one draw from the caller's generator, so results are reproducible and a cell with hundreds
of runs answers in milliseconds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from numpy.typing import ArrayLike

from iowatt.compare import pvalues

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
    # The probability that [ci_low, ci_high] holds the true median: at least the confidence
    # asked for when the runs allow it, less below six runs; nan without an interval.
    ci_coverage: float


@dataclass(frozen=True)
class Difference:
    """How much a sample's median differs from a control's, and whether it could be chance."""

    pct: float
    ci_low: float
    ci_high: float
    p_value: float
    test: str
    # How p was computed (exact, monte-carlo, normal) and its Monte Carlo standard error.
    p_method: str
    p_error: float


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


def describe(x: ArrayLike, *, confidence: float = 0.95) -> Summary:
    """Median, quartiles and the order-statistic CI of the median; the CI is ``nan`` below two
    runs because one run says nothing about its own variability."""
    a = as_sample(x)
    _check_confidence(confidence)
    if a.size == 0:
        return Summary(0, math.nan, math.nan, math.nan, math.nan, math.nan, math.nan)
    q1, median, q3 = np.quantile(a, [0.25, 0.5, 0.75])
    low, high, coverage = math.nan, math.nan, math.nan
    if a.size >= 2:
        low, high, coverage = median_interval(a, confidence)
    return Summary(a.size, float(median), float(q1), float(q3), low, high, coverage)


def median_interval(a: Floats, confidence: float) -> tuple[float, float, float]:
    """[x₍ₖ₎, x₍ₙ₋ₖ₊₁₎] with the largest k whose coverage reaches ``confidence`` (k = 1 when
    none does), and that coverage."""
    s = np.sort(a)
    covers = order_statistic_coverage(s.size)
    reach = np.flatnonzero(covers >= confidence)
    k = int(reach[-1]) + 1 if reach.size else 1
    return float(s[k - 1]), float(s[s.size - k]), float(covers[k - 1])


def order_statistic_coverage(n: int) -> Floats:
    """``out[k − 1]`` = 1 − 2·P(B ≤ k − 1), B ~ Binomial(n, ½): the coverage of
    [x₍ₖ₎, x₍ₙ₋ₖ₊₁₎] for k = 1 … ⌊n/2⌋ (at least 1 entry)."""
    ks = np.arange(max(n // 2, 1))
    # log C(n, k) by its running ratio, so thousands of runs neither overflow nor underflow.
    steps = np.log((n - ks[:-1]) / (ks[:-1] + 1.0))
    log_pmf = np.concatenate([[0.0], np.cumsum(steps)]) - n * math.log(2.0)
    return np.clip(1.0 - 2.0 * np.cumsum(np.exp(log_pmf)), 0.0, 1.0)


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
    ``resamples`` is the bootstrap's draws, and the permutation test's floor of random splits.
    """
    if test not in TESTS:
        raise ValueError(f"unknown test `{test}`: expected one of {', '.join(TESTS)}")
    a, c = as_sample(x, "x"), as_sample(control, "control")
    _check_confidence(confidence)
    if resamples < 1:
        raise ValueError(f"resamples `{resamples}` must be at least 1")
    pct = math.nan
    if a.size and c.size and np.median(c) != 0:
        pct = 100.0 * (float(np.median(a)) / float(np.median(c)) - 1.0)
    low, high = math.nan, math.nan
    if a.size >= 2 and c.size >= 2:
        low, high = _ratio_interval(a, c, confidence, resamples, rng)
    p = _p_value(a, c, test, resamples, rng)
    return Difference(pct, low, high, p.p, test, p.method, p.error)


def _check_confidence(confidence: float) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence `{confidence}` must be between 0 and 1 (e.g. 0.95)")


def bootstrap_medians(s: Floats, resamples: int, rng: np.random.Generator) -> Floats:
    """Medians of ``resamples`` bootstrap resamples of each row of ``s`` (sorted along its
    last axis): shape ``s.shape[:-1] + (resamples,)``."""
    low, high = median_positions(s.shape[-1], (*s.shape[:-1], resamples), rng)
    return (np.take_along_axis(s, low, axis=-1) + np.take_along_axis(s, high, axis=-1)) / 2.0


def median_positions(
    n: int, shape: tuple[int, ...], rng: np.random.Generator
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Where the two middle values of bootstrap resamples of n sorted values fall (the same
    index twice for odd n), drawn without building the resamples.

    A resample draws ``s[floor(U·n)]`` for n uniforms U, so its k-th smallest value is that of
    the k-th smallest uniform, which is Beta(k, n − k + 1); the next one up is that plus
    (1 − it)·Beta(1, n − k). Same distribution as resampling, at O(1) per resample instead of
    O(n): a cell of thousands of runs costs milliseconds, not seconds.
    """
    k = (n + 1) // 2  # the (lower) middle rank, 1-based
    u = rng.beta(k, n - k + 1, size=shape)
    low = np.minimum((u * n).astype(np.int64), n - 1)
    if n % 2:
        return low, low
    v = u + (1.0 - u) * rng.beta(1, n - k, size=shape)
    return low, np.minimum((v * n).astype(np.int64), n - 1)


def _interval(estimates: Floats, confidence: float) -> tuple[float, float]:
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(estimates, [tail, 1.0 - tail])
    return float(low), float(high)


def _ratio_interval(
    a: Floats, c: Floats, confidence: float, resamples: int, rng: np.random.Generator
) -> tuple[float, float]:
    ma = bootstrap_medians(np.sort(a), resamples, rng)
    mc = bootstrap_medians(np.sort(c), resamples, rng)
    # A zero control median in any resample makes the ratio undefined, not infinite.
    if np.any(mc == 0):
        return math.nan, math.nan
    return _interval(100.0 * (ma / mc - 1.0), confidence)


def _p_value(
    a: Floats, c: Floats, test: str, resamples: int, rng: np.random.Generator
) -> pvalues.PValue:
    if a.size == 0 or c.size == 0:
        return pvalues.PValue(math.nan, "none")
    if np.ptp(np.concatenate([a, c])) == 0:
        # Every value equal: the test is possible and finds nothing, whatever its method.
        return pvalues.PValue(1.0, "exact")
    if test == "mann-whitney":
        return pvalues.mann_whitney(a, c)
    return pvalues.permutation(a, c, resamples, rng)
