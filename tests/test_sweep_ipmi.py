"""Fan sweeps against a simulated BMC: OpenIPMI's ``ipmi_sim`` whose fan firmware
(``tests/bmc/fan_firmware.c``) answers the real Dell and Supermicro OEM commands sent by the
real ipmitool, with fan rpm and CPU temperature sensors that follow the duty it sets.

Whatever ends the sweep — its end, a temperature past the limit, a BMC that stops answering,
Ctrl-C, SIGTERM or SIGKILL — the fans end at a safe setting, checked in the BMC's own state:
given back to the firmware (automatic), or at full speed after a watchdog trip.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from iowatt.sweep.guard import DIED
from support.bmc import BmcSim
from support.cli import manifest, runs_in
from support.wait import wait_for


def _bmc_option(bmc: BmcSim) -> str:
    c = bmc.connection_options()
    return (
        f"interface=lanplus,host={c['host']},port={c['port']},user={c['user']},"
        f"password-file={c['password_file']},cipher-suite={c['cipher_suite']}"
    )


def _sweep(bmc: BmcSim, tmp_path: Path, disk: Path, *args: str) -> list[str]:
    return [
        sys.executable, "-c", "from iowatt.cli import main; main()", "sweep",
        "--driver", "ipmi", "--bmc", _bmc_option(bmc), "--disk", str(disk),
        "--iosize", "64k", "--results", str(tmp_path / "results"), "--no-report", *args,
    ]  # fmt: skip


def _run(cmd: list[str], timeout_s: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=False)


def _rpm(duty: float) -> float:
    """The firmware's fan 1 speed at ``duty`` %."""
    return round((600 + 96 * duty) / 50) * 50


@pytest.mark.slow
def test_dell_fan_sweep_steps_the_duty_reads_the_fans_and_gives_control_back(
    bmc, tmp_path, loop_device
):
    done = _run(_sweep(bmc, tmp_path, loop_device, "--vendor", "dell", "--steps", "100,60,30",
                       "--settle", "2s", "--hold", "1.5s"))  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert bmc.fan_log() == [
        "dell manual", "dell duty 100", "dell duty 60", "dell duty 30", "dell auto"
    ]  # fmt: skip
    assert bmc.fan_state()["mode"] == "auto"
    (run_dir,) = runs_in(tmp_path / "results")
    steps = pq.read_table(run_dir / "steps.parquet").to_pylist()
    sensors = pq.read_table(run_dir / "sensors.parquet").to_pylist()
    for step in steps:
        held = [
            s["value"] for s in sensors
            if s["channel"] == bmc.fans[0]
            and step["start_mono_ns"] <= s["mono_ns"] <= step["end_mono_ns"]
        ]  # fmt: skip
        assert held and set(held) == {_rpm(step["value"])}, (step["value"], held)
    temps = {s["channel"] for s in sensors if s["unit"] == "C"}
    assert bmc.temps[0] in temps


@pytest.mark.slow
def test_supermicro_sweep_puts_back_the_mode_it_found(bmc, tmp_path, loop_device):
    assert bmc.run("raw", "0x30", "0x45", "0x01", "0x02").returncode == 0  # "optimal"
    done = _run(_sweep(bmc, tmp_path, loop_device, "--vendor", "supermicro", "--steps", "80,40",
                       "--settle", "1s", "--hold", "1s"))  # fmt: skip
    assert done.returncode == 0, done.stderr
    log = [line for line in bmc.fan_log() if " get " not in line]
    assert log[:2] == ["smc mode 2", "smc mode 1"]
    assert "smc zone 0 duty 40" in log and "smc zone 1 duty 40" in log
    assert log[-1] == "smc mode 2"
    assert bmc.fan_state()["smc_mode"] == "2"


@pytest.mark.slow
def test_a_temperature_past_the_limit_sets_full_fans_and_stops(bmc, tmp_path, loop_device):
    bmc.set_thermal(30, 1.0)  # 30 °C at full duty, 100 °C with the fans off
    done = _run(_sweep(bmc, tmp_path, loop_device, "--vendor", "dell", "--steps", "100,60,0,20",
                       "--settle", "4s", "--hold", "2s", "--max-temp", "85"))  # fmt: skip
    assert done.returncode == 3, done.stderr
    assert "watchdog: CPU Temp" in done.stderr and "85" in done.stderr
    state = bmc.fan_state()
    assert (state["mode"], state["duty"]) == ("manual", "100"), "left at full, not restored low"
    assert "dell duty 20" not in bmc.fan_log()
    (run_dir,) = runs_in(tmp_path / "results")
    m = manifest(run_dir)
    assert m["status"] == "incomplete" and m["reason"].startswith("watchdog: CPU Temp")
    steps = pq.read_table(run_dir / "steps.parquet").to_pylist()
    assert [s["value"] for s in steps] == [100, 60]
    events = pq.read_table(run_dir / "events.parquet").to_pylist()
    assert any(e["kind"] == "watchdog" and e["message"] == "safe stimulus set" for e in events)


@pytest.mark.slow
def test_a_bmc_that_stops_answering_stops_the_sweep_with_full_fans(bmc, tmp_path, loop_device):
    proc = subprocess.Popen(
        _sweep(bmc, tmp_path, loop_device, "--vendor", "dell", "--steps", "50,40",
               "--settle", "1s", "--hold", "60s", "--stale", "3s"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    wait_for(lambda: "dell duty 50" in bmc.fan_log(), proc)
    bmc.pause()
    # The watchdog journals its trip, then keeps trying to set the fans of the silent BMC.
    wait_for(lambda: _journal_has(tmp_path / "results", '"kind": "watchdog"'), proc)
    bmc.resume()
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 3, err
    assert "no temperature from" in err
    state = bmc.fan_state()
    assert (state["mode"], state["duty"]) == ("manual", "100")
    (run_dir,) = runs_in(tmp_path / "results")
    assert manifest(run_dir)["status"] == "incomplete"


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
def test_a_stopped_or_killed_sweep_gives_the_fans_back(bmc, tmp_path, loop_device, sig):
    proc = subprocess.Popen(
        _sweep(bmc, tmp_path, loop_device, "--vendor", "dell", "--steps", "30,20",
               "--settle", "1s", "--hold", "60s"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    wait_for(lambda: "dell duty 30" in bmc.fan_log(), proc)
    proc.send_signal(sig)
    proc.communicate(timeout=120)
    results = tmp_path / "results"
    deadline = time.monotonic() + 60
    while not runs_in(results) and time.monotonic() < deadline:
        time.sleep(0.1)  # after SIGKILL the guardian restores and writes the run
    assert bmc.fan_state()["mode"] == "auto"
    assert bmc.fan_log()[-1] == "dell auto"
    (run_dir,) = runs_in(results)
    m = manifest(run_dir)
    assert m["status"] == "incomplete"
    assert m["reason"] == (DIED if sig == signal.SIGKILL else "interrupted")
    if sig != signal.SIGKILL:
        assert proc.returncode == 130


def _journal_has(results: Path, text: str) -> bool:
    """Whether a running sweep's journal of events (in its temporary run directory) has it."""
    return any(text in p.read_text() for p in results.glob(".tmp-*/events.jsonl"))
