"""What a comparison can detect: the minimum detectable effect and the runs ``--detect`` asks
for, held to docs/campaign.md's formulas and to the power of the whole procedure on generated
series whose true difference is known."""

from __future__ import annotations

import itertools
import json
import math
import re
from pathlib import Path
from statistics import NormalDist

import numpy as np
import pytest

from iowatt.compare.power import (
    detectable_effect,
    fewest_runs,
    log_noise,
    median_position_pmf,
    runs_to_detect,
)
from iowatt.compare.stats import difference, order_statistic_coverage
from support.cli import iowatt
from support.compare import FakeRun, write_runs

DOC = Path(__file__).resolve().parents[1] / "docs" / "campaign.md"
SIGMA = "\N{GREEK SMALL LETTER SIGMA}"  # the docs' name for the run-to-run noise
GATES = {"noise_pct": 2.0, "alpha": 0.05, "confidence": 0.95}

# docs/campaign.md, "What a comparison can detect", as written there.
Z = NormalDist().inv_cdf
Z_C, Z_A, Z_P = Z((1 + 0.95) / 2), Z(1 - 0.05 / 2), Z(0.8)


def doc_detects(n1: int, n2: int, sigma: float, b: float = 0.02) -> float:
    """The minimum detectable effect in % of 20 runs or more, by the documented formula."""
    spread = sigma * math.sqrt(1 / n1 + 1 / n2)
    se_med, se_u = math.sqrt(math.pi / 2) * spread, math.sqrt(math.pi / 3) * spread
    up = max(math.log(1 + b) + (Z_C + Z_P) * se_med, (Z_A + Z_P) * se_u)
    down = max(-math.log(1 - b) + (Z_C + Z_P) * se_med, (Z_A + Z_P) * se_u)
    return 100 * max(math.exp(up) - 1, 1 - math.exp(-down))


def doc_runs(d: float, sigma: float, b: float = 0.02) -> int:
    """The runs per group ``--detect`` asks for past 19, by the documented formula."""
    need = 0.0
    for theta, beta in ((math.log(1 + d), math.log(1 + b)), (-math.log(1 - d), -math.log(1 - b))):
        need = max(
            need,
            math.pi * ((Z_C + Z_P) * sigma / (theta - beta)) ** 2,
            2 * math.pi / 3 * ((Z_A + Z_P) * sigma / theta) ** 2,
        )
    return math.ceil(need)


def doc_noise(*groups: list[float]) -> float:
    """sigma: the pooled standard deviation of ln(runs) within the groups."""
    squares = sum(((np.log(g) - np.log(g).mean()) ** 2).sum() for g in map(np.asarray, groups))
    return math.sqrt(squares / sum(len(g) - 1 for g in groups))


def called_real(n: int, factor: float, sigma: float, series: int, seed: int) -> float:
    """The share of generated comparisons, n lognormal runs against n, the group truly
    ``factor`` times the control, that iowatt calls real (p < 0.05 and the 95 % CI of the
    difference outside ±2 %)."""
    g = np.random.default_rng(seed)
    real = 0
    for i in range(series):
        control = np.exp(sigma * g.standard_normal(n))
        x = factor * np.exp(sigma * g.standard_normal(n))
        d = difference(x, control, rng=np.random.default_rng(i))
        real += d.p_value < 0.05 and (d.ci_low > 2.0 or d.ci_high < -2.0)
    return real / series


# --- the procedure's power at its minimum detectable effect ---------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("n", [5, 10])
def test_a_difference_of_the_minimum_detectable_effect_is_called_real_80_percent(n: int) -> None:
    mde = detectable_effect(n, n, 0.05, **GATES)
    # 400 series each way: 80 % ± 3 standard errors of a share of 400.
    tolerance = 3 * math.sqrt(0.8 * 0.2 / 400)
    assert called_real(n, 1 + mde / 100, 0.05, 400, seed=n) == pytest.approx(0.8, abs=tolerance)
    # The larger of the two directions: the decrease of that size is found at least as often.
    assert called_real(n, 1 - mde / 100, 0.05, 400, seed=n + 1) >= 0.8 - tolerance
    # Two thirds of it is found far less often: the power curve is steep around the effect.
    assert called_real(n, 1 + mde / 150, 0.05, 400, seed=n + 2) < 0.6


@pytest.mark.slow
def test_beyond_20_runs_the_formula_has_80_percent_power_too() -> None:
    mde = detectable_effect(25, 25, 0.05, **GATES)
    assert mde == pytest.approx(doc_detects(25, 25, 0.05), rel=1e-12)
    tolerance = 3 * math.sqrt(0.8 * 0.2 / 400)
    assert called_real(25, 1 + mde / 100, 0.05, 400, seed=25) == pytest.approx(0.8, abs=tolerance)


@pytest.mark.slow
def test_a_5_percent_difference_at_5_percent_noise_is_mostly_missed() -> None:
    """The docs' example: how often a real 5 % difference is called real at 5 % noise."""
    assert called_real(5, 1.05, 0.05, 400, seed=50) == pytest.approx(0.08, abs=0.03)
    assert called_real(20, 1.05, 0.05, 400, seed=51) == pytest.approx(0.27, abs=0.06)


# --- the minimum detectable effect and --detect against the formulas -----------------------


@pytest.mark.parametrize(("n1", "n2"), [(20, 20), (25, 40), (19, 60), (200, 200)])
@pytest.mark.parametrize("sigma", [0.01, 0.05, 0.3])
def test_from_20_runs_the_effect_is_the_documented_formula(n1: int, n2: int, sigma: float) -> None:
    assert detectable_effect(n1, n2, sigma, **GATES) == pytest.approx(
        doc_detects(n1, n2, sigma), rel=1e-12
    )


@pytest.mark.parametrize("sigma", [0.03, 0.05, 0.2])
def test_runs_to_detect_is_the_fewest_runs_whose_effect_is_small_enough(sigma: float) -> None:
    for pct in (3.0, 5.0, 10.0, 40.0):
        n = runs_to_detect(pct, sigma, **GATES)
        assert n is not None
        if n >= 20:
            assert n == max(20, doc_runs(pct / 100, sigma))
            assert doc_detects(n, n, sigma) <= pct + 1e-9
        else:
            assert detectable_effect(n, n, sigma, **GATES) <= pct
        if 2 < n <= 20:
            assert detectable_effect(n - 1, n - 1, sigma, **GATES) > pct


def test_the_fewest_runs_that_can_reach_alpha() -> None:
    # 3 + 3 runs: p >= 2/20 = 0.1 however far apart, so nothing can be called real at 0.05.
    assert detectable_effect(3, 3, 0.05, **GATES) == math.inf
    assert math.isfinite(detectable_effect(4, 4, 0.05, **GATES))  # 2/70 < 0.05
    assert fewest_runs(0.05) == 4 and fewest_runs(0.01) == 5  # 2/252 < 0.01 <= 2/70


def test_without_noise_the_band_is_all_that_stands_in_the_way() -> None:
    assert detectable_effect(5, 5, 0.0, **GATES) == pytest.approx(2.0)
    assert runs_to_detect(5.0, 0.0, **GATES) == fewest_runs(0.05)


def test_a_single_run_has_no_interval_so_nothing_is_detected() -> None:
    assert detectable_effect(1, 40, 0.05, **GATES) == math.inf
    assert detectable_effect(30, 1, 0.05, **GATES) == math.inf


def test_a_difference_within_the_noise_band_is_never_detected() -> None:
    assert runs_to_detect(2.0, 0.05, **GATES) is None
    assert runs_to_detect(5.0, math.nan, **GATES) is None
    assert math.isnan(detectable_effect(5, 5, math.nan, **GATES))


def test_noise_is_the_pooled_log_standard_deviation() -> None:
    a, b = [100.0, 110.0, 95.0, 104.0], [50.0, 52.0, 49.0]
    assert log_noise(a, b) == pytest.approx(doc_noise(a, b), rel=1e-12)
    assert math.isnan(log_noise([100.0], [90.0]))  # no degree of freedom
    assert math.isnan(log_noise([0.0, 1.0, 2.0]))  # a log needs positive runs


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6])
def test_bootstrap_median_positions_are_exact(n: int) -> None:
    """The simulated bootstrap draws its medians' positions from their exact distribution:
    every one of the n^n resamples of n sorted runs, counted."""
    counts: dict[tuple[int, int], int] = {}
    k = (n + 1) // 2
    for draw in itertools.product(range(n), repeat=n):
        s = sorted(draw)
        key = (s[k - 1], s[k - 1] if n % 2 else s[k])
        counts[key] = counts.get(key, 0) + 1
    low, high, prob = median_position_pmf(n)
    got = {(int(i), int(j)): float(p) for i, j, p in zip(low, high, prob, strict=True) if p > 0}
    assert got.keys() == counts.keys()
    for key, count in counts.items():
        assert got[key] == pytest.approx(count / n**n, rel=1e-9)


# --- the docs' tables are what the code computes -------------------------------------------


def _doc_row(label: str) -> list[str]:
    (line,) = [line for line in DOC.read_text().splitlines() if line.startswith(f"| {label} |")]
    return [cell.strip() for cell in line.strip("|").split("|")][1:]


@pytest.mark.slow
def test_the_docs_tables_are_computed() -> None:
    runs = [int(v) for v in _doc_row("runs per group")]
    for sigma in (0.02, 0.05):
        shown = _doc_row(f"detects at {SIGMA} = {sigma:g}")
        computed = [detectable_effect(n, n, sigma, **GATES) for n in runs]
        assert shown == ["none" if math.isinf(v) else f"≥{v:.1f} %" for v in computed]
    asked = [float(v.removesuffix(" %")) for v in _doc_row("`--detect`")]
    for sigma in (0.02, 0.05):
        shown = _doc_row(f"runs at {SIGMA} = {sigma:g}")
        assert shown == [str(runs_to_detect(d, sigma, **GATES)) for d in asked]
    runs = [int(v) for v in _doc_row("runs")]
    intervals, coverage = [], []
    for n in runs:
        covers = order_statistic_coverage(n)
        reach = np.flatnonzero(covers >= 0.95)
        k = int(reach[-1]) + 1 if reach.size else 1
        intervals.append(f"[x₍{k}₎, x₍{n - k + 1}₎]")
        coverage.append(f"{100 * covers[k - 1]:.4g} %")
    assert _doc_row("interval") == intervals
    assert _doc_row("coverage") == coverage


# --- through the command line ----------------------------------------------------------------


def _series(results: Path, n: int, noise: float, seed: int) -> dict[str, list[float]]:
    g = np.random.default_rng(seed)
    values: dict[str, list[float]] = {"a": [], "b": []}
    runs = []
    for _ in range(n):
        for env, level in (("a", 1000.0), ("b", 900.0)):
            v = level * math.exp(noise * g.standard_normal())
            values[env].append(v)
            runs.append(FakeRun({"w": v}, {"env": env}))
    write_runs(results, runs)
    return values


@pytest.mark.slow
def test_compare_gives_each_row_its_effect_and_detect_its_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    values = _series(tmp_path, 22, 0.03, seed=1)
    r = iowatt(capsys, "compare", "--results", tmp_path, "--detect", "5%", "--format", "json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    (b,) = [c for c in doc["cells"] if c["env"] == "b"]
    sigma = doc_noise(values["a"], values["b"])
    assert b["run_noise_pct"] == pytest.approx(100 * sigma, rel=1e-9)
    assert b["mde_pct"] == pytest.approx(doc_detects(22, 22, sigma), rel=1e-9)
    assert b["detectable"] is True
    assert b["runs_to_detect"] == max(20, doc_runs(0.05, sigma))
    assert doc["detect_pct"] == 5.0 and doc["power"] == 0.8
    r = iowatt(capsys, "compare", "--results", tmp_path, "--detect", "5")
    header = r.out.splitlines()[1]
    assert "detects" in header and "runs for 5%" in header
    row = next(line for line in r.out.splitlines() if line.split()[:2] == ["w", "b"])
    assert f"≥{b['mde_pct']:.1f}%" in row and f" {b['runs_to_detect']} " in row


def test_a_design_too_small_for_the_test_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _series(tmp_path, 3, 0.03, seed=2)
    r = iowatt(capsys, "compare", "--results", tmp_path, "--format", "json")
    (b,) = [c for c in json.loads(r.out)["cells"] if c["env"] == "b"]
    assert b["p_value"] == pytest.approx(0.1) and b["p_method"] == "exact"
    assert b["mde_pct"] is None and b["detectable"] is False
    r = iowatt(capsys, "compare", "--results", tmp_path)
    assert re.search(r"\bnone\b", r.out)
    assert "too few runs to call any difference real, however large" in r.err
    assert "p < 0.05 needs 4 runs per env" in r.err
