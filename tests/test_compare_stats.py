"""iowatt.compare.stats: the statistics behave as advertised on data with a known truth."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from iowatt.compare.stats import TESTS, Difference, _bootstrap_medians, describe, difference


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def test_describe_quartiles_interpolate_between_runs() -> None:
    # Linear interpolation between order statistics (Hyndman & Fan type 7), by hand: the
    # quartiles of 10, 20, 30, 40 sit at positions 0.75, 1.5 and 2.25.
    s = describe([40.0, 10.0, 30.0, 20.0], rng=rng())
    assert (s.n, s.q1, s.median, s.q3) == (4, 17.5, 25.0, 32.5)
    s = describe([9.0, 1.0, 5.0, 7.0, 3.0], rng=rng())
    assert (s.q1, s.median, s.q3) == (3.0, 5.0, 7.0)
    assert s.ci_low <= s.median <= s.ci_high


def test_median_interval_covers_the_true_median_near_nominally() -> None:
    # The bootstrap percentile interval of a median is a little liberal for small n; with 30
    # runs it is close to its nominal 95%.
    def covers(seed: int) -> bool:
        s = describe(rng(seed).normal(1000.0, 50.0, 30), rng=rng(seed + 10_000))
        return s.ci_low <= 1000.0 <= s.ci_high

    covered = [covers(seed) for seed in range(200)]
    assert 0.88 <= np.mean(covered) <= 0.99


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
    p = np.array(
        [
            difference(*rng(seed).normal(1000.0, 50.0, (2, 10)), test=test, rng=rng(seed)).p_value
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


def test_large_samples_use_corrected_monte_carlo() -> None:
    g = rng(3)
    d = difference(g.normal(2, 1, 40), g.normal(0, 1, 40), test="permutation", rng=rng())
    assert d.p_value == pytest.approx(1 / 2001)


def test_one_run_has_no_interval() -> None:
    s = describe([812.0], rng=rng())
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
    assert describe([], rng=rng()).n == 0


@pytest.mark.parametrize("test", TESTS)
def test_identical_samples_show_no_difference_quietly(test: str) -> None:
    # pytest turns warnings into errors, so a 0/0 inside a test would fail here.
    d = difference([500.0] * 6, [500.0] * 4, test=test, rng=rng())
    assert d == Difference(0.0, 0.0, 0.0, 1.0, test)
    s = describe([500.0] * 6, rng=rng())
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
        describe([1.0, 2.0, float("nan")], rng=rng())


def test_same_seed_same_answer() -> None:
    x, control = rng(4).normal(1000.0, 80.0, (2, 15))
    for test in TESTS:
        a = difference(x, control, test=test, rng=rng(7))
        assert a == difference(x, control, test=test, rng=rng(7))
    assert describe(x, rng=rng(7)) == describe(x, rng=rng(7))


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
    fast = _bootstrap_medians(a, 200_000, rng)
    slow = np.median(a[rng.integers(0, n, size=(200_000, n))], axis=1)
    values = np.union1d(fast, slow)
    share_fast = np.array([np.mean(fast == v) for v in values])
    share_slow = np.array([np.mean(slow == v) for v in values])
    assert np.max(np.abs(share_fast - share_slow)) < 0.006
