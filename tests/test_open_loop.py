"""A bench with a schedule is an open loop to its last operation: what is in flight at the
deadline is drained, what was due and never issued is counted, and a run short of its rate says
so. A file system frozen for the end of the run (`fsfreeze`) is the stall that used to vanish."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from iowatt._engine import Progress
from iowatt.bench import Options, WorkloadConfig, plan, run
from iowatt.bench.config import SilentReporter
from iowatt.warnings import Kind, WarningSink
from support.cli import iowatt, manifest, runs_in, summary

RATE = 200
RUNTIME_S = 3
# One thread due every 5 ms from the start: every operation due before the deadline.
DUE = RATE * RUNTIME_S
# Operations completed before the file system is frozen, a third of the way in.
FREEZE_AT = DUE // 3
IODEPTH = 4


class Freezer(SilentReporter):
    """Freezes the file system once the run has done `FREEZE_AT` operations, and thaws it once
    the engine says its deadline has passed (or has ended, when it gave up on what was in
    flight): the stall covers the run's last second, and the operations caught in it end after
    the deadline."""

    def __init__(self, fs: Path) -> None:
        self.fs = fs
        self.frozen = self.thawed = False

    def update(self, wl: WorkloadConfig, progress: Progress) -> None:
        if not self.frozen and progress["ops"] >= FREEZE_AT:
            subprocess.run(["fsfreeze", "--freeze", self.fs], check=True)
            self.frozen = True
        if self.frozen and not self.thawed and progress["phase"] in ("finishing", "done"):
            self.thaw()

    def workload_finished(self, wl: WorkloadConfig, summary: dict[str, Any]) -> None:
        self.thaw()

    def thaw(self) -> None:
        if self.frozen and not self.thawed:
            subprocess.run(["fsfreeze", "--unfreeze", self.fs], check=False)
            self.thawed = True


@pytest.mark.slow
@pytest.mark.needs_root
@pytest.mark.parametrize(
    ("engine", "drain", "drained", "outstanding"),
    [
        # The write blocked at the deadline ends once thawed, well within the 10 s drain.
        ("psync", None, 1, 0),
        # No drain: the writes in flight at the deadline are given up there.
        ("io_uring", "0s", 0, IODEPTH),
    ],
)
def test_a_stall_at_the_end_of_a_rate_limited_run_is_counted_to_the_last_operation(
    tmp_path: Path,
    loop_device: Path,
    mounts: Any,
    sh: Callable[..., Any],
    need_tool: Callable[[str], str],
    engine: str,
    drain: str | None,
    drained: int,
    outstanding: int,
) -> None:
    need_tool("fsfreeze")
    sh("mkfs.ext4", "-q", loop_device)
    fs = mounts.mount(loop_device, target=tmp_path / "fs")
    opts = Options(
        runtime=f"{RUNTIME_S}s",
        filesize="8m",
        rate=RATE,
        engine=engine,
        iodepth=IODEPTH if engine == "io_uring" else None,
        drain=drain,
        seed=1,
    )
    config = plan("randomwrite", opts, target=fs, results=tmp_path / "r", report=False)
    freezer, sink = Freezer(fs), WarningSink(show=None)
    try:
        run_dir = run(config, freezer, sink)
    finally:
        freezer.thaw()
    assert freezer.frozen and freezer.thawed
    s = summary(run_dir)["workloads"]["randomwrite"]
    assert (s["errors"], s["drained"], s["outstanding"]) == (0, drained, outstanding)
    # Every operation due before the deadline completed, was never issued, or was still
    # outstanding: none vanished.
    assert s["not_issued"] > 0
    assert s["ops"] + s["not_issued"] + s["outstanding"] == DUE
    assert (s["requested_rate"], s["rate_unit"], s["rate_held"]) == (RATE, "ops/s", False)
    assert s["achieved_rate"] == s["ops_s"]
    # The lateness of what never completed is in the workload's latencies, not in its ops.
    latency = summary(run_dir)["fio"]["jobs"][0]["write"]["clat_ns"]["N"]
    assert latency == s["ops"]
    (short,) = [w for _, w in sink.recorded if w.kind is Kind.RATE_NOT_HELD]
    assert f"{s['not_issued']:,} operations due were never issued" in short.message
    assert manifest(run_dir)["config"]["workloads"][0]["drain_s"] == (0.0 if drain else 10.0)


@pytest.mark.slow
def test_a_rate_limited_bench_accounts_for_every_operation_due_and_a_closed_loop_for_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    common = ("randomread", "--runtime", "500ms", "--filesize", "4m", "--target", tmp_path)
    common += ("--json",)
    r = iowatt(
        capsys, "bench", *common, "--rate", "400", "--drain", "2s", "--results", tmp_path / "o"
    )
    assert r.code == 0, r.err
    s = json.loads(r.out)["workloads"]["randomread"]
    assert s["ops"] + s["not_issued"] + s["outstanding"] == 200
    assert (s["requested_rate"], s["rate_unit"], s["outstanding"]) == (400, "ops/s", 0)
    assert s["rate_held"] == (s["achieved_rate"] >= 0.99 * 400)
    (run_dir,) = runs_in(tmp_path / "o")
    assert manifest(run_dir)["config"]["workloads"][0]["drain_s"] == 2.0
    # The report's headline gives the achieved rate against the requested one.
    html = (run_dir / "report.html").read_text()
    headline = html[html.index('<table class="headline">') :].split("</table>")[0]
    assert "<th" in headline and ">schedule</th>" in headline
    assert f"of 400 ops/s{'' if s['rate_held'] else ', not held'}</td>" in headline
    r = iowatt(capsys, "bench", *common, "--results", tmp_path / "c", "--no-report")
    assert r.code == 0, r.err
    closed = json.loads(r.out)["workloads"]["randomread"]
    assert not {"requested_rate", "rate_held", "drained", "not_issued"} & closed.keys()
    (run_dir,) = runs_in(tmp_path / "c")
    assert "drain_s" not in manifest(run_dir)["config"]["workloads"][0]


@pytest.mark.slow
def test_an_event_generator_is_a_schedule_of_events(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wml = tmp_path / "paced.f"
    wml.write_text(
        "set $dir=/tmp\n"
        "eventgen rate=100\n"
        "define fileset name=files,path=$dir,size=4k,entries=8,prealloc=100\n"
        "define process name=p,instances=1 {\n"
        "  thread name=t,memsize=1m,instances=2 {\n"
        "    flowop statfile name=stat,filesetname=files\n"
        "    flowop eventlimit name=pace\n"
        "  }\n"
        "}\n"
        "run 1\n"
    )
    where = ("--target", tmp_path, "--results", tmp_path / "r", "--no-report", "--json")
    r = iowatt(capsys, "bench", wml, *where, "--drain", "1s")
    assert r.code == 0, r.err
    s = json.loads(r.out)["workloads"]["paced"]
    assert (s["requested_rate"], s["rate_unit"], s["outstanding"]) == (100, "events/s", 0)
    # Events 1 … 99 are generated before the 1 s deadline: each was taken, or never was.
    taken = round(s["achieved_rate"] * s["runtime_s"])
    assert taken + s["not_issued"] == 99
