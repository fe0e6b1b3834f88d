"""The report of an emulated disk (kind ``emulate``): the answer table with the summary's
numbers first, then latency over time, the power states and the latency CDF; an incomplete run
(the mount process killed, the guardian committing its counters) still renders and says so. An
emulated array's run (``--array``) shows its personality, each disk's energy by state, power
per bin with PARAID's gear, and its data requests' CDFs, each number as its tables give it."""

from __future__ import annotations

import json
import mmap
import os
import re
import signal
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from iowatt.histogram import percentile
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


# PARAID deciding within a fraction of a second, so an idle array shifts down and spins two
# disks down while the test waits for it.
FAST_PARAID = """
[paraid]
sample_s = 0.1
short_s = 0.2
long_s = 0.3
min_dwell_s = 0.3
"""


def test_an_array_s_report_shows_its_personality_disks_by_state_power_gear_and_cdfs(
    capsys: pytest.CaptureFixture[str], dirs: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    backing, mount, results = dirs
    params = tmp_path / "fast.toml"
    params.write_text(FAST_PARAID)
    m = MountProcess(backing, mount, results, "--array", "paraid", "--disks", "4",
                     "--params", str(params), report=True)  # fmt: skip
    for i in range(6):
        (mount / f"f{i}").write_bytes(os.urandom(256 * 1024))
    for i in range(6):
        assert len((mount / f"f{i}").read_bytes()) == 256 * 1024
    # The lower gear's two disks spun down: the run has a shift and standby to show.
    wait_for(lambda: m.control("disk3/state") == "standby", m.proc, what="the lower gear")
    run = m.finish()
    a = summary(run)["array"]
    html = (run / "report.html").read_text()
    assert "Emulated array:" in html and "Nothing was counted" not in html
    answer = table(html, "disk")
    assert " array PARAID over 4 × IBM Ultrastar 36Z15" in answer, answer

    # What the answer says, from the run's tables.
    requests = pq.read_table(run / "raid_requests.parquet")
    data = requests.filter(pc.and_(pc.greater(requests["bytes"], 0), requests["ok"]))
    lookups = requests.num_rows - pc.sum(pc.greater(requests["bytes"], 0)).as_py()
    assert data.num_rows == a["read_ops"] + a["write_ops"] >= 12
    assert lookups == a["lookups"] > 0
    assert f"requests {data.num_rows:,} data requests ({a['read_ops']:,} reads" in answer
    assert f"and {lookups:,} lookups" in answer
    for metric, what in (("latency_ns", "latency"), ("completion_ns", "completion")):
        values = data[metric].to_numpy()
        ones = np.ones(values.size, np.int64)
        for p, key in ((50, "p50"), (99, "p99"), (100, "max")):
            assert f"{what} {key} {format_ns(percentile(values, ones, p))}" in answer, what
    (row,) = pq.read_table(run / "raid_runs.parquet").to_pylist()
    by_state = [sum(d.values()) for d in a["state_j"]]
    assert row["energy_j"] == pytest.approx(sum(by_state)) == pytest.approx(a["energy_j"])
    assert f"energy {format_joules(row['energy_j'])}" in answer
    assert f"mean power {format_watts(row['energy_j'] / a['seconds'])}" in answer
    assert f"spin cycles per disk {' '.join(str(c) for c in row['spin_cycles'])}" in answer
    events = pq.read_table(run / "events.parquet").to_pylist()
    gears = [e["message"] for e in events if e["source"] == "array" and e["kind"] == "gear"]
    assert gears[:2] == ["4 disks", "2 disks"]
    assert f"gear shifts {len(gears) - 1} (gears of 2, 4 disks)" in answer

    # Each disk's energy by state, and its time in standby from its power bins.
    disks = table(html, "disks")
    power = pq.read_table(run / "raid_power.parquet").to_pylist()
    # The states some disk spent energy in, in the order they stack.
    entered = [s for s in ("busy", "idle", "spinning_up", "spinning_down", "standby")
               if any(d[s] > 0 for d in a["state_j"])]  # fmt: skip
    assert {"busy", "idle", "standby"} <= set(entered)
    for d, states in enumerate(a["state_j"]):
        standby = sum(r["standby_s"] for r in power if r["disk"] == d)
        cells = " ".join(format_joules(states[s]) for s in entered)
        share = f"{by_state[d] / sum(by_state):.1%}"
        assert f"disk {d} {format_joules(by_state[d])} {share} {cells} {format_duration(standby)}" \
            f" {row['spin_cycles'][d]}" in disks, (d, disks)  # fmt: skip
    assert standby > 0, "disk 3 spun down"
    assert f"array {format_joules(sum(by_state))} 100.0%" in disks

    for plot in ("power", "latency", "completion"):
        assert f'data-plot="{plot}"' in html
    assert "PARAID&#39;s gear" in html or "PARAID's gear" in html
    assert html.index('data-table="disk"') < html.index("data-plot=")
    # `iowatt report RUN` writes the same page.
    r = iowatt(capsys, "report", run, "-o", tmp_path / "again.html")
    assert r.code == 0, r.err
    assert table((tmp_path / "again.html").read_text(), "disks") == disks
