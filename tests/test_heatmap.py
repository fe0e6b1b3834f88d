"""The latency heatmap: bands the engine counts per second by the rule Python states once
(iowatt.histogram), one colour scale, and a heatmap in the report of a long run."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from iowatt.histogram import (
    HEAT_EDGES_NS,
    HEAT_PALETTE,
    heat_bands,
    heat_colour,
    heat_level,
)
from iowatt.report import write_report
from iowatt.report.heatmap import HEAT_AFTER, HEAT_CMAP, heat_norm
from iowatt.report.load import load_run
from support.cli import iowatt, runs_in
from support.report import Workload, make_run


def test_the_bands_are_1_2_5_per_decade_from_1_us_to_100_s() -> None:
    assert HEAT_EDGES_NS[:4] == (1_000, 2_000, 5_000, 10_000)
    assert HEAT_EDGES_NS[-2:] == (50_000_000_000, 100_000_000_000)
    assert len(HEAT_EDGES_NS) == 25
    # A latency exactly on an edge belongs below it, as a slow threshold's does.
    assert heat_bands([1_000, 1_001, 100_000_000_001], [1, 1, 1]) == [1, 1] + [0] * 23 + [1]


def test_the_engine_counts_each_second_in_the_same_bands(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    r = iowatt(capsys, "bench", "randomread", "--target", "/var/tmp", "--runtime", "2s",
               "--filesize", "8m", "--no-report", "--quiet", "--results", tmp_path)  # fmt: skip
    assert r.code == 0, r.err
    (run,) = runs_in(tmp_path)
    intervals = pq.read_table(run / "intervals.parquet").to_pylist()
    for row in intervals:
        assert len(row["heat_ops"]) == len(HEAT_EDGES_NS) + 1
        assert sum(row["heat_ops"]) == row["ops"]
    # The whole run's histogram, banded by Python, is the seconds' bands added up: the engine
    # and iowatt.histogram draw the same edges by the same rule.
    latency = pq.read_table(run / "latency.parquet").to_pylist()
    merged = [row for row in latency if row["flowop"] is None]
    python = heat_bands([row["value_ns"] for row in merged], [row["count"] for row in merged])
    engine = np.sum([row["heat_ops"] for row in intervals], axis=0).tolist()
    assert python == engine


def test_the_colour_scale_is_the_histograms() -> None:
    norm = heat_norm(5_000.0)
    for ops in (1, 7, 80, 999, 5_000):
        assert float(norm(ops)) == pytest.approx(heat_level(ops, 5_000.0))
    assert heat_level(0, 5_000.0) is None
    assert heat_level(3, 1.0) == 1.0
    assert math.isclose(heat_level(10, 100.0) or 0, 0.5)


def test_the_terminals_colours_are_the_reports() -> None:
    """iowatt live colours a cell as the report's colour map does (matplotlib quantises its
    map to 256 steps, hence a step of tolerance)."""
    norm = heat_norm(5_000.0)
    for ops in (1, 2, 7, 80, 999, 4_000, 5_000):
        ours = heat_colour(ops, 5_000.0)
        assert ours is not None
        theirs = np.round(np.array(HEAT_CMAP(norm(ops))[:3]) * 255)
        assert np.abs(np.array(list(bytes.fromhex(ours[1:]))) - theirs).max() <= 2, ops
    assert (
        heat_colour(1, 5_000.0) == HEAT_PALETTE[0]
        and heat_colour(5_000, 5_000.0) == HEAT_PALETTE[-1]
    )
    assert heat_colour(0, 5_000.0) is None


def test_a_long_run_has_a_heatmap_of_its_seconds(tmp_path: Path) -> None:
    long = Workload(median_us=200, ops_s=2_000, seconds=HEAT_AFTER + 5)
    short = Workload(median_us=200, ops_s=2_000, seconds=3)
    run = make_run(tmp_path, "20261121-143000-bench-1a2b3c", {"long": long, "short": short},
                   seed=5)  # fmt: skip
    loaded = load_run(run)
    t_s, counts = loaded.heat["long"]
    assert t_s.tolist() == [float(t) for t in range(HEAT_AFTER + 5)]
    assert counts.shape == (HEAT_AFTER + 5, len(HEAT_EDGES_NS) + 1)
    assert counts.sum(axis=1).tolist() == loaded.intervals["long"]["ops_s"].astype(int).tolist()
    html = write_report([run], tmp_path / "r.html").read_text(encoding="utf-8")
    sections = re.findall(r'<section class="heat" data-run="[^"]+" data-workload="(\w+)">', html)
    assert sections == ["long"]  # three seconds are a timeline's job
    heat = html.split('<section class="heat"')[1]
    assert "<svg" in heat and "<image" in heat
