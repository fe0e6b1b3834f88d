"""The emulated disk under vibration (`iowatt emulate mount --curve`): each request is charged
S / r(s) at the stimulus in force when it started, a schedule's rows apply at their times on
the mount's clock ÷ --speedup, `iowatt emulate set` changes the value and logs it, and bad input
is one line that mounts nothing. Accounting only: no wall-clock time is asserted."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from iowatt.emulate.vibration import load_schedule, resolve_curve
from iowatt.errors import ConfigError
from iowatt.sweep.profiles import interpolate, load_profiles
from support.cli import assert_user_error, iowatt, manifest, summary
from support.emulated import MountProcess as Mount
from support.emulated import mount_dirs, mounted
from support.wait import wait_for

pytestmark = [pytest.mark.needs_root]
HIT_SATA_FAN = load_profiles()["hit-sata"].curves["fan"]
BLOCK = 65536
# How late a schedule row may be set after its time on the mount's clock: the schedule thread
# wakes from a timed wait (well under a millisecond on an idle machine) and then takes the GIL,
# which the mount loop or the test's own I/O may hold for a while on a loaded CI machine. Early
# is bounded by how well the mount's zero is known: the few µs of one counters read.
LATE_S, EARLY_S = 0.15, 0.002


@pytest.fixture
def dirs(tmp_path: Path) -> Iterator[tuple[Path, Path, Path]]:
    yield from mount_dirs(tmp_path)


def write_blocks(path: Path, n: int) -> None:
    """``n`` writes of one block each: one request each (the mount opens files direct)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        for i in range(n):
            os.pwrite(fd, b"v" * BLOCK, i * BLOCK)
    finally:
        os.close(fd)


def stimuli(run: Path) -> list[tuple[float, float]]:
    """(t_s from the mount, value) of every stimulus event, in order."""
    events = pq.read_table(run / "events.parquet").to_pylist()
    out = []
    for e in events:
        if e["kind"] == "stimulus":
            assert e["source"] == "stimulus"
            m = re.match(r"fan ([\d.]+) %: r = ", e["message"])
            assert m, e["message"]
            out.append((e["t_s"], float(m[1])))
    return out


def test_each_request_is_charged_s_over_r_at_the_value_in_force_when_it_started(
    dirs: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    backing, mount, results = dirs
    m = Mount(backing, mount, results, "--curve", "hit-sata", "--at", "80")
    assert float(m.control("stimulus")) == 80
    assert float(m.control("speed")) == pytest.approx(0.38)
    write_blocks(mount / "a", 6)
    for value in ("65", "100", "0"):
        r = iowatt(capsys, "emulate", "set", mount, value)
        assert r.code == 0, r.err
        assert f"stimulus {value}" in r.out
        assert float(m.control("stimulus")) == float(value)
        write_blocks(mount / f"f{value}", 6)
    run = m.finish()
    set_at = stimuli(run)
    assert [v for _, v in set_at] == [80, 65, 100, 0], "the mount's value, then each `set`"
    assert set_at[0][0] == 0
    requests = pq.read_table(run / "disk_requests.parquet").to_pandas()
    served = requests[~requests["drained"]]
    assert len(served) >= 24 and not requests["failed"].any()
    seen = set()
    for row in served.itertuples():
        started_s = row.t_s + row.queued_ns / 1e9
        value = [v for t, v in set_at if t <= started_s][-1]
        seen.add(value)
        r = interpolate(HIT_SATA_FAN, value)
        s = row.overhead_s + row.seek_s + row.rotation_s + row.transfer_s
        assert row.slowdown_s == pytest.approx(s / r - s, rel=1e-9, abs=1e-12), value
        assert row.service_ns == pytest.approx((s / r) * 1e9, abs=2)
    assert seen == {80, 65, 100, 0}
    v = summary(run)["vibration"]
    assert v["curve"] == "profile hit-sata (fan)" and v["stimulus"] == "fan"
    assert v["changes"] == 3 and v["failed"] == 0 and v["stall_cap_s"] == 30
    assert v["final"] == [0, 1.0]
    slow = served["slowdown_s"]
    assert v["mean_slowdown_s"] == pytest.approx(slow.mean())
    assert manifest(run)["config"]["curve"]["points"] == [list(p) for p in HIT_SATA_FAN]


def test_schedule_rows_apply_at_their_times_over_speedup_and_a_set_holds_until_the_next(
    dirs: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    backing, mount, results = dirs
    csv = tmp_path / "fans.csv"
    csv.write_text("time,pwm\n0,50\n4,60\n8,80\n12,100\n")
    m = Mount(backing, mount, results, "--curve", "hit-sata", "--schedule", str(csv),
              "--speedup", "4")  # fmt: skip
    wait_for(lambda: float(m.control("stimulus")) == 60, m.proc, what="the second row")
    r = iowatt(capsys, "emulate", "set", mount, "90")
    assert r.code == 0, r.err
    wait_for(lambda: float(m.control("stimulus")) == 100, m.proc, what="the last row")
    run = m.finish()
    set_at = stimuli(run)
    assert [v for _, v in set_at] == [50, 60, 90, 80, 100], "a set holds until the next row"
    rows = {60: 1.0, 80: 2.0, 100: 3.0}  # the CSV's times ÷ --speedup 4
    for t, value in set_at:
        if value in rows:
            assert rows[value] - EARLY_S <= t <= rows[value] + LATE_S, (value, t)
    assert summary(run)["vibration"]["source"] == "schedule"
    assert manifest(run)["config"]["schedule"]["rows"] == 4


def test_iso_times_count_from_the_first_row(tmp_path: Path) -> None:
    csv = tmp_path / "fanlog.csv"
    csv.write_text(
        "2026-03-01T10:00:00Z,40\n2026-03-01T10:00:30Z,70\n2026-03-01T11:00:00+00:00,100\n"
    )
    schedule = load_schedule(str(csv), tmp_path, None)
    assert schedule.rows == ((0.0, 40.0), (30.0, 70.0), (3600.0, 100.0))


def _sweep_run(results: Path, disks: tuple[str, ...], kind: str = "fan") -> Path:
    """A sweep run as the store keeps one, with a curve file per disk."""
    run = results / f"20260301-100000-sweep-{kind[:3]}{len(disks)}"
    run.mkdir(parents=True)
    (run / "manifest.json").write_text(json.dumps({
        "run_id": run.name, "kind": "sweep", "status": "complete", "started_ns": 1,
        "config": {"stimulus": {"kind": kind}},
    }))  # fmt: skip
    for i, disk in enumerate(disks):
        points = [(0, 1.0), (50, 1.0 - 0.1 * i), (100, 0.3)]
        (run / f"curve-{disk}.json").write_text(json.dumps({
            "format": "iowatt-curve/1", "run_id": run.name, "status": "complete",
            "disk": {"name": disk, "path": f"/dev/{disk}", "model": None, "rotational": True,
                     "profile": None},
            "stimulus": {"kind": kind, "unit": "%", "band": None, "amplitude_g": None},
            "settle_s": 1, "hold_s": 1, "passes": 1, "generator": {}, "max_mib_s": 37.0,
            "points": [{"value": v, "mib_s": 37 * n, "mib_s_min": 37 * n, "mib_s_max": 37 * n,
                        "norm": n, "norm_min": n, "norm_max": n, "passes": 1}
                       for v, n in points],
        }))  # fmt: skip
    return run


def test_a_run_s_one_disk_is_run_colon_disk_and_a_profile_gives_any_of_its_curves(
    tmp_path: Path,
) -> None:
    results = tmp_path / "r"
    one = _sweep_run(results, ("sda",))
    assert resolve_curve("latest", results).points == ((0, 1.0), (50, 1.0), (100, 0.3))
    assert resolve_curve(one.name, results).source == f"{one.name}/sda"
    two = _sweep_run(results, ("sda", "sdb"))
    assert resolve_curve(f"{two.name}:sdb", results).points[1] == (50, 0.9)
    with pytest.raises(ConfigError, match="curves of 2 disks: sda, sdb"):
        resolve_curve(two.name, results)
    with pytest.raises(ConfigError, match="no disk `sdz`"):
        resolve_curve(f"{two.name}:sdz", results)
    amp = resolve_curve("hit-sata", results, "amplitude", "20-800")
    assert (amp.kind, amp.unit, amp.band) == ("amplitude", "grms", "20-800")
    assert amp.points[-1] == (1.8, 0.02)
    assert resolve_curve("hit-sata", results, "frequency").unit == "Hz"
    # `sim server --curve` takes RUN:DISK as well.
    from iowatt.sim.curves import resolve

    ((source, _),) = resolve([f"{two.name}:sda"], results)
    assert source == f"{two.name}/sda"


def test_bad_input_is_one_line_and_mounts_nothing(
    dirs: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    backing, mount, results = dirs
    two = _sweep_run(results, ("sda", "sdb"))
    bare = results / "20260301-110000-bench-x"
    bare.mkdir()
    bench = {"run_id": bare.name, "kind": "bench", "status": "complete", "started_ns": 2}
    (bare / "manifest.json").write_text(json.dumps(bench))

    def file(name: str, text: str) -> Path:
        (tmp_path / name).write_text(text)
        return tmp_path / name

    other = file("other.json", json.dumps({"format": "iowatt-curve/9"}))
    doc = json.loads((two / "curve-sda.json").read_text())
    doc["points"][2]["norm"] = 1.5
    above = file("above.json", json.dumps(doc))

    def refused(*args: str | Path, fragments: tuple[str, ...]) -> None:
        r = iowatt(capsys, "emulate", "mount", backing, mount, "--results", results, *args)
        assert_user_error(r, *fragments)
        assert not mounted(mount)

    refused("--curve", other, fragments=("iowatt-curve/9",))
    refused("--curve", above, fragments=("norm",))
    refused("--curve", bare.name, fragments=("no curve files",))
    refused("--curve", two.name, fragments=("2 disks", "sda, sdb"))
    refused("--curve", f"{two.name}:sdz", fragments=("sdz", "sda, sdb"))
    refused("--curve", "hit-sata", "--at", "120", fragments=("--at 120", "0..100"))
    late = file("late.csv", "0,50\n5,60\n5,70\n")
    refused("--curve", "hit-sata", "--schedule", late, fragments=("do not increase", "row 3"))
    wide = file("wide.csv", "0,50,1\n")
    refused("--curve", "hit-sata", "--schedule", wide, fragments=("3 columns", "not two"))
    high = file("high.csv", "0,50\n10,150\n")
    refused("--curve", "hit-sata", "--schedule", high, fragments=("row 2", "150", "0..100"))
    ok = file("ok.csv", "0,50\n10,60\n")
    refused("--curve", "hit-sata", "--at", "60", "--schedule", ok,
            fragments=("--at and --schedule", "one"))  # fmt: skip
    refused("--curve", "hit-sata", "--stall-cap", "0s", fragments=("--stall-cap", "above 0"))
    refused("--curve", "hit-sata", "--stall-cap", "soon", fragments=("--stall-cap", "soon"))
    refused("--scheduler", "cfq9", fragments=("cfq9", "not a scheduler"))
    refused("--at", "60", fragments=("--at", "needs a curve"))
    refused("--schedule", ok, fragments=("--schedule", "needs a curve"))
    refused("--curve", "hit-sata", "--stimulus", "noise", fragments=("noise", "not a stimulus"))
    refused("--curve", "hit-sata", "--stimulus", "amplitude", "--band", "5-6",
            fragments=("5-6",))  # fmt: skip
    refused("--curve", "hit-sata", "--schedule", ok, "--speedup", "0",
            fragments=("--speedup", "above 0"))  # fmt: skip
    r = iowatt(capsys, "emulate", "set", mount, "50")
    assert_user_error(r, str(mount), "not an emulated disk")


def test_set_is_refused_in_one_line_outside_the_curve_and_without_one(
    dirs: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    backing, mount, results = dirs
    m = Mount(backing, mount, results, "--curve", "hit-sata", "--at", "70")
    assert_user_error(iowatt(capsys, "emulate", "set", mount, "101"), "101", "0..100")
    assert_user_error(iowatt(capsys, "emulate", "set", mount, "fast"), "`fast`", "not a number")
    assert float(m.control("stimulus")) == 70, "nothing changed"
    run = m.finish()
    assert [v for _, v in stimuli(run)] == [70]
    m = Mount(backing, mount, results / "plain")
    assert_user_error(iowatt(capsys, "emulate", "set", mount, "50"), "has no curve")
    m.finish()
