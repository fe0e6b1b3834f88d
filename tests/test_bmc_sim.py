"""The simulated BMC itself, through the real ipmitool: what the IPMI source's tests rely on."""

from __future__ import annotations

import subprocess

import pytest

from support.bmc import AUTO_DUTY, BmcSim, fan_firmware_readings


def dcmi(bmc: BmcSim) -> dict[str, str]:
    """``dcmi power reading`` as {label: value} (ipmitool prints ``label: value`` lines)."""
    result = bmc.run("dcmi", "power", "reading")
    assert result.returncode == 0, result.stderr
    fields = {}
    for line in result.stdout.splitlines():
        # ipmitool 1.8.19 prints the timestamp without its newline: two fields on one line.
        for part in line.replace(" UTC ", " UTC\n").splitlines():
            label, sep, value = part.partition(":")
            if sep:
                fields[label.strip()] = value.strip()
    return fields


def test_dcmi_reports_the_power_set(bmc: BmcSim) -> None:
    bmc.set_power(215)
    reading = dcmi(bmc)
    assert reading["Instantaneous power reading"] == "215 Watts"
    assert reading["Average power reading over sample period"] == "215 Watts"
    assert reading["Power reading state is"] == "activated"

    bmc.set_dcmi(120, 100, 140, 110)
    reading = dcmi(bmc)
    assert reading["Instantaneous power reading"] == "120 Watts"
    assert reading["Minimum during sampling period"] == "100 Watts"
    assert reading["Maximum during sampling period"] == "140 Watts"
    assert reading["Average power reading over sample period"] == "110 Watts"


def test_dcmi_can_be_broken_as_real_bmcs_are(bmc: BmcSim) -> None:
    bmc.set_dcmi(0, active=False)
    reading = dcmi(bmc)
    assert reading["Instantaneous power reading"] == "0 Watts"
    assert reading["Power reading state is"] == "deactivated"

    bmc.set_dcmi(65535)
    assert dcmi(bmc)["Instantaneous power reading"] == "65535 Watts"

    bmc.set_dcmi_error(0xC1)
    result = bmc.run("dcmi", "power", "reading")
    assert result.returncode != 0
    assert "Invalid command (c1)" in result.stderr

    bmc.set_dcmi_error(0xFF)
    assert "Unspecified error (ff)" in bmc.run("dcmi", "power", "reading").stderr

    bmc.set_power(180)
    assert dcmi(bmc)["Instantaneous power reading"] == "180 Watts"


def test_sdr_shows_names_values_and_units(bmc: BmcSim) -> None:
    assert bmc.sensors() == {
        "Pwr Consumption": "200 Watts",
        "FAN1": "4200 RPM",
        "FAN2": "3900 RPM",
        "CPU Temp": "45 degrees C",
        "Inlet Temp": "22 degrees C",
        "12V": "12 Volts",
        "PSU1 Current": "3.50 Amps",
        "DIMM Temp": "No Reading",
        "Exhaust Temp": "Disabled",
    }
    listed = bmc.run("sdr", "list", "full").stdout
    assert "| 4200 RPM" in listed
    assert "| no reading" in listed
    sensor = {
        cells[0]: cells[1:4]
        for line in bmc.run("sensor").stdout.splitlines()
        if (cells := [c.strip() for c in line.split("|")])
    }
    assert sensor["Pwr Consumption"] == ["200.000", "Watts", "ok"]
    assert sensor["Inlet Temp"] == ["22.000", "degrees C", "ok"]
    assert sensor["DIMM Temp"] == ["na", "", "na"]
    assert sensor[bmc.discrete][1] == "discrete"


@pytest.mark.slow
def test_changing_a_value_file_changes_the_sensor(bmc: BmcSim) -> None:
    bmc.set_fan(1, 6000)
    bmc.set_fan(2, 1234)  # rounded to the fan's 50 RPM steps
    bmc.set_temp(1, 71)
    bmc.set_temp(2, 30)
    bmc.set_power(300)
    bmc.set_volts(11.4)
    bmc.set_amps(0.25)  # rounded half up to 0.3 A
    # ipmi_sim reads its files every second: wait, with a bound, for all to show.
    shown = bmc.wait_for_sensors()
    assert shown["FAN1"] == "6000 RPM"
    assert shown["FAN2"] == "1250 RPM"
    assert shown["CPU Temp"] == "71 degrees C"
    assert shown["Inlet Temp"] == "30 degrees C"
    assert shown["Pwr Consumption"] == "300 Watts"
    assert shown["12V"] == "11.40 Volts"
    assert shown["PSU1 Current"] == "0.30 Amps"
    assert dcmi(bmc)["Instantaneous power reading"] == "300 Watts"


@pytest.mark.slow
def test_bad_password_and_unreachable_bmc(bmc: BmcSim) -> None:
    wrong = subprocess.run(
        bmc.cmd("dcmi", "power", "reading"),
        env={**bmc.env(), "IPMI_PASSWORD": "wrong"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert wrong.returncode != 0
    assert "Unable to establish IPMI v2 / RMCP+ session" in wrong.stderr

    bmc.stop()
    assert bmc.run("-N", "1", "-R", "1", "mc", "info").returncode != 0
    bmc.start()
    assert dcmi(bmc)["Instantaneous power reading"] == "200 Watts"


def test_password_file_and_connection_options(bmc: BmcSim) -> None:
    options = bmc.connection_options()
    assert bmc.source_options() == {"kind": "ipmi", **options}
    login = ["-I", "lanplus", "-C", str(options["cipher_suite"]), "-H", options["host"]]
    login += ["-p", str(options["port"]), "-U", options["user"], "-f", options["password_file"]]
    result = subprocess.run(
        ["ipmitool", *login, "sdr", "type", "Fan"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "FAN1" in result.stdout
    assert "FAN2" in result.stdout


# --- fan firmware: vendor OEM fan commands (netfn 0x30) ------------------------------------

DELL = 0x30
SMC_MODE = 0x45
SMC_ZONE = (0x70, 0x66)


def raw(bmc: BmcSim, *request: int) -> subprocess.CompletedProcess[str]:
    """``ipmitool raw 0x30 REQUEST…``: an OEM command to the fan firmware."""
    return bmc.run("raw", "0x30", *(f"{b:#04x}" for b in request))


def ok(bmc: BmcSim, *request: int) -> str:
    """The response bytes of an OEM command that must succeed, as ipmitool prints them."""
    result = raw(bmc, *request)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def state(mode: str, duty: int, dell_manual: int, smc_mode: int, zones: tuple[int, int]) -> dict:
    return {
        "mode": mode,
        "duty": str(duty),
        "dell_manual": str(dell_manual),
        "smc_mode": str(smc_mode),
        "zone0": str(zones[0]),
        "zone1": str(zones[1]),
    }


def shows_duty(bmc: BmcSim, duty: int, base: float = 30, slope: float = 0.5) -> None:
    """Within a few seconds, the SDR fans and CPU temperature show the model at ``duty``."""
    shown = bmc.wait_for_sensors(timeout_s=5)
    readings = fan_firmware_readings(duty, base, slope)
    assert shown["FAN1"] == f"{readings['FAN1']} RPM"
    assert shown["FAN2"] == f"{readings['FAN2']} RPM"
    assert shown["CPU Temp"] == f"{readings['CPU Temp']} degrees C"


def test_fan_firmware_model_rounds_to_fan_steps_and_whole_degrees() -> None:
    # 600 + 96 × 30 = 3480 rpm, 0.93 × 3500 = 3255 rpm, 40 + 0.3 × 70 = 61 °C
    assert fan_firmware_readings(30, 40, 0.3) == {"FAN1": 3500, "FAN2": 3250, "CPU Temp": 61}
    # halves round up: 30 + 0.5 × 81 = 70.5 °C, 0.93 × 2500 = 2325 rpm
    assert fan_firmware_readings(19) == {"FAN1": 2400, "FAN2": 2250, "CPU Temp": 71}
    assert fan_firmware_readings(20) == {"FAN1": 2500, "FAN2": 2350, "CPU Temp": 70}
    assert fan_firmware_readings(100) == {"FAN1": 10200, "FAN2": 9500, "CPU Temp": 30}


@pytest.mark.slow
def test_dell_manual_duty_drives_fans_and_cpu_temperature(bmc: BmcSim) -> None:
    assert bmc.fan_state() == {}
    assert bmc.fan_log() == []
    bmc.set_thermal(40, 0.3)

    assert ok(bmc, DELL, 0x01, 0x00) == ""
    assert ok(bmc, DELL, 0x02, 0xFF, 30) == ""

    assert bmc.fan_state() == state("manual", 30, 1, 0, (AUTO_DUTY, AUTO_DUTY))
    assert bmc.fan_log() == ["dell manual", "dell duty 30"]
    shows_duty(bmc, 30, 40, 0.3)
    assert bmc.sensors()["FAN1"] == "3500 RPM"
    assert bmc.sensors()["CPU Temp"] == "61 degrees C"


@pytest.mark.slow
def test_dell_duty_set_in_automatic_mode_waits_for_manual_mode(bmc: BmcSim) -> None:
    ok(bmc, DELL, 0x02, 0xFF, 20)
    assert bmc.fan_state() == state("auto", AUTO_DUTY, 0, 0, (AUTO_DUTY, AUTO_DUTY))
    shows_duty(bmc, AUTO_DUTY)

    ok(bmc, DELL, 0x01, 0x00)
    assert bmc.fan_state()["duty"] == "20"
    shows_duty(bmc, 20)

    ok(bmc, DELL, 0x02, 0x03, 70)  # one fan: this BMC turns all
    assert bmc.fan_state()["duty"] == "70"

    ok(bmc, DELL, 0x01, 0x01)
    assert bmc.fan_state() == state("auto", AUTO_DUTY, 0, 0, (AUTO_DUTY, AUTO_DUTY))
    shows_duty(bmc, AUTO_DUTY)
    assert bmc.fan_log() == ["dell duty 20", "dell manual", "dell fan 3 duty 70", "dell auto"]


def test_supermicro_get_mode_returns_the_mode_set(bmc: BmcSim) -> None:
    assert ok(bmc, SMC_MODE, 0x00) == "00"
    assert bmc.fan_state() == {}  # a get changes nothing
    for mode in (2, 4, 1, 0):
        assert ok(bmc, SMC_MODE, 0x01, mode) == ""
        assert ok(bmc, SMC_MODE, 0x00) == f"{mode:02x}"
        assert bmc.fan_state()["smc_mode"] == str(mode)
    assert bmc.fan_log()[:3] == ["smc get mode", "smc mode 2", "smc get mode"]


@pytest.mark.slow
def test_supermicro_zone_duty_takes_effect_only_in_full_mode(bmc: BmcSim) -> None:
    ok(bmc, SMC_MODE, 0x01, 0x02)  # optimal
    ok(bmc, *SMC_ZONE, 0x01, 0x00, 30)
    assert bmc.fan_state() == state("auto", AUTO_DUTY, 0, 2, (30, AUTO_DUTY))
    assert ok(bmc, *SMC_ZONE, 0x00, 0x00) == "32"  # runs at the automatic 50 %

    ok(bmc, SMC_MODE, 0x01, 0x01)  # full: both zones at 100 until set
    assert bmc.fan_state() == state("manual", 100, 0, 1, (100, 100))
    assert ok(bmc, *SMC_ZONE, 0x00, 0x00) == "64"

    ok(bmc, *SMC_ZONE, 0x01, 0x00, 40)
    ok(bmc, *SMC_ZONE, 0x01, 0x01, 25)
    assert bmc.fan_state() == state("manual", 40, 0, 1, (40, 25))
    assert ok(bmc, *SMC_ZONE, 0x00, 0x00) == "28"
    assert ok(bmc, *SMC_ZONE, 0x00, 0x01) == "19"
    shows_duty(bmc, 40)

    ok(bmc, SMC_MODE, 0x01, 0x00)  # standard
    assert bmc.fan_state() == state("auto", AUTO_DUTY, 0, 0, (40, 25))
    assert ok(bmc, *SMC_ZONE, 0x00, 0x00) == "32"
    shows_duty(bmc, AUTO_DUTY)
    assert bmc.fan_log()[-3:] == ["smc get zone 1", "smc mode 0", "smc get zone 0"]


@pytest.mark.slow
def test_bad_fan_requests_get_their_completion_codes_and_change_nothing(bmc: BmcSim) -> None:
    refused = {
        (SMC_MODE, 0x01, 0x03): 0xCC,  # no mode 3
        (SMC_MODE, 0x02): 0xCC,
        (SMC_MODE, 0x01): 0xC7,
        (SMC_MODE, 0x00, 0x00): 0xC7,
        (SMC_MODE,): 0xC7,
        (*SMC_ZONE, 0x01, 0x02, 50): 0xCC,  # no zone 2
        (*SMC_ZONE, 0x01, 0x00, 101): 0xCC,
        (*SMC_ZONE, 0x01, 0x00): 0xC7,
        (*SMC_ZONE, 0x00, 0x00, 0x00): 0xC7,
        (0x70, 0x67, 0x00, 0x00): 0xCC,
        (DELL, 0x01): 0xC7,
        (DELL, 0x01, 0x02): 0xCC,
        (DELL, 0x02, 0xFF): 0xC7,
        (DELL, 0x02, 0xFF, 101): 0xCC,
        (DELL, 0x03, 0x00): 0xCC,
    }
    for request, ccode in refused.items():
        result = raw(bmc, *request)
        assert result.returncode != 0, request
        assert f"rsp={ccode:#x}" in result.stderr, (request, result.stderr)
    assert "Invalid data field in request" in raw(bmc, SMC_MODE, 0x01, 0x03).stderr
    assert "Request data length invalid" in raw(bmc, DELL, 0x01).stderr
    assert bmc.fan_state() == {}
    assert bmc.fan_log() == []
    bmc.wait_for_sensors()  # the values the fixture set


@pytest.mark.slow
def test_paused_bmc_stops_answering_and_resumes_with_its_fan_state(bmc: BmcSim) -> None:
    ok(bmc, DELL, 0x01, 0x00)
    ok(bmc, DELL, 0x02, 0xFF, 40)
    before = bmc.fan_state()

    bmc.pause()
    assert bmc.run("-N", "1", "-R", "1", "mc", "info").returncode != 0
    bmc.resume()
    assert bmc.run("-N", "1", "-R", "1", "mc", "info").returncode == 0

    assert bmc.fan_state() == before
    ok(bmc, SMC_MODE, 0x01, 0x00)  # rewrites the state: still Dell manual at 40 %
    assert bmc.fan_state() == state("manual", 40, 1, 0, (AUTO_DUTY, AUTO_DUTY))
    shows_duty(bmc, 40)


@pytest.mark.slow
def test_restarted_bmc_forgets_manual_fan_control(bmc: BmcSim) -> None:
    ok(bmc, DELL, 0x01, 0x00)
    ok(bmc, DELL, 0x02, 0xFF, 10)
    bmc.stop()
    bmc.start()
    assert bmc.fan_state() == state("auto", AUTO_DUTY, 0, 0, (AUTO_DUTY, AUTO_DUTY))
    assert bmc.fan_log() == ["dell manual", "dell duty 10", "reset"]
    shows_duty(bmc, AUTO_DUTY)
