"""Tail fractions, slow seconds against throughput, and consecutive runs in the report."""

from __future__ import annotations

import html as htmllib
import math
import re
from pathlib import Path

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from scipy.stats import rankdata, spearmanr

from iowatt.compare.latent import analyse_series
from iowatt.compare.tails import (
    DEFAULT_THRESHOLDS_NS,
    interval_relation,
    mean_ranks,
    share_above,
    spearman,
)
from iowatt.report import write_report
from iowatt.report.load import load_run
from iowatt.report.series import SeriesPoint, code_spans, series_plot, series_points
from iowatt.report.tails import MAX_SLOW_PLOTS, format_share
from support import chromium
from support.report import Workload, make_run
from test_report import PLOTS, colour_pixels, figures, percentile_rows

MS = 1_000_000
SLOW_ID = "20261121-143000-bench-5105a0"
OLD_ID = "20261121-150000-bench-01d000"
# After the study's slow run: 5 % of a third of the seconds' I/Os near 234 ms, and those
# seconds lose 45 % of their operations.
SLOW = Workload(median_us=4_000, sigma=0.5, ops_s=400, seconds=30, slow_share=0.05,
                slow_loss=0.45, slow_every=3)  # fmt: skip
FAST = Workload(median_us=80)


def test_share_above_counts_strictly_above() -> None:
    values, counts = [50, 100, 150, 200, 250], [1, 2, 3, 4, 5]
    assert share_above(values, counts, [100, 200]) == [12 / 15, 5 / 15]
    assert share_above(values, counts, [0, 49, 250]) == [1.0, 1.0, 0.0]
    # Bucket order does not matter, and empty buckets count for nothing.
    assert share_above([250, 50, 300], [5, 1, 0], [100]) == [5 / 6]
    for empty in (([], []), ([100, 200], [0, 0])):
        assert all(math.isnan(s) for s in share_above(*empty, DEFAULT_THRESHOLDS_NS))
    with pytest.raises(ValueError, match="3 bucket values but 2 counts"):
        share_above([1, 2, 3], [1, 2], [1])


def test_interval_relation_by_hand() -> None:
    # Seconds with slow operations deliver less; the last interval is empty and left out.
    ops = np.array([1000, 1000, 600, 1000, 550, 1000, 500, 1000, 0])
    slow = np.array([[0, 0], [0, 0], [30, 12], [0, 0], [40, 0], [2, 0], [50, 20], [0, 0], [0, 0]])
    ops_s = ops.astype(float)
    low, high = interval_relation(ops_s, ops, [100 * MS, 200 * MS], slow)

    assert (low.threshold_ns, low.seconds, low.seconds_slow) == (100 * MS, 8, 4)
    assert low.slow_share == 122 / 6650
    assert low.ops_s_clean == 1000.0
    assert low.ops_s_slow == (600 + 550 + 1000 + 500) / 4
    assert low.loss_pct == pytest.approx(100 * (1 - 662.5 / 1000))
    assert (high.seconds_slow, high.slow_share) == (2, 32 / 6650)
    assert high.ops_s_clean == pytest.approx((1000 * 5 + 550) / 6)
    assert high.loss_pct == pytest.approx(100 * (1 - 550 / ((1000 * 5 + 550) / 6)))
    assert low.rho < -0.5 and high.rho < -0.5
    # The rank correlation is the textbook one, ties included.
    keep = ops > 0
    expected = spearmanr(slow[keep, 0] / ops[keep], ops_s[keep]).statistic
    assert low.rho == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_spearman_matches_scipy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    x, y = rng.integers(0, 5, 40), rng.normal(size=40)  # many ties in x
    assert spearman(x, y) == pytest.approx(spearmanr(x, y).statistic, rel=1e-12)


def test_constant_inputs_give_nan_without_warnings() -> None:
    # filterwarnings=error: a RuntimeWarning or scipy's ConstantInputWarning fails the test.
    thresholds = [100 * MS]
    (none,) = interval_relation([5.0, 5.0, 5.0], [5, 5, 5], thresholds, [[0], [0], [0]])
    assert none.seconds_slow == 0 and none.slow_share == 0.0 and none.ops_s_clean == 5.0
    assert all(math.isnan(v) for v in (none.ops_s_slow, none.loss_pct, none.rho))
    (all_slow,) = interval_relation([5.0, 4.0], [5, 4], thresholds, [[1], [1]])
    assert math.isnan(all_slow.ops_s_clean) and math.isnan(all_slow.loss_pct)
    (empty,) = interval_relation([], [], thresholds, [])
    assert empty.seconds == 0
    assert all(math.isnan(v) for v in (empty.slow_share, empty.ops_s_clean, empty.rho))
    (zero_clean,) = interval_relation([0.0, 3.0], [1, 3], thresholds, [[0], [1]])
    assert math.isnan(zero_clean.loss_pct)  # no baseline to lose from
    assert math.isnan(spearman([1.0], [2.0])) and math.isnan(spearman([1, 2], [3, 3]))
    with pytest.raises(ValueError, match="shape"):
        interval_relation([1.0], [1], [1, 2], [[0]])


@pytest.fixture(scope="module")
def tail_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A run with slow seconds beside a clean workload, and an old run without slow counts."""
    root = tmp_path_factory.mktemp("tails")
    return {
        SLOW_ID: make_run(root, SLOW_ID, {"slowread": SLOW, "randread8k": FAST}, seed=11),
        OLD_ID: make_run(root, OLD_ID, {"randread8k": FAST}, seed=12, slow_ns=None),
    }


@pytest.fixture(scope="module")
def tail_html(tail_runs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> str:
    out = write_report(list(tail_runs.values()), tmp_path_factory.mktemp("out") / "report.html")
    return out.read_text(encoding="utf-8")


def merged_histogram(run: Path, workload: str) -> tuple[np.ndarray, np.ndarray]:
    table = pq.read_table(run / "latency.parquet")
    rows = table.filter(pc.and_(pc.is_null(table["flowop"]), pc.equal(table["workload"], workload)))
    return rows["value_ns"].to_numpy(), rows["count"].to_numpy()


@pytest.mark.slow
def test_tail_columns_are_exact(tail_runs: dict[str, Path], tail_html: str) -> None:
    header = re.search(r'<table class="percentiles">\s*<thead>(.*?)</thead>', tail_html, re.S)
    assert header is not None
    assert re.findall(r'data-threshold="(\d+)"[^>]*>([^<]+)<', header[1]) == [
        ("100000000", "&gt; 100 ms"),
        ("200000000", "&gt; 200 ms"),
    ]
    rows = percentile_rows(tail_html)
    assert set(rows) == {(SLOW_ID, "slowread"), (SLOW_ID, "randread8k"), (OLD_ID, "randread8k")}
    for (run_id, workload), body in rows.items():
        values, counts = merged_histogram(tail_runs[run_id], workload)
        samples = np.repeat(values, counts)
        cells = re.findall(r'data-share="([^"]+)" data-above="(\d+)"[^>]*>([^<]+)<', body)
        assert len(cells) == 2, (run_id, workload)
        for threshold, (share, above, text) in zip(DEFAULT_THRESHOLDS_NS, cells, strict=True):
            expected = int((samples > threshold).sum())
            assert int(above) == expected
            assert float(share) == expected / samples.size
            assert text == format_share(expected / samples.size)
    # The slow workload's share is small but visible, and the intervals' counts add up to it.
    above = re.findall(r'data-above="(\d+)"', rows[SLOW_ID, "slowread"])
    intervals = pq.read_table(tail_runs[SLOW_ID] / "intervals.parquet").to_pandas()
    slow_ops = np.stack(intervals[intervals["workload"] == "slowread"]["slow_ops"].to_numpy())
    assert [int(a) for a in above] == slow_ops.sum(axis=0).tolist()
    share_200 = int(above[1]) / int(re.findall(r'data-count="(\d+)"', rows[SLOW_ID, "slowread"])[0])
    assert 0.005 < share_200 < 0.03
    assert "0 %" in rows[SLOW_ID, "randread8k"]


def slow_rows(html: str, run_id: str, workload: str) -> list[dict[str, str]]:
    section = re.search(
        rf'<section class="slow" data-run="{run_id}" data-workload="{workload}">(.*?)</section>',
        html,
        re.S,
    )
    assert section is not None, (run_id, workload)
    out = []
    for threshold, body in re.findall(r'<tr data-threshold="(\d+)">(.*?)</tr>', section[1], re.S):
        cells = re.findall(r"<td([^>]*)>(.*?)</td>", body, re.S)
        row = {"threshold": threshold, "texts": [t for _, t in cells]}
        for attrs, _ in cells:
            row |= dict(re.findall(r'data-(share|loss|rho)="([^"]*)"', attrs))
        out.append(row)
    return out


def test_slow_section_shows_the_loss(tail_runs: dict[str, Path], tail_html: str) -> None:
    html = tail_html
    assert html.index("<h2>Throughput over time</h2>") < html.index(
        "<h2>Slow operations and throughput</h2>"
    )
    table = pq.read_table(tail_runs[SLOW_ID] / "intervals.parquet").to_pandas()
    mine = table[table["workload"] == "slowread"]
    ops_s = mine["ops_s"].to_numpy()
    slow = np.stack(mine["slow_ops"].to_numpy())
    rows = slow_rows(html, SLOW_ID, "slowread")
    assert [int(r["threshold"]) for r in rows] == list(DEFAULT_THRESHOLDS_NS)
    for k, row in enumerate(rows):
        hit = slow[:, k] > 0
        loss = 100 * (1 - ops_s[hit].mean() / ops_s[~hit].mean())
        assert float(row["loss"]) == pytest.approx(loss, rel=1e-12)
        assert row["texts"][6] == f"{loss:.1f} %"
        assert loss > 30  # the fixture's stalls cost 45 % of a slow second's operations
        assert row["texts"][1:3] == [str(len(mine)), str(int(hit.sum()))]
        assert float(row["share"]) == slow[:, k].sum() / mine["ops"].sum()
        assert float(row["rho"]) < -0.5
    charts = dict(
        re.findall(r'<figure class="chart" data-chart="([^"]+)">(.*?)</figure>', html, re.S)
    )
    assert "<svg" in charts["slow-0"] and "&gt; 200 ms" in charts["slow-0"]
    # The clean workload gets one line, not an empty plot; the old run is said to lack counts.
    assert not re.search(r'<section class="slow"[^>]*data-workload="randread8k"', html)
    none = re.search(r'<p class="note slow-none">(.*?)</p>', html, re.S)
    assert none is not None
    assert "above 100 ms" in none[1] and f"randread8k (<code>{SLOW_ID}</code>)" in none[1]
    missing = re.search(r'<p class="note slow-missing">(.*?)</p>', html, re.S)
    assert missing is not None and "1 workload" in missing[1]
    # The page's own plots are unchanged.
    assert set(figures(html)) == PLOTS


@pytest.mark.slow
def test_slow_plots_are_capped(tmp_path: Path) -> None:
    short = Workload(median_us=4_000, ops_s=60, seconds=3, slow_share=0.1, slow_loss=0.5)
    runs = [
        make_run(tmp_path, f"20261121-1{i:02d}000-bench-{i:06x}", {"slowread": short}, seed=i)
        for i in range(MAX_SLOW_PLOTS + 2)
    ]
    html = write_report(runs, tmp_path / "report.html").read_text(encoding="utf-8")
    assert html.count('<section class="slow"') == MAX_SLOW_PLOTS + 2
    assert len(re.findall(r'data-chart="slow-\d+"', html)) == MAX_SLOW_PLOTS
    assert "2 scatter plots\n  left out" in html


def test_old_and_empty_runs_still_render(tmp_path: Path) -> None:
    old = make_run(tmp_path, OLD_ID, {"randread8k": FAST}, seed=5, slow_ns=None)
    idle = make_run(
        tmp_path, SLOW_ID, {"randread8k": Workload(median_us=1, seconds=0)}, seed=6,
        status="incomplete", reason="interrupted",
    )  # fmt: skip
    assert load_run(old).slow == {} and load_run(idle).slow == {}
    html = write_report([old, idle], tmp_path / "report.html").read_text(encoding="utf-8")
    assert "<h2>Slow operations and throughput</h2>" in html
    assert '<section class="slow"' not in html
    rows = percentile_rows(html)
    assert "no data" in rows[SLOW_ID, "randread8k"]
    assert 'colspan="8"' in rows[SLOW_ID, "randread8k"]  # 6 percentiles and 2 shares
    assert "data-share" in rows[OLD_ID, "randread8k"]
    # The idle run measured nothing, so there is no series of two runs to show.
    assert "<h2>Consecutive runs</h2>" not in html


# A campaign in blocked order: six runs in the quiet room, then six in the datacenter rack,
# where performance starts at the quiet room's and only fades to its own level (carry-over).
# After the move, the rack's first three runs stay near the quiet room's level, then settle.
ENVS = ["quiet-room"] * 6 + ["dc-rack"] * 10
LEVELS = [1000, 1010, 995, 1005, 990, 1000, 1000, 930, 860, 600, 612, 595, 605, 590, 603, 598]
HOUR = 3_600_000_000_000


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    root = tmp_path_factory.mktemp("campaign")
    runs = []
    for i, (env, level) in enumerate(zip(ENVS, LEVELS, strict=True)):
        workloads = {"randread8k": Workload(median_us=80, ops_s=level * 20, seconds=2)}
        started = 1_795_271_400_000_000_000 + i * HOUR
        run_id = f"20261121-{i:02d}0000-bench-c{i:05x}"
        labels = {"env": env, "campaign": "c1", "rep": str(i)}
        runs.append(make_run(root, run_id, workloads, seed=100 + i, labels=labels,
                             started_ns=started))  # fmt: skip
    # Given out of order: the series follows the start times, not the command line.
    return runs[::-1]


@pytest.mark.slow
def test_consecutive_runs_show_the_series_and_findings(
    campaign: list[Path], tmp_path: Path
) -> None:
    report = write_report(campaign, tmp_path / "report.html")
    html = report.read_text(encoding="utf-8")
    runs = [load_run(path) for path in campaign]
    points = series_points(runs, "randread8k")
    assert [p.env for p in points] == ENVS
    findings = analyse_series([p.value for p in points], [p.env for p in points])
    assert "carry-over" in [f.kind for f in findings], "the injected carry-over must be found"
    section = re.search(r'<section class="series" data-workload="randread8k">(.*?)</section>',
                        html, re.S)  # fmt: skip
    assert section is not None
    # Part of the answer a report over environments leads with: after the verdict, before
    # the details.
    assert (
        html.index("<h2>Verdict: each env against env=quiet-room</h2>")
        < html.index("<h2>Consecutive runs</h2>")
        < html.index("<h2>Slow operations and throughput</h2>")
    )
    svg = section[1]
    assert "<svg" in svg and "quiet-room" in svg and "dc-rack" in svg
    assert "quiet-room × 6, dc-rack × 10" in htmllib.unescape(svg)
    listed = re.findall(r'<li data-kind="([^"]+)"[^>]*>(.*?)</li>', svg, re.S)
    # Each message in full, its `backticked` names set as code.
    shown = [(k, htmllib.unescape(re.sub(r"</?code>", "`", m))) for k, m in listed]
    assert shown == [(f.kind, f.message) for f in findings]
    assert "<code>dc-rack</code>" in listed[0][1]
    # A browser draws both environments' points, not just their legend entries.
    png = chromium.screenshot(report, tmp_path / "report.png", height=9000)
    from PIL import Image

    page = np.asarray(Image.open(png).convert("RGB")).astype(np.int16)
    box = chromium.boxes(report, "figure.chart", "data-chart", height=9000)["series-0"]
    left, top, right, bottom = box
    pixels = page[top:bottom, left:right]
    for colour in ("C0", "C1"):
        assert colour_pixels(pixels, colour) > 300, colour


def test_too_few_runs_per_environment(tmp_path: Path) -> None:
    runs = [
        make_run(tmp_path, f"20261121-1{i}0000-bench-00000{i}", {"randread8k": FAST}, seed=i,
                 labels={"env": env}, started_ns=1_795_271_400_000_000_000 + i * HOUR)
        for i, env in enumerate(["quiet-room", "dc-rack", "quiet-room"])
    ]  # fmt: skip
    html = write_report(runs, tmp_path / "report.html").read_text(encoding="utf-8")
    section = re.search(r'<section class="series"[^>]*>(.*?)</section>', html, re.S)
    assert section is not None
    assert "too few runs per environment to test" in section[1]
    assert "quiet-room × 2, dc-rack × 1" in htmllib.unescape(section[1])


def test_single_run_has_no_consecutive_runs(tail_runs: dict[str, Path], tmp_path: Path) -> None:
    html = write_report([tail_runs[SLOW_ID]], tmp_path / "r.html").read_text(encoding="utf-8")
    assert "<h2>Consecutive runs</h2>" not in html and 'data-chart="series-' not in html


def test_series_plot_needs_two_points() -> None:
    one = SeriesPoint("r1", 1, "quiet-room", 1000.0)
    assert series_plot("randread8k", []) is None
    assert series_plot("randread8k", [one]) is None
    two = series_plot("rand/read 8k", [one, SeriesPoint("r2", 2, "dc-rack", 600.0)])
    assert two is not None and two.startswith("<svg")
    assert 'id="series-rand-read-8k-' in two


def test_finding_messages_are_escaped() -> None:
    assert str(code_spans("run `a<b>` & `c`")) == "run <code>a&lt;b&gt;</code> &amp; <code>c</code>"


@pytest.mark.slow
def test_series_at_equilibrium_says_nothing_was_detected(tmp_path: Path) -> None:
    envs = ["quiet-room"] * 5 + ["dc-rack"] * 5
    runs = [
        make_run(tmp_path, f"20261121-{i:02d}0000-bench-e{i:05x}",
                 {"randread8k": Workload(median_us=80, ops_s=20_000, seconds=2)}, seed=200 + i,
                 labels={"env": env}, started_ns=1_795_271_400_000_000_000 + i * HOUR)
        for i, env in enumerate(envs)
    ]  # fmt: skip
    html = write_report(runs, tmp_path / "report.html").read_text(encoding="utf-8")
    section = re.search(r'<section class="series"[^>]*>(.*?)</section>', html, re.S)
    assert section is not None
    assert '<ul class="findings">' not in section[1]
    assert "no trend, oscillation or carry-over detected (10 runs)" in section[1]


def test_mean_ranks_give_ties_their_mean_rank_as_scipy_does() -> None:
    assert mean_ranks([10.0, 20.0, 20.0, 5.0]).tolist() == [2.0, 3.5, 3.5, 1.0]
    assert mean_ranks([7, 7, 7]).tolist() == [2.0, 2.0, 2.0]
    rng = np.random.default_rng(3)
    for _ in range(100):
        sample = rng.integers(0, 6, size=int(rng.integers(1, 40)))
        assert np.array_equal(mean_ranks(sample), rankdata(sample))
