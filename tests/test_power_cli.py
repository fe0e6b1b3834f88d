"""``iowatt power record`` end to end: real commands, sysfs fixtures, live meter logs."""

from __future__ import annotations

import contextlib
import os
import time
from contextlib import AbstractContextManager
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest

from support.cli import assert_user_error, iowatt, manifest, runs_in, summary
from support.power import TWO_DISKS, counting, every, make_hwmon, make_rapl


def _record(capsys, results: Path, *args: str | Path):
    return iowatt(capsys, "power", "record", "--results", results, "--no-report", *args)


@pytest.mark.slow
def test_cmd_source_energy_is_its_watts_times_the_duration(capsys, tmp_path):
    results = tmp_path / "r"
    r = _record(capsys, results, "--source", "cmd:command=echo 42.5 W", "--hz", "20",
                "--", "sleep", "1.5")  # fmt: skip
    assert r.code == 0, r.err
    (run,) = runs_in(results)
    s = summary(run)
    assert manifest(run)["kind"] == "power"
    assert s["command"]["argv"] == ["sleep", "1.5"]
    assert s["command"]["exit_code"] == 0
    e = s["power"]["work"]["cmd/cmd"]
    assert e["avg_w"] == pytest.approx(42.5)
    assert e["peak_w"] == pytest.approx(42.5)
    assert e["energy_j"] == pytest.approx(42.5 * e["duration_s"], rel=0.05)
    assert e["duration_s"] == pytest.approx(s["command"]["seconds"])
    assert e["wh"] == pytest.approx(e["energy_j"] / 3600)
    assert s["power"]["headline"] == "cmd/cmd"
    assert "cmd/cmd" in r.err and "kJ" not in r.err  # the table is on stderr
    table = pq.read_table(run / "power.parquet")
    assert set(table.column("watts").to_pylist()) == {42.5}
    assert table.column("mono_ns").to_pylist() == sorted(table.column("mono_ns").to_pylist())
    with duckdb.connect(str(results / "catalog.duckdb"), read_only=True) as con:
        (energy,) = con.execute(
            "SELECT energy_j FROM energy WHERE period = 'work' AND channel = 'cmd'"
        ).fetchone()
        assert energy == pytest.approx(e["energy_j"])
        assert con.execute("SELECT count(*) FROM power").fetchone()[0] == table.num_rows


def test_the_command_exit_status_is_passed_through(capsys, tmp_path):
    r = _record(capsys, tmp_path / "r", "--source", "cmd:command=echo 5", "--",
                "sh", "-c", "exit 3")  # fmt: skip
    assert r.code == 3
    (run,) = runs_in(tmp_path / "r")
    assert summary(run)["command"]["exit_code"] == 3
    assert manifest(run)["status"] == "complete"


@pytest.mark.slow
def test_idle_baseline_gives_dynamic_energy(capsys, tmp_path):
    watts = tmp_path / "watts"
    watts.write_text("20\n")
    results = tmp_path / "r"
    # The "machine" draws 20 W idle and 50 W while the command runs.
    r = _record(capsys, results, "--source", f"cmd:command=cat {watts}", "--hz", "20",
                "--idle", "1s", "--", "sh", "-c", f"echo 50 > {watts}; sleep 1.5")  # fmt: skip
    assert r.code == 0, r.err
    s = summary(runs_in(results)[0])
    idle = s["power"]["idle"]
    assert idle["duration_s"] == pytest.approx(1.0, abs=0.2)
    # The step to 50 W lands between two samples: its trapezoid may reach into the idle edge.
    idle_w = idle["channels"]["cmd/cmd"]["avg_w"]
    assert idle_w == pytest.approx(20.0, abs=1.5)
    e = s["power"]["work"]["cmd/cmd"]
    assert e["avg_w"] == pytest.approx(50.0, rel=0.1)
    assert e["dynamic_j"] == pytest.approx(e["energy_j"] - idle_w * e["duration_s"])


@pytest.mark.slow
def test_rapl_counters_wrapping_during_the_run_give_the_right_energy(capsys, tmp_path):
    max_range = 30_000_000  # 30 J: at 50 W the counter wraps every 0.6 s
    zones = make_rapl(tmp_path / "sys", max_range)
    results = tmp_path / "r"
    root = tmp_path / "sys/class/powercap"
    with (
        counting(zones["package-0"] / "energy_uj", 50.0, max_range),
        counting(zones["psys"] / "energy_uj", 80.0, max_range),
    ):
        r = _record(capsys, results, "--source", f"rapl:root={root}", "--hz", "20",
                    "--", "sleep", "2")  # fmt: skip
    assert r.code == 0, r.err
    s = summary(runs_in(results)[0])
    work = s["power"]["work"]
    assert work["rapl/package-0"]["energy_j"] == pytest.approx(50.0 * 2, rel=0.05)
    assert work["rapl/psys"]["energy_j"] == pytest.approx(80.0 * 2, rel=0.05)
    assert work["rapl/package-0"]["peak_w"] < 60  # no wrap turned into a spike
    assert work["rapl/package-0/core"]["energy_j"] == 0.0
    # psys contains the package: the widest scope is the headline, nothing is summed.
    assert s["power"]["headline"] == "rapl/psys"
    parents = {c["key"]: c["parent"] for c in s["power"]["channels"]}
    assert parents["rapl/package-0/dram"] == "package-0"


def test_an_unreadable_rapl_zone_is_skipped_with_a_warning(capsys, tmp_path):
    make_rapl(tmp_path / "sys")
    dram = tmp_path / "sys/devices/virtual/powercap/intel-rapl/intel-rapl:0/intel-rapl:0:2"
    (dram / "energy_uj").unlink()
    (dram / "energy_uj").mkdir()  # reads fail (EISDIR), as root gets no EACCES
    results = tmp_path / "r"
    r = _record(capsys, results, "--source", f"rapl:root={tmp_path / 'sys/class/powercap'}",
                "--", "true")  # fmt: skip
    assert r.code == 0, r.err
    run = runs_in(results)[0]
    keys = [c["key"] for c in summary(run)["power"]["channels"]]
    assert "rapl/package-0/dram" not in keys and "rapl/package-0" in keys
    events = pq.read_table(run / "events.parquet").to_pylist()
    assert any(e["kind"] == "warning" and "dram" in e["message"] for e in events)


def test_absent_powercap_is_one_clear_error(capsys, tmp_path):
    (tmp_path / "powercap").mkdir()
    r = _record(capsys, tmp_path / "r", "--source", f"rapl:root={tmp_path / 'powercap'}",
                "--", "true")  # fmt: skip
    assert_user_error(r, "RAPL")
    assert not runs_in(tmp_path / "r")


@pytest.mark.slow
def test_hwmon_power_energy_and_sensors(capsys, tmp_path):
    cls = make_hwmon(tmp_path / "sys")
    ina = tmp_path / "sys/devices/platform/i2c-1/1-0040/hwmon/hwmon3"
    results = tmp_path / "r"
    with counting(ina / "energy1_input", 10.234):  # the INA226's energy counter
        r = _record(capsys, results, "--source", f"hwmon:root={cls}", "--hz", "20",
                    "--", "sleep", "1")  # fmt: skip
    assert r.code == 0, r.err
    run = runs_in(results)[0]
    work = summary(run)["power"]["work"]
    power_key = next(k for k in work if k.endswith("disk0") and "energy" not in k)
    assert work[power_key]["avg_w"] == pytest.approx(10.234)
    energy_key = next(k for k in work if k != power_key and k.startswith("hwmon/ina226/"))
    assert work[energy_key]["energy_j"] == pytest.approx(10.234 * 1.0, rel=0.1)
    sensors = pq.read_table(run / "sensors.parquet").to_pylist()
    temps = {r["channel"]: r["value"] for r in sensors if r["unit"] == "C"}
    assert temps["coretemp/Package id 0"] == 45.0
    volts = {r["channel"]: r["value"] for r in sensors if r["unit"] == "V"}
    assert 12.04 in volts.values()


# --- meters -------------------------------------------------------------------------------------

HEADER = "time,s12_b,d12_b,s5_b,s12_c,s5_c,d5_c,server"
LINE = "{t:.3f},0.05,11.9,0.06,0.16,0.08,4.95,150.0"


def logging_meter(log: Path) -> AbstractContextManager[None]:
    """A multimeter's logger appending ten lines a second with epoch timestamps."""
    log.write_text(HEADER + "\n")

    def tick() -> None:
        with open(log, "a") as f:
            f.write(LINE.format(t=time.time()) + "\n")

    return every(0.1, tick)


@pytest.mark.slow
def test_two_disk_shunt_rig_matches_a_hand_calculation(capsys, tmp_path):
    log, cmap, results = tmp_path / "meter.csv", tmp_path / "disks.toml", tmp_path / "r"
    cmap.write_text(TWO_DISKS)
    with logging_meter(log):
        r = _record(capsys, results, "--source", f"meter:path={log},map={cmap}",
                    "--", "sleep", "2")  # fmt: skip
    assert r.code == 0, r.err
    run = runs_in(results)[0]
    # By hand: sdb = 0.05/0.1 × 11.9 + 0.06/0.1 × 5 = 5.95 + 3 = 8.95 W;
    # sdc (0.2 Ω) = 0.16/0.2 × 12 + 0.08/0.2 × 4.95 = 9.6 + 1.98 = 11.58 W;
    # disks = 20.53 W; total = disks + server 150 W = 170.53 W.
    expected = {"meter/disk:sdb:12v": 5.95, "meter/disk:sdb:5v": 3.0, "meter/disk:sdb": 8.95,
                "meter/disk:sdc": 11.58, "meter/disks": 20.53, "meter/server": 150.0,
                "meter/total": 170.53}  # fmt: skip
    rows = pq.read_table(run / "power.parquet").to_pylist()
    for key, watts in expected.items():
        got = {r["watts"] for r in rows if f"{r['source']}/{r['channel']}" == key}
        assert got and all(w == pytest.approx(watts) for w in got), key
    work = summary(run)["power"]["work"]
    assert work["meter/total"]["avg_w"] == pytest.approx(170.53)
    assert work["meter/total"]["energy_j"] == pytest.approx(170.53 * 2, rel=0.1)
    assert summary(run)["power"]["headline"] == "meter/total"
    # The raw shunt voltages are mapped, not repeated as sensors.
    assert not pq.read_table(run / "sensors.parquet").num_rows


def test_a_meter_log_with_bad_lines_counts_and_reports_them(capsys, tmp_path):
    log, results = tmp_path / "wall.csv", tmp_path / "r"
    t = time.time() - 1
    log.write_text(
        "time,W\n"
        f"{t:.1f},100\n"
        "garbage line\n"  # malformed
        f"{t + 0.2:.1f},\n"  # missing value
        f"{t + 0.4:.1f},101,7\n"  # too many fields
        f"{t + 0.6:.1f},102\n"
        f"{t + 0.5:.1f},103\n"  # out of order
        f"{t + 0.8:.1f},104\n"
    )
    r = _record(capsys, results, "--source", f"meter:path={log},follow=false",
                "--", "sleep", "0.2")  # fmt: skip
    assert r.code == 0, r.err
    (stats,) = summary(runs_in(results)[0])["power"]["sources"]
    assert (stats["malformed_lines"], stats["missing_values"], stats["out_of_order"]) == (2, 1, 1)
    assert "2 malformed lines" in r.err and "line 3" in r.err


def test_a_map_naming_a_missing_column_is_refused(capsys, tmp_path):
    log, cmap = tmp_path / "m.csv", tmp_path / "m.toml"
    log.write_text("time,W\n")
    cmap.write_text('[watts]\nwall = "Watts"\n')
    r = _record(capsys, tmp_path / "r", "--source", f"meter:path={log},map={cmap}", "--", "true")
    assert_user_error(r, "`Watts`")


@pytest.mark.parametrize(
    ("source", "fragment"),
    [
        ("wattmeter", "`wattmeter`"),
        ("rapl:rot=/x", "`rot`"),
        ("cmd:command=echo no watts, just words", "no watts"),  # command= takes the rest
        ("meter:hz=-1,path=x", "`-1`"),
        ("meter:follow=maybe,path=x", "`maybe`"),
        ("meter", "path="),
        ("ipmi:ipmitool=/nonexistent/ipmitool", "ipmitool"),
    ],
)
def test_bad_sources_are_one_line_errors(capsys, tmp_path, source, fragment):
    r = _record(capsys, tmp_path / "r", "--source", source, "--", "true")
    assert_user_error(r, *([fragment] if fragment else []))
    assert not runs_in(tmp_path / "r")


def test_a_missing_command_is_refused_before_anything_runs(capsys, tmp_path):
    r = _record(capsys, tmp_path / "r", "--source", "cmd:command=echo 1", "--", "no-such-cmd-x")
    assert_user_error(r, "`no-such-cmd-x`")


@pytest.mark.slow
def test_a_source_failing_mid_run_is_an_event_and_the_run_goes_on(capsys, tmp_path):
    watts = tmp_path / "watts"
    watts.write_text("30\n")
    results = tmp_path / "r"
    r = _record(capsys, results, "--source", f"cmd:command=cat {watts}",
                "--source", "cmd:name=steady,command=echo 7", "--hz", "20",
                "--", "sh", "-c", f"sleep 0.5; rm {watts}; sleep 0.5")  # fmt: skip
    assert r.code == 0, r.err
    run = runs_in(results)[0]
    events = pq.read_table(run / "events.parquet").to_pylist()
    errors = [e for e in events if e["kind"] == "error"]
    assert len(errors) == 1 and errors[0]["source"] == "cmd", events  # one event, not a flood
    work = summary(run)["power"]["work"]
    assert work["steady/steady"]["avg_w"] == pytest.approx(7.0)
    assert work["cmd/cmd"]["gap_s"] > 0.2
    assert "failed polls" in r.err


@pytest.mark.slow
def test_a_watts_up_pro_is_read_live_from_its_serial_port(capsys, tmp_path):
    master, slave = os.openpty()  # the meter's side and the serial device iowatt opens
    os.set_blocking(master, False)
    results, sent = tmp_path / "r", bytearray()

    def meter() -> None:
        with contextlib.suppress(BlockingIOError):
            sent.extend(os.read(master, 256))
        # W 231.5, V 120.1, A 1.930 (tenths, tenths, thousandths), then 15 more fields.
        os.write(master, b"#d,-,18,2315,1201,1930" + b",0" * 15 + b";\r\n")

    try:
        with every(0.2, meter):
            source = f"meter:format=wattsup,path={os.ttyname(slave)}"
            r = _record(capsys, results, "--source", source, "--", "sleep", "1.5")
    finally:
        os.close(master)
        os.close(slave)
    assert r.code == 0, r.err
    assert b"#L,W,3,E,,1;" in sent  # iowatt asked the meter to stream one record a second
    run = runs_in(results)[0]
    assert summary(run)["power"]["work"]["meter/watts"]["avg_w"] == pytest.approx(231.5)
    sensors = pq.read_table(run / "sensors.parquet").to_pylist()
    assert {r["value"] for r in sensors if r["channel"] == "volts"} == {120.1}
    assert {r["value"] for r in sensors if r["channel"] == "amps"} == {1.93}
