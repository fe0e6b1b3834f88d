"""Warnings are shown once, on stderr even under --json, and kept in the run's events."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from iowatt.warnings import Kind, RunWarning, WarningSink
from support.cli import iowatt, runs_in


def _warnings(run_dir: Path) -> list[str]:
    events = pq.read_table(run_dir / "events.parquet").to_pylist()
    return [e["message"] for e in events if e["kind"] == "warning"]


def test_the_sink_shows_each_warning_once_and_keeps_it_for_the_events():
    shown: list[str] = []
    sink = WarningSink(shown.append)
    gap = RunWarning(Kind.POWER_GAP, "power channel `x` has 2 s of gaps")
    sink.warn(gap)
    sink.extend([gap, RunWarning(Kind.TMPFS_TARGET, "the target is on tmpfs")])
    assert shown == [
        "warning: power channel `x` has 2 s of gaps",
        "warning: the target is on tmpfs",
    ]
    events = sink.events()
    assert [e["message"] for e in events] == [
        "power-gap: power channel `x` has 2 s of gaps",
        "tmpfs-target: the target is on tmpfs",
    ]
    assert events[0]["mono_ns"] <= events[1]["mono_ns"]
    assert {(e["source"], e["kind"]) for e in events} == {("iowatt", "warning")}


@pytest.mark.slow
@pytest.mark.needs_root
def test_a_tmpfs_target_warns_under_json_and_the_run_records_it(capsys, tmp_path, mounts):
    target = mounts.mount("-t", "tmpfs", "-o", "size=64m", "none", target=tmp_path / "shm")
    results = tmp_path / "results"
    r = iowatt(capsys, "bench", "randomread", "--runtime", "1s", "--filesize", "8m",
               "--target", target, "--results", results, "--no-report", "--json")  # fmt: skip
    assert r.code == 0, r.err
    assert json.loads(r.out)["status"] == "complete", "stdout is the summary alone"
    tmpfs = "the target is on tmpfs: results measure memory, not a storage device"
    assert r.err.count(f"warning: {tmpfs}") == 1
    (run_dir,) = runs_in(results)
    assert _warnings(run_dir) == [f"tmpfs-target: {tmpfs}"]


@pytest.mark.slow
def test_power_warnings_of_a_bench_are_shown_and_recorded(capsys, tmp_path):
    # A source whose first poll answers and every later one fails: failed polls and a gap.
    flag = tmp_path / "answered"
    command = f"sh -c 'test -e {flag} && echo none || {{ touch {flag}; echo 5; }}'"
    target, results = tmp_path / "t", tmp_path / "r"
    target.mkdir()
    r = iowatt(capsys, "bench", "randomread", "--runtime", "1s", "--filesize", "8m",
               "--target", target, "--results", results, "--no-report", "--json",
               "--power", f"cmd:command={command}", "--power-hz", "10")  # fmt: skip
    assert r.code == 0, r.err
    json.loads(r.out)
    (run_dir,) = runs_in(results)
    recorded = _warnings(run_dir)
    failing = [m for m in recorded if m.startswith("source-failing: power source `cmd`")]
    assert len(failing) == 1 and "failed polls" in failing[0]
    assert any(m.startswith("power-gap: power channel `cmd/cmd`") for m in recorded)
    for message in recorded:
        shown = message.split(": ", 1)[1]
        assert r.err.count(f"warning: {shown}") == 1


@pytest.mark.slow
def test_settings_a_workload_file_ignores_are_warned_about_and_recorded(capsys, tmp_path):
    wml = tmp_path / "nice.f"
    wml.write_text(
        "define fileset name=fs,path=$dir,entries=10,dirwidth=10,size=4k,prealloc=100\n"
        "define process name=p,nice=10 {\n"
        "  thread name=t {\n"
        "    flowop openfile name=open,filesetname=fs,fd=1\n"
        "    flowop closefile name=close,fd=1\n"
        "  }\n"
        "}\n"
        "run 1\n"
    )
    target, results = tmp_path / "t", tmp_path / "r"
    target.mkdir()
    r = iowatt(capsys, "bench", wml, "--target", target, "--results", results,
               "--no-report", "--quiet")  # fmt: skip
    assert r.code == 0, r.err
    (run_dir,) = runs_in(results)
    (recorded,) = _warnings(run_dir)
    assert recorded == f"wml-ignored: {wml}:2: process `p`: nice is not applied"
    assert r.err.count(f"warning: {wml}:2: process `p`: nice is not applied") == 1
