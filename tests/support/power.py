"""Sysfs trees and meter logs with the real layout and quirks, for hardware this VM lacks.

- powercap: ``/sys/class/powercap/intel-rapl:N`` are symlinks into
  ``devices/virtual/powercap/intel-rapl/``; each zone has ``name``, ``energy_uj`` (µJ),
  ``max_energy_range_uj`` and ``enabled``; subzones nest (``intel-rapl:0:0``).
- hwmon: ``/sys/class/hwmon/hwmonN`` are symlinks to the device's ``hwmon/hwmonN``; values in
  µW, µJ, mV, mA, m°C and RPM, labels in ``*_label``.
- Counters are rewritten in place (the sampler keeps its file open, as on sysfs), at a known
  power, wrapping through ``max_energy_range_uj``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path


def write_in_place(path: Path, value: int | str) -> None:
    with open(path, "r+") as f:
        f.write(f"{value}\n")
        f.truncate()


def make_rapl(root: Path, max_range_uj: int = 262_143_328_850) -> dict[str, Path]:
    """A client CPU's powercap tree: package-0 (core, uncore, dram) and psys. Returns the
    zone directories by channel name; ``root/class/powercap`` is what the sampler reads."""
    devices = root / "devices/virtual/powercap/intel-rapl"
    cls = root / "class/powercap"
    cls.mkdir(parents=True)
    zones = {
        "package-0": devices / "intel-rapl:0",
        "package-0/core": devices / "intel-rapl:0/intel-rapl:0:0",
        "package-0/uncore": devices / "intel-rapl:0/intel-rapl:0:1",
        "package-0/dram": devices / "intel-rapl:0/intel-rapl:0:2",
        "psys": devices / "intel-rapl:1",
    }
    for channel, d in zones.items():
        d.mkdir(parents=True)
        (d / "name").write_text(channel.rsplit("/", 1)[-1] + "\n")
        (d / "energy_uj").write_text("0\n")
        (d / "max_energy_range_uj").write_text(f"{max_range_uj}\n")
        (d / "enabled").write_text("1\n")
        (d / "constraint_0_name").write_text("long_term\n")
        (cls / d.name).symlink_to(d)
    (devices / "enabled").write_text("1\n")
    return zones


@contextmanager
def every(period_s: float, tick: Callable[[], None]) -> Iterator[None]:
    """Calls ``tick`` every ``period_s`` on a thread until the block ends: a device counting,
    a logger writing, a meter streaming."""
    stop = threading.Event()

    def run() -> None:
        while not stop.wait(period_s):
            tick()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def counting(
    path: Path, watts: float, max_range_uj: int | None = None
) -> AbstractContextManager[None]:
    """Advances an energy counter (µJ) at ``watts``, wrapping at ``max_range_uj``, 200 times a
    second until the block ends."""
    start = time.monotonic()

    def tick() -> None:
        uj = int((time.monotonic() - start) * watts * 1e6)
        write_in_place(path, uj % max_range_uj if max_range_uj else uj)

    return every(0.005, tick)


# Two disks on a shunt rig, and a server channel: the map of the power study's set-up.
TWO_DISKS = """
shunt_ohms = 0.1

[disks.sdb]
v12_shunt = "s12_b"
v12_drive = "d12_b"
v5_shunt = "s5_b"
v5_drive = 5.0

[disks.sdc]
v12_shunt = "s12_c"
v12_drive = 12.0
v5_shunt = "s5_c"
v5_drive = "d5_c"
shunt_ohms = 0.2

[server]
watts = "server"
"""


def make_hwmon(root: Path) -> Path:
    """An INA226 shunt monitor and a coretemp device; returns ``root/class/hwmon``."""
    cls = root / "class/hwmon"
    cls.mkdir(parents=True)
    ina = root / "devices/platform/i2c-1/1-0040/hwmon/hwmon3"
    ina.mkdir(parents=True)
    for name, value in {
        "name": "ina226",
        "in0_input": "2",  # shunt, mV
        "in1_input": "12040",  # bus, mV
        "curr1_input": "850",  # mA
        "power1_input": "10234000",  # µW
        "power1_label": "disk0",
        "energy1_input": "0",  # µJ
        "update_interval": "35",
    }.items():
        (ina / name).write_text(f"{value}\n")
    cpu = root / "devices/platform/coretemp.0/hwmon/hwmon1"
    cpu.mkdir(parents=True)
    for name, value in {
        "name": "coretemp",
        "temp1_input": "45000",
        "temp1_label": "Package id 0",
        "temp2_input": "43000",
        "temp2_label": "Core 0",
    }.items():
        (cpu / name).write_text(f"{value}\n")
    (cls / "hwmon3").symlink_to(ina)
    (cls / "hwmon1").symlink_to(cpu)
    return cls


def make_fans(
    root: Path, rpm: tuple[int, ...] = (1830, 2410), pwm: tuple[int, ...] = (153, 89)
) -> Path:
    """A Super I/O chip's fans beside :func:`make_hwmon`'s devices: nct6775's tachometers
    (``fanN_input``, RPM, without labels) and the duty it drives them with (``pwmN``, 0..255,
    beside ``pwmN_enable``); returns ``root/class/hwmon``."""
    cls = root / "class/hwmon"
    cls.mkdir(parents=True, exist_ok=True)
    chip = root / "devices/platform/nct6775.656/hwmon/hwmon2"
    chip.mkdir(parents=True)
    (chip / "name").write_text("nct6775\n")
    for i, value in enumerate(rpm, start=1):
        (chip / f"fan{i}_input").write_text(f"{value}\n")
    for i, value in enumerate(pwm, start=1):
        (chip / f"pwm{i}").write_text(f"{value}\n")
        (chip / f"pwm{i}_enable").write_text("1\n")
    (cls / "hwmon2").symlink_to(chip)
    return cls
