"""The latent performance effect: runs that were not at equilibrium, found in a run series.

A point-in-time benchmark can mislead: after a move performance stays near the previous
environment's for a while, and an adaptive system can oscillate from run to run as it throttles
against the latency it has just seen (spec ``storage-workloads.md``, "Latent performance
effect"). Given the runs of one workload in time order, each labelled with its environment,
:func:`analyse_series` looks for three effects:

- **trend**: within one environment, a monotone drift, by the Mann-Kendall test (Mann, 1945;
  Kendall, *Rank Correlation Methods*, 1975), i.e. Kendall's τ against the run index, exact
  without ties and tie-corrected otherwise; its size is Sen's slope (Sen, 1968).
- **oscillation**: within one environment, a negative lag-1 autocorrelation, tested one-sided by
  permutation (runs are exchangeable when the system is at equilibrium).
- **carry-over**: at a switch of environment, the first runs of the new block stay toward the
  previous environment's level. The statistic is the size of that gap: for a lead of the first
  k = 2 … 4 runs (at least five left after them), each lead run's distance toward the previous
  level from the median of the runs after it, in their standard deviations, clipped at 4 (so
  one disturbed run cannot pass for a carried lead), summed and divided by √k; the largest over
  k. Its null is the same statistic on blocks of independent normal runs (it does not depend on
  their mean or spread, so one seeded Monte Carlo sample per block length serves every
  series). A rank or permutation test of one block cannot do this: with ten runs, three
  displaced runs are at best 1 in C(10, 3) = 120 of the orderings, short of any family-wise
  level. Requiring two runs keeps one disturbed first run from passing for carry-over. The
  number of runs carried is the least-squares single change point toward that level (Hinkley,
  1970), extended over any further runs still clearly off the block's settled level.

Trend and oscillation are tested within an environment: in an interleaved A B A B series runs
alternate because environments differ, which is the design working, not an oscillation.

Every test performed enters one Bonferroni family (significant when p < alpha / m): within a
series, and across the series of a comparison when the caller divides alpha among them
(:mod:`iowatt.compare.table` does), so a campaign at equilibrium raises a false alarm with
probability at most alpha.
Permutation p-values are exact when every ordering can be enumerated and otherwise use
(count + 1) / (B + 1) (Phipson & Smyth, 2010). :func:`change_point` (Pettitt, 1979) is the
rank-based, two-sided change point for a series without a known direction; it is not used for
carry-over because with the blocks of ten runs a benchmark can afford it cannot reach
significance (three displaced runs out of ten give p ≈ 0.1 at best).
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from iowatt.compare.stats import Floats, as_sample
from iowatt.compare.tails import mean_ranks

KINDS = ("trend", "oscillation", "carry-over")

# Beyond 7 runs n! exceeds any sensible number of permutations (and is costly to compute for
# a long series), so enumeration is only considered up to here.
_MAX_EXACT_RUNS = 7

# Runs after a carried lead that give the block's settled level and spread.
_SETTLED = 5
# One run counts at most this many robust standard deviations: a single disturbed run cannot
# pass for a carried lead.
_CLIP = 4.0
_MAX_CARRIED = 4
# Draws of the carry-over null per block length: p can go down to 1 / 20001, below the
# Bonferroni level of a campaign of a hundred tests.
_NULL_DRAWS = 20_000


@dataclass(frozen=True)
class Finding:
    """One latent effect: which runs show it, how strongly, and how surprising it is."""

    kind: str
    env: str
    p_value: float
    statistic: float
    runs: tuple[int, ...]
    message: str


def mann_kendall(x: ArrayLike) -> tuple[float, float]:
    """(τ, two-sided p) of a monotone trend; ``(nan, nan)`` below two runs, and ``(0.0, 1.0)``
    for a constant series, which has no trend (τ-b itself would be 0 / 0)."""
    a = as_sample(x)
    if a.size < 2:
        return math.nan, math.nan
    if np.ptp(a) == 0:
        return 0.0, 1.0
    from scipy import stats  # ~0.5 s to import: only when a series is analysed

    result = stats.kendalltau(np.arange(a.size), a)
    return float(result.statistic), float(result.pvalue)


def lag1_oscillation(
    x: ArrayLike, *, permutations: int = 2000, rng: np.random.Generator
) -> tuple[float, float]:
    """(r1, one-sided p for an r1 this negative) by permuting the runs' order.

    ``(nan, nan)`` below three runs, where every order gives the same r1; ``(0.0, 1.0)`` for a
    constant series.
    """
    a = as_sample(x)
    if a.size < 3:
        return math.nan, math.nan
    d = a - a.mean()
    scale = float(np.dot(d, d))
    if scale == 0:
        return 0.0, 1.0
    observed = float(np.dot(d[:-1], d[1:])) / scale
    shuffled, exact = _orderings(d, permutations, rng)
    null = np.sum(shuffled[:, :-1] * shuffled[:, 1:], axis=1) / scale
    return observed, _p(-null, -observed, exact)


def change_point(
    x: ArrayLike, *, permutations: int = 2000, rng: np.random.Generator
) -> tuple[int, float]:
    """(k, p): the first ``k`` values differ from the rest, by Pettitt's rank statistic
    max |U_k|; p by permuting the ranks. ``(0, nan)`` below two values."""
    a = as_sample(x)
    if a.size < 2:
        return 0, math.nan
    ranks = mean_ranks(a)
    u = _pettitt_u(ranks[np.newaxis, :])[0]
    shuffled, exact = _orderings(ranks, permutations, rng)
    null = np.max(np.abs(_pettitt_u(shuffled)), axis=1)
    return int(np.argmax(np.abs(u))) + 1, _p(null, float(np.max(np.abs(u))), exact)


def carry_over(
    x: ArrayLike, previous: float, *, permutations: int = 2000, rng: np.random.Generator
) -> tuple[int, float]:
    """(k, p): do the first runs of a block stay toward ``previous`` (the level of the
    environment before it)?

    The statistic is the gap statistic of the module doc; p is one-sided, from a Monte Carlo
    null of ``_NULL_DRAWS`` normal blocks (seeded: the same block always gives the same p;
    ``permutations`` and ``rng`` are kept for the other tests' signature). ``k`` is the number
    of leading runs carried (``0`` when none lean toward ``previous``). ``(0, nan)`` below seven
    runs (two carried and five after them).
    """
    a = as_sample(x)
    if a.size < 2 + _SETTLED:
        return 0, math.nan
    toward = float(np.sign(previous - np.median(a)))
    if toward == 0:
        return 0, 1.0
    observed = float(_gap_statistic(toward * a[np.newaxis, :])[0])
    null = _null_gaps(a.size)
    p = (int(np.sum(null >= observed)) + 1) / (null.size + 1)
    return _carried_runs(a, toward), p


@functools.cache
def _null_gaps(n: int) -> Floats:
    g = np.random.default_rng(n)  # seeded by the length: one null per length, reproducible
    return _gap_statistic(g.standard_normal((_NULL_DRAWS, n)))


def _gap_statistic(rows: Floats) -> Floats:
    """Per row (oriented so that toward the previous level is up): max over k ≥ 2 of the first
    k values' distances from the median of the rest, in the rest's standard deviations, each
    clipped at ``_CLIP``, summed and divided by √k."""
    n = rows.shape[1]
    best = np.full(rows.shape[0], -np.inf)
    # At least five runs after the step (a spread from fewer is too unsteady), and carried
    # leads of up to _MAX_CARRIED runs: carry-over lives in the first few.
    for k in range(2, min(n - _SETTLED, _MAX_CARRIED) + 1):
        rest = rows[:, k:]
        centre = np.median(rest, axis=1)
        # The standard deviation: the MAD of five runs is too often near zero. A disturbed
        # run among them only widens it, which errs toward no finding.
        spread = np.std(rest, axis=1, ddof=1)
        # A perfectly flat rest makes any lead infinitely far: keep the scale off zero.
        spread = np.maximum(spread, 1e-12 * np.maximum(np.abs(centre), 1.0))
        z = (rows[:, :k] - centre[:, np.newaxis]) / spread[:, np.newaxis]
        gap = np.clip(z, -_CLIP, _CLIP).sum(axis=1) / math.sqrt(k)
        best = np.maximum(best, gap)
    return best


def analyse_series(
    values: ArrayLike,
    envs: Sequence[str],
    *,
    alpha: float = 0.05,
    min_runs: int = 5,
    seed: int = 0,
    permutations: int = 2000,
    metric: str = "ops/s",
) -> list[Finding]:
    """The latent effects in one workload's runs (time order, ``envs[i]`` the environment of
    run ``i``), significant at family-wise level ``alpha``, sorted by their first run.

    An environment with fewer than ``min_runs`` runs is not tested for trend or oscillation, and
    a block shorter than ``min_runs`` is not tested for carry-over. ``permutations`` must exceed
    about m / alpha for m tests, or no permutation test can reach significance.
    """
    x = as_sample(values, "values")
    labels = [str(e) for e in envs]
    if len(labels) != x.size:
        raise ValueError(f"{x.size} values but {len(labels)} environment labels")
    if min_runs < 3:
        raise ValueError(f"min_runs `{min_runs}` must be at least 3 (lag-1 needs three runs)")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha `{alpha}` must be between 0 and 1 (e.g. 0.05)")
    rng = np.random.default_rng(seed)
    # Each entry is one test performed; None when its outcome could not be reported anyway.
    tests: list[Finding | None] = []
    for env in dict.fromkeys(labels):
        runs = tuple(i for i, e in enumerate(labels) if e == env)
        if len(runs) >= min_runs:
            tests.append(_trend(x, runs, env, metric, alpha))
            tests.append(_oscillation(x, runs, env, metric, permutations, rng))
    for previous, runs in _switches(labels, min_runs):
        tests.append(_carry_over(x, labels, runs, previous, metric, permutations, rng))
    threshold = alpha / max(len(tests), 1)
    found = [f for f in tests if f is not None and f.p_value < threshold]
    return sorted(found, key=lambda f: (f.runs[0], KINDS.index(f.kind)))


def _trend(x: Floats, runs: tuple[int, ...], env: str, metric: str, alpha: float) -> Finding:
    y = x[list(runs)]
    tau, p = mann_kendall(y)
    direction = "upward" if tau > 0 else "downward"
    size = ""
    level = float(np.median(y))
    # Sen's slope costs O(n²): only worth it for a trend that can still be reported.
    if level != 0 and p < alpha:
        from scipy import stats

        slope = float(stats.theilslopes(y).slope) / abs(level)
        size = f" by {abs(100 * slope):.1f}% per run"
    message = (
        f"{metric} trends {direction}{size} over {len(runs)} runs in `{env}` "
        f"(Mann-Kendall τ = {_signed(tau, '.2f')}, {_p_text(p)})"
    )
    return Finding("trend", env, p, tau, runs, message)


def _oscillation(
    x: Floats,
    runs: tuple[int, ...],
    env: str,
    metric: str,
    permutations: int,
    rng: np.random.Generator,
) -> Finding:
    y = x[list(runs)]
    r1, p = lag1_oscillation(y, permutations=permutations, rng=rng)
    steps = np.sign(np.diff(y))
    alternating = float(np.mean(steps[:-1] * steps[1:] < 0))
    message = (
        f"{metric} alternates run to run over {len(runs)} runs in `{env}`: "
        f"{alternating:.0%} of successive changes reverse direction "
        f"(lag-1 r = {_signed(r1, '.2f')}, {_p_text(p)})"
    )
    return Finding("oscillation", env, p, r1, runs, message)


def _carry_over(
    x: Floats,
    labels: list[str],
    runs: tuple[int, ...],
    previous: str,
    metric: str,
    permutations: int,
    rng: np.random.Generator,
) -> Finding | None:
    y = x[list(runs)]
    # The previous environment's level from all its runs: the median shrugs off the few of
    # them that were themselves carried over from somewhere else.
    level = float(np.median(x[[i for i, e in enumerate(labels) if e == previous]]))
    k, p = carry_over(y, level, permutations=permutations, rng=rng)
    if k == 0:
        return None
    first, rest = float(np.median(y[:k])), float(np.median(y[k:]))
    if not abs(first - level) < abs(rest - level):
        return None
    carried = (first - rest) / (level - rest)
    env = labels[runs[0]]
    message = (
        f"the first {k} of {len(runs)} runs in `{env}` after `{previous}` stayed "
        f"{carried:.0%} of the way toward `{previous}`'s {metric} ({_p_text(p)})"
    )
    return Finding("carry-over", env, p, carried, runs[:k], message)


def _switches(labels: list[str], min_runs: int) -> list[tuple[str, tuple[int, ...]]]:
    """(previous environment, runs) of every block of at least ``min_runs`` that follows a
    block of another environment."""
    blocks = [
        (env, tuple(i for i, _ in group))
        for env, group in itertools.groupby(enumerate(labels), key=lambda item: item[1])
    ]
    return [
        (before[0], block[1])
        for before, block in itertools.pairwise(blocks)
        if len(block[1]) >= min_runs
    ]


def _orderings(a: Floats, permutations: int, rng: np.random.Generator) -> tuple[Floats, bool]:
    """Rows of ``a`` reordered: every ordering when there are few enough (exact p), else
    ``permutations`` random ones."""
    if a.size <= _MAX_EXACT_RUNS and math.factorial(a.size) <= permutations:
        return a[np.array(list(itertools.permutations(range(a.size))))], True
    return rng.permuted(np.tile(a, (permutations, 1)), axis=1), False


def _p(null: Floats, observed: float, exact: bool) -> float:
    """Upper-tail p of ``observed`` against a permutation ``null`` (which, when exact, holds
    the observed ordering itself)."""
    # Sums over reordered terms can differ in the last bits from the observed one.
    hits = int(np.sum(null >= observed - 1e-9 * max(1.0, abs(observed))))
    return hits / null.size if exact else (hits + 1) / (null.size + 1)


def _pettitt_u(ranks: Floats) -> Floats:
    """Pettitt's U_k = 2 Σ_{i≤k} r_i − k(n + 1) for k = 1 … n−1, row by row."""
    n = ranks.shape[1]
    k = np.arange(1, n)
    return 2.0 * np.cumsum(ranks, axis=1)[:, : n - 1] - k * (n + 1)


def _carried_runs(a: Floats, toward: float) -> int:
    """How many leading runs lean toward ``toward`` (+1 above, −1 below, 0 none).

    A single least-squares step (Hinkley, 1970) fits a fading carry-over badly: it stops
    before the last, weakest carried run. So the step is then extended while the next run
    still lies more than three robust standard deviations (1.4826 · MAD) of the runs after it
    toward the previous level.
    """
    k = _step_toward(a, toward)
    while 0 < k < a.size - 2:
        later = a[k + 1 :]
        centre = float(np.median(later))
        spread = 1.4826 * float(np.median(np.abs(later - centre)))
        if spread == 0 or toward * (a[k] - centre) <= 3.0 * spread:
            break
        k += 1
    return k


def _step_toward(a: Floats, toward: float) -> int:
    """Length of the leading segment in the least-squares single mean shift, counting only
    shifts whose leading segment lies toward ``toward`` (+1 above, −1 below); 0 if none."""
    n = a.size
    k = np.arange(1, n)
    head = np.cumsum(a)[: n - 1] / k
    tail = (a.sum() - np.cumsum(a)[: n - 1]) / (n - k)
    gain = k * (n - k) / n * (head - tail) ** 2
    gain[toward * (head - tail) <= 0] = 0.0
    return int(np.argmax(gain)) + 1 if np.any(gain > 0) else 0


def _signed(v: float, spec: str) -> str:
    return format(v, spec).replace("-", "−")


def _p_text(p: float) -> str:
    return "p < 0.001" if p < 0.001 else f"p = {p:.2g}"
