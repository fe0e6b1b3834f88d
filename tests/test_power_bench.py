"""Power recorded during a benchmark and energy comparisons between runs."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from support.cli import assert_user_error, iowatt, manifest, runs_in, summary
from support.power import every
from support.wait import wait_for


@pytest.mark.slow
def test_bench_with_power_has_energy_per_operation_and_a_power_plot(capsys, tmp_path):
    results, target = tmp_path / "r", tmp_path / "t"
    target.mkdir()
    r = iowatt(capsys, "bench", "randomread", "--runtime", "2s", "--filesize", "8m",
               "--target", target, "--results", results, "--quiet",
               "--power", "cmd:command=echo 35", "--power-hz", "20")  # fmt: skip
    assert r.code == 0, r.err
    (run,) = runs_in(results)
    s = summary(run)
    ops = s["workloads"]["randomread"]["ops"]
    e = s["power"]["workloads"]["randomread"]["cmd/cmd"]
    assert e["duration_s"] == pytest.approx(s["workloads"]["randomread"]["runtime_s"], rel=0.01)
    assert e["energy_j"] == pytest.approx(35.0 * e["duration_s"], rel=0.05)
    assert e["j_per_op"] == pytest.approx(e["energy_j"] / ops)
    assert e["j_per_byte"] == pytest.approx(e["energy_j"] / s["workloads"]["randomread"]["bytes"])
    assert manifest(run)["config"]["power"]["sources"][0]["kind"] == "cmd"
    # Every interval row joins to power samples on the shared monotonic clock.
    intervals = pq.read_table(run / "intervals.parquet").to_pylist()
    power = pq.read_table(run / "power.parquet").column("mono_ns").to_pylist()
    assert min(power) <= intervals[0]["mono_ns"] and max(power) >= intervals[-1]["mono_ns"]
    html = (run / "report.html").read_text()
    assert 'data-plot="power-0"' in html and "<svg" in html.split('data-plot="power-0"')[1][:400]
    assert 'data-channel="cmd/cmd"' in html


def test_idle_without_power_is_refused(capsys, tmp_path):
    r = iowatt(capsys, "bench", "randomread", "--idle", "5s", "--results", tmp_path)
    assert_user_error(r, "--idle")


def _record(capsys, results: Path, watts: float, seconds: float, idle: bool = True):
    args = ["power", "record", "--results", results, "--no-report", "--hz", "20",
            "--source", f"cmd:command=echo {watts}"]  # fmt: skip
    r = iowatt(capsys, *args, "--", "sleep", str(seconds))
    assert r.code == 0, r.err
    return max(runs_in(results), key=lambda p: manifest(p)["started_ns"])


@pytest.mark.slow
def test_energy_compare_reports_time_energy_and_pue_saving(capsys, tmp_path):
    results = tmp_path / "r"
    slow = _record(capsys, results, 100.0, 2.0)
    fast = _record(capsys, results, 120.0, 1.0)
    r = iowatt(capsys, "energy", "compare", slow.name, fast.name, "--pue", "1.6",
               "--idle-watts", "40", "--results", results, "--json")  # fmt: skip
    assert r.code == 0, r.err
    c = json.loads(r.out)
    b, k = summary(slow)["power"]["work"]["cmd/cmd"], summary(fast)["power"]["work"]["cmd/cmd"]
    seconds_b, seconds_k = summary(slow)["command"]["seconds"], summary(fast)["command"]["seconds"]
    assert c["channel"] == "cmd/cmd"
    assert c["time_saved_s"] == pytest.approx(seconds_b - seconds_k)
    assert c["energy_saved_j"] == pytest.approx(b["energy_j"] - k["energy_j"])
    # The sources drew a constant 100 W and 120 W for the commands' time: the saving by hand.
    by_hand = 100.0 * seconds_b - 120.0 * seconds_k
    slack = 0.05 * (100.0 * seconds_b + 120.0 * seconds_k)  # 20 Hz samples at the edges
    assert c["energy_saved_j"] == pytest.approx(by_hand, abs=slack)
    assert c["facility_energy_saved_j"] == pytest.approx(by_hand * 1.6, abs=slack * 1.6)
    assert c["estimated_saving_j"] == pytest.approx((seconds_b - seconds_k) * (100 - 40) * 1.6,
                                                    rel=0.05)  # fmt: skip
    assert c["faster_drew_more_power"] is True
    text = iowatt(capsys, "energy", "compare", slow.name, fast.name, "--pue", "1.6",
                  "--results", results)  # fmt: skip
    assert "drew" in text.out and "more" in text.out and "--idle" in text.out


def test_energy_compare_bad_input(capsys, tmp_path):
    results = tmp_path / "r"
    run = _record(capsys, results, 10.0, 0.2)
    assert_user_error(
        iowatt(capsys, "energy", "compare", run.name, run.name, "--pue", "0.5",
               "--results", results), "`0.5`")  # fmt: skip
    assert_user_error(
        iowatt(capsys, "energy", "compare", run.name, run.name, "--channel", "rapl/psys",
               "--results", results), "`rapl/psys`")  # fmt: skip
    assert_user_error(
        iowatt(capsys, "energy", "compare", run.name, "nope", "--results", results), "`nope`"
    )


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_recording_is_written_incomplete(tmp_path, sig):
    results = tmp_path / "r"
    ready = tmp_path / "ready"  # the command's own word that it has run for a second
    cmd = [sys.executable, "-c", "from iowatt.cli import main; main()", "power", "record",
           "--results", str(results), "--no-report", "--source", "cmd:command=echo 9",
           "--", "sh", "-c", f"sleep 1; touch {ready}; exec sleep 60"]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for(ready.exists, proc, what="the recorded command to run for a second")
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    (run,) = runs_in(results)
    assert (manifest(run)["status"], manifest(run)["reason"]) == ("incomplete", "interrupted")
    e = summary(run)["power"]["work"]["cmd/cmd"]
    assert 0.5 < e["duration_s"] < 30 and e["avg_w"] == pytest.approx(9.0)


@pytest.mark.slow
def test_a_meter_log_is_imported_into_a_finished_bench(capsys, tmp_path):
    results, target, log = tmp_path / "r", tmp_path / "t", tmp_path / "wall.csv"
    target.mkdir()
    (tmp_path / "wall.toml").write_text('[watts]\nwall = "W"\n')
    log.write_text("time,W\n")

    def wall_meter() -> None:  # logs 231.5 W ten times a second on its own clock
        with open(log, "a") as f:
            f.write(f"{time.time():.3f},231.5\n")

    with every(0.1, wall_meter):
        r = iowatt(capsys, "bench", "randomread", "--runtime", "2s", "--filesize", "8m",
                   "--target", target, "--results", results, "--quiet")  # fmt: skip
    assert r.code == 0, r.err
    source = f"meter:name=wall,path={log},map={tmp_path / 'wall.toml'}"
    r = iowatt(capsys, "power", "import", "latest", "--source", source, "--results", results)
    assert r.code == 0, r.err
    (run,) = runs_in(results)
    s = summary(run)
    e = s["power"]["workloads"]["randomread"]["wall/wall"]
    assert e["avg_w"] == pytest.approx(231.5)
    assert e["duration_s"] == pytest.approx(s["workloads"]["randomread"]["runtime_s"], rel=0.02)
    assert e["j_per_op"] == pytest.approx(e["energy_j"] / s["workloads"]["randomread"]["ops"])
    assert "wall/wall" in (run / "report.html").read_text()
    assert_user_error(
        iowatt(capsys, "power", "import", "latest", "--source", source, "--results", results),
        "`wall`",
    )
    assert_user_error(
        iowatt(capsys, "power", "import", "latest", "--source", "cmd:command=echo 1",
               "--results", results), "`cmd`")  # fmt: skip
