"""A simulated BMC on 127.0.0.1: OpenIPMI's ``ipmi_sim`` with iowatt's DCMI and fan plugins.

The ``bmc`` fixture starts one per test, reachable with ``ipmitool -I lanplus`` (user and
password below, the password from ``IPMI_PASSWORD`` with ``-E`` or from ``password_file``).

- DCMI ``power reading``: answered by ``bmc/dcmi_power.c`` (compiled once per session against
  the OpenIPMI headers) from a value file read at every request, so ``set_power`` and
  ``set_dcmi`` take effect at once; ``set_dcmi_error(0xC1)`` makes a BMC without DCMI.
- SDR sensors (``bmc/bmc.sdrs``, ``bmc/bmc.emu``): a power sensor in watts, two fans, two
  temperatures, a 12 V rail and a current, all read from files that ipmi_sim polls every second
  (``wait_for_sensors`` waits for them), two temperatures without a reading and a discrete sensor.
- Fan firmware: ``bmc/fan_firmware.c`` answers the vendor OEM fan commands (netfn 0x30) of Dell
  iDRACs (cmd 0x30: ``01 00`` manual, ``01 01`` automatic, ``02 ff DD`` duty DD %) and
  Supermicro BMCs (cmd 0x45: ``00`` get mode, ``01 MM`` set mode 0 standard / 1 full /
  2 optimal / 4 heavy IO; cmd 0x70: ``66 01 ZZ DD`` zone 0/1 duty, ``66 00 ZZ`` get it),
  0xc7 for a wrong length, 0xcc for a bad value. Its duty drives FAN1, FAN2 and CPU Temp
  (``fan_firmware_readings``): from the first accepted command that sets state, every such
  command rewrites their value files, overriding ``set_fan(…)``/``set_temp(1, …)``, and
  ``fans.state``. ``fan_state()`` is that state as a dict (``{}`` before any command), e.g.
  ``{"mode": "manual", "duty": "30", "dell_manual": "1", "smc_mode": "0", "zone0": "50",
  "zone1": "50"}`` (``duty``: the effective one; ``zoneN``: the duty last set for zone N);
  ``fan_log()`` lists the accepted commands, gets included (``"dell manual"``, ``"dell duty
  30"``, ``"dell fan 2 duty 30"``, ``"dell auto"``, ``"smc get mode"``, ``"smc mode 1"``,
  ``"smc zone 0 duty 60"``, ``"smc get zone 0"``; ``"reset"`` when ipmi_sim restarted, back in
  automatic mode). ``set_thermal(base, slope)`` sets the CPU temperature model from the next
  command on.
- ipmi_sim 2.0.33 drops the "Get Channel Cipher Suites" request ipmitool >= 1.8.19 sends before
  each lanplus session (OpenIPMI fixed it later, commit b817f761), so ipmitool would wait ~10 s
  on every run: naming cipher suite 3 (``-C 3``; the source's ``cipher_suite``) skips it.
- ``stop()``/``start()`` take the BMC away and back on the same port (a restart: the fan
  firmware forgets its state); ``pause()``/``resume()`` freeze it (SIGSTOP/SIGCONT) so it stops
  answering but keeps its state; ``unused_udp_port()`` is a port nothing answers on.
- ``connection_options()``: interface, cipher_suite, host, port, user and password_file to reach
  the BMC with ipmitool; ``source_options()`` adds ``"kind": "ipmi"`` for an iowatt power source.

Needs ``ipmi_sim`` and ``sdrcomp`` (Debian ``openipmi``), ``ipmitool``, ``gcc`` and the OpenIPMI
headers (``libopenipmi-dev``); skips without them.
"""

from __future__ import annotations

import math
import os
import shutil
import signal
import socket
import string
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

TEMPLATES = Path(__file__).parent.parent / "bmc"
OPENIPMI_INCLUDE = Path(os.environ.get("OPENIPMI_INCLUDE", "/usr/include"))
HOST = "127.0.0.1"
USER = "iowatt"
PASSWORD = "bmc-pass-1"
START_TIMEOUT_S = 15.0

POWER_SENSOR = "Pwr Consumption"
FANS = ("FAN1", "FAN2")
TEMPS = ("CPU Temp", "Inlet Temp")
VOLTS_SENSOR = "12V"
AMPS_SENSOR = "PSU1 Current"
# SDR sensors that never have a reading ("No Reading", "Disabled") and a discrete one.
UNREADABLE = ("DIMM Temp", "Exhaust Temp")
DISCRETE = "PSU1 Status"
# The fan firmware's automatic duty (%), and the CPU temperature model without thermal.val.
AUTO_DUTY = 50
THERMAL_BASE = 30.0
THERMAL_SLOPE = 0.5


@dataclass(frozen=True)
class _Writable:
    """A sensor ipmi_sim reads from ``file``: the file holds the value × ``per_unit`` as an
    integer, which bmc.emu divides by ``div`` (rounding half up) into the raw byte; ipmitool
    shows raw × ``step`` (the SDR's m and r_exp)."""

    file: str
    per_unit: int
    div: int
    step: float
    initial: float

    def raw(self, scaled: int) -> int:
        """The raw byte of the file's integer ``scaled``."""
        return min((max(scaled, 0) + self.div // 2) // self.div, 255)


_WRITABLE = {
    POWER_SENSOR: _Writable("power.val", 1, 4, 4, 200),
    FANS[0]: _Writable("fan1.val", 1, 50, 50, 4200),
    FANS[1]: _Writable("fan2.val", 1, 50, 50, 3900),
    TEMPS[0]: _Writable("temp1.val", 1, 1, 1, 45),
    TEMPS[1]: _Writable("temp2.val", 1, 1, 1, 22),
    VOLTS_SENSOR: _Writable("volt1.val", 1000, 60, 0.06, 12.0),
    AMPS_SENSOR: _Writable("curr1.val", 1000, 100, 0.1, 3.5),
}


def fan_firmware_readings(
    duty: int, base: float = THERMAL_BASE, slope: float = THERMAL_SLOPE
) -> dict[str, int]:
    """What FAN1, FAN2 (rpm) and CPU Temp (°C) read when the fan firmware runs at ``duty`` %
    with the thermal model ``base``/``slope``: the rounding of fan_firmware.c, halves up."""
    fan1 = (600 + 96 * duty + 25) // 50 * 50
    temp = min(max(math.floor(base + slope * (100 - duty) + 0.5), 0), 255)
    return {FANS[0]: fan1, FANS[1]: (fan1 * 93 + 2500) // 5000 * 50, TEMPS[0]: temp}


def missing_tools() -> list[str]:
    """What the simulated BMC needs that this machine lacks (empty when it can run)."""
    missing = [p for p in ("ipmi_sim", "sdrcomp", "ipmitool", "gcc") if shutil.which(p) is None]
    if not (OPENIPMI_INCLUDE / "OpenIPMI" / "mcserv.h").exists():
        missing.append(f"{OPENIPMI_INCLUDE}/OpenIPMI/mcserv.h (libopenipmi-dev)")
    return missing


def unused_udp_port() -> int:
    """A UDP port on 127.0.0.1 that nothing listens on (free when this returns)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind((HOST, 0))
        port: int = s.getsockname()[1]
        return port


def write_atomically(path: Path, text: str) -> None:
    """Replace ``path`` so a reader sees the old or the new content, never a partial one."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


class PortTaken(Exception):
    """ipmi_sim could not bind its port (taken since ``unused_udp_port`` chose it)."""


@dataclass(frozen=True)
class BmcPlugins:
    """The compiled ipmi_sim plugins."""

    dcmi_power: Path
    fan_firmware: Path


@dataclass
class BmcSim:
    """A running ipmi_sim; see the module docstring."""

    workdir: Path
    plugins: BmcPlugins
    port: int
    host: str = HOST
    user: str = USER
    password: str = PASSWORD
    power_sensor: str = POWER_SENSOR
    fans: tuple[str, ...] = FANS
    temps: tuple[str, ...] = TEMPS
    volts_sensor: str = VOLTS_SENSOR
    amps_sensor: str = AMPS_SENSOR
    unreadable: tuple[str, ...] = UNREADABLE
    discrete: str = DISCRETE
    _proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def password_file(self) -> Path:
        return self.workdir / "password"

    @property
    def log(self) -> Path:
        """ipmi_sim's stdout and stderr."""
        return self.workdir / "ipmi_sim.log"

    def env(self) -> dict[str, str]:
        """The environment with ``IPMI_PASSWORD`` set, for ``ipmitool -E``."""
        return {**os.environ, "IPMI_PASSWORD": self.password}

    def cmd(self, *args: str, port: int | None = None) -> list[str]:
        """``ipmitool -I lanplus -H … -p … -U … -E ARGS`` (run it with ``env()``)."""
        p = str(self.port if port is None else port)
        login = ["-I", "lanplus", "-C", "3", "-H", self.host, "-p", p, "-U", self.user, "-E"]
        return ["ipmitool", *login, *args]

    def run(self, *args: str, timeout_s: float = 30.0) -> subprocess.CompletedProcess[str]:
        """Run ipmitool ARGS against the BMC; the result is returned whatever the exit code."""
        return subprocess.run(
            self.cmd(*args),
            env=self.env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )

    def connection_options(self) -> dict[str, Any]:
        """How ipmitool reaches this BMC: interface, cipher_suite, host, port, user and
        password_file (what an iowatt IPMI driver takes)."""
        return {
            "interface": "lanplus",
            "cipher_suite": 3,
            "host": self.host,
            "port": self.port,
            "user": self.user,
            "password_file": str(self.password_file),
        }

    def source_options(self) -> dict[str, Any]:
        """Options of an iowatt ``ipmi`` power source reading this BMC."""
        return {"kind": "ipmi", **self.connection_options()}

    # --- simulated values -------------------------------------------------------------------

    def set_power(self, watts: int) -> None:
        """DCMI reads ``watts`` (current = min = max = average, activated) at once; the SDR
        power sensor follows within ~1 s (``wait_for_sensors``), in 4 W steps up to 1020 W."""
        self.set_dcmi(watts)
        self._set_sensor(POWER_SENSOR, watts)

    def set_dcmi(
        self,
        current: int,
        minimum: int | None = None,
        maximum: int | None = None,
        average: int | None = None,
        *,
        active: bool = True,
    ) -> None:
        """The next DCMI power reading, in whole watts (0..65535); ``active=False`` reports
        the reading state as deactivated."""
        values = [current, *(current if v is None else v for v in (minimum, maximum, average))]
        if not all(0 <= v <= 0xFFFF for v in values):
            raise ValueError(f"DCMI readings are 0..65535 W, not {values}")
        line = " ".join(str(int(v)) for v in values) + f" {int(active)}\n"
        write_atomically(self.workdir / "dcmi.val", line)

    def set_dcmi_error(self, ccode: int) -> None:
        """DCMI requests fail with this completion code: 0xC1 (invalid command) is a BMC
        without DCMI, 0xFF the "Unspecified error" of a busy BMC. ``set_dcmi`` undoes it."""
        write_atomically(self.workdir / "dcmi.val", f"ccode {ccode:#04x}\n")

    def set_fan(self, n: int, rpm: int) -> None:
        """Fan ``n`` (1 or 2) turns at ``rpm`` (50 RPM steps up to 12750) within ~1 s."""
        self._set_sensor(FANS[n - 1], rpm)

    def set_temp(self, n: int, celsius: int) -> None:
        """Temperature ``n`` (1 or 2) reads ``celsius`` (whole degrees, 0..255) within ~1 s."""
        self._set_sensor(TEMPS[n - 1], celsius)

    def set_volts(self, volts: float) -> None:
        """The 12 V rail reads ``volts`` (0.06 V steps up to 15.3 V) within ~1 s."""
        self._set_sensor(VOLTS_SENSOR, volts)

    def set_amps(self, amps: float) -> None:
        """The power supply's current reads ``amps`` (0.1 A steps up to 25.5 A) within ~1 s."""
        self._set_sensor(AMPS_SENSOR, amps)

    def set_thermal(self, base: float, slope: float) -> None:
        """The fan firmware's CPU temperature becomes ``base + slope × (100 − duty)`` °C from
        its next fan command on (it reads thermal.val at each change)."""
        write_atomically(self.workdir / "thermal.val", f"{base!r} {slope!r}\n")

    def _set_sensor(self, name: str, value: float) -> None:
        sensor = _WRITABLE[name]
        write_atomically(self.workdir / sensor.file, f"{round(value * sensor.per_unit)}\n")

    def expected(self, name: str) -> float:
        """What the SDR sensor ``name`` reads once ipmi_sim has polled its file: the value in
        the file (set here or by the fan firmware), rounded to the sensor's steps."""
        sensor = _WRITABLE[name]
        scaled = int((self.workdir / sensor.file).read_text())
        return sensor.raw(scaled) * sensor.step

    # --- reading back -------------------------------------------------------------------

    def fan_state(self) -> dict[str, str]:
        """The fan firmware's ``fans.state`` as {key: value}; ``{}`` before its first command
        that sets state."""
        path = self.workdir / "fans.state"
        if not path.exists():
            return {}
        return dict(word.split("=", 1) for word in path.read_text().split())

    def fan_log(self) -> list[str]:
        """The fan commands the firmware accepted, oldest first (``fans.log``)."""
        path = self.workdir / "fans.log"
        return path.read_text().splitlines() if path.exists() else []

    def sensors(self) -> dict[str, str]:
        """``sdr elist full`` as {sensor name: reading as printed}, e.g. ``"4200 RPM"``."""
        result = self.run("sdr", "elist", "full")
        if result.returncode != 0:
            pytest.fail(f"`sdr elist full` failed: {result.stderr.strip()}")
        rows = (line.rsplit("|", 4) for line in result.stdout.splitlines() if "|" in line)
        return {r[0].strip(): r[4].strip() for r in rows if len(r) == 5}

    def wait_for_sensors(self, timeout_s: float = 10.0) -> dict[str, str]:
        """Wait until every writable SDR sensor shows its ``expected`` value (ipmi_sim reads
        the files every second); returns ``sensors()``."""

        deadline = time.monotonic() + timeout_s
        while True:
            shown = self.sensors()
            expected = {name: self.expected(name) for name in _WRITABLE}
            wrong = [
                f"{name}: {shown.get(name)!r}, not {value:g}"
                for name, value in expected.items()
                if _number(shown.get(name, "")) != pytest.approx(value)
            ]
            if not wrong:
                return shown
            if time.monotonic() > deadline:
                pytest.fail(f"after {timeout_s} s, SDR sensors still show {'; '.join(wrong)}")
            time.sleep(0.1)

    # --- life cycle -------------------------------------------------------------------------

    def start(self) -> None:
        """Start ipmi_sim (again); wait until it answers and its sensors show their values."""
        assert self._proc is None, "the simulated BMC is already running"
        state = self.workdir / "state"
        sdr_dir = state / "ipmi_sim" / "iowatt"
        sdr_dir.mkdir(parents=True, exist_ok=True)
        _check(["sdrcomp", "-8", "-o", sdr_dir / "sdr.20.main", TEMPLATES / "bmc.sdrs"])
        log = open(self.log, "ab")  # noqa: SIM115 - handed to the process, closed below
        try:
            self._proc = subprocess.Popen(
                ["ipmi_sim", "-n", "-c", "lan.conf", "-f", TEMPLATES / "bmc.emu", "-s", state],
                cwd=self.workdir,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        finally:
            log.close()
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if self._proc.poll() is not None:
                self._proc = None
                output = self.log.read_text()
                if "Address already in use" in output.rsplit("IPMI Simulator version", 1)[-1]:
                    raise PortTaken(f"UDP port {self.port} on {self.host} is taken")
                pytest.fail(f"ipmi_sim exited at start:\n{output}")
            probe = subprocess.run(
                self.cmd("-N", "1", "-R", "1", "mc", "info"),
                env=self.env(),
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                check=False,
            )
            if probe.returncode == 0:
                break
            if time.monotonic() > deadline:
                self.stop()
                pytest.fail(
                    f"ipmi_sim does not answer on {self.host}:{self.port} after "
                    f"{START_TIMEOUT_S} s ({probe.stderr.strip()}); its output:\n"
                    + self.log.read_text()
                )
            time.sleep(0.05)
        self.wait_for_sensors()

    def stop(self) -> None:
        """Stop ipmi_sim: the BMC stops answering until ``start()``."""
        if self._proc is None:
            return
        self._proc.terminate()
        # A paused process keeps SIGTERM pending until it runs again.
        self._proc.send_signal(signal.SIGCONT)
        try:
            self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._proc = None

    def pause(self) -> None:
        """Freeze ipmi_sim (SIGSTOP): the BMC stops answering but keeps its state."""
        assert self._proc is not None, "the simulated BMC is not running"
        self._proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        """Let a paused ipmi_sim run again (SIGCONT); it answers with the state it had."""
        assert self._proc is not None, "the simulated BMC is not running"
        self._proc.send_signal(signal.SIGCONT)


def _number(reading: str) -> float | None:
    """The value of an ``sdr elist`` reading such as ``"4200 RPM"``; None for ``"No Reading"``."""
    try:
        return float(reading.split(" ", 1)[0])
    except ValueError:
        return None


def _check(cmd: list[str | Path]) -> None:
    args = [str(c) for c in cmd]
    result = subprocess.run(args, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        pytest.fail(f"`{' '.join(args)}` failed:\n{result.stdout}{result.stderr}")


def _fill(template: str, dest: Path, **values: object) -> None:
    text = string.Template((TEMPLATES / template).read_text()).substitute(values)
    dest.write_text(text)


@pytest.fixture(scope="session")
def bmc_plugin(tmp_path_factory: pytest.TempPathFactory) -> BmcPlugins:
    """``dcmi_power.so`` and ``fan_firmware.so``, compiled once per session (skips when the
    tools are missing)."""
    missing = missing_tools()
    if missing:
        pytest.skip(
            f"no simulated BMC: missing {', '.join(missing)} (Debian: apt install "
            "openipmi libopenipmi-dev ipmitool gcc)"
        )
    out = tmp_path_factory.mktemp("bmc-plugin")
    plugins = BmcPlugins(out / "dcmi_power.so", out / "fan_firmware.so")
    for lib in (plugins.dcmi_power, plugins.fan_firmware):
        source = TEMPLATES / lib.with_suffix(".c").name
        _check(
            ["gcc", "-shared", "-fPIC", "-O1", "-Wall", f"-I{OPENIPMI_INCLUDE}", "-o", lib, source]
        )
    return plugins


@pytest.fixture
def bmc(tmp_path: Path, bmc_plugin: BmcPlugins) -> Iterator[BmcSim]:
    """A running simulated BMC on 127.0.0.1 (see :mod:`bmc_sim`), stopped at teardown."""
    workdir = tmp_path / "bmc"
    workdir.mkdir()
    sim = BmcSim(workdir=workdir, plugins=bmc_plugin, port=0)
    sim.password_file.write_text(PASSWORD + "\n")
    sim.password_file.chmod(0o600)
    for name, sensor in _WRITABLE.items():
        sim._set_sensor(name, sensor.initial)
    sim.set_dcmi(int(_WRITABLE[POWER_SENSOR].initial))
    for attempt in range(3):
        sim.port = unused_udp_port()
        _fill(
            "lan.conf",
            workdir / "lan.conf",
            port=sim.port,
            user=USER,
            password=PASSWORD,
            dcmi_plugin=bmc_plugin.dcmi_power,
            dcmi_file=workdir / "dcmi.val",
            fan_plugin=bmc_plugin.fan_firmware,
            workdir=workdir,
        )
        try:
            sim.start()
            break
        except PortTaken:
            if attempt == 2:
                raise
    try:
        yield sim
    finally:
        sim.stop()
