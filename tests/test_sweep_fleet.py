"""``iowatt sweep --cluster``: one stimulus driver here, the disks of every host measured in the
same window at each step, a curve per disk of every host; the emulated driver's injected curve
recovered on a local fleet's loop devices; bad fleet disks refused in one line."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from iowatt.curve import read_curve
from support.cli import assert_user_error, iowatt, manifest, runs_in, summary

FAST = ("--settle", "0.3s", "--hold", "1s", "--iosize", "64k", "--no-report")


@pytest.mark.slow
def test_every_host_s_disks_are_measured_in_the_same_window_at_each_step(capsys, tmp_path):
    log, results = tmp_path / "set.log", tmp_path / "results"
    disks = []
    for i in range(2):
        (tmp_path / f"d{i}").mkdir()
        disks += ["--disk", f"local-{i}:{tmp_path / f'd{i}'}"]
    r = iowatt(
        capsys, "sweep", "--stimulus", "amplitude", "--band", "20-800Hz", "--steps", "0.2,0.6",
        *disks, "--driver", "cmd", "--set", f"sh -c 'echo {{value}} >> {log}'",
        "--cluster", "local:2", "--size", "16m", "--allow-boot-disk", "--results", results,
        *FAST,
    )  # fmt: skip
    assert r.code == 0, r.err
    # One driver, here: each value set once, for both hosts.
    assert log.read_text().split() == ["0.2", "0.6"]
    (run_dir,) = runs_in(results)
    m = manifest(run_dir)
    assert m["status"] == "complete" and m["config"]["cluster"]["text"] == "local:2"
    names = {d["name"] for d in m["config"]["disks"]}
    # Each disk is named by its host, then as on one host (a directory by its path).
    assert sorted(n.split("/")[0] for n in names) == ["local-0", "local-1"]
    assert all(n.endswith(f"-d{n[6]}") for n in names)
    steps = pq.read_table(run_dir / "steps.parquet").to_pylist()
    for value in (0.2, 0.6):
        window = [s for s in steps if s["value"] == value]
        assert {s["disk"] for s in window} == names and all(s["ops"] > 0 for s in window)
        # Measured together: every disk's window overlaps every other's.
        assert max(s["start_mono_ns"] for s in window) < min(s["end_mono_ns"] for s in window)
    for name in names:
        doc = read_curve(run_dir / summary(run_dir)["disks"][name]["curve"])
        assert [p["value"] for p in doc["points"]] == [0.2, 0.6]
    # Each host's work directory is gone; the disks' directories are as they were.
    assert all(os.listdir(tmp_path / f"d{i}") == [] for i in range(2))


@pytest.mark.needs_root
@pytest.mark.slow
def test_a_local_fleet_s_emulated_disks_follow_their_profiles(capsys, tmp_path, shm_loops):
    """The emulated driver throttles the local workers too: each host's loop device, throttled
    as HIT SATA, gives the profile's curve."""
    from iowatt.sweep.profiles import load_profiles
    from iowatt.sweep.stimulus import Stimulus

    if not Path("/sys/fs/cgroup/blkio").is_dir() and not Path("/sys/fs/cgroup/io.max").exists():
        pytest.skip("no blkio throttling here")
    devs = [shm_loops(), shm_loops()]
    r = iowatt(
        capsys, "sweep", "--steps", "0,60,100", "--driver", "emulated", "--cluster", "local:2",
        *[x for i, dev in enumerate(devs) for x in ("--disk", f"local-{i}:{dev}=hit-sata")],
        "--settle", "1s", "--hold", "2s", "--iosize", "64k", "--no-report",
        "--results", tmp_path / "r",
    )  # fmt: skip
    assert r.code == 0, r.err
    (run_dir,) = runs_in(tmp_path / "r")
    hit, fan = load_profiles()["hit-sata"], Stimulus("fan")
    for i, dev in enumerate(devs):
        doc = read_curve(run_dir / summary(run_dir)["disks"][f"local-{i}/{dev.name}"]["curve"])
        for point in doc["points"]:
            assert point["norm"] == pytest.approx(hit.fraction(fan, point["value"]), rel=0.05)


def test_a_fleet_sweep_s_disk_without_its_host_is_one_line(capsys, tmp_path):
    r = iowatt(capsys, "sweep", "--steps", "0,100", "--driver", "cmd", "--set", "true {value}",
               "--cluster", "local:2", "--disk", "/tmp", "--results", tmp_path / "r")  # fmt: skip
    assert_user_error(r, "/tmp", "names its host")


def test_the_emulated_driver_is_refused_on_hosts_it_cannot_throttle(capsys, tmp_path):
    r = iowatt(capsys, "sweep", "--steps", "0,100", "--driver", "emulated", "--cluster",
               "tcp://head:8786", "--disk", "node1:/dev/sdb=hit-sata",
               "--results", tmp_path / "r")  # fmt: skip
    assert_user_error(r, "emulated", "tcp://head:8786")


@pytest.mark.slow
def test_a_disk_missing_on_its_host_is_named_before_anything_is_set(capsys, tmp_path):
    log = tmp_path / "set.log"
    r = iowatt(capsys, "sweep", "--stimulus", "amplitude", "--band", "20-800Hz", "--steps",
               "0.2", "--disk", f"local-1:{tmp_path / 'nope'}", "--driver", "cmd", "--set",
               f"sh -c 'echo {{value}} >> {log}'", "--cluster", "local:2",
               "--results", tmp_path / "r", *FAST)  # fmt: skip
    assert_user_error(r, "local-1", "does not exist")
    assert not log.exists()
