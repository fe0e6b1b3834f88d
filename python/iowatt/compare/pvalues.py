"""Two-sample p-values that say how they were computed: exact where they can be, otherwise
Monte Carlo with its error, or a normal approximation only where it is accurate.

- :func:`mann_whitney` is the two-sided Mann-Whitney U test (Mann & Whitney, 1947) conditional
  on the pooled values, ties included: p is the share of all C(n, n1) relabellings of the pooled
  values whose U lies at least as far from n1·n2/2 as the observed one, with tied values at
  their midranks. The relabellings are counted, not listed: the number of subsets of each size
  with each (doubled, so integer) rank sum is built one distinct value at a time, the shift
  algorithm of Streitberg & Röhmel (*Exact distributions for permutation and rank tests*,
  Statistical Software Newsletter 12, 1986). That is exact at any size; it is used up to
  :data:`EXACT_RUNS` runs in all, beyond which the normal approximation with the tie and
  continuity corrections (Lehmann, *Nonparametrics*, 1975, ch. 1) is accurate and far cheaper.
- :func:`permutation` tests the difference of medians (Good, *Permutation, Parametric and
  Bootstrap Tests of Hypotheses*, 2005): every split of the pooled values when there are at
  most :data:`ENUMERATE_SPLITS`, otherwise ``max(resamples, MIN_RANDOM_SPLITS)`` random ones
  with the (count + 1) / (draws + 1) correction (Phipson & Smyth, 2010), so p is never 0, and
  its binomial standard error.

:func:`u_counts` gives the null distribution of U without ties, which the power calculation of
:mod:`iowatt.compare.power` uses.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

Floats = npt.NDArray[np.float64]

# Counting the rank sums costs about n · n1 · (rank-sum range) additions: at 100 runs in all a
# few tens of milliseconds, past which the normal approximation is within 0.001 of it.
EXACT_RUNS = 100
# Listing splits costs n values per split; 200,000 splits of 20 runs is a fraction of a second.
ENUMERATE_SPLITS = 200_000
MIN_RANDOM_SPLITS = 100_000
# Rows of the split matrix built at once, to bound memory on long series.
_CHUNK = 20_000


@dataclass(frozen=True)
class PValue:
    """A two-sided p-value, how it was computed (``exact``, ``monte-carlo``, ``normal``) and,
    for Monte Carlo, its standard error (0 otherwise)."""

    p: float
    method: str
    error: float = 0.0


def mann_whitney(a: Floats, c: Floats) -> PValue:
    """Two-sided Mann-Whitney U test of ``a`` against ``c``, ties at their midranks."""
    n1, n2 = a.size, c.size
    pooled = np.concatenate([a, c])
    _, inverse, ties = np.unique(pooled, return_inverse=True, return_counts=True)
    # Doubled midranks are integers: 2·(values below) + (ties) + 1.
    below = np.concatenate([[0], np.cumsum(ties)[:-1]])
    doubled = 2 * below + ties + 1
    # The smaller group's rank sum carries the same two-sided evidence and counts faster.
    small, m = (inverse[:n1], n1) if n1 <= n2 else (inverse[n1:], n2)
    n = n1 + n2
    centre = m * (n + 1)  # the doubled rank sum's mean under the null
    observed = abs(int(doubled[small].sum()) - centre)
    if n <= EXACT_RUNS:
        sums = _rank_sum_counts(doubled, ties, m)
        far = np.abs(np.arange(sums.size) - centre) >= observed
        return PValue(float(sums[far].sum() / sums.sum()), "exact")
    # Normal approximation on U = (doubled sum − centre) / 2 around 0.
    var = n1 * n2 / 12.0 * ((n + 1) - float(np.sum(ties**3 - ties)) / (n * (n - 1)))
    if var <= 0:  # every value tied: no evidence either way
        return PValue(1.0, "normal")
    z = max(observed / 2.0 - 0.5, 0.0) / math.sqrt(var)
    return PValue(min(1.0, math.erfc(z / math.sqrt(2.0))), "normal")


def _rank_sum_counts(doubled: npt.NDArray[np.int64], ties: npt.NDArray[np.int64], m: int) -> Floats:
    """How many m-subsets of the pooled runs have each doubled rank sum (index = sum).

    One distinct value at a time: taking j of its t tied runs adds j·w to the sum in C(t, j)
    ways. Counts are floats: C(100, 50) overflows any integer type numpy has, and their ratios
    are all that is used.
    """
    top = int(np.sort(np.repeat(doubled, ties))[::-1][:m].sum())
    table = np.zeros((m + 1, top + 1))
    table[0, 0] = 1.0
    for w, t in zip(doubled.tolist(), ties.tolist(), strict=True):
        before = table.copy()
        for j in range(1, min(t, m) + 1):
            shift = j * w
            if shift > top:
                break
            table[j:, shift:] += math.comb(t, j) * before[: m + 1 - j, : top + 1 - shift]
    return table[m]


def u_counts(n1: int, n2: int) -> npt.NDArray[np.float64]:
    """The null distribution of U without ties: ``counts[u]`` relabellings of C(n1 + n2, n1)
    have U = u (the counts Mann & Whitney tabulated, from the rank-sum counts)."""
    n = n1 + n2
    doubled = 2 * np.arange(1, n + 1, dtype=np.int64)
    sums = _rank_sum_counts(doubled, np.ones(n, dtype=np.int64), n1)
    # Doubled rank sums are even; U = rank sum − n1(n1 + 1)/2.
    return sums[n1 * (n1 + 1) :: 2][: n1 * n2 + 1]


def permutation(a: Floats, c: Floats, resamples: int, rng: np.random.Generator) -> PValue:
    """Two-sided permutation p of |median(a) − median(c)| over splits of the pooled values."""
    n1 = a.size
    pooled = np.concatenate([a, c])
    order = np.argsort(pooled, kind="stable")
    values = pooled[order]
    n = values.size
    # The observed split as positions in sorted order; ties make any equal choice equivalent.
    observed_mask = np.zeros((1, n), dtype=bool)
    observed_mask[0, np.argsort(order)[:n1]] = True
    observed = _median_gaps(values, observed_mask)[0]
    if math.comb(n, n1) <= ENUMERATE_SPLITS:
        splits = itertools.combinations(range(n), n1)
        hits = total = 0
        while True:
            flat = itertools.chain.from_iterable(itertools.islice(splits, _CHUNK))
            chosen = np.fromiter(flat, dtype=np.intp).reshape(-1, n1)
            if not chosen.size:
                break
            mask = np.zeros((len(chosen), n), dtype=bool)
            np.put_along_axis(mask, chosen, True, axis=1)
            hits += int(np.sum(_median_gaps(values, mask) >= observed))
            total += len(chosen)
        return PValue(hits / total, "exact")
    draws = max(resamples, MIN_RANDOM_SPLITS)
    hits = 0
    for start in range(0, draws, _CHUNK):
        rows = min(_CHUNK, draws - start)
        chosen = rng.permuted(np.tile(np.arange(n), (rows, 1)), axis=1)[:, :n1]
        mask = np.zeros((rows, n), dtype=bool)
        np.put_along_axis(mask, chosen, True, axis=1)
        hits += int(np.sum(_median_gaps(values, mask) >= observed))
    p = (hits + 1) / (draws + 1)
    return PValue(p, "monte-carlo", math.sqrt(p * (1.0 - p) / draws))


def _median_gaps(values: Floats, mask: npt.NDArray[np.bool_]) -> Floats:
    """|median(chosen) − median(rest)| per row of ``mask`` over the sorted ``values``: each
    group's positions come out of the mask in order, so its middle ones are read directly."""
    return np.abs(_masked_median(values, mask) - _masked_median(values, ~mask))


def _masked_median(values: Floats, mask: npt.NDArray[np.bool_]) -> Floats:
    rows, size = mask.shape[0], int(mask[0].sum())
    at = np.nonzero(mask)[1].reshape(rows, size)
    return (values[at[:, (size - 1) // 2]] + values[at[:, size // 2]]) / 2.0
