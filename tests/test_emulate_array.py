"""`iowatt emulate mount --array`: a mount served by an array of emulated disks under a RAID
personality — the simulator's own engine — its disks' counters, its run in `iowatt sim raid`'s
tables, its disks as power channels, and what it refuses."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from support.cli import assert_user_error, iowatt, manifest, runs_in, summary
from support.emulated import MountProcess as Mount
from support.emulated import mount_dirs, mounted
from support.wait import wait_for

# The 36Z15 with spin-ups and spin-downs quick enough for a test.
QUICK = """
[quick]
label = "a 36Z15 that spins up in 0.2 s"
kind = "hdd"
capacity_gb = 36.7
rpm = 15000
seek_track_ms = 0.5
seek_avg_ms = 4.2
seek_full_ms = 8.2
outer_mb_s = 55.0
inner_mb_s = 33.0
overhead_ms = 0.1
active = { w = 13.5 }
idle = { w = 10.2 }
standby = { w = 2.5 }
spin_up_s = 0.2
spin_up_j = 2.5
spin_down_s = 0.05
spin_down_j = 0.4
start_stop_cycles = 50000
"""


@pytest.fixture
def dirs(tmp_path: Path) -> Iterator[tuple[Path, Path, Path]]:
    yield from mount_dirs(tmp_path)


def _quick(tmp_path: Path, **params: str) -> list[str]:
    models = tmp_path / "quick.toml"
    models.write_text(QUICK)
    args = ["--disk-model", "quick", "--disk-models", str(models)]
    if params:
        toml = tmp_path / "params.toml"
        toml.write_text("".join(f"{line}\n" for line in params.values()))
        args += ["--params", str(toml)]
    return args


def _counters(m: Mount) -> dict:
    return json.loads(m.control("counters.json"))


def test_an_lru_array_spins_idle_disks_down_and_its_run_is_sim_raid_s_tables(
    dirs: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    backing, mount, results = dirs
    (backing / "site").mkdir()
    data = os.urandom(1 << 20)
    (backing / "site" / "big").write_bytes(data)
    (backing / "site" / "small").write_bytes(b"s" * 5000)
    lru = "[lru]\ntimeout_s = 0.1"
    m = Mount(backing, mount, results, "--array", "lru", "--disks", "4", "--seed", "3",
              *_quick(tmp_path, lru=lru))  # fmt: skip
    assert m.control("disks") == "4"
    assert (mount / "site" / "big").read_bytes() == data, "striped reads pass the data through"
    c = _counters(m)
    assert c["personality"] == "lru" and c["read_ops"] >= 1 and c["lookups"] >= 1
    # One snapshot: the array's energy is its disks'.
    assert c["energy_uj"] == pytest.approx(sum(d["energy_uj"] for d in c["disks"]), abs=4)
    # Idle past LRU's timeout, every disk spins down; a read spins up the disks it needs.
    wait_for(lambda: all(m.control(f"disk{d}/state") == "standby" for d in range(4)), m.proc,
             what="every disk in standby")  # fmt: skip
    assert (mount / "site" / "small").read_bytes() == b"s" * 5000
    cycles = int(m.control("cycles"))
    assert cycles == sum(int(m.control(f"disk{d}/cycles")) for d in range(4)) >= 4
    run = m.finish()
    assert manifest(run)["kind"] == "emulate" and manifest(run)["status"] == "complete"
    assert manifest(run)["config"]["array"]["personality"] == "lru"
    a = summary(run)["array"]
    assert a["personality"] == "lru" and a["disks"] == 4
    assert sum(a["spin_cycles"]) >= cycles
    assert a["energy_j"] == pytest.approx(sum(a["energy_by_disk_j"]))
    (row,) = pq.read_table(run / "raid_runs.parquet").to_pylist()
    assert row["personality"] == "lru" and row["energy_j"] == pytest.approx(a["energy_j"])
    # Per bin, the array's row is its disks' sum, and the bins add up to the run's energy.
    power = pq.read_table(run / "raid_power.parquet").to_pandas()
    disks = power[power["disk"].notna()].groupby("t_s")["energy_j"].sum()
    array = power[power["disk"].isna()].set_index("t_s")["energy_j"]
    assert disks.to_numpy() == pytest.approx(array.loc[disks.index].to_numpy())
    assert array.sum() == pytest.approx(a["energy_j"])
    requests = pq.read_table(run / "raid_requests.parquet").to_pandas()
    assert (requests["bytes"] == 0).sum() == a["lookups"]
    assert int((requests["bytes"] > 0).sum()) == a["requests"] == a["read_ops"]
    events = pq.read_table(run / "events.parquet").to_pandas()
    downs = events[(events["kind"] == "state") & (events["message"] == "standby")]
    assert set(downs["source"]) == {f"disk{d}" for d in range(4)}


def test_paraid_shifts_down_its_gear_and_the_disks_are_power_channels(
    dirs: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    backing, mount, results = dirs
    (backing / "f").write_bytes(b"p" * 200_000)
    paraid = "[paraid]\nsample_s = 0.05\nshort_s = 0.1\nlong_s = 0.2\nmin_dwell_s = 0.1"
    m = Mount(backing, mount, results, "--array", "paraid", "--disks", "4",
              *_quick(tmp_path, paraid=paraid))  # fmt: skip
    # Idle: the monitor shifts down from all four disks to two, and the two it left spin down.
    wait_for(lambda: m.control("gear") == "2", m.proc, what="a down-shift")
    states = lambda: [m.control(f"disk{d}/state") for d in range(4)]  # noqa: E731
    wait_for(lambda: states().count("standby") == 2, m.proc, what="two disks in standby")
    recordings = tmp_path / "power"
    r = iowatt(capsys, "power", "record", "--results", recordings, "--no-report", "--hz", "50",
               "--source", f"emulated:path={mount},name=array",
               "--", "dd", f"if={mount / 'f'}", "of=/dev/null", "bs=4k")  # fmt: skip
    assert r.code == 0, r.err
    run = m.finish()
    (recorded,) = runs_in(recordings)
    power = pq.read_table(recorded / "power.parquet").to_pandas()
    assert set(power["channel"]) == {"disk", "disk/0", "disk/1", "disk/2", "disk/3"}
    assert summary(recorded)["power"]["headline"] == "array/disk"
    # The recording's disks add up to the array's total, as the counters did.
    grown = power.groupby("channel")["joules"].agg(lambda j: j.iloc[-1] - j.iloc[0])
    per_disk = grown[[f"disk/{d}" for d in range(4)]].sum()
    assert per_disk == pytest.approx(grown["disk"], rel=0.05)
    a = summary(run)["array"]
    assert a["gear_shifts"] >= 1
    events = pq.read_table(run / "events.parquet").to_pandas()
    gears = list(events[events["kind"] == "gear"]["message"])
    assert gears[0] == "4 disks" and "2 disks" in gears


def test_bad_array_input_is_one_line_and_mounts_nothing(
    dirs: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    backing, mount, results = dirs
    (backing / "keep").write_text("x")

    def refused(*args: str | Path, fragments: tuple[str, ...]) -> None:
        r = iowatt(capsys, "emulate", "mount", backing, mount, *args, "--results", results)
        assert_user_error(r, *fragments)
        assert not mounted(mount)

    refused("--array", "raid5", fragments=("--array", "raid5", "not a personality"))
    refused("--array", "raid0", "--disks", "0", fragments=("--disks", "0"))
    refused("--array", "raid0", "--disks", "65", fragments=("--disks", "65"))
    refused("--array", "paraid", "--disks", "3", fragments=("--disks 3", "top gear"))
    refused("--array", "lru", "--spin-down", "10s", fragments=("--spin-down", "--array lru"))
    refused("--array", "raid0", "--disk-model", "floppy", fragments=("floppy",))
    bad = tmp_path / "bad.toml"
    bad.write_text("[paraid]\ngearz = [2, 4]\n")
    refused("--array", "paraid", "--params", bad, fragments=("paraid.gearz",))
    # Data filling more than the lowest gear's share leave PARAID's replicas no room.
    with open(backing / "huge", "wb") as f:
        f.truncate(80 * 10**9)
    refused("--array", "paraid", fragments=("replicas do not fit",))
    assert (backing / "keep").read_text() == "x"
    assert (backing / "huge").stat().st_size == 80 * 10**9, "BACKING left intact"
    assert not runs_in(results) if results.exists() else True
    assert not list(results.glob(".tmp-*")) if results.exists() else True


def test_a_killed_array_is_unmounted_by_its_guardian_and_its_counters_reported(
    dirs: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    backing, mount, results = dirs
    (backing / "f").write_bytes(b"k" * 100_000)
    m = Mount(backing, mount, results, "--array", "raid0", "--disks", "2")
    assert (mount / "f").read_bytes() == b"k" * 100_000

    def journaled() -> bool:
        found = list(results.glob(".tmp-*/journal.json"))
        return bool(found) and json.loads(found[0].read_text())["counters"]["read_ops"] >= 1

    wait_for(journaled, m.proc, what="the journal")
    m.stop(signal.SIGKILL)
    wait_for(lambda: not mounted(mount) and bool(runs_in(results)), what="the guardian")
    (run,) = runs_in(results)
    assert manifest(run)["status"] == "incomplete"
    counters = summary(run)["counters"]
    assert len(counters["disks"]) == 2 and counters["read_ops"] >= 1
    r = iowatt(capsys, "report", run, "-o", run / "again.html")
    assert r.code == 0, r.err
    assert "died before it unmounted" in (run / "again.html").read_text()


def test_the_walk_numbers_directories_by_name_and_counts_each_file_once(tmp_path: Path) -> None:
    from iowatt.emulate.array import walk

    for d in ("b", "a/z", "a", "empty"):
        (tmp_path / d).mkdir(parents=True, exist_ok=True)
    (tmp_path / "b" / "f").write_bytes(b"x" * 5000)  # two blocks
    (tmp_path / "a" / "z" / "g").write_bytes(b"y")  # one
    (tmp_path / "a" / "g2").write_bytes(b"")  # none
    os.link(tmp_path / "b" / "f", tmp_path / "a" / "same")  # counted once
    (tmp_path / "top").write_bytes(b"t" * 4096)  # one
    os.symlink("top", tmp_path / "b" / "link")  # not a file's data
    used, dirs = walk(tmp_path)
    assert used == 4 * 4096
    # As the simulator numbers a tree's directories: "/", "/a", "/a/z", "/b" (no "/empty").
    names = ["", "a", "a/z", "b"]
    assert dirs == [os.lstat(tmp_path / n).st_ino for n in names]
