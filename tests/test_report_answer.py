"""Reports lead with their answer: a bench's headline and what was measured, a campaign's
comparison (the same as `iowatt compare`'s) with its forest plot; details folded below. Pages
are checked as Chromium lays them out: above the fold, no sideways overflow, no console errors,
no chart label over another."""

from __future__ import annotations

import csv
import io
import itertools
import re
import urllib.parse
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from iowatt.report import write_report
from support import chromium
from support.cli import iowatt
from support.compare import FakeRun, write_runs


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Eight interleaved quiet/rack runs of two workloads, rack 40 % slower on one; the
    results directory and the report of every run."""
    results = tmp_path_factory.mktemp("campaign")
    rng = np.random.default_rng(3)
    runs = [
        FakeRun({"randomread8k": level * rng.normal(1, 0.03), "seqread": 300 * rng.normal(1, 0.03)},
                {"env": env})
        for _ in range(8)
        for env, level in (("quiet", 1000.0), ("rack", 600.0))
    ]  # fmt: skip
    dirs = write_runs(results, runs)
    return results, write_report(dirs, tmp_path_factory.mktemp("out") / "campaign.html")


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real one-workload bench run's report."""
    results = tmp_path_factory.mktemp("bench")
    from iowatt.cli import main

    main(["bench", "randomread", "--target", "/var/tmp", "--runtime", "500ms", "--filesize", "8m",
          "--results", str(results), "--quiet"])  # fmt: skip
    (run,) = [p for p in results.iterdir() if p.is_dir()]
    return run / "report.html"


def headings(html: str) -> list[str]:
    return [re.sub(r"<[^>]+>", "", h).strip() for h in re.findall(r"<h2>(.*?)</h2>", html, re.S)]


def test_a_bench_report_opens_on_its_headline_and_what_was_measured(bench: Path) -> None:
    html = bench.read_text(encoding="utf-8")
    assert headings(html)[0] == "Results"
    answer = re.search(r'<section class="answer" data-answer="bench">(.*?)</section>', html, re.S)
    assert answer is not None
    assert re.search(r"measured /var/tmp on .*: buffered I/O, through the page cache", answer[1])
    cells = re.findall(r"<th(?:\s[^>]*)?>(.*?)</th>", answer[1])
    assert cells == ["workload", "ops/s", "MiB/s", "p50", "p99", "p99.9", "&gt; 100 ms"]
    # Details follow, folded: the runs' facts are in a closed <details>.
    assert re.search(r'<details class="runs">\s*<summary><h2>Runs</h2>', html)


def test_a_campaign_report_leads_with_the_comparison_iowatt_compare_prints(
    campaign: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    results, report = campaign
    html = report.read_text(encoding="utf-8")
    assert headings(html)[:2] == ["Verdict: each env against env=quiet", "Consecutive runs"]
    link = re.search(r'download="comparison.csv" href="data:text/csv;charset=utf-8,([^"]*)"', html)
    assert link is not None
    r = iowatt(capsys, "compare", "--results", results, "--format", "csv")
    assert r.code == 0, r.err
    assert urllib.parse.unquote(link[1]) == r.out
    rows = {row["workload"]: row for row in csv.DictReader(io.StringIO(r.out))
            if row["env"] == "rack"}  # fmt: skip
    # The table shows the difference the CSV has, and marks the significant one.
    assert rows["randomread8k"]["significant"] == "True"
    assert rows["seqread"]["significant"] == "False"
    # Its columns: workload, quiet, rack, rack vs quiet, rack detects.
    cell = r"<td>([^<]*)</td>"
    found = re.findall(rf"<tr><td>(\w+)</td>(?:<td>[^<]*</td>){{2}}{cell}{cell}</tr>", html)
    cells = {w: (diff, detects) for w, diff, detects in found}
    for workload, mark in (("randomread8k", "*"), ("seqread", "")):
        row = rows[workload]
        assert cells[workload] == (
            f"{float(row['diff_pct']):.1f}%{mark}",
            f"≥{float(row['mde_pct']):.1f}%",
        )
    assert '<figure class="plot" data-plot="forest">' in html


@pytest.mark.slow
def test_reports_read_well_in_chromium(
    bench: Path, campaign: tuple[Path, Path], tmp_path: Path
) -> None:
    _, report = campaign
    # The answer is on the first screen at 1280 × 800.
    top = chromium.boxes(bench, "section.answer", "data-answer", width=1280, height=800)
    assert top["bench"][3] <= 800, top
    top = chromium.boxes(report, "table.verdict, figure[data-plot=forest]", "class",
                         width=1280, height=800)  # fmt: skip
    assert max(box[3] for box in top.values()) <= 800, top
    for page in (bench, report):
        assert chromium.page_width(page, 800) <= 800, f"{page.name} overflows at 800 px"
        assert chromium.console_errors(page) == []
    # No chart label is drawn over another (their boxes as laid out).
    texts = chromium.boxes(report, "svg g[id*='-text_']", "id", width=1280, height=6000)
    by_chart = defaultdict(list)
    for key, box in texts.items():
        by_chart[key.split("-text_")[0]].append((key, box))
    for chart, labels in by_chart.items():
        for (a, ra), (b, rb) in itertools.combinations(labels, 2):
            apart = (
                ra[2] <= rb[0] + 1 or rb[2] <= ra[0] + 1 or ra[3] <= rb[1] + 1 or rb[3] <= ra[1] + 1
            )
            assert apart, f"{chart}: {a} {ra} overlaps {b} {rb}"


def test_past_twenty_runs_a_report_shows_each_environment_pooled(tmp_path: Path) -> None:
    quiet = ((1_000_000, 990), (150_000_000, 10))
    rack = ((2_000_000, 900), (250_000_000, 100))
    runs = [FakeRun({"randomread8k": 1000.0 + i}, {"env": "quiet"}, quiet) for i in range(11)]
    runs += [FakeRun({"randomread8k": 600.0 + i}, {"env": "rack"}, rack) for i in range(11)]
    html = write_report(write_runs(tmp_path / "r", runs), tmp_path / "r.html").read_text()
    assert "22 runs: the tables and bars below show each environment" in html
    table = re.search(r'<table class="percentiles">(.*?)</table>', html, re.S)
    assert table is not None
    rows = re.findall(r'<tr data-run="([^"]+)" data-workload="randomread8k">(.*?)</tr>',
                      table[1], re.S)  # fmt: skip
    assert [r for r, _ in rows] == ["quiet (11 runs)", "rack (11 runs)"]
    ns = {r: [int(v) for v in re.findall(r'data-ns="(\d+)"', body)] for r, body in rows}
    # p50, p90, p99, p99.9, p99.99, max of 11 runs' operations together: rack's 1,100 of
    # 11,000 at 250 ms are its slowest 10 % (p90 is still the 9,900th, at 2 ms); quiet's 110
    # at 150 ms its slowest 1 % (p99 the 10,890th, at 1 ms).
    assert ns["quiet (11 runs)"] == [1_000_000] * 3 + [150_000_000] * 3
    assert ns["rack (11 runs)"] == [2_000_000] * 2 + [250_000_000] * 4
    counts = re.findall(r'data-count="(\d+)"', table[1])
    assert counts == ["11000", "11000"]
    # The throughput is the median run's; per-run slow seconds are left out.
    assert re.search(r"<td>1,005</td>", html) and re.search(r"<td>605</td>", html)
    assert "Slow operations and throughput" not in html


def test_runs_that_cannot_be_compared_are_reported_side_by_side(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    results = tmp_path / "r"
    r = iowatt(capsys, "sim", "server", "--workloads", "W4", "--policies", "FSTM", "--json",
               "--no-report", "--results", results)  # fmt: skip
    assert r.code == 0, r.err
    (sim,) = [p for p in results.iterdir() if p.is_dir()]
    (bench,) = write_runs(tmp_path / "b", [FakeRun({"randomread8k": 1000.0}, {})])
    r = iowatt(capsys, "report", bench, sim, "-o", tmp_path / "both.html")
    assert r.code == 0, r.err
    html = (tmp_path / "both.html").read_text(encoding="utf-8")
    said = " ".join(html.split())
    assert "kinds that cannot be compared together (bench measured; sim-server simulated)" in said
    # The measured run's answer first, the simulation's own sections at the end.
    assert html.index('data-answer="bench"') < html.index(f"Server cooling policies: {sim.name}")


@pytest.mark.slow
def test_every_table_downloads_as_csv(bench: Path) -> None:
    html = bench.read_text(encoding="utf-8")
    saved = chromium.csv_links(bench)
    assert len(saved) == html.count("<table")
    headline = list(csv.reader(io.StringIO(saved[0])))
    assert headline[0] == ["workload", "ops/s", "MiB/s", "p50", "p99", "p99.9", "> 100 ms"]
    answer = re.search(r'<table class="headline">(.*?)</table>', html, re.S)
    assert answer is not None
    cells = [re.sub(r"<[^>]+>", "", c).strip()
             for c in re.findall(r"<td[^>]*>(.*?)</td>", answer[1], re.S)]  # fmt: skip
    assert headline[1] == cells


def _power_record(capsys: pytest.CaptureFixture[str], results: Path) -> Path:
    r = iowatt(capsys, "power", "record", "--results", results, "--hz", "20", "--source",
               "cmd:command=echo 30", "--", "sleep", "0.5")  # fmt: skip
    assert r.code == 0, r.err
    (run,) = [p for p in results.iterdir() if p.is_dir()]
    return run / "report.html"


def _bench_with_power(capsys: pytest.CaptureFixture[str], results: Path) -> Path:
    r = iowatt(capsys, "bench", "randomread", "--runtime", "500ms", "--filesize", "4m",
               "--target", "/var/tmp", "--results", results, "--quiet",
               "--power", "cmd:command=echo 35", "--power-hz", "20")  # fmt: skip
    assert r.code == 0, r.err
    (run,) = [p for p in results.iterdir() if p.is_dir()]
    return run / "report.html"


def test_each_kind_of_report_opens_on_its_answer(
    bench: Path,
    campaign: tuple[Path, Path],
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    snapshot,  # type: ignore[no-untyped-def]
) -> None:
    from support.report import SweepDisk, make_sweep_run

    sweep = make_sweep_run(tmp_path / "s", "20261121-160000-sweep-5a5a5a",
                           {"sata": SweepDisk(37.0, knee=50, floor=0.12, model="HTE545050B9A300")},
                           [0.0, 50.0, 100.0], seed=7)  # fmt: skip
    pages = {
        "bench": bench,
        "bench with power": _bench_with_power(capsys, tmp_path / "bp"),
        "power record": _power_record(capsys, tmp_path / "p"),
        "campaign": campaign[1],
        "sweep": write_report([sweep], tmp_path / "sweep.html"),
    }
    order = {}
    for kind, page in pages.items():
        html = page.read_text(encoding="utf-8")
        answer = re.search(r'<section class="answer" data-answer="(\w+)"', html)
        order[kind] = {"answer": answer[1] if answer else None, "sections": headings(html)}
    assert order == snapshot


def test_chart_points_say_their_values_on_hover(campaign: tuple[Path, Path]) -> None:
    _, report = campaign
    html = report.read_text(encoding="utf-8")
    forest = html.split('data-plot="forest"')[1].split("</figure>")[0]
    assert re.findall(r"<title>(\w+) · rack: ([-+]\d+\.\d)%", forest) == [
        ("randomread8k", re.search(r"<tr><td>randomread8k</td>.*?<td>(-?\d+\.\d)%", html)[1]),
        ("seqread", re.search(r"<tr><td>seqread</td>.*?<td>(-?\d+\.\d)%", html)[1]),
    ]
    series = html.split('data-workload="randomread8k"')[1].split("</section>")[0]
    points = re.findall(r"<title>run (\d+): (\S+), ([\d,.]+) ops/s</title>", series)
    assert sorted(int(n) for n, _, _ in points) == list(range(1, 17))
    assert {run for _, run, _ in points} == {f"20261121-{i:05d}-bench-fake" for i in range(16)}
    bars = re.findall(r'<g id="bars-ops_s-\d+"><title>([^<]*)</title>', html)
    assert len(bars) == 32 and bars[0].startswith("quiet #1, randomread8k: ")
    # A band (16 runs: one per workload and environment) says which it is.
    bands = re.findall(r'<g id="cdf-series\d+"><title>([^<]*)</title>', html)
    assert bands == [f"{w} · {env} (8 runs)" for env in ("quiet", "rack")
                     for w in ("randomread8k", "seqread")]  # fmt: skip
