"""The HTML report: self-contained, exact percentiles, and plots a browser really draws."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from matplotlib.colors import to_rgb
from PIL import Image

from iowatt.errors import RunNotFoundError
from iowatt.histogram import percentile
from iowatt.report import write_report
from iowatt.report.context import PERCENTILES
from iowatt.units import format_duration, format_ns
from support import chromium
from support.report import Workload, brute_percentile, make_run

WORKLOADS = {
    "randread8k": Workload(median_us=80),
    "seqwrite1m": Workload(median_us=900, sigma=0.4, ops_s=2_000, iosize=2**20,
                           flowops=("write1", "fsync1")),
    "fileserver": Workload(median_us=300, sigma=1.0, ops_s=8_000,
                           flowops=("read1", "write1", "stat1")),
}  # fmt: skip
RUN_IDS = ("20261121-143000-bench-1a2b3c", "20261121-150000-bench-4d5e6f")
PLOTS = {"throughput", "latency-cdf", "throughput-over-time"}
# The XML namespaces matplotlib declares: names, never fetched.
NAMESPACES = {"http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink"}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two run directories by run id, the second one interrupted."""
    root = tmp_path_factory.mktemp("runs")
    return {
        RUN_IDS[0]: make_run(root, RUN_IDS[0], WORKLOADS, seed=1),
        RUN_IDS[1]: make_run(
            root, RUN_IDS[1], WORKLOADS, seed=2, status="incomplete", reason="interrupted"
        ),
    }


@pytest.fixture(scope="module")
def report(runs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The report of both runs, written to a directory of its own."""
    return write_report(list(runs.values()), tmp_path_factory.mktemp("out") / "report.html")


@pytest.fixture(scope="module")
def empty_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The report of a run interrupted before any operation completed."""
    runs = tmp_path_factory.mktemp("empty")
    idle = {name: Workload(median_us=1, seconds=0) for name in WORKLOADS}
    run = make_run(runs, RUN_IDS[0], idle, seed=3, status="incomplete", reason="interrupted")
    return write_report([run], runs / "report.html")


def figures(html: str) -> dict[str, list[str]]:
    """The contents of every ``<figure class="plot">``, by ``data-plot`` name."""
    found: dict[str, list[str]] = {}
    for name, body in re.findall(
        r'<figure class="plot" data-plot="([^"]+)">(.*?)</figure>', html, re.S
    ):
        found.setdefault(name, []).append(body)
    return found


def percentile_rows(html: str) -> dict[tuple[str, str], str]:
    """The percentile table's rows, by (run id, workload)."""
    table = re.search(r'<table class="percentiles">(.*?)</table>', html, re.S)
    assert table is not None
    rows = re.findall(
        r'<tr data-run="([^"]+)" data-workload="([^"]+)">(.*?)</tr>', table.group(1), re.S
    )
    return {(run, workload): body for run, workload, body in rows}


@pytest.mark.slow
def test_report_is_one_self_contained_file(report: Path) -> None:
    html = report.read_text(encoding="utf-8")
    assert [p.name for p in report.parent.iterdir()] == ["report.html"]
    # Scripts only inline (the CSV links): nothing is fetched.
    assert not re.search(r"<script\b[^>]*\bsrc=|<(link|img|iframe)\b|@import", html)
    assert not re.search(
        r"""(src|href)\s*=\s*["']?\s*(https?:)?//|url\(\s*["']?\s*(https?:)?//""", html
    )
    assert set(re.findall(r"https?://[^\s\"'<>)]+", html)) <= NAMESPACES
    ids = re.findall(r'\bid="([^"]+)"', html)
    assert len(ids) == len(set(ids)), "several inline SVGs must not share element ids"


def test_report_shows_every_run_workload_and_plot(report: Path) -> None:
    html = report.read_text(encoding="utf-8")
    for run_id in RUN_IDS:
        assert f'data-run="{run_id}"' in html
    assert re.search(r'class="status incomplete">\s*incomplete: interrupted', html)
    for fact in (
        "6.1.0-test-amd64",
        "Synthetic CPU",
        "FixtureDisk 1TB",
        "no (SSD/NVMe)",
        "fixture=yes",
    ):
        assert fact in html
    assert set(percentile_rows(html)) == {(r, w) for r in RUN_IDS for w in WORKLOADS}
    plots = figures(html)
    assert set(plots) == PLOTS
    for name, bodies in plots.items():
        assert len(bodies) == 1, name
        assert "<svg" in bodies[0] and "<?xml" not in bodies[0], name


def test_percentile_table_is_exact(runs: dict[str, Path], report: Path) -> None:
    rows = percentile_rows(report.read_text(encoding="utf-8"))
    for run_id, run in runs.items():
        table = pq.read_table(run / "latency.parquet")
        merged = table.filter(pc.is_null(table["flowop"]))
        for workload in WORKLOADS:
            rows_of = merged.filter(pc.equal(merged["workload"], workload))
            values, counts = rows_of["value_ns"].to_numpy(), rows_of["count"].to_numpy()
            samples = np.sort(np.repeat(values, counts))
            expected = [brute_percentile(samples, p) for p in PERCENTILES]
            cells = re.findall(r'data-ns="(\d+)"[^>]*>([^<]+)<', rows[run_id, workload])
            assert [int(ns) for ns, _ in cells] == expected, (run_id, workload)
            assert [text for _, text in cells] == [format_ns(ns) for ns in expected]
            assert f'data-count="{samples.size}"' in rows[run_id, workload]


@pytest.mark.parametrize("seed", range(5))
def test_percentile_matches_brute_force(seed: int) -> None:
    rng = np.random.default_rng(seed)
    values = rng.choice(np.arange(1, 10_000), size=50, replace=False)
    counts = rng.integers(0, 40, size=50)  # empty buckets included, input not sorted
    samples = np.sort(np.repeat(values, counts))
    for p in (0.0, 1.0, 25.0, 50.0, 90.0, 99.0, 99.9, 99.99, 100.0):
        assert percentile(values, counts, p) == brute_percentile(samples, p), p


def test_percentile_rule() -> None:
    values, counts = [10, 20, 30, 40], [1, 1, 1, 1]
    assert [percentile(values, counts, p) for p in (0, 25, 25.1, 50, 75.1, 100)] == [
        10,
        10,
        20,
        20,
        40,
        40,
    ]
    assert percentile([], [], 50) == 0


@pytest.mark.parametrize(
    ("ns", "text"),
    [
        (850, "850 ns"),
        (12_345, "12.3 µs"),
        (999_950, "1 ms"),
        (4_560_000, "4.56 ms"),
        (1.2e9, "1.2 s"),
    ],
)
def test_format_ns(ns: float, text: str) -> None:
    assert format_ns(ns) == text


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0 s"), (2.5, "2.5 s"), (59.96, "60 s"), (725, "12 min 5 s"), (7380, "2 h 3 min")],
)
def test_format_duration(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text


def test_empty_run_shows_no_data(empty_report: Path) -> None:
    html = empty_report.read_text(encoding="utf-8")
    assert "is <strong>incomplete</strong>" in html
    plots = figures(html)
    assert set(plots) == PLOTS
    for name, (body,) in plots.items():
        assert "<svg" not in body and "no data" in body, name
    assert all("no data" in row for row in percentile_rows(html).values())


def test_run_without_data_files_is_reported(tmp_path: Path) -> None:
    run = make_run(tmp_path, RUN_IDS[0], {"randread8k": Workload(median_us=80)}, seed=4)
    for name in ("intervals.parquet", "latency.parquet", "summary.json"):
        (run / name).unlink()
    html = write_report([run], tmp_path / "report.html").read_text(encoding="utf-8")
    assert html.count('<p class="nodata">no data</p>') == len(PLOTS)


def test_missing_run_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(RunNotFoundError, match=r"no manifest\.json"):
        write_report([tmp_path], tmp_path / "report.html")


def colour_pixels(image: np.ndarray, colour: str, tolerance: int = 12) -> int:
    """How many pixels of ``image`` are within ``tolerance`` of ``colour`` on every channel."""
    target = np.array(to_rgb(colour)) * 255
    return int((np.abs(image - target) <= tolerance).all(axis=-1).sum())


def rendered(html_path: Path, png_path: Path) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The page as Chromium draws it, and the pixels of each plot figure."""
    png = chromium.screenshot(html_path, png_path)
    page = np.asarray(Image.open(png).convert("RGB")).astype(np.int16)
    boxes = chromium.boxes(html_path, "figure.plot", "data-plot")
    return page, {
        name: page[top:bottom, left:right] for name, (left, top, right, bottom) in boxes.items()
    }


@pytest.mark.slow
def test_plots_render_in_chromium(report: Path, empty_report: Path, tmp_path: Path) -> None:
    page, plots = rendered(report, tmp_path / "report.png")
    assert (page < 250).any(axis=-1).mean() > 0.03, "the page is blank"
    assert set(plots) == PLOTS
    for name, pixels in plots.items():
        assert pixels.shape[0] > 250, f"{name} is too small to read"
        for colour in ("C0", "C1", "C2"):  # one colour per workload
            # A legend alone has ~120 pixels of each colour: more means data was drawn.
            assert colour_pixels(pixels, colour) > 300, (name, colour)

    # The detector must see nothing where no plot was drawn, or it proves nothing above.
    _, empty_plots = rendered(empty_report, tmp_path / "empty.png")
    assert set(empty_plots) == PLOTS
    for name, pixels in empty_plots.items():
        assert sum(colour_pixels(pixels, c) for c in ("C0", "C1", "C2")) == 0, name
