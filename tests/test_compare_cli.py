"""``iowatt compare`` on catalogs with known answers: medians, differences, tests, tail
fractions, equilibrium warnings, every output format, and bad input."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from iowatt.cli.compare import _detect
from iowatt.errors import ConfigError
from support.cli import assert_user_error, iowatt
from support.compare import FakeRun, write_runs


def _two_envs(results: Path, n: int = 8, seed: int = 3) -> dict[str, list[float]]:
    """Interleaved quiet/rack runs of two workloads: rack 40 % slower on randomread8k, equal
    on seqread (3 % noise)."""
    rng = np.random.default_rng(seed)
    runs, values = [], {"quiet": [], "rack": []}
    for _ in range(n):
        for env, level in (("quiet", 1000.0), ("rack", 600.0)):
            v = level * rng.normal(1, 0.03)
            values[env].append(v)
            seq = 300.0 * rng.normal(1, 0.03)
            runs.append(FakeRun({"randomread8k": v, "seqread": seq}, {"env": env, "site": "x"}))
    write_runs(results, runs)
    return values


def _json(capsys: pytest.CaptureFixture[str], *args: str | Path) -> dict:
    r = iowatt(capsys, "compare", *args, "--format", "json")
    assert r.code == 0, r
    return json.loads(r.out)


def _cell(doc: dict, workload: str, env: str) -> dict:
    (cell,) = [c for c in doc["cells"] if c["workload"] == workload and c["env"] == env]
    return cell


def test_a_real_difference_is_reported_with_its_sign_size_and_significance(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    values = _two_envs(tmp_path)
    doc = _json(capsys, "--results", tmp_path, "--control", "quiet")
    quiet, rack = _cell(doc, "randomread8k", "quiet"), _cell(doc, "randomread8k", "rack")
    assert quiet["n"] == rack["n"] == 8
    assert quiet["median"] == pytest.approx(float(np.median(values["quiet"])))
    assert rack["median"] == pytest.approx(float(np.median(values["rack"])))
    expected = 100 * (np.median(values["rack"]) / np.median(values["quiet"]) - 1)
    assert rack["diff_pct"] == pytest.approx(expected)
    assert rack["diff_ci_low"] < expected < rack["diff_ci_high"] < 0
    assert rack["p_value"] < 0.01 and rack["significant"] is True
    assert quiet["diff_pct"] is None  # the control itself
    same = _cell(doc, "seqread", "rack")
    assert same["significant"] is False and same["diff_ci_low"] < 0 < same["diff_ci_high"]
    assert quiet["q1"] <= quiet["median"] <= quiet["q3"]
    assert quiet["ci_low"] <= quiet["median"] <= quiet["ci_high"]


def test_tail_fractions_come_exactly_from_the_histograms(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 1,000 operations: 7 at 150 ms and 3 at 250 ms; a bucket exactly at 200 ms is not above.
    buckets = ((1_000_000, 980), (150_000_000, 7), (200_000_000, 10), (250_000_000, 3))
    write_runs(
        tmp_path,
        [FakeRun({"w": 100.0 + i}, {"env": "a"}, buckets) for i in range(3)]
        + [FakeRun({"w": 90.0}, {"env": "b"})],
    )
    doc = _json(capsys, "--results", tmp_path, "--slow", "100ms,200ms")
    a = _cell(doc, "w", "a")
    assert a["above_100ms"] == 20 / 1000 and a["above_200ms"] == 3 / 1000
    per_run = [r for r in doc["runs"] if r["env"] == "a"]
    assert [r["above_200ms"] for r in per_run] == [3 / 1000] * 3
    doc = _json(capsys, "--results", tmp_path, "--slow", "149ms")
    assert _cell(doc, "w", "a")["above_149ms"] == 20 / 1000


def test_cells_with_few_runs_are_flagged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _two_envs(tmp_path, n=3)
    r = iowatt(capsys, "compare", "--results", tmp_path)
    assert r.code == 0, r
    assert "n<5" in r.out
    assert "fewer than 5 runs" in r.err
    doc = _json(capsys, "--results", tmp_path)
    assert all(c["few_runs"] for c in doc["cells"])
    # With no --control, the group whose first run started first is the control.
    assert doc["control"] == "quiet"


def test_a_median_interval_short_of_95_percent_says_so_in_every_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Three runs: no interval of the median reaches 95 %; [min, max] holds it 75 % of the
    time, and every output says so."""
    values = _two_envs(tmp_path, n=3)
    doc = _json(capsys, "--results", tmp_path)
    quiet = _cell(doc, "randomread8k", "quiet")
    assert (quiet["ci_low"], quiet["ci_high"]) == (min(values["quiet"]), max(values["quiet"]))
    assert {c["ci_coverage"] for c in doc["cells"]} == {0.75}
    assert any("holds the median with probability 75%" in w for w in doc["warnings"])
    r = iowatt(capsys, "compare", "--results", tmp_path)
    assert all("CI 75%" in line for line in r.out.splitlines() if "randomread8k" in line)
    assert "holds the median with probability 75%" in r.err
    for fmt in ("markdown", "csv"):
        r = iowatt(capsys, "compare", "--results", tmp_path, "--format", fmt)
        assert ("CI 75%" in r.out) if fmt == "markdown" else ("0.75" in r.out)
    table = list(csv.DictReader(io.StringIO(r.out)))
    assert {row["ci_coverage"] for row in table} == {"0.75"}
    # Five runs: [min, max] still, at 93.75 %; ten: [x(2), x(9)] at 97.85 %, no flag.
    for n, coverage, flagged in ((5, 0.9375, True), (10, 1 - 22 / 1024, False)):
        values = _two_envs(tmp_path / str(n), n=n)
        doc = _json(capsys, "--results", tmp_path / str(n))
        quiet = _cell(doc, "randomread8k", "quiet")
        assert quiet["ci_coverage"] == pytest.approx(coverage)
        ranked = sorted(values["quiet"])
        k = 1 if n == 5 else 2
        assert (quiet["ci_low"], quiet["ci_high"]) == (ranked[k - 1], ranked[n - k])
        r = iowatt(capsys, "compare", "--results", tmp_path / str(n))
        assert ("CI 94%" in r.out) is flagged


def test_p_values_are_exact_and_printed_to_two_digits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Five runs against five wholly apart: p = 2/252, shown as 0.0079.
    _two_envs(tmp_path, n=5)
    doc = _json(capsys, "--results", tmp_path)
    rack = _cell(doc, "randomread8k", "rack")
    assert rack["p_value"] == pytest.approx(2 / 252, rel=1e-12)
    assert (rack["p_method"], rack["p_error"]) == ("exact", 0.0)
    r = iowatt(capsys, "compare", "--results", tmp_path)
    assert " 0.0079 " in next(line for line in r.out.splitlines() if "randomread8k  rack" in line)


def test_runs_not_at_equilibrium_are_warned_about(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The rack runs fall by 3 % a run: they never settled.
    runs = []
    for i in range(12):
        runs.append(FakeRun({"w": 1000.0 + (i % 3)}, {"env": "quiet"}))
        runs.append(FakeRun({"w": 800.0 * (1 - 0.03 * i)}, {"env": "rack"}))
    write_runs(tmp_path, runs)
    doc = _json(capsys, "--results", tmp_path, "--control", "quiet")
    rack = _cell(doc, "w", "rack")
    assert rack["at_equilibrium"] is False
    assert [f["kind"] for f in rack["findings"]] == ["trend"]
    assert any("rack" in w and "equilibrium" in w for w in doc["warnings"])
    assert _cell(doc, "w", "quiet")["at_equilibrium"] is True
    r = iowatt(capsys, "compare", "--results", tmp_path)
    assert "not at equilibrium" in r.out and "warning: w [env=rack]" in r.err


@pytest.mark.slow
def test_the_study_layout_and_every_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _two_envs(tmp_path)
    args = ("--results", tmp_path, "--control", "quiet")
    r = iowatt(capsys, "compare", *args, "--layout", "study", "--format", "csv")
    table = list(csv.DictReader(io.StringIO(r.out)))
    assert [row["workload"] for row in table] == ["randomread8k", "seqread"]
    assert float(table[0]["rack_diff_pct"]) < -30 and float(table[0]["rack_p_value"]) < 0.01
    rack = {"rack", "rack_diff_pct", "rack_p_value", "rack_mde_pct"}
    assert set(table[0]) == {"workload", "quiet"} | rack
    r = iowatt(capsys, "compare", *args, "--layout", "study", "--format", "markdown")
    lines = r.out.splitlines()
    header = next(line for line in lines if line.startswith("| workload"))
    assert "quiet (ops/s)" in header and "rack vs quiet" in header
    row = next(line for line in lines if line.startswith("| randomread8k"))
    assert "%*" in row  # the significant difference is marked
    r = iowatt(capsys, "compare", *args, "--format", "csv")
    long = list(csv.DictReader(io.StringIO(r.out)))
    assert len(long) == 4 and {"median", "ci_low", "p_value", "above_200ms"} <= set(long[0])
    out = tmp_path / "cmp.html"
    r = iowatt(capsys, "compare", *args, "--format", "html", "-o", out)
    assert r.code == 0, r
    html = out.read_text()
    assert "<svg" in html and "vs quiet" in html and "Consecutive runs" in html
    r = iowatt(capsys, "compare", *args, "--metric", "p99_ns")
    assert r.code == 0 and "p99 latency" in r.out


def test_filters_narrow_the_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _two_envs(tmp_path)
    doc = _json(capsys, "--results", tmp_path, "--workload", "seqread", "--label", "site=x")
    assert {c["workload"] for c in doc["cells"]} == {"seqread"}
    doc = _json(capsys, "--results", tmp_path, "20261121-00000", "20261121-00001")
    assert {c["n"] for c in doc["cells"]} == {1}


def test_incomplete_runs_are_left_out_unless_asked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_runs(
        tmp_path,
        [FakeRun({"w": 10.0}, {"env": "a"}), FakeRun({"w": 5.0}, {"env": "a"}, status="x")],
    )
    assert _cell(_json(capsys, "--results", tmp_path), "w", "a")["n"] == 1
    doc = _json(capsys, "--results", tmp_path, "--include-incomplete")
    assert _cell(doc, "w", "a")["n"] == 2


def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _two_envs(tmp_path, n=2)
    r = iowatt(capsys, "compare", "--results", tmp_path, "--control", "datacenter")
    assert_user_error(r, "env=datacenter")
    assert "quiet" in r.err  # the hint lists the groups there are
    r = iowatt(capsys, "compare", "--results", tmp_path, "--label", "env=nowhere")
    assert_user_error(r, "no runs match", "env=nowhere")
    r = iowatt(capsys, "compare", "--results", tmp_path, "--by", "placement")
    assert_user_error(r, "placement")
    r = iowatt(capsys, "compare", "--results", tmp_path, "--slow", "fast")
    assert_user_error(r, "--slow")
    r = iowatt(capsys, "compare", "--results", tmp_path / "nothing")
    assert_user_error(r, "no results directory")
    for detect in ("lots", "0", "-5%", "100%", "250", "nan", "5%%"):
        r = iowatt(capsys, "compare", "--results", tmp_path, "--detect", detect)
        assert_user_error(r, f"--detect `{detect}`", "between 0 and 100")
        assert "--detect 5%" in r.err and r.out == ""
    r = iowatt(capsys, "compare", "--results", tmp_path, "--detect", "1.5%")
    assert_user_error(r, "--detect `1.5%`", "within the ±2% noise band")
    assert "--noise" in r.err


@pytest.mark.fuzz
@given(st.text(max_size=12))
def test_any_detect_is_a_percentage_beyond_the_band_or_one_error(text: str) -> None:
    try:
        value = _detect(text, 2.0)
    except ConfigError as e:
        assert "--detect" in str(e) and e.hint
    else:
        assert 2.0 < value < 100.0


def _shifted(results: Path, shift: float, n: int = 10, seed: int = 5) -> None:
    """A control and a group `shift` × as fast, both with 0.2 % noise: any shift is
    p-significant, only one beyond the noise band is real."""
    rng = np.random.default_rng(seed)
    runs = []
    for _ in range(n):
        for env, level in (("a", 1000.0), ("b", 1000.0 * shift)):
            runs.append(FakeRun({"w": level * rng.normal(1, 0.002)}, {"env": env}))
    write_runs(results, runs)


def test_a_difference_is_real_only_when_its_ci_clears_the_noise_band(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _shifted(tmp_path / "small", 1.01)
    doc = _json(capsys, "--results", tmp_path / "small", "--control", "a")
    b = _cell(doc, "w", "b")
    assert b["p_value"] < 0.01 and 0 < b["diff_ci_low"] < b["diff_ci_high"] < 2
    assert b["significant"] is False and doc["noise_pct"] == 2.0
    doc = _json(capsys, "--results", tmp_path / "small", "--control", "a", "--noise", "0.5%")
    assert _cell(doc, "w", "b")["significant"] is True
    _shifted(tmp_path / "large", 1.05)
    doc = _json(capsys, "--results", tmp_path / "large", "--control", "a")
    assert _cell(doc, "w", "b")["significant"] is True
    r = iowatt(capsys, "compare", "--results", tmp_path / "large", "--control", "a")
    assert "* p < 0.05 (mann-whitney) and the 95% CI of the difference outside ±2%" in r.out


def test_the_legend_names_only_what_the_table_shows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _two_envs(tmp_path)
    args = ("--results", tmp_path, "--control", "quiet", "--layout", "study")
    study = _legend(iowatt(capsys, "compare", *args).out)
    assert "mann-whitney" in study and "> threshold" not in study and "bootstrap" not in study
    r = iowatt(capsys, "compare", "--results", tmp_path, "--by", "site")
    legend = _legend(r.out)
    assert "p <" not in legend and "mann-whitney" not in legend, "one group: no test shown"
    assert "detects" not in legend and "bootstrap" not in legend, "nor a difference"
    assert "> threshold" in legend and "order statistics" in legend


def _legend(text: str) -> str:
    """The footnote under a terminal table, its wrapped lines joined: the lines after the
    title that the table does not indent."""
    return " ".join(line for line in text.splitlines()[1:] if not line.startswith(" "))
