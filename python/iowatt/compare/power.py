"""What a comparison could have found: the minimum detectable effect of a design and the runs
needed to detect a given difference, at 80 % power, under both gates of a real difference.

A difference is called real when the test's p < alpha *and* the whole confidence interval of
the % difference lies outside ±noise band (:mod:`iowatt.compare.table`). Its power is the
chance that both pass when the environments truly differ by a factor f, at the run-to-run noise
the runs show:

- **Noise.** s is the pooled standard deviation of the logarithm of the runs within each
  environment, ``sqrt(Σ_g Σ_i (ln x_gi − mean_g ln x)² / (n1 + n2 − 2))`` — about the
  coefficient of variation, in the multiplicative model benchmark runs follow (a slower disk
  scales every run). Runs are modelled as lognormal with that s, the environments differing by
  the factor f.
- **Small designs (both groups below 20 runs, where the test is exact and asymptotics fail).**
  Simulated, seeded: R = 1,000 pairs of samples ``x = exp(s·Z)`` (n1 runs) and
  ``c = exp(s·Z')`` (n2 runs). Scaling x by f scales its bootstrap median ratios by f and
  moves U only across the pair ratios ``c_j / x_i``, so each simulated pair detects an increase
  exactly when ``f > T = max(r₍ₖ₎, (1 + b) / (1 + L))``, with r₍ₖ₎ the k-th smallest pair ratio
  (k the least U whose exact two-sided p is below alpha, from the null distribution of U), b
  the noise band as a fraction and L the lower end of the bootstrap interval (B = 1,000
  resamples, the medians' positions drawn from their exact distribution) of
  ``median(x)/median(c) − 1``; a decrease when
  ``f < D = min(r₍ₖ'₊₁₎, (1 − b) / (1 + H))`` (k' the greatest U with p below alpha, H the upper
  end). The power at f is the share of pairs detecting it, so the 80 % minimum detectable
  increase is the 80th percentile of T minus 1, the decrease 1 minus the 20th percentile of D.
- **Larger designs.** Normal theory for the two gates, on the log scale:
  ``SE_med = sqrt(π/2)·s·sqrt(1/n1 + 1/n2)`` (the sample median's asymptotic variance is
  πs²/2n for normal data; Serfling, *Approximation Theorems of Mathematical Statistics*, 1980,
  §2.3) and
  ``SE_U = sqrt(π/3)·s·sqrt(1/n1 + 1/n2)`` (Mann-Whitney's efficiency 3/π against the t-test;
  Noether, *JASA* 82, 1987). With z_c = Φ⁻¹((1 + confidence)/2), z_a = Φ⁻¹(1 − alpha/2) and
  z_p = Φ⁻¹(0.8), the smallest log-ratio θ passing both gates 80 % of the time is
  ``θ = max(β + (z_c + z_p)·SE_med, (z_a + z_p)·SE_U)``, β = ln(1 + b) for an increase
  (−ln(1 − b) for a decrease); the effect is e^θ − 1 (1 − e^−θ).

The minimum detectable effect is the larger of the increase and the decrease, so either
direction of that size is found at least 80 % of the time. :func:`runs_to_detect` gives the
fewest runs per environment (the same in both) whose minimum detectable effect is at most a
given difference: by simulation below 20 runs, beyond by solving the formula for n:
``n = ⌈π·((z_c + z_p)·s / (θ_d − β))²⌉`` and ``⌈(2π/3)·((z_a + z_p)·s / θ_d)²⌉``, the larger,
θ_d = ln(1 + d) (−ln(1 − d) for a decrease). A difference within the noise band (d ≤ b) is
never called real, at any number of runs.
"""

from __future__ import annotations

import functools
import math
from statistics import NormalDist

import numpy as np
import numpy.typing as npt
from numpy.typing import ArrayLike

from iowatt.compare.pvalues import u_counts

POWER = 0.8
# Below this many runs in both groups the design is simulated; at or above, the formula.
SIMULATE_BELOW = 20
SIMULATIONS = 1000
BOOTSTRAP = 1000
# Beyond this many runs per environment the answer is "more than" it.
MAX_RUNS = 1_000_000

Floats = npt.NDArray[np.float64]
Positions = tuple[npt.NDArray[np.int8], npt.NDArray[np.int8]]


def log_noise(*samples: ArrayLike) -> float:
    """The pooled standard deviation of ln(runs) within the samples; nan when a value is not
    positive or there is no degree of freedom (every sample a single run)."""
    arrays = [np.asarray(s, dtype=np.float64) for s in samples]
    arrays = [a for a in arrays if a.size]
    if any(np.any(a <= 0) for a in arrays):
        return math.nan
    dof = sum(a.size - 1 for a in arrays)
    if dof < 1:
        return math.nan
    squares = sum(float(np.sum((np.log(a) - np.log(a).mean()) ** 2)) for a in arrays)
    return math.sqrt(squares / dof)


def detectable_effect(
    n1: int,
    n2: int,
    sigma: float,
    *,
    noise_pct: float,
    alpha: float,
    confidence: float,
    seed: int = 0,
) -> float:
    """The minimum detectable effect in % (either direction, 80 % power, both gates) of n1
    runs against n2 at log-noise ``sigma``; ``inf`` when no difference can pass both gates (a
    group of one run has no interval, or the test cannot reach alpha with so few runs), nan
    without a noise estimate."""
    if n1 < 1 or n2 < 1 or not math.isfinite(sigma):
        return math.nan
    if n1 < 2 or n2 < 2:
        return math.inf
    if n1 < SIMULATE_BELOW and n2 < SIMULATE_BELOW:
        up, down = _simulated(n1, n2, sigma, noise_pct / 100.0, alpha, confidence, seed)
    else:
        up, down = _formula(n1, n2, sigma, noise_pct / 100.0, alpha, confidence)
    return 100.0 * max(up, down)


def runs_to_detect(
    pct: float,
    sigma: float,
    *,
    noise_pct: float,
    alpha: float,
    confidence: float,
    seed: int = 0,
) -> int | None:
    """The fewest runs per environment that detect a ``pct`` % difference in either direction
    (80 % power, both gates) at log-noise ``sigma``; None when none can: the difference lies
    within the noise band, or there is no noise estimate. Capped at :data:`MAX_RUNS` + 1."""
    if pct <= noise_pct or not math.isfinite(sigma):
        return None

    def enough(n: int) -> bool:
        return (
            detectable_effect(
                n, n, sigma, noise_pct=noise_pct, alpha=alpha, confidence=confidence, seed=seed
            )
            <= pct
        )

    small = range(2, SIMULATE_BELOW)
    if enough(small[-1]):
        # The simulated effect shrinks as runs are added: the first n that suffices.
        low, high = 0, len(small) - 1
        while low < high:
            mid = (low + high) // 2
            low, high = (low, mid) if enough(small[mid]) else (mid + 1, high)
        return small[low]
    runs = _formula_runs(pct / 100.0, sigma, noise_pct / 100.0, alpha, confidence)
    return max(SIMULATE_BELOW, runs)


def fewest_runs(alpha: float) -> int:
    """The fewest runs per environment (the same in both) with which the exact test can reach
    p < alpha at all: complete separation has p = 2 / C(2n, n)."""
    n = 1
    while 2 / math.comb(2 * n, n) >= alpha:
        n += 1
    return n


def _quantiles(alpha: float, confidence: float) -> tuple[float, float, float]:
    z = NormalDist().inv_cdf
    return z((1.0 + confidence) / 2.0), z(1.0 - alpha / 2.0), z(POWER)


def _formula(
    n1: int, n2: int, sigma: float, band: float, alpha: float, confidence: float
) -> tuple[float, float]:
    z_c, z_a, z_p = _quantiles(alpha, confidence)
    spread = sigma * math.sqrt(1.0 / n1 + 1.0 / n2)
    test = (z_a + z_p) * math.sqrt(math.pi / 3.0) * spread
    interval = (z_c + z_p) * math.sqrt(math.pi / 2.0) * spread
    up = max(math.log1p(band) + interval, test)
    down = max(-math.log1p(-band) + interval, test) if band < 1 else math.inf
    return math.expm1(up), -math.expm1(-down)


def _formula_runs(d: float, sigma: float, band: float, alpha: float, confidence: float) -> int:
    z_c, z_a, z_p = _quantiles(alpha, confidence)
    need = 0.0
    for theta, beta in ((math.log1p(d), math.log1p(band)), (-math.log1p(-d), -math.log1p(-band))):
        need = max(
            need,
            math.pi * ((z_c + z_p) * sigma / (theta - beta)) ** 2,
            2.0 * math.pi / 3.0 * ((z_a + z_p) * sigma / theta) ** 2,
        )
    return min(math.ceil(need), MAX_RUNS + 1)


def _simulated(
    n1: int, n2: int, sigma: float, band: float, alpha: float, confidence: float, seed: int
) -> tuple[float, float]:
    """The 80 % minimum detectable increase and decrease (as fractions) by simulation."""
    z_x, z_c, at_x, at_c = _draws(n1, n2, seed)
    x, c = np.exp(sigma * z_x), np.exp(sigma * z_c)
    low_u, high_u = _critical_u(n1, n2, alpha)
    # Pair ratios c_j / x_i, sorted: U(f) = #{ratios < f}.
    ratios = np.sort((c[:, None, :] / x[:, :, None]).reshape(SIMULATIONS, -1), axis=1)
    inf = np.full(SIMULATIONS, math.inf)
    up_test = ratios[:, high_u - 1] if high_u <= n1 * n2 else inf
    down_test = ratios[:, low_u] if low_u >= 0 else np.zeros(SIMULATIONS)
    low, high = _ratio_bounds(x, c, at_x, at_c, confidence)
    up = np.maximum(up_test, (1.0 + band) / low)
    down = np.minimum(down_test, (1.0 - band) / high)
    at = math.ceil(POWER * SIMULATIONS) - 1
    return float(np.sort(up)[at] - 1.0), float(1.0 - np.sort(down)[::-1][at])


def _critical_u(n1: int, n2: int, alpha: float) -> tuple[int, int]:
    """The greatest U below and the least U above n1·n2/2 whose exact two-sided p (no ties) is
    below alpha: -1 and n1·n2 + 1 when none is."""
    counts = u_counts(n1, n2)
    total = counts.sum()
    u = np.arange(counts.size)
    centre = n1 * n2 / 2.0
    gap = np.abs(u - centre)
    p = np.array([counts[gap >= g].sum() / total for g in gap])
    passing = u[p < alpha]
    below, above = passing[passing < centre], passing[passing > centre]
    return (
        int(below.max()) if below.size else -1,
        int(above.min()) if above.size else n1 * n2 + 1,
    )


def _ratio_bounds(
    x: Floats, c: Floats, at_x: Positions, at_c: Positions, confidence: float
) -> tuple[Floats, Floats]:
    """Each pair's bootstrap percentile interval of median(x)/median(c), as ratios."""
    mx = _medians_at(np.sort(x, axis=1), at_x)
    mc = _medians_at(np.sort(c, axis=1), at_c)
    return _percentiles(mx / mc, (1.0 - confidence) / 2.0)


def _percentiles(values: Floats, tail: float) -> tuple[Floats, Floats]:
    """np.quantile's (linear) ``tail`` and ``1 − tail`` quantiles of each row, by partial sort."""
    last = values.shape[1] - 1
    ends = []
    for q in (tail, 1.0 - tail):
        at = q * last
        below = math.floor(at)
        above = min(below + 1, last)
        ends.append((below, above, at - below))
    kth = sorted({i for b, a, _ in ends for i in (b, a)})
    part = np.partition(values, kth, axis=1)
    low, high = (part[:, b] + f * (part[:, a] - part[:, b]) for b, a, f in ends)
    return low, high


@functools.lru_cache(maxsize=8)
def _draws(n1: int, n2: int, seed: int) -> tuple[Floats, Floats, Positions, Positions]:
    """The standard normal runs and the bootstrap's median positions of one design, seeded by
    it, so its answer depends on nothing else and s only scales the same draws."""
    rng = np.random.default_rng([seed, n1, n2])
    z_x = rng.standard_normal((SIMULATIONS, n1))
    z_c = rng.standard_normal((SIMULATIONS, n2))
    return z_x, z_c, _positions(n1, rng), _positions(n2, rng)


def _positions(n: int, rng: np.random.Generator) -> Positions:
    """Where the two middle values of BOOTSTRAP resamples of n sorted runs fall, per simulated
    sample, drawn from their exact distribution (:func:`median_position_pmf`)."""
    low, high, prob = median_position_pmf(n)
    cdf = np.cumsum(prob)
    pick = np.minimum(
        np.searchsorted(cdf, rng.random((SIMULATIONS, BOOTSTRAP)) * cdf[-1]), prob.size - 1
    )
    # Fewer than 20 runs: a byte per index keeps a cached design at a few megabytes.
    return low[pick].astype(np.int8), high[pick].astype(np.int8)


def median_position_pmf(n: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], Floats]:
    """The distribution of the positions (i, j) in the sorted sample of the two middle values
    of a bootstrap resample of n runs: the k-th and (k+1)-th smallest of n draws from
    {0, …, n − 1}, k = ⌈n/2⌉ (for odd n the median alone, i = j).

    P(X₍ₖ₎ ≤ i) = P(Binomial(n, (i + 1)/n) ≥ k). For even n and i < j, a draws below i,
    k − a at i and the other n − k all above i with the least at j:
    Σₐ n!/(a!(k − a)!(n − k)!)·(i/n)ᵃ·(1/n)ᵏ⁻ᵃ·[((n − j)/n)ⁿ⁻ᵏ − ((n − j − 1)/n)ⁿ⁻ᵏ];
    i = j takes the rest of P(X₍ₖ₎ = i).
    """
    k = (n + 1) // 2
    idx = np.arange(n)
    at_most = [
        sum(math.comb(n, m) * q**m * (1 - q) ** (n - m) for m in range(k, n + 1))
        for q in (idx + 1) / n
    ]
    p_low = np.diff(np.concatenate([[0.0], at_most]))
    if n % 2:
        return idx, idx, p_low
    joint = np.zeros((n, n))
    arrangements = math.factorial(n) / math.factorial(n - k)
    for i in range(n):
        lead = sum(
            arrangements / (math.factorial(a) * math.factorial(k - a)) * (i / n) ** a * n ** (a - k)
            for a in range(k)
        )
        j = idx[i + 1 :]
        joint[i, i + 1 :] = lead * (((n - j) / n) ** (n - k) - ((n - j - 1) / n) ** (n - k))
    joint[idx, idx] = p_low - joint.sum(axis=1)
    low, high = np.nonzero(np.ones((n, n), dtype=bool))
    return low, high, np.clip(joint[low, high], 0.0, None)


def _medians_at(s: Floats, at: Positions) -> Floats:
    # numpy gathers far faster by native integers than by the bytes the cache keeps.
    low = np.take_along_axis(s, at[0].astype(np.intp), axis=1)
    if s.shape[1] % 2:
        return low
    return (low + np.take_along_axis(s, at[1].astype(np.intp), axis=1)) / 2.0
