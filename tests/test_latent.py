"""iowatt.compare.latent: injected effects are found, stationary series raise few alarms.

Every series is synthetic and seeded: levels in ops/s with relative Gaussian noise.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest

from iowatt.compare.latent import (
    KINDS,
    Finding,
    analyse_series,
    carry_over,
    change_point,
    lag1_oscillation,
    mann_kendall,
)

Series = tuple[np.ndarray, list[str]]
LEVELS = {"A": 1000.0, "B": 700.0}
CARRIED = (0.8, 0.5, 0.2)  # share of the way back to the previous level, first runs of a block


def trend(g: np.random.Generator) -> Series:
    """20 runs losing 1.5% each, 3% noise."""
    n = 20
    return 1000.0 * (1 - 0.015 * np.arange(n)) * (1 + 0.03 * g.standard_normal(n)), ["A"] * n


def oscillation(g: np.random.Generator) -> Series:
    """16 runs alternating ±8% around the mean, 3% noise."""
    n = 16
    swing = 0.08 * (-1.0) ** np.arange(n)
    return 1000.0 * (1 + swing + 0.03 * g.standard_normal(n)), ["A"] * n


def carried(g: np.random.Generator) -> Series:
    """A×10 B×10 A×10 B×10; each block after the first starts 80%, 50%, 20% of the way back
    toward the previous environment's level; 2% noise."""
    envs = [e for e in "ABAB" for _ in range(10)]
    level = np.array([LEVELS[e] for e in envs])
    for start in (10, 20, 30):
        new, previous = LEVELS[envs[start]], LEVELS[envs[start - 1]]
        level[start : start + 3] = [new + f * (previous - new) for f in CARRIED]
    return level * (1 + 0.02 * g.standard_normal(level.size)), envs


def interleaved(g: np.random.Generator) -> Series:
    """A B A B … 12 runs each, a stable 30% difference, 3% noise."""
    envs = ["A", "B"] * 12
    return _stationary(g, envs)


def blocked(g: np.random.Generator) -> Series:
    """A×6 B×6 A×6 B×6 at equilibrium."""
    return _stationary(g, [e for e in "ABAB" for _ in range(6)])


def blocked_heavy_tailed(g: np.random.Generator) -> Series:
    """Blocked, with Student-t (2 dof) noise: the odd disturbed run of a real benchmark."""
    envs = [e for e in "ABAB" for _ in range(6)]
    level = np.array([LEVELS[e] for e in envs])
    return level * (1 + 0.03 * g.standard_t(2, level.size)), envs


def _stationary(g: np.random.Generator, envs: list[str]) -> Series:
    level = np.array([LEVELS[e] for e in envs])
    return level * (1 + 0.03 * g.standard_normal(level.size)), envs


def analyse(make: Callable[[np.random.Generator], Series], seed: int) -> list[Finding]:
    return analyse_series(*make(np.random.default_rng(seed)), seed=seed)


def carry_over_found(findings: list[Finding]) -> set[int]:
    """Block starts where a carry-over of 2 to 4 runs was reported."""
    return {f.runs[0] for f in findings if f.kind == "carry-over" and 2 <= len(f.runs) <= 4}


def test_injected_trend_is_found() -> None:
    (f,) = analyse(trend, 1)
    assert (f.kind, f.env, f.runs) == ("trend", "A", tuple(range(20)))
    assert f.statistic < -0.5 and f.p_value < 0.001
    assert "downward" in f.message and "τ = −" in f.message


def test_injected_oscillation_is_found() -> None:
    (f,) = analyse(oscillation, 1)
    assert (f.kind, f.env) == ("oscillation", "A")
    assert f.statistic < -0.5
    assert "alternates" in f.message and "lag-1 r = −" in f.message


def test_injected_carry_over_is_found_at_each_switch() -> None:
    # About one series in eight misses one of its three switches at this noise (the power test
    # measures it); this seed finds all three.
    findings = analyse(carried, 0)
    switches = [f for f in findings if f.kind == "carry-over"]
    assert [f.runs[0] for f in switches] == [10, 20, 30]
    assert [f.env for f in switches] == ["B", "A", "B"]
    for f in switches:
        assert 2 <= len(f.runs) <= 4
        assert 0.3 < f.statistic < 1.0  # a share of the gap, from the runs' medians
        assert f"first {len(f.runs)} of 10 runs" in f.message
    assert findings == sorted(findings, key=lambda f: f.runs[0])
    assert {f.kind for f in findings} <= set(KINDS)


def test_interleaved_series_with_a_stable_difference_is_quiet() -> None:
    # Runs alternate 1000, 700, 1000 … because environments differ: the confound a within-
    # environment test avoids, so it must not read as oscillation.
    g = np.random.default_rng(5)
    envs = ["A", "B"] * 12
    values = np.array([LEVELS[e] for e in envs]) * (1 + 0.01 * g.standard_normal(24))
    assert analyse_series(values, envs) == []


@pytest.mark.slow
@pytest.mark.parametrize("make", [interleaved, blocked, blocked_heavy_tailed])
def test_false_alarm_rate_is_at_most_alpha(make: Callable[[np.random.Generator], Series]) -> None:
    alarms = np.mean([bool(analyse(make, seed)) for seed in range(300)])
    assert alarms <= 0.08


@pytest.mark.parametrize("make", [trend, oscillation])
def test_detection_power(make: Callable[[np.random.Generator], Series]) -> None:
    kind = make.__name__
    power = np.mean([any(f.kind == kind for f in analyse(make, seed)) for seed in range(50)])
    assert power >= 0.8


def test_carry_over_detection_power() -> None:
    found = [carry_over_found(analyse(carried, seed)) for seed in range(50)]
    per_switch = np.mean([len(f & {10, 20, 30}) / 3 for f in found])
    assert per_switch >= 0.8
    assert all(f <= {10, 20, 30} for f in found)


@pytest.mark.parametrize("runs", [1, 2, 4])
def test_short_series_are_not_judged(runs: int) -> None:
    values = np.linspace(1000.0, 500.0, 2 * runs)  # a blatant trend, too few runs to test
    assert analyse_series(values, ["A"] * runs + ["B"] * runs) == []
    assert analyse_series([], []) == []


def test_same_seed_same_findings() -> None:
    values, envs = carried(np.random.default_rng(9))
    assert analyse_series(values, envs, seed=3) == analyse_series(values, envs, seed=3)


def test_mismatched_labels_are_refused() -> None:
    with pytest.raises(ValueError, match="3 values but 2 environment labels"):
        analyse_series([1.0, 2.0, 3.0], ["A", "B"])


def test_mann_kendall_is_exact_without_ties() -> None:
    tau, p = mann_kendall([5.0, 4.0, 3.0, 2.0, 1.0, 0.0])
    assert tau == pytest.approx(-1.0)
    assert p == pytest.approx(2 / math.factorial(6))  # only the two monotone orders are as extreme
    assert mann_kendall([3.0] * 6) == (0.0, 1.0)
    assert all(math.isnan(v) for v in mann_kendall([3.0]))


def test_lag1_oscillation_enumerates_small_series() -> None:
    g = np.random.default_rng(0)
    x = [1.0, 3.0, 1.2, 3.1, 0.9, 2.9]
    results = {lag1_oscillation(x, rng=np.random.default_rng(s)) for s in range(3)}
    assert len(results) == 1  # every one of the 720 orders counted: no randomness left
    r1, p = results.pop()
    assert r1 < -0.5
    assert p == pytest.approx(round(p * 720) / 720) and p < 0.05
    assert lag1_oscillation([2.0] * 5, rng=g) == (0.0, 1.0)
    assert all(math.isnan(v) for v in lag1_oscillation([1.0, 2.0], rng=g))


def test_change_point_locates_a_step() -> None:
    g = np.random.default_rng(0)
    x = np.r_[g.normal(0.0, 1.0, 8), g.normal(4.0, 1.0, 12)]
    k, p = change_point(x, rng=g)
    assert k == 8 and p < 0.01
    k, p = change_point(g.normal(0.0, 1.0, 20), rng=g)
    assert p > 0.05
    k, p = change_point([1.0], rng=g)
    assert k == 0 and math.isnan(p)


def test_carry_over_needs_a_fading_lead_toward_the_previous_level() -> None:
    g = np.random.default_rng(2)
    block = 700.0 * (1 + 0.02 * g.standard_normal(10))
    block[:3] = [940.0, 850.0, 760.0]
    k, p = carry_over(block, 1000.0, rng=g)
    assert k == 3 and p < 0.005
    # The same runs away from the previous level are not carry-over.
    k, p = carry_over(block, 500.0, rng=g)
    assert p > 0.5
    # One disturbed first run alone is not enough: ranks bound its weight.
    lone = 700.0 * (1 + 0.02 * g.standard_normal(10))
    lone[0] = 5000.0
    assert carry_over(lone, 1000.0, rng=g)[1] > 0.05


def lognormal_switch(g: np.random.Generator, carried: float) -> Series:
    """A×10 then B×10, lognormal noise with a CV of 5 %; B's first three runs stay
    ``carried`` of the way back toward A's level (0: a clean switch)."""
    envs = ["A"] * 10 + ["B"] * 10
    level = np.array([LEVELS[e] for e in envs])
    level[10:13] += carried * (LEVELS["A"] - LEVELS["B"])
    sigma = math.sqrt(math.log(1 + 0.05**2))
    return level * g.lognormal(-(sigma**2) / 2, sigma, level.size), envs


def test_three_carried_runs_are_found_by_the_size_of_their_gap() -> None:
    # Known truth: three runs 40 % of the way back, found in ≥ 80 % of seeds;
    # clean switches raise a carry-over in ≤ 5 %.
    found = [
        10 in carry_over_found(analyse(lambda g: lognormal_switch(g, 0.4), seed))
        for seed in range(100)
    ]
    assert np.mean(found) >= 0.8
    clean = [
        any(f.kind == "carry-over" for f in analyse(lambda g: lognormal_switch(g, 0.0), seed))
        for seed in range(100)
    ]
    assert np.mean(clean) <= 0.05


def four_workload_campaign(g: np.random.Generator) -> list[Series]:
    return [interleaved(g) for _ in range(2)] + [blocked(g), blocked_heavy_tailed(g)]


@pytest.mark.slow
def test_the_false_alarm_rate_is_held_per_campaign() -> None:
    # Four clean series per campaign, alpha shared among them as iowatt compare does.
    alarms = []
    for seed in range(200):
        series = four_workload_campaign(np.random.default_rng(seed))
        alarms.append(
            any(analyse_series(v, e, alpha=0.05 / len(series), seed=seed) for v, e in series)
        )
    assert np.mean(alarms) <= 0.05
