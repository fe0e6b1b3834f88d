"""The simulated BMC itself, through the real ipmitool: what the IPMI source's tests rely on."""

from __future__ import annotations

import subprocess

from bmc_sim import BmcSim


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


def test_password_file_and_source_options(bmc: BmcSim) -> None:
    options = bmc.source_options()
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
