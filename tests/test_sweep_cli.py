"""``iowatt sweep`` end to end with the ``cmd`` and ``manual`` drivers on a real loop device:
the values set in order, the tables and curve files, bad input, and the stimulus put back on
Ctrl-C, SIGTERM and SIGKILL (by the guardian), with the run written as incomplete."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest

from iowatt.curve import read_curve
from iowatt.sweep.guard import DIED
from support.cli import assert_user_error, iowatt, manifest, runs_in, summary
from support.wait import wait_for

FAST = ("--settle", "0.3s", "--hold", "0.7s", "--iosize", "64k", "--no-report")


def _logger(log: Path) -> str:
    """A --set template appending the value to ``log``."""
    return f"sh -c 'echo {{value}} >> {log}'"


@pytest.mark.slow
def test_cmd_sweep_sets_every_value_in_order_and_records_each_disks_curve(
    capsys, tmp_path, loop_device
):
    log, reset, results = tmp_path / "set.log", tmp_path / "reset.log", tmp_path / "results"
    r = iowatt(
        capsys, "sweep", "--stimulus", "amplitude", "--band", "20-800Hz", "--from", "0.2",
        "--to", "0.6", "--step", "0.2", "--passes", "2", "--order", "alternate",
        "--disk", loop_device, "--driver", "cmd", "--set", _logger(log),
        "--reset", f"touch {reset}", "--results", results, "--label", "rack=a", *FAST,
    )  # fmt: skip
    assert r.code == 0, r.err
    # Pass 1 as given, pass 2 reversed (hysteresis), then the reset.
    assert log.read_text().split() == ["0.2", "0.4", "0.6", "0.6", "0.4", "0.2"]
    assert reset.exists()
    (run_dir,) = runs_in(results)
    m = manifest(run_dir)
    assert (m["kind"], m["status"], m["labels"]) == ("sweep", "complete", {"rack": "a"})
    assert m["config"]["stimulus"] == {
        "kind": "amplitude", "unit": "grms", "band": "20-800", "amplitude_g": None
    }  # fmt: skip
    steps = pq.read_table(run_dir / "steps.parquet").to_pylist()
    assert [(s["pass_no"], s["value"]) for s in steps] == [
        (1, 0.2), (1, 0.4), (1, 0.6), (2, 0.6), (2, 0.4), (2, 0.2)
    ]  # fmt: skip
    for s in steps:
        assert (s["run_id"], s["disk"]) == (run_dir.name, loop_device.name)
        assert s["ops"] > 0 and s["errors"] == 0
        assert s["mib_s"] == pytest.approx(s["bytes"] / (1 << 20) / s["hold_s"])
        assert s["hold_s"] == pytest.approx(0.7, abs=0.05)
    curve = pq.read_table(run_dir / "sweep.parquet").to_pylist()
    assert [(c["value"], c["passes"]) for c in curve] == [(0.2, 2), (0.4, 2), (0.6, 2)]
    assert max(c["norm"] for c in curve) == 1.0
    doc = read_curve(run_dir / summary(run_dir)["disks"][loop_device.name]["curve"])
    assert [p["value"] for p in doc["points"]] == [0.2, 0.4, 0.6]
    assert doc["disk"]["path"] == str(loop_device)
    con = duckdb.connect(str(results / "catalog.duckdb"), read_only=True)
    stimuli = con.execute(
        "SELECT message FROM events WHERE kind = 'stimulus' ORDER BY mono_ns"
    ).fetchall()
    assert [s[0] for s in stimuli][:2] == ["0.2 grms (20-800 Hz)", "0.4 grms (20-800 Hz)"]
    assert con.execute("SELECT count(*) FROM sweep").fetchone() == (3,)


@pytest.mark.slow
def test_a_directory_disk_gets_a_file_of_size_and_is_left_as_it_was(capsys, tmp_path):
    target, results = tmp_path / "disk", tmp_path / "results"
    target.mkdir()
    r = iowatt(capsys, "sweep", "--stimulus", "frequency", "--steps", "300,301", "--disk",
               target, "--allow-boot-disk", "--size", "16m", "--driver", "cmd",
               "--set", "true {value}", "--results", results, *FAST)  # fmt: skip
    assert r.code == 0, r.err
    assert list(target.iterdir()) == [], "iowatt removes the file it wrote, and only that"
    (run_dir,) = runs_in(results)
    steps = pq.read_table(run_dir / "steps.parquet").to_pylist()
    assert [s["value"] for s in steps] == [300, 301] and all(s["ops"] > 0 for s in steps)
    assert manifest(run_dir)["config"]["disks"][0]["size"] == 16 << 20


@pytest.mark.slow
def test_manual_driver_waits_for_enter_at_each_step(tmp_path, loop_device):
    results = tmp_path / "results"
    proc = subprocess.run(
        [sys.executable, "-c", "from iowatt.cli import main; main()", "sweep",
         "--stimulus", "frequency", "--amplitude", "0.17", "--steps", "230,231",
         "--disk", str(loop_device), "--driver", "manual", "--results", str(results), *FAST],
        input="\n\n", capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "set 230 Hz at 0.17 g, then press Enter" in proc.stderr
    assert "set 231 Hz at 0.17 g, then press Enter" in proc.stderr
    (run_dir,) = runs_in(results)
    assert summary(run_dir)["steps_measured"] == 2


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (("--set", "echo {pwm}"), ("{pwm}",)),
        (("--set", "echo fixed"), ("has no {value}",)),
        (("--settle", "0s"), ("--settle", "0s")),
        (("--hold", "0"), ("--hold",)),
        (("--step", "15"), ("does not divide",)),
        (("--driver", "ipmi", "--vendor", "hp"), ("unknown vendor `hp`",)),
        (("--disk", "/tmp/sweep-missing"), ("/tmp/sweep-missing",)),
        (("--driver", "emulated"), ("has no profile",)),
    ],
)
def test_bad_input_is_one_line_and_a_hint(capsys, tmp_path, loop_device, args, fragments):
    base = {"--from": "100", "--to": "0", "--step": "10", "--settle": "1s", "--hold": "1s",
            "--disk": str(loop_device), "--driver": "cmd", "--set": "echo {value}"}  # fmt: skip
    given = dict(zip(args[::2], args[1::2], strict=True))
    if given.get("--driver") in ("ipmi", "emulated"):
        base.pop("--set")
    merged = [x for kv in {**base, **given}.items() for x in kv]
    r = iowatt(capsys, "sweep", *merged, "--results", tmp_path / "results")
    assert_user_error(r, *fragments)
    assert not (tmp_path / "results").exists() or not runs_in(tmp_path / "results")


def test_a_directory_on_the_boot_disk_is_refused(capsys, tmp_path):
    r = iowatt(capsys, "sweep", "--from", "1", "--to", "2", "--step", "1", "--disk", tmp_path,
               "--driver", "cmd", "--set", "echo {value}", "--results", tmp_path / "r")  # fmt: skip
    from iowatt.target import boot_disks, disk_of

    if disk_of(tmp_path) not in boot_disks():
        pytest.skip("the temporary directory is not on the boot disk here")
    assert_user_error(r, "root or boot file system")


def test_a_device_with_a_file_system_needs_destroy_data(capsys, tmp_path, loop_device, sh):
    sh("mkfs.ext4", "-q", loop_device)
    r = iowatt(capsys, "sweep", "--from", "1", "--to", "2", "--step", "1", "--disk",
               loop_device, "--driver", "cmd", "--set", "echo {value}")  # fmt: skip
    assert_user_error(r, "ext4")


def test_a_mounted_device_is_refused(capsys, tmp_path, loop_device, sh, mounts):
    sh("mkfs.ext4", "-q", loop_device)
    mounts.mount(loop_device, target=tmp_path / "mnt")
    r = iowatt(capsys, "sweep", "--from", "1", "--to", "2", "--step", "1", "--disk",
               loop_device, "--driver", "cmd", "--set", "echo {value}",
               "--destroy-data")  # fmt: skip
    assert_user_error(r, "mounted")


# --- the stimulus is put back however the sweep ends ----------------------------------------


def _start_long_sweep(
    tmp_path: Path, disk: Path, *extra: str
) -> tuple[subprocess.Popen[str], Path]:
    """A sweep whose steps take a minute, logging values to set.log and resets to reset.log."""
    log, reset = tmp_path / "set.log", tmp_path / "reset.log"
    proc = subprocess.Popen(
        [sys.executable, "-c", "from iowatt.cli import main; main()", "sweep",
         "--stimulus", "frequency", "--from", "100", "--to", "90", "--step", "5",
         "--settle", "1s", "--hold", "60s", "--iosize", "64k", "--disk", str(disk),
         "--driver", "cmd", "--set", _logger(log), "--reset", f"sh -c 'echo reset >> {reset}'",
         "--results", str(tmp_path / "results"), "--no-report", *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    wait_for(lambda: log.exists() and bool(log.read_text().strip()), proc,
             what="the sweep to set its first value")  # fmt: skip
    return proc, reset


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_resets_the_stimulus_and_writes_an_incomplete_run(tmp_path, loop_device, sig):
    proc, reset = _start_long_sweep(tmp_path, loop_device)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert reset.read_text().split() == ["reset"]
    (run_dir,) = runs_in(tmp_path / "results")
    assert (manifest(run_dir)["status"], manifest(run_dir)["reason"]) == (
        "incomplete", "interrupted"
    )  # fmt: skip


@pytest.mark.slow
def test_sigkill_leaves_the_guardian_to_reset_and_write_the_run(tmp_path, loop_device):
    proc, reset = _start_long_sweep(tmp_path, loop_device)
    proc.kill()
    proc.communicate(timeout=30)  # the guardian holds stderr open until it is done
    deadline = time.monotonic() + 60
    while not runs_in(tmp_path / "results"):
        assert time.monotonic() < deadline, "the guardian never wrote the run"
        time.sleep(0.1)
    assert reset.read_text().split() == ["reset"]
    (run_dir,) = runs_in(tmp_path / "results")
    m = manifest(run_dir)
    assert (m["kind"], m["status"], m["reason"]) == ("sweep", "incomplete", DIED)
    events = pq.read_table(run_dir / "events.parquet").to_pylist()
    assert [e["message"] for e in events if e["kind"] == "stimulus"] == ["100 Hz"]
    assert not list((tmp_path / "results").glob(".tmp-*")), "no half-written run is left"
    assert json.loads((run_dir / "summary.json").read_text())["steps_measured"] == 0


@pytest.mark.slow
def test_a_killed_sweep_on_a_directory_leaves_no_test_data(tmp_path):
    """The guardian's commit removes the work directory the sweep recorded in its owner
    record before creating it."""
    target = tmp_path / "target"
    target.mkdir()
    proc, _ = _start_long_sweep(tmp_path, target, "--allow-boot-disk")
    wait_for(lambda: any(target.glob("iowatt-*")), proc, what="the sweep's work directory")
    proc.kill()
    proc.communicate(timeout=30)
    deadline = time.monotonic() + 60
    while not runs_in(tmp_path / "results"):
        assert time.monotonic() < deadline, "the guardian never wrote the run"
        time.sleep(0.1)
    assert list(target.iterdir()) == []


# --- closed loop: the emulated driver's injected curve is what the sweep recovers -----------


@pytest.mark.needs_root
@pytest.mark.slow
def test_emulated_fan_sweep_recovers_each_disks_injected_curve(capsys, tmp_path, shm_loops):
    """Two loop devices throttled through blkio as HIT SATA and FUJ SATA: the fan sweep's
    normalised curve is each profile's curve within 5 % at every step."""
    from iowatt.sweep.profiles import load_profiles
    from iowatt.sweep.stimulus import Stimulus

    if not Path("/sys/fs/cgroup/blkio").is_dir() and not Path("/sys/fs/cgroup/io.max").exists():
        pytest.skip("no blkio throttling here")
    disks = {"hit-sata": shm_loops(), "fuj-sata": shm_loops()}
    results = tmp_path / "results"
    r = iowatt(
        capsys, "sweep", "--from", "100", "--to", "0", "--step", "10", "--driver", "emulated",
        *[x for profile, dev in disks.items() for x in ("--disk", f"{dev}={profile}")],
        "--settle", "1s", "--hold", "2s", "--iosize", "64k", "--results", results,
    )  # fmt: skip
    assert r.code == 0, r.err
    (run_dir,) = runs_in(results)
    profiles, fan = load_profiles(), Stimulus("fan")
    for profile, dev in disks.items():
        doc = read_curve(run_dir / summary(run_dir)["disks"][dev.name]["curve"])
        assert doc["disk"]["profile"] == profile
        assert [p["value"] for p in doc["points"]] == [float(v) for v in range(0, 101, 10)]
        for point in doc["points"]:
            injected = profiles[profile].fraction(fan, point["value"])
            assert point["norm"] == pytest.approx(injected, rel=0.05), (profile, point)
    assert 'data-plot="sweep-0-norm"' in (run_dir / "report.html").read_text()
