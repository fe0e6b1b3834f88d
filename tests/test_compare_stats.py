"""iowatt.compare.stats: the statistics behave as advertised on data with a known truth."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from iowatt.compare import pvalues
from iowatt.compare.stats import (
    TESTS,
    Difference,
    bootstrap_medians,
    describe,
    difference,
    order_statistic_coverage,
)
from iowatt.compare.tails import mean_ranks


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def test_describe_quartiles_interpolate_between_runs() -> None:
    # Linear interpolation between order statistics (Hyndman & Fan type 7), by hand: the
    # quartiles of 10, 20, 30, 40 sit at positions 0.75, 1.5 and 2.25.
    s = describe([40.0, 10.0, 30.0, 20.0])
    assert (s.n, s.q1, s.median, s.q3) == (4, 17.5, 25.0, 32.5)
    s = describe([9.0, 1.0, 5.0, 7.0, 3.0])
    assert (s.q1, s.median, s.q3) == (3.0, 5.0, 7.0)
    assert s.ci_low <= s.median <= s.ci_high


# Coverage of [x(k), x(n-k+1)], by hand from the binomial: at most 5 runs only [min, max]
# exists, covering 1 - 2 * 0.5^n; at 10 runs k = 2 covers 1 - 2 * 11/1024; at 30 runs k = 10,
# 1 - 2 * P(B <= 9).
COVERAGE = {3: 0.75, 5: 0.9375, 10: 1 - 22 / 1024, 30: 1 - 45_928_174 / 2**30}


@pytest.mark.parametrize("n", sorted(COVERAGE))
def test_median_interval_has_the_coverage_it_states(n: int) -> None:
    """On skewed series with a known median, the interval holds it as often as the summary
    says, and at least 95 % of the time whenever it says so; below six runs it says less."""
    true_median = 1000.0  # lognormal: the median is exp(mu) whatever the spread
    g = rng(n)
    series = true_median * np.exp(g.normal(0.0, 0.3, (4000, n)))
    stated = [describe(x).ci_coverage for x in series[:5]]
    assert stated == pytest.approx([COVERAGE[n]] * 5, abs=1e-12)
    covered = [s.ci_low <= true_median <= s.ci_high for s in map(describe, series)]
    # Three standard errors of a share of 4,000.
    assert np.mean(covered) == pytest.approx(COVERAGE[n], abs=3 * math.sqrt(0.25 / 4000))
    assert (COVERAGE[n] >= 0.95) == (n >= 6)


def test_order_statistic_coverage_is_the_binomial_tail() -> None:
    for n in (2, 3, 7, 12, 31):
        exact = [
            1 - 2 * sum(math.comb(n, i) for i in range(k)) / 2**n for k in range(1, n // 2 + 1)
        ]
        assert order_statistic_coverage(n) == pytest.approx(exact, abs=1e-12)
    # Thousands of runs neither overflow nor underflow, and the widest k keeps 95 %.
    big = order_statistic_coverage(5000)
    assert big[0] == 1.0 and 0.0 <= big[-1] < 0.05 and np.all(np.diff(big) <= 0)
    s = describe(np.arange(5000.0))
    assert s.ci_coverage >= 0.95 and s.ci_high - s.ci_low < 200


@pytest.mark.parametrize("test", TESTS)
def test_difference_detects_a_20_percent_shift(test: str) -> None:
    g = rng(1)
    control, x = g.normal(1000.0, 30.0, 10), g.normal(1200.0, 36.0, 10)
    d = difference(x, control, test=test, rng=rng())
    assert d.test == test
    assert d.p_value < 0.01
    assert 0 < d.ci_low < d.pct < d.ci_high
    assert abs(d.pct - 20.0) < 4.0
    slower = difference(control, x, test=test, rng=rng())
    assert slower.ci_high < 0 and slower.pct < 0


@pytest.mark.slow
@pytest.mark.parametrize("test", TESTS)
def test_null_shift_gives_roughly_uniform_p_values(test: str) -> None:
    # 9 + 9 runs: the permutation test lists all 48,620 splits of each of 300 series.
    p = np.array(
        [
            difference(*rng(seed).normal(1000.0, 50.0, (2, 9)), test=test, rng=rng(seed)).p_value
            for seed in range(300)
        ]
    )
    assert np.mean(p < 0.05) < 0.08
    assert 0.35 < np.mean(p < 0.5) < 0.65


def test_permutation_and_mann_whitney_agree_on_clear_cases() -> None:
    g = rng(2)
    control = g.normal(1000.0, 40.0, 12)
    shifted, same = control * 1.3 + g.normal(0, 10, 12), g.permutation(control)
    for x, significant in ((shifted, True), (same, False)):
        p = [difference(x, control, test=t, rng=rng()).p_value for t in TESTS]
        assert [v < 0.01 for v in p] == [significant, significant]
    assert [difference(same, control, test=t, rng=rng()).p_value for t in TESTS] == [1.0, 1.0]


def test_tiny_samples_are_enumerated_exactly() -> None:
    x, control = [10.0, 11.0, 12.0], [1.0, 2.0, 3.0]
    perm = [difference(x, control, test="permutation", rng=rng(s)).p_value for s in range(5)]
    # All 20 splits of 3 + 3 counted: the median ignores which outer values are swapped, so
    # four splits (observed, mirror, and one outer swap of each) tie at the extreme, p = 4/20.
    assert perm == [0.2] * 5
    assert perm[0] == _brute_force_median_p(x, control)
    # Mann-Whitney's rank sum does see the swap: complete separation is its minimum, 2/20.
    assert difference(x, control, rng=rng()).p_value == pytest.approx(0.1)


def test_unequal_tiny_samples_match_brute_force() -> None:
    x, control = [5.0, 9.0, 7.5, 8.0], [4.0, 6.0, 3.5, 5.5, 7.0]
    d = difference(x, control, test="permutation", rng=rng())
    assert d.p_value == pytest.approx(_brute_force_median_p(x, control))


def test_permutation_enumerates_up_to_200_000_splits() -> None:
    # C(17, 8) = 24,310 splits: more than --resamples, still every one of them.
    g = rng(6)
    x, control = g.normal(1.0, 1.0, 8).tolist(), g.normal(0.0, 1.0, 9).tolist()
    d = difference(x, control, test="permutation", rng=rng())
    assert (d.p_method, d.p_error) == ("exact", 0.0)
    assert d.p_value == pytest.approx(_brute_force_median_p(x, control), abs=1e-12)


@pytest.mark.parametrize("resamples", [2000, 150_000])
def test_past_the_bound_random_splits_are_at_least_100_000(resamples: int) -> None:
    g = rng(3)
    d = difference(
        g.normal(2, 1, 40), g.normal(0, 1, 40), test="permutation", resamples=resamples, rng=rng()
    )
    draws = max(resamples, 100_000)
    assert d.p_method == "monte-carlo"
    assert d.p_value == pytest.approx(1 / (draws + 1))
    assert d.p_error == pytest.approx(math.sqrt(d.p_value * (1 - d.p_value) / draws))


def test_one_run_has_no_interval() -> None:
    s = describe([812.0])
    assert (s.n, s.median, s.q1, s.q3) == (1, 812.0, 812.0, 812.0)
    assert math.isnan(s.ci_low) and math.isnan(s.ci_high)
    d = difference([900.0], [800.0, 810.0, 790.0], rng=rng())
    assert d.pct == pytest.approx(100 * (900 / 800 - 1))
    assert math.isnan(d.ci_low) and math.isnan(d.ci_high)
    assert 0 < d.p_value <= 1


@pytest.mark.parametrize("test", TESTS)
def test_empty_sample_makes_the_test_impossible(test: str) -> None:
    d = difference([], [1.0, 2.0], test=test, rng=rng())
    assert all(math.isnan(v) for v in (d.pct, d.ci_low, d.ci_high, d.p_value))
    assert describe([]).n == 0


@pytest.mark.parametrize("test", TESTS)
def test_identical_samples_show_no_difference_quietly(test: str) -> None:
    # pytest turns warnings into errors, so a 0/0 inside a test would fail here.
    d = difference([500.0] * 6, [500.0] * 4, test=test, rng=rng())
    assert d == Difference(0.0, 0.0, 0.0, 1.0, test, "exact", 0.0)
    s = describe([500.0] * 6)
    assert (s.ci_low, s.ci_high) == (500.0, 500.0)


def test_zero_control_median_gives_no_percentage() -> None:
    d = difference([1.0, 2.0, 3.0], [0.0, 0.0, 0.0, 1.0], rng=rng())
    assert math.isnan(d.pct) and math.isnan(d.ci_low)
    assert 0 < d.p_value < 1


def test_unknown_test_is_named() -> None:
    with pytest.raises(ValueError, match="t-test"):
        difference([1.0], [2.0], test="t-test", rng=rng())


def test_non_finite_values_are_refused_with_their_index() -> None:
    with pytest.raises(ValueError, match="index 2"):
        describe([1.0, 2.0, float("nan")])


def test_same_seed_same_answer() -> None:
    x, control = rng(4).normal(1000.0, 80.0, (2, 15))
    for test in TESTS:
        a = difference(x, control, test=test, rng=rng(7))
        assert a == difference(x, control, test=test, rng=rng(7))
    assert describe(x) == describe(x)


def _brute_force_median_p(x: list[float], control: list[float]) -> float:
    pooled = x + control
    observed = abs(np.median(x) - np.median(control))
    splits = list(itertools.combinations(range(len(pooled)), len(x)))
    hits = 0
    for chosen in splits:
        a = [pooled[i] for i in chosen]
        b = [v for i, v in enumerate(pooled) if i not in chosen]
        hits += abs(np.median(a) - np.median(b)) >= observed
    return hits / len(splits)


@pytest.mark.parametrize("n", [5, 6])
def test_bootstrap_medians_have_the_resampling_distribution(n: int) -> None:
    """The order-statistic shortcut draws medians as often as resampling would."""
    a = np.array([3.0, 10.0, 11.0, 17.0, 40.0, 41.0][:n])
    rng = np.random.default_rng(4)
    fast = bootstrap_medians(a, 200_000, rng)
    slow = np.median(a[rng.integers(0, n, size=(200_000, n))], axis=1)
    values = np.union1d(fast, slow)
    share_fast = np.array([np.mean(fast == v) for v in values])
    share_slow = np.array([np.mean(slow == v) for v in values])
    assert np.max(np.abs(share_fast - share_slow)) < 0.006


# --- Mann-Whitney U, exact with ties --------------------------------------------------------


def _brute_force_u_p(x: list[float], control: list[float]) -> float:
    """Share of all relabellings of the pooled values whose U is at least as far from
    n1 * n2 / 2 as the observed one, ties at their midranks: the definition, listed."""
    pooled = np.array(x + control)
    ranks = mean_ranks(pooled)
    n, n1 = pooled.size, len(x)
    centre = n1 * (n + 1) / 2  # the rank sum's mean: |U - n1 n2 / 2| = |R1 - centre|
    observed = abs(ranks[:n1].sum() - centre)
    subsets = np.array(list(itertools.combinations(range(n), n1)))
    far = np.abs(ranks[subsets].sum(axis=1) - centre) >= observed - 1e-9
    return float(far.mean())


@pytest.mark.fuzz
@given(
    st.lists(st.integers(0, 4), min_size=1, max_size=8),
    st.lists(st.integers(0, 4), min_size=1, max_size=8),
)
def test_mann_whitney_is_exact_with_ties(x: list[int], control: list[int]) -> None:
    """Few distinct values, so ties everywhere: p is the share over every relabelling."""
    xs, cs = [float(v) for v in x], [float(v) for v in control]
    d = difference(xs, cs, rng=rng())
    if len(set(xs + cs)) == 1:
        assert d.p_value == 1.0
        return
    assert d.p_method == "exact"
    assert d.p_value == pytest.approx(_brute_force_u_p(xs, cs), rel=1e-12)


def test_the_readme_campaign_p_value_is_2_in_252() -> None:
    """Five runs against five, wholly apart, the throttled ones nearly equal (ties after
    rounding): only the observed split and its mirror are as extreme, p = 2 / C(10, 5)."""
    open_ = [25986.0, 25839.0, 26143.0, 26317.0, 25823.0]
    throttled = [132.0, 132.0, 131.0, 132.0, 133.0]
    d = difference(throttled, open_, rng=rng())
    assert d.p_value == pytest.approx(2 / 252, rel=1e-12) and d.p_method == "exact"
    assert d.p_value == pytest.approx(_brute_force_u_p(throttled, open_), rel=1e-12)


@pytest.mark.slow
def test_mann_whitney_with_ties_matches_enumeration_at_ten_and_ten() -> None:
    # 184,756 relabellings, values on a coarse grid so a third of them tie.
    g = rng(11)
    x = np.round(g.normal(10.5, 1.0, 10)).tolist()
    control = np.round(g.normal(10.0, 1.0, 10)).tolist()
    d = difference(x, control, rng=rng())
    assert d.p_value == pytest.approx(_brute_force_u_p(x, control), rel=1e-12)


def test_mann_whitney_counts_match_the_textbook_null() -> None:
    # Without ties U's null distribution for 4 and 5 runs (Mann & Whitney 1947, table I).
    textbook = [1, 1, 2, 3, 5, 6, 8, 9, 11, 11, 12, 11, 11, 9, 8, 6, 5, 3, 2, 1, 1]
    assert pvalues.u_counts(4, 5).tolist() == textbook


def test_beyond_100_runs_the_normal_approximation_with_ties() -> None:
    """The tie-corrected normal approximation, by hand (Lehmann 1975), with continuity."""
    g = rng(12)
    x, control = np.round(g.normal(0.3, 1.0, 60), 1), np.round(g.normal(0.0, 1.0, 61), 1)
    d = difference(x, control, rng=rng())
    assert d.p_method == "normal"
    pooled = np.concatenate([x, control])
    n1, n2, n = 60, 61, 121
    u = mean_ranks(pooled)[:n1].sum() - n1 * (n1 + 1) / 2
    _, ties = np.unique(pooled, return_counts=True)
    var = n1 * n2 / 12 * ((n + 1) - (ties**3 - ties).sum() / (n * (n - 1)))
    z = (abs(u - n1 * n2 / 2) - 0.5) / math.sqrt(var)
    assert d.p_value == pytest.approx(math.erfc(z / math.sqrt(2)), rel=1e-9)
