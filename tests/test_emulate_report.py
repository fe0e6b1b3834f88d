"""The report of an emulated disk (kind ``emulate``): the answer table with the summary's
numbers first, then latency over time, the power states and the latency CDF; an incomplete run
(the mount process killed, the guardian committing its counters) still renders and says so."""

from __future__ import annotations

import json
import mmap
import os
import re
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from iowatt.units import format_duration, format_joules, format_ns, format_watts
from support.cli import iowatt, manifest, runs_in, summary
from support.emulated import MountProcess, mount_dirs, mounted
from support.wait import wait_for

pytestmark = [pytest.mark.needs_root, pytest.mark.slow]
BLOCK = 4096


@pytest.fixture
def dirs(tmp_path: Path) -> Iterator[tuple[Path, Path, Path]]:
    yield from mount_dirs(tmp_path)


def do_io(mount: Path) -> None:
    """Writes a file through the mount, then reads it back block by block with O_DIRECT."""
    (mount / "f").write_bytes(os.urandom(64 * BLOCK))
    buf = mmap.mmap(-1, BLOCK)  # page-aligned, as O_DIRECT wants
    fd = os.open(mount / "f", os.O_RDONLY | os.O_DIRECT)
    try:
        for i in (5, 60, 0, 33, 17, 48, 2, 40):
            assert os.preadv(fd, [buf], i * BLOCK) == BLOCK
    finally:
        os.close(fd)


def table(html: str, name: str) -> str:
    """The text of the table ``data-table=NAME``, one space between cells."""
    start = html.index(f'data-table="{name}"')
    cells = re.sub(r"<[^>]+>", " ", html[start : html.index("</table>", start)])
    return " ".join(cells.split())


def test_the_report_leads_with_the_summary_s_numbers_and_draws_latency_states_and_cdf(
    capsys: pytest.CaptureFixture[str], dirs: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    backing, mount, results = dirs
    m = MountProcess(backing, mount, results, report=True)
    do_io(mount)
    code, out, err = m.stop()
    assert code == 0, err
    (run,) = runs_in(results)
    assert f"run: {run}" in out
    d = summary(run)["disk"]
    assert d["read_ops"] >= 8 and d["write_ops"] >= 1
    html = (run / "report.html").read_text()
    answer = table(html, "disk")
    lat, charge = d["latency_ns"], d["mean_charge_s"]
    for k, v in (
        ("requests", f"{d['requests']:,} ({d['read_ops']:,} reads, {d['write_ops']:,} writes"),
        ("ops/s", f"{d['ops_s']:,.1f}"),
        ("MiB/s", f"{d['mib_s']:,.2f}"),
        ("latency p50", format_ns(lat["p50"])),
        ("latency p99", format_ns(lat["p99"])),
        ("latency max", format_ns(lat["max"])),
        ("mean seek", format_ns(charge["seek"] * 1e9)),
        ("mean rotation", format_ns(charge["rotation"] * 1e9)),
        ("mean transfer", format_ns(charge["transfer"] * 1e9)),
        ("mean overhead", format_ns(charge["overhead"] * 1e9)),
        ("mean queueing", format_ns(d["mean_queued_ns"])),
        ("energy", format_joules(d["energy_j"])),
        ("mean power", format_watts(d["energy_j"] / d["seconds"])),
        ("spin cycles", str(d["spin_cycles"])),
    ):
        assert f"{k} {v}" in answer, (k, v, answer)
    assert d["model"] in answer
    states = table(html, "states")
    for state in ("busy", "idle"):
        t, j = d["state_s"][state], d["state_j"][state]
        assert f"{state} {format_duration(t)} {t / d['seconds']:.1%} {format_joules(j)}" in states
    for plot in ("latency", "states", "cdf"):
        assert f'data-plot="{plot}"' in html
    assert html.index('data-table="disk"') < html.index("data-plot="), "the answer first"
    assert 'class="banner"' not in html
    # `iowatt report RUN` writes the same page.
    r = iowatt(capsys, "report", run, "-o", tmp_path / "again.html")
    assert r.code == 0, r.err
    again = (tmp_path / "again.html").read_text()
    assert table(again, "disk") == answer
    assert again.count("data-plot=") == 3


def test_a_killed_mount_s_run_renders_its_counters_and_says_it_is_incomplete(
    capsys: pytest.CaptureFixture[str], dirs: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    backing, mount, results = dirs
    m = MountProcess(backing, mount, results, report=True)
    do_io(mount)

    def journaled() -> bool:
        found = list(results.glob(".tmp-*/journal.json"))
        return bool(found) and json.loads(found[0].read_text())["counters"]["read_ops"] >= 8

    wait_for(journaled, m.proc, what="the journal")
    m.stop(signal.SIGKILL)
    wait_for(lambda: not mounted(mount) and bool(runs_in(results)), what="the guardian")
    (run,) = runs_in(results)
    wait_for(lambda: (run / "report.html").exists(), what="the guardian's report")
    assert manifest(run)["status"] == "incomplete"
    c = summary(run)["counters"]
    html = (run / "report.html").read_text()
    assert "<strong>incomplete</strong>" in html and "counters it journaled" in html
    answer = table(html, "disk")
    assert f"requests {c['read_ops'] + c['write_ops']:,} ({c['read_ops']:,} reads" in answer
    assert f"energy {format_joules(c['energy_j'])}" in answer
    assert "latency p50 –" in answer, "no request list: no percentiles"
    assert "data-plot=" not in html
    # With nothing journaled, the page still renders, saying so.
    s = summary(run)
    del s["counters"]
    (run / "summary.json").write_text(json.dumps(s))
    r = iowatt(capsys, "report", run, "-o", tmp_path / "empty.html")
    assert r.code == 0, r.err
    empty = (tmp_path / "empty.html").read_text()
    assert "Nothing was counted" in empty and 'data-table="disk"' not in empty
