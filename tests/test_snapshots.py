"""The text people read, pinned: comparison tables, the runs list and error messages. Paths,
run ids and times are masked; the inputs are seeded, so every figure is reproducible."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from support.cli import iowatt
from support.compare import FakeRun, write_runs
from support.masks import masked


@pytest.fixture
def campaign(tmp_path: Path) -> Path:
    """Eight interleaved quiet/rack runs of two workloads: rack 40 % slower on one of them."""
    rng = np.random.default_rng(3)
    runs = []
    for _ in range(8):
        for env, level in (("quiet", 1000.0), ("rack", 600.0)):
            ops = {
                "randomread8k": level * rng.normal(1, 0.03),
                "seqread": 300 * rng.normal(1, 0.03),
            }
            runs.append(FakeRun(ops, {"env": env, "site": "lab"}))
    write_runs(tmp_path, runs)
    return tmp_path


@pytest.mark.parametrize("layout", ["long", "study"])
@pytest.mark.parametrize("fmt", ["text", "markdown"])
def test_comparison_tables(campaign, capsys, snapshot, fmt, layout):
    r = iowatt(capsys, "compare", "--results", campaign, "--control", "quiet",
               "--format", fmt, "--layout", layout)  # fmt: skip
    assert r.code == 0, r.err
    assert masked(r.out, campaign) == snapshot


def test_runs_list(campaign, capsys, snapshot, monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    r = iowatt(capsys, "runs", "--results", campaign, "--limit", "4")
    assert r.code == 0, r.err
    assert masked(r.out, campaign) == snapshot


@pytest.mark.parametrize(
    "argv",
    [
        ("bench", "nosuchthing"),
        ("bench", "randomread", "--iosize", "4q"),
        ("bench", "missing.f"),
        ("bench", "--suite", "filemacro", "--set", "nosuchvar=1"),
        ("bench", "randomread", "--label", "env"),
        ("compare", "--noise", "lots"),
        ("runs", "--results", "{tmp}/none"),
    ],
    ids=lambda argv: "-".join(a.strip("-") for a in argv[:3]),
)
def test_error_messages(tmp_path, capsys, snapshot, argv):
    r = iowatt(capsys, *(a.format(tmp=tmp_path) for a in argv))
    assert r.code == 2 and r.out == ""
    assert masked(r.err, tmp_path) == snapshot
