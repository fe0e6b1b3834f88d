"""The report of a characterization sweep: curves, sensors per step, the point table and events,
alone and beside a bench run."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from iowatt.report import write_report
from iowatt.report.sweep import MAX_EVENTS
from iowatt.units import format_ns, format_rate
from support.report import SweepDisk, Workload, brute_percentile, make_run, make_sweep_run
from test_report import NAMESPACES, PLOTS, colour_pixels, figures, percentile_rows, rendered

SWEEP_ID = "20261121-160000-sweep-5a5a5a"
BENCH_ID = "20261121-143000-bench-1a2b3c"
VALUES = [0.0, 25.0, 50.0, 75.0, 100.0]
# After the study's Table A: a SATA disk that collapses above 50 % PWM, a SAS disk that loses
# 2 % at the top, a flat SSD, and a disk that never wrote anything (null norms).
DISKS = {
    "hit-sata": SweepDisk(37.0, knee=50, floor=0.12, model="HTE545050B9A300", profile="hit-sata"),
    "sas": SweepDisk(81.6, knee=90, floor=0.98, model="ST9300605SS"),
    "ssd": SweepDisk(206.0, median_us=300, model="INTEL SSDSA2BW300G3", rotational=False),
    "stalled": SweepDisk(0.0, model="DeadDisk"),
}
WATCHDOG = "CPU Temp 86 °C over 85 °C: fans to 100 %"
SWEEP_PLOTS = {"sweep-0-norm", "sweep-0-mib", "sweep-0-sensors"}


@pytest.fixture(scope="module")
def sweep_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("sweep")
    return make_sweep_run(root, SWEEP_ID, DISKS, VALUES, seed=7, watchdog=WATCHDOG)


@pytest.fixture(scope="module")
def sweep_html(sweep_run: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    out = write_report([sweep_run], tmp_path_factory.mktemp("out") / "report.html")
    return out.read_text(encoding="utf-8")


def sweep_points(html: str) -> list[tuple[str, str, list[tuple[str, str]]]]:
    """The point table's rows: disk, value attribute and each cell's (attributes, text)."""
    table = re.search(r'<table class="sweep-points">(.*?)</table>', html, re.S)
    assert table is not None
    rows = re.findall(r'<tr data-disk="([^"]+)" data-value="([^"]+)">(.*?)</tr>', table[1], re.S)
    return [
        (disk, value, [(a, re.sub(r"<[^>]+>", "", t).strip()) for a, t in
                       re.findall(r"<td([^>]*)>(.*?)</td>", body, re.S)])
        for disk, value, body in rows
    ]  # fmt: skip


def attribute(attrs: str, name: str) -> str:
    found = re.search(rf'{name}="([^"]*)"', attrs)
    assert found is not None, (name, attrs)
    return found[1]


@pytest.mark.slow
def test_sweep_section_and_plots(sweep_html: str) -> None:
    html = sweep_html
    assert "<h2>Characterization sweep</h2>" in html
    assert f'<section class="sweep" data-run="{SWEEP_ID}">' in html
    plots = figures(html)
    assert set(plots) == SWEEP_PLOTS
    for name, (body,) in plots.items():
        assert "<svg" in body and "<?xml" not in body, name
    assert "fan duty (% PWM)" in plots["sweep-0-norm"][0]  # the x axis label, as SVG text
    # A sweep has no workloads: the bench sections are left out, not shown empty.
    assert "<h2>Throughput</h2>" not in html and '<table class="percentiles">' not in html
    # The header describes the sweep instead of a single target.
    for fact in (
        "fan duty (% PWM)",
        "5 values × 2 passes (order alternate)",
        "settle 1 s, hold 2 s",
        "random writes, 1 MiB blocks, iodepth 32, libaio, 1 thread",
        "hit-sata, sas, ssd, stalled",
    ):
        assert fact in html, fact
    assert "file system" not in html
    disks = re.search(r'<table class="sweep-disks">(.*?)</table>', html, re.S)
    assert disks is not None
    for name, disk in DISKS.items():
        assert f'<tr data-disk="{name}">' in disks[1]
        assert disk.model in disks[1]
    ids = re.findall(r'\bid="([^"]+)"', html)
    assert len(ids) == len(set(ids))
    # Scripts only inline (the CSV links): nothing is fetched.
    assert not re.search(r"<script\b[^>]*\bsrc=|<(link|img|iframe)\b|@import", html)
    assert set(re.findall(r"https?://[^\s\"'<>)]+", html)) <= NAMESPACES


def test_point_table_is_computed_from_the_tables(sweep_run: Path, sweep_html: str) -> None:
    steps = pq.read_table(sweep_run / "steps.parquet").to_pandas()
    latency = pq.read_table(sweep_run / "latency.parquet").to_pandas()
    stats = steps.groupby(["disk", "value"])["mib_s"].agg(["mean", "min", "max", "count"])
    peak = stats["mean"].groupby(level="disk").max()
    rows = sweep_points(sweep_html)
    assert [(d, float(v)) for d, v, _ in rows] == [(d, v) for d in DISKS for v in VALUES]
    for disk, value, cells in rows:
        s = stats.loc[(disk, float(value))]
        texts = [t for _, t in cells]
        assert texts[0] == disk and texts[1] == f"{float(value):g}"
        assert float(attribute(cells[2][0], "data-mib-s")) == pytest.approx(s["mean"], rel=1e-12)
        assert texts[2] == format_rate(s["mean"])
        spread = f"{format_rate(s['min'])}–{format_rate(s['max'])}" if s["count"] > 1 else "—"
        assert texts[3] == spread
        if peak[disk] > 0:
            norm = s["mean"] / peak[disk]
            assert float(attribute(cells[4][0], "data-norm")) == pytest.approx(norm, rel=1e-12)
            assert texts[4] == f"{norm:.3f}"
            assert texts[5] == f"{s['min'] / peak[disk]:.3f}–{s['max'] / peak[disk]:.3f}"
        else:  # the stalled disk: nothing to normalise by
            assert attribute(cells[4][0], "data-norm") == "" and texts[4] == "—"
        assert attribute(cells[6][0], "data-count") == str(int(s["count"])) == texts[6]
        # p99 of every operation of every hold window at this value, one by one.
        buckets = latency[(latency["workload"] == disk) & (latency["value"] == float(value))]
        samples = np.sort(np.repeat(buckets["value_ns"], buckets["count"]))
        if samples.size:
            p99 = brute_percentile(samples, 99.0)
            assert attribute(cells[7][0], "data-ns") == str(p99)
            assert texts[7] == format_ns(p99)
        else:
            assert "data-ns" not in cells[7][0] and texts[7] == "—"
    assert peak["stalled"] == 0  # the fixture really has a disk that never moved


def test_events_are_listed(sweep_html: str) -> None:
    events = re.search(r'<ul class="events">(.*?)</ul>', sweep_html, re.S)
    assert events is not None
    items = re.findall(r'<li data-kind="([^"]+)">(.*?)</li>', events[1], re.S)
    kinds = [kind for kind, _ in items]
    assert kinds == ["stimulus"] * 2 * len(VALUES) + ["watchdog"]
    texts = [re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", body)).strip() for _, body in items]
    assert texts[0] == "0.0 s stimulus fan 0 %"
    assert texts[5] == "15.0 s stimulus fan 100 %"  # pass 2 comes back down
    assert texts[-1] == f"30.0 s watchdog {WATCHDOG}"


@pytest.mark.slow
def test_long_event_lists_are_cut_short(tmp_path: Path) -> None:
    values = [float(v) for v in range(20, 100)]  # 80 stimulus events in one pass
    run = make_sweep_run(tmp_path, SWEEP_ID, {"ssd": DISKS["ssd"]}, values, passes=1, seed=3)
    html = write_report([run], tmp_path / "report.html").read_text(encoding="utf-8")
    assert html.count('<li data-kind="stimulus">') == MAX_EVENTS
    assert f"… and {len(values) - MAX_EVENTS} more in <code>events.parquet</code>" in html


def test_interrupted_sweep(tmp_path: Path) -> None:
    """Stopped in its second pass, without sensors: points measured once have no spread."""
    run = make_sweep_run(
        tmp_path, SWEEP_ID, DISKS, VALUES, seed=8, status="incomplete", reason="interrupted",
        steps_done=7, sensors=False,
    )  # fmt: skip
    html = write_report([run], tmp_path / "report.html").read_text(encoding="utf-8")
    assert "is <strong>incomplete</strong>" in html
    plots = figures(html)
    assert "<svg" in plots["sweep-0-norm"][0] and "<svg" in plots["sweep-0-mib"][0]
    assert "<svg" not in plots["sweep-0-sensors"][0]
    assert "no data" in plots["sweep-0-sensors"][0]
    # Pass 2 went 100 → 75 before it stopped: those two values were measured twice.
    for disk, value, cells in sweep_points(html):
        twice = float(value) in (75.0, 100.0)
        assert cells[6][1] == ("2" if twice else "1"), (disk, value)
        if not twice:
            assert cells[3][1] == "—" and cells[5][1] == "—", (disk, value)


def test_sweep_without_data_files(tmp_path: Path) -> None:
    run = make_sweep_run(tmp_path, SWEEP_ID, DISKS, VALUES, seed=9, status="incomplete")
    for name in ("steps", "latency", "intervals", "sensors", "power", "events", "sweep"):
        (run / f"{name}.parquet").unlink()
    (run / "summary.json").unlink()
    html = write_report([run], tmp_path / "report.html").read_text(encoding="utf-8")
    plots = figures(html)
    assert set(plots) == SWEEP_PLOTS
    for name, (body,) in plots.items():
        assert "<svg" not in body and "no data" in body, name
    assert sweep_points(html) == []
    assert '<td colspan="8" class="nodata-cell">no data</td>' in html
    assert '<ul class="events">' not in html


@pytest.mark.slow
def test_bench_and_sweep_in_one_report(sweep_run: Path, tmp_path: Path) -> None:
    workloads = {"randread8k": Workload(median_us=80), "seqwrite1m": Workload(median_us=900)}
    bench = make_run(tmp_path, BENCH_ID, workloads, seed=1)
    html = write_report([bench, sweep_run], tmp_path / "report.html").read_text(encoding="utf-8")
    plots = figures(html)
    # The sweep is the second run: its plots are numbered by its place in the report.
    assert set(plots) == PLOTS | {"sweep-1-norm", "sweep-1-mib", "sweep-1-sensors"}
    for name, (body,) in plots.items():
        assert "<svg" in body, name
    # The bench sections list the bench run's workloads only, never the sweep's disks.
    assert set(percentile_rows(html)) == {(BENCH_ID, w) for w in workloads}
    throughput = re.search(r'<table class="throughput">.*?</table>', html, re.S)
    assert throughput is not None
    assert BENCH_ID in throughput[0] and SWEEP_ID not in throughput[0]
    assert f'data-run="{BENCH_ID}"' in html and f'data-run="{SWEEP_ID}"' in html
    assert "FixtureDisk 1TB" in html  # the bench run's target facts are still there
    assert len(sweep_points(html)) == len(DISKS) * len(VALUES)
    ids = re.findall(r'\bid="([^"]+)"', html)
    assert len(ids) == len(set(ids)), "several inline SVGs must not share element ids"


@pytest.mark.slow
def test_sweep_renders_in_chromium(sweep_run: Path, tmp_path: Path) -> None:
    report = write_report([sweep_run], tmp_path / "report.html")
    page, plots = rendered(report, tmp_path / "report.png")
    assert (page < 250).any(axis=-1).mean() > 0.03, "the page is blank"
    assert set(plots) == SWEEP_PLOTS
    for name, pixels in plots.items():
        assert pixels.shape[0] > 250, f"{name} is too small to read"
    # One colour per disk; a legend alone has ~120 pixels of a colour, a curve many more.
    for colour in ("C0", "C1", "C2"):
        assert colour_pixels(plots["sweep-0-norm"], colour) > 300, colour
        assert colour_pixels(plots["sweep-0-mib"], colour) > 300, colour
    # The stalled disk has no normalised curve (not a line at 0 or NaN), only absolute zeros.
    assert colour_pixels(plots["sweep-0-norm"], "C3") == 0
    assert colour_pixels(plots["sweep-0-mib"], "C3") > 300
    for colour in ("C0", "C1"):  # the two fans share the RPM panel
        assert colour_pixels(plots["sweep-0-sensors"], colour) > 300, colour


def test_a_sweep_whose_driver_reads_no_sensors_says_so_instead_of_an_empty_panel(
    tmp_path: Path,
) -> None:
    run = make_sweep_run(tmp_path, SWEEP_ID, DISKS, VALUES, seed=8, sensors=False)
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["config"].update(driver={"driver": "emulated", "sensors": []}, sensors=[])
    (run / "manifest.json").write_text(json.dumps(manifest))
    html = write_report([run], tmp_path / "report.html").read_text(encoding="utf-8")
    assert set(figures(html)) == SWEEP_PLOTS - {"sweep-0-sensors"}
    assert "No sensor was read: the emulated driver reads none" in html
