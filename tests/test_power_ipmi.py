"""The ``ipmi`` power source against a real BMC simulator (OpenIPMI's ipmi_sim) and ipmitool."""

from __future__ import annotations

import threading
import time

import pyarrow.parquet as pq
import pytest

from support.bmc import BmcSim, unused_udp_port
from support.cli import assert_user_error, iowatt, manifest, runs_in, summary


def _source(bmc: BmcSim, **extra: object) -> str:
    opts = {"interface": "lanplus", "host": bmc.host, "port": bmc.port, "user": bmc.user,
            "password-file": bmc.password_file, "cipher-suite": 3, **extra}  # fmt: skip
    return "ipmi:" + ",".join(f"{k}={v}" for k, v in opts.items())


@pytest.mark.slow
def test_record_reads_the_simulated_watts_and_integrates_them(capsys, tmp_path, bmc):
    bmc.set_power(248)
    bmc.set_fan(1, 4200)
    bmc.wait_for_sensors()
    results = tmp_path / "r"
    r = iowatt(capsys, "power", "record", "--results", results, "--source", _source(bmc),
               "--hz", "2", "--", "sleep", "5")  # fmt: skip
    assert r.code == 0, r.err
    (run,) = runs_in(results)
    s = summary(run)
    dcmi = s["power"]["work"]["ipmi/dcmi"]
    assert dcmi["avg_w"] == pytest.approx(248.0)
    assert dcmi["peak_w"] == pytest.approx(248.0)
    assert dcmi["energy_j"] == pytest.approx(248.0 * s["command"]["seconds"], rel=0.02)
    assert dcmi["samples"] >= 8  # 2 Hz over 5 s
    assert s["power"]["headline"] == "ipmi/dcmi"
    sdr_power = s["power"]["work"][f"ipmi/{bmc.power_sensor}"]
    assert sdr_power["avg_w"] == pytest.approx(bmc.expected(bmc.power_sensor))
    sensors = pq.read_table(run / "sensors.parquet").to_pylist()
    fans = {r["value"] for r in sensors if r["channel"] == "FAN1"}
    assert fans == {bmc.expected("FAN1")} and bmc.expected("FAN1") == pytest.approx(4200, abs=50)
    units = {r["channel"]: r["unit"] for r in sensors}
    assert units["FAN1"] == "RPM" and units[bmc.temps[0]] == "C"
    # The password file's path is recorded, never a password.
    assert bmc.password not in (run / "manifest.json").read_text()
    assert manifest(run)["config"]["sources"][0]["options"]["password_file"]


def test_password_from_an_environment_variable(capsys, tmp_path, bmc, monkeypatch):
    monkeypatch.setenv("MY_BMC_PW", bmc.password)
    source = _source(bmc).replace(f"password-file={bmc.password_file}", "password-env=MY_BMC_PW")
    r = iowatt(capsys, "power", "record", "--results", tmp_path / "r", "--no-report",
               "--source", source, "--", "true")  # fmt: skip
    assert r.code == 0, r.err
    assert "MY_BMC_PW" not in (runs_in(tmp_path / "r")[0] / "manifest.json").read_text()


@pytest.mark.slow
def test_an_unreachable_bmc_is_one_clear_error(capsys, tmp_path, bmc):
    port = unused_udp_port()
    source = _source(bmc, timeout=2).replace(f"port={bmc.port}", f"port={port}")
    r = iowatt(capsys, "power", "record", "--results", tmp_path / "r", "--source", source,
               "--", "true")  # fmt: skip
    assert_user_error(r, f"{bmc.host}:{port}")
    assert not runs_in(tmp_path / "r")


@pytest.mark.slow
def test_a_bmc_lost_mid_run_is_an_event_and_the_run_goes_on(capsys, tmp_path, bmc):
    results = tmp_path / "r"

    def outage() -> None:
        time.sleep(1.5)
        bmc.stop()
        time.sleep(2.0)
        bmc.start()

    thread = threading.Thread(target=outage)
    thread.start()
    r = iowatt(capsys, "power", "record", "--results", results, "--no-report",
               "--source", _source(bmc, timeout=1), "--source", "cmd:command=echo 3",
               "--hz", "4", "--", "sleep", "6")  # fmt: skip
    thread.join()
    assert r.code == 0, r.err
    run = runs_in(results)[0]
    kinds = [e["kind"] for e in pq.read_table(run / "events.parquet").to_pylist()
             if e["source"] == "ipmi"]  # fmt: skip
    assert kinds.count("error") == 1 and kinds.count("recovered") == 1, kinds
    work = summary(run)["power"]["work"]
    assert work["ipmi/dcmi"]["gap_s"] > 1.0
    assert work["cmd/cmd"]["gap_s"] == 0 and work["cmd/cmd"]["avg_w"] == pytest.approx(3.0)


@pytest.mark.slow
def test_impossible_dcmi_readings_are_counted_not_recorded(capsys, tmp_path, bmc):
    bmc.set_dcmi(0)
    r = iowatt(capsys, "power", "record", "--results", tmp_path / "r", "--no-report",
               "--source", _source(bmc, sdr="false"), "--hz", "4",
               "--", "sleep", "1")  # fmt: skip
    assert r.code == 0, r.err
    s = summary(runs_in(tmp_path / "r")[0])
    (stats,) = s["power"]["sources"]
    assert stats["invalid_readings"] >= 2
    assert s["power"]["work"]["ipmi/dcmi"]["samples"] == 0
    assert "invalid readings" in r.err
