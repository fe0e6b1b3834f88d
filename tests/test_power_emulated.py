"""``--power emulated:path=MOUNT``: an emulated disk's ``.iowatt/energy_uj`` recorded as a power
source, against the disk's own account of its states, and the mistakes a user makes naming it."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pyarrow.parquet as pq
import pytest

from iowatt.power.recording import Recording
from iowatt.power.sources import parse_source
from support.cli import assert_user_error, iowatt, runs_in, summary
from support.emulated import emulated_disk

# ultrastar-36z15 in iowatt/sim/disks.toml
IDLE_W, BUSY_W = 10.2, 13.5


@pytest.mark.slow
def test_a_bench_on_an_emulated_disk_records_the_disks_own_energy(capsys, tmp_path):
    results = tmp_path / "r"
    with emulated_disk(tmp_path / "disk") as disk:
        mount = disk.mount
        r = iowatt(capsys, "bench", "randomread", "--directio", "--target", mount,
                   "--runtime", "1s", "--filesize", "4m", "--results", results, "--quiet",
                   "--no-report", "--power", f"emulated:path={mount}",
                   "--power-hz", "20")  # fmt: skip
        assert r.code == 0, r.err
        assert disk.counters()["read_ops"] > 0
    (run,) = runs_in(results)
    power = pq.read_table(run / "power.parquet").to_pydict()
    assert set(power["channel"]) == {"disk"} and set(power["scope"]) == {"disk"}
    t, joules = power["mono_ns"], power["joules"]
    assert len(t) > 10
    # Sample by sample, the recording is the disk's energy: its states times their watts.
    for i in range(1, len(t)):
        want = disk.energy_j(t[i]) - disk.energy_j(t[0])
        assert joules[i] - joules[0] == pytest.approx(want, abs=0.02), i
    s = summary(run)["power"]
    assert s["headline"] == "emulated/disk"
    work = s["workloads"]["randomread"]["emulated/disk"]
    assert IDLE_W < work["avg_w"] <= BUSY_W + 0.01  # reading, near-busy the whole time
    assert work["j_per_op"] == pytest.approx(
        work["energy_j"] / summary(run)["workloads"]["randomread"]["ops"]
    )


@pytest.mark.slow
def test_power_record_with_an_emulated_disk_counts_idle_and_busy_energy(capsys, tmp_path):
    results = tmp_path / "r"
    with emulated_disk(tmp_path / "disk") as disk:
        data = disk.mount / "data"
        data.write_bytes(b"x" * (1 << 20))
        r = iowatt(capsys, "power", "record", "--results", results, "--no-report", "--hz", "50",
                   "--source", f"emulated:path={disk.mount},name=hdd",
                   "--", "dd", f"if={data}", "of=/dev/null", "bs=4k", "iflag=direct")  # fmt: skip
        assert r.code == 0, r.err
    (run,) = runs_in(results)
    power = pq.read_table(run / "power.parquet").to_pydict()
    assert set(power["source"]) == {"hdd"}
    t, joules = power["mono_ns"], power["joules"]
    want = disk.energy_j(t[-1]) - disk.energy_j(t[0])
    assert joules[-1] - joules[0] == pytest.approx(want, abs=0.02)
    # Over the recording the disk was idle at times and busy at others.
    span_s = (t[-1] - t[0]) / 1e9
    assert IDLE_W * span_s < want < BUSY_W * span_s
    assert summary(run)["power"]["work"]["hdd/disk"]["energy_j"] > 0


def _drain_until(rec: Recording, done: Callable[[dict[str, list[Any]]], bool]) -> None:
    """Drains the recording until ``done(what was drained)`` holds (``mono_ns`` and ``events``
    lists), with a deadline."""
    got: dict[str, list[Any]] = {"mono_ns": [], "events": []}
    deadline = time.monotonic() + 30
    while not done(got):
        assert time.monotonic() < deadline, got["events"]
        time.sleep(0.02)
        chunk = rec.drain()
        got["mono_ns"] += chunk["mono_ns"]
        got["events"] += chunk["events"]


@pytest.mark.slow
def test_a_disk_unmounted_and_mounted_again_is_read_again_from_its_new_counter(tmp_path):
    root = tmp_path / "disk"
    with emulated_disk(root) as first:
        rec = Recording([parse_source(f"emulated:path={first.mount}")], hz=50)
        rec.start()
        _drain_until(rec, lambda got: len(got["mono_ns"]) >= 5)
    assert not first.result["lazy_unmount"]  # recording never keeps the disk mounted
    # Unmounted: the counter cannot be read, which is an error event, not the end.
    _drain_until(rec, lambda got: any(e["kind"] == "error" for e in got["events"]))
    with emulated_disk(root, seed=2) as second:
        _drain_until(rec, lambda got: any("reset" in e["message"] for e in got["events"]))
        _drain_until(rec, lambda got: len(got["mono_ns"]) >= 5)
    data = rec.stop()
    t, joules = data.mono_ns.tolist(), data.value.tolist()
    k = next(i for i, ti in enumerate(t) if ti > second.result["t0_ns"])  # the first read again
    assert joules[k] == joules[k - 1]  # nothing is counted across the gap
    assert joules[k - 1] - joules[0] == pytest.approx(
        first.energy_j(t[k - 1]) - first.energy_j(t[0]), abs=0.02
    )
    assert joules[-1] - joules[k] == pytest.approx(
        second.energy_j(t[-1]) - second.energy_j(t[k]), abs=0.02
    )
    assert joules[-1] - joules[k] > 0


@pytest.mark.parametrize(
    ("where", "fragment"),
    [
        ("absent", "no emulated disk at"),
        ("plain", "is not an emulated disk's mount"),
        ("file", "is not a directory"),
    ],
)
def test_a_path_that_is_not_an_emulated_disk_is_one_clear_error(capsys, tmp_path, where, fragment):
    (tmp_path / "plain").mkdir()
    (tmp_path / "file").write_text("x")
    path = tmp_path / where
    r = iowatt(capsys, "power", "record", "--results", tmp_path / "r", "--no-report",
               "--source", f"emulated:path={path}", "--", "true")  # fmt: skip
    assert_user_error(r, f"`{path}`", fragment)
    assert "iowatt emulate mount BACKING MOUNT --disk-model NAME" in r.err
    assert not runs_in(tmp_path / "r")


def test_an_emulated_source_without_a_path_is_refused(capsys, tmp_path):
    r = iowatt(capsys, "bench", "randomread", "--results", tmp_path / "r", "--target", tmp_path,
               "--power", "emulated")  # fmt: skip
    assert_user_error(r, "path=MOUNT")
    assert "iowatt emulate mount" in r.err
    assert not runs_in(tmp_path / "r")
