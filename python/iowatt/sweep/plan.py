"""From what the user typed to a checked :class:`SweepConfig` (nothing is touched yet).

Every problem — a disk that is the boot disk, a mounted or data-holding device without
``--destroy-data``, an unknown vendor, a template without ``{value}``, a zero settle or hold,
a step that does not divide the range — is reported here, before the stimulus changes.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from iowatt.bench import limits as machine
from iowatt.bench.config import MAX_IODEPTH, WorkloadConfig
from iowatt.errors import ConfigError, TargetError
from iowatt.fleet.spec import ClusterSpec
from iowatt.fleet.spec import parse as parse_cluster
from iowatt.power.sources import SourceSpec, parse_source
from iowatt.sweep.drivers import CmdDriver, Driver, ManualDriver, check_fills, check_template
from iowatt.sweep.stimulus import Stimulus, check_range, make_stimulus, pass_values, step_values
from iowatt.sweep.watchdog import Limits
from iowatt.target import (
    check_block_target,
    check_dir_target,
    check_free_space,
    check_not_boot_disk,
    device_size,
    supports_odirect,
)
from iowatt.units import U32_MAX, check_finite, check_int, parse_duration, parse_size

DRIVERS = ("ipmi", "cmd", "manual", "emulated")
# The watchdog's limit: above any temperature a disk or CPU survives, and a typo (850 for 85)
# would disarm it.
MAX_TEMP_C = 150.0
MAX_SENSOR_HZ = 1000.0
ENGINES = ("io_uring", "psync")


@dataclass
class Disk:
    """A disk under test: a block device, or a directory on one (a file of ``size`` in it)."""

    name: str
    path: Path
    device: bool
    size: int
    profile: str | None = None
    # A directory disk's own work directory, made by the sweep for the generator's file.
    workdir: Path | None = None
    # On a fleet (--cluster): the host the disk is on, and its target facts read there.
    host: str | None = None
    facts: dict[str, Any] | None = None

    @property
    def target(self) -> Path:
        """Where the generator writes: the device, or the work directory in the directory."""
        return self.workdir or self.path


@dataclass
class Generator:
    """The pure I/O generator: random writes, O_DIRECT, enough in flight to saturate."""

    iosize: int = 128 * 1024
    iodepth: int = 16
    engine: str = "io_uring"
    nthreads: int = 1


@dataclass
class SweepConfig:
    stimulus: Stimulus
    passes: list[list[float]]
    order: str
    settle_s: float
    hold_s: float
    disks: list[Disk]
    driver: Driver
    results: Path
    generator: Generator = field(default_factory=Generator)
    sensors: list[SourceSpec] = field(default_factory=list)
    sensor_hz: float = 1.0
    limits: Limits | None = None
    labels: dict[str, str] = field(default_factory=dict)
    seed: int = 0
    report: bool = True
    # --cluster: where the hosts of the disks are, and the options their checks need there.
    fleet: Fleet | None = None

    def workload(self, disk: Disk, settle_s: float, hold_s: float) -> WorkloadConfig:
        """The generator of one disk for one step: random writes, O_DIRECT."""
        g = self.generator
        return WorkloadConfig(
            name=disk.name,
            personality="randomwrite",
            iosize=g.iosize,
            filesize=disk.size,
            nthreads=g.nthreads,
            directio=True,
            dsync=False,
            engine=g.engine,
            iodepth=g.iodepth,
            runtime_s=hold_s,
            ramp_s=settle_s,
            rate=None,
            seed=self.seed,
        )

    def describe(self) -> dict[str, Any]:
        """The manifest's ``config``."""
        return {
            "target": ", ".join(str(d.path) for d in self.disks),
            "stimulus": self.stimulus.as_dict(),
            "values": self.passes,
            "passes": len(self.passes),
            "order": self.order,
            "settle_s": self.settle_s,
            "hold_s": self.hold_s,
            "disks": [
                {
                    "name": d.name,
                    "path": str(d.path),
                    "device": d.device,
                    "size": d.size,
                    "profile": d.profile,
                    **({"host": d.host} if d.host else {}),
                }
                for d in self.disks
            ],
            # The driver's own sensors, so a report can tell "none read" from "none recorded".
            "driver": {
                **self.driver.describe(),
                "sensors": [s.name for s in self.driver.sensor_sources()],
            },
            "generator": self.generator.__dict__,
            "sensors": [s.describe() for s in self.sensors],
            "sensor_hz": self.sensor_hz,
            "watchdog": self.limits.__dict__ if self.limits else None,
            **({"cluster": self.fleet.cluster.describe()} if self.fleet else {}),
        }


@dataclass(frozen=True)
class Fleet:
    """A sweep across hosts: the cluster, and the request each host checks its disks by."""

    cluster: ClusterSpec
    request: Request


@dataclass
class Request:
    """The CLI's options, as typed (``None``: not given)."""

    stimulus: str = "fan"
    start: float | None = None
    stop: float | None = None
    step: float | None = None
    steps: str | None = None
    band: str | None = None
    amplitude: float | None = None
    settle: str = "20s"
    hold: str = "30s"
    passes: int = 1
    order: str = "as-given"
    disks: tuple[str, ...] = ()
    driver: str | None = None
    vendor: str | None = None
    bmc: str | None = None
    set_template: str | None = None
    reset: str | None = None
    safe: str | None = None
    profiles: Path | None = None
    iosize: str = "128k"
    iodepth: int = 16
    engine: str = "io_uring"
    nthreads: int = 1
    size: str = "1g"
    sensors: tuple[str, ...] = ()
    sensor_hz: float = 1.0
    max_temp: float = 85.0
    stale: str = "10s"
    no_watchdog: bool = False
    destroy_data: bool = False
    allow_boot_disk: bool = False
    cluster: str | None = None


def plan(req: Request, results: Path, labels: dict[str, str], seed: int) -> SweepConfig:
    stim = make_stimulus(req.stimulus, req.band, req.amplitude)
    values = step_values(req.start, req.stop, req.step, req.steps)
    check_range(stim, values)
    passes = pass_values(values, req.passes, req.order)
    _check_watch(req)
    if req.set_template is not None:
        _check_template_values(req.set_template, stim, values)
    settle_s = _positive_duration(req.settle, "--settle")
    hold_s = _positive_duration(req.hold, "--hold")
    generator = _generator(req)
    fleet = Fleet(parse_cluster(req.cluster), req) if req.cluster is not None else None
    if fleet is None:
        disks = [check_disk(text, req, generator) for text in req.disks]
    else:
        disks = [_host_disk(text) for text in req.disks]
    if not disks:
        raise ConfigError("no disk to sweep", "add --disk /dev/sdX (repeat for every disk)")
    names = [d.name for d in disks]
    if len(set(names)) != len(names):
        raise ConfigError(f"two disks are named `{names[0]}`", "give each disk once")
    driver_name = req.driver or ("ipmi" if stim.kind == "fan" else "cmd")
    if driver_name not in DRIVERS:
        raise ConfigError(f"unknown driver `{driver_name}`", f"drivers are: {', '.join(DRIVERS)}")
    _check_driver_options(driver_name, req, disks)
    if fleet is not None and driver_name == "emulated" and fleet.cluster.kind != "local":
        raise ConfigError(
            f"the emulated driver throttles this machine's devices, not those of `{req.cluster}`",
            "use --cluster local:N for a fleet of this machine's loop devices",
        )
    driver = _driver(driver_name, stim, req, disks)
    if fleet is None:  # a fleet's hosts are not this machine
        machine.check(_demand(generator, disks))
    watch = None
    if stim.kind == "fan" and driver_name != "emulated" and not req.no_watchdog:
        watch = Limits(req.max_temp, _positive_duration(req.stale, "--stale"))
    return SweepConfig(
        stimulus=stim,
        passes=passes,
        order=req.order,
        settle_s=settle_s,
        hold_s=hold_s,
        disks=disks,
        driver=driver,
        results=results,
        generator=generator,
        sensors=[parse_source(s) for s in req.sensors],
        sensor_hz=req.sensor_hz,
        limits=watch,
        labels=labels,
        seed=seed,
        fleet=fleet,
    )


def _host_disk(text: str) -> Disk:
    """``HOST:PATH[=PROFILE]`` of a sweep across hosts: the disk as named, checked on its host
    when the sweep starts (``iowatt.sweep.fleet.resolve``)."""
    host, sep, rest = text.partition(":")
    if not sep or not host or "/" in host or not rest:
        raise ConfigError(
            f"--disk `{text}`: with --cluster, each disk names its host",
            "e.g. --disk local-0:/dev/loop0 (HOST:PATH, the host as `iowatt bench --cluster` "
            "names it)",
        )
    path_text, _, profile = rest.partition("=")
    path = Path(path_text)
    return Disk(f"{host}/{_disk_name(path)}", path, False, 0, profile or None, host=host)


def _positive_duration(text: str, option: str) -> float:
    seconds = parse_duration(text, option)
    if not seconds > 0:
        raise ConfigError(f"{option} `{text}` must be longer than zero", f"e.g. {option} 20s")
    return seconds


def _generator(req: Request) -> Generator:
    engine = req.engine.replace("-", "_")
    if engine not in ENGINES:
        raise ConfigError(f"unknown engine `{req.engine}`", f"engines are: {', '.join(ENGINES)}")
    check_int(req.iodepth, "--iodepth", 1, MAX_IODEPTH, "--iodepth 16")
    check_int(req.nthreads, "--nthreads", 1, U32_MAX, "--nthreads 1")
    iodepth = req.iodepth if engine == "io_uring" else 1
    iosize = parse_size(req.iosize, "--iosize")
    if iosize <= 0 or iosize % 4096:
        raise ConfigError(
            f"--iosize `{req.iosize}` must be a multiple of 4k", "O_DIRECT writes whole blocks"
        )
    return Generator(iosize, iodepth, engine, req.nthreads)


def _check_watch(req: Request) -> None:
    """The watchdog's and the sensors' numbers: a NaN limit would never trip."""
    hz = check_finite(req.sensor_hz, "--sensor-hz", "--sensor-hz 1")
    if not 0 < hz <= MAX_SENSOR_HZ:
        raise ConfigError(
            f"--sensor-hz `{req.sensor_hz:g}` must be above 0 and at most {MAX_SENSOR_HZ:g}",
            "e.g. --sensor-hz 1",
        )
    temp = check_finite(req.max_temp, "--max-temp", "--max-temp 70")
    if not 0 < temp <= MAX_TEMP_C:
        raise ConfigError(
            f"--max-temp `{req.max_temp:g}` °C must be above 0 and at most {MAX_TEMP_C:g}",
            "e.g. --max-temp 70",
        )


def _check_template_values(template: str, stim: Stimulus, values: list[float]) -> None:
    """Every value the sweep sets, and the fans' safe 100 %, must fill the --set template:
    checked before any disk or driver is touched."""
    safe = [100.0] if stim.kind == "fan" else []
    check_fills(check_template(template, "--set"), [*values, *safe], template, "--set")


def _demand(gen: Generator, disks: list[Disk]) -> machine.Demand:
    """Every disk's generator runs at once: what they take together."""
    parts = tuple(
        machine.fileio_part(
            f"generator of `{d.name}`", gen.nthreads, gen.iosize, gen.engine, gen.iodepth
        )
        for d in disks
    )
    return machine.Demand("the sweep", parts, "use fewer --nthreads or a smaller --iodepth")


def check_disk(text: str, req: Request, gen: Generator) -> Disk:
    """A disk checked where it is (on a fleet, run on its host): what the sweep writes to."""
    path_text, _, profile = text.partition("=")
    path = Path(path_text).expanduser()
    try:
        mode = os.stat(path).st_mode
    except OSError as e:
        raise TargetError(
            f"disk `{path}` does not exist", "give a block device or a directory"
        ) from e
    name = _disk_name(path)
    if stat.S_ISBLK(mode):
        check_block_target(path, req.destroy_data)
        check_not_boot_disk(path)
        size = device_size(path)
        size -= size % gen.iosize
        if size < gen.iosize:
            raise TargetError(f"`{path}` is smaller than one --iosize", "use a bigger device")
        return Disk(name, path, True, size, profile or None)
    check_dir_target(path)
    if not req.allow_boot_disk:
        check_not_boot_disk(path)
    size = parse_size(req.size, "--size")
    if size < gen.iosize:
        raise ConfigError(f"--size `{req.size}` is smaller than --iosize", "e.g. --size 1g")
    check_free_space(path, size)
    if not supports_odirect(path):
        raise TargetError(
            f"O_DIRECT is not supported on `{path}`",
            "the generator writes around the page cache; use a disk's own file system",
        )
    return Disk(name, path, False, size, profile or None)


def _disk_name(path: Path) -> str:
    """``/dev/sdb`` → ``sdb``; a directory → its path with ``/`` as ``-`` (``mnt-ssd``)."""
    if str(path).startswith("/dev/"):
        return path.name
    return re.sub(r"[^A-Za-z0-9._-]+", "-", str(path.resolve()).strip("/")) or "root"


def _check_driver_options(driver: str, req: Request, disks: list[Disk]) -> None:
    given = {
        "--vendor": req.vendor,
        "--bmc": req.bmc,
        "--set": req.set_template,
        "--reset": req.reset,
        "--safe": req.safe,
        "--profiles": req.profiles,
    }
    allowed = {
        "ipmi": ("--vendor", "--bmc", "--set", "--reset"),
        "cmd": ("--set", "--reset", "--safe"),
        "manual": (),
        "emulated": ("--profiles",),
    }[driver]
    for option, value in given.items():
        if value is not None and option not in allowed:
            raise ConfigError(
                f"{option} does not apply to the {driver} driver",
                f"the {driver} driver takes: {', '.join(allowed) or 'no options'}",
            )
    with_profile = [d for d in disks if d.profile]
    if driver != "emulated" and with_profile:
        raise ConfigError(
            f"disk `{with_profile[0].path}={with_profile[0].profile}` names a profile",
            "profiles are for --driver emulated; give the disk's path alone",
        )
    if driver == "emulated":
        for d in disks:
            if not d.profile:
                raise ConfigError(
                    f"disk `{d.path}` has no profile for the emulated driver",
                    f"give one, e.g. --disk {d.path}=hit-sata",
                )


def _driver(name: str, stim: Stimulus, req: Request, disks: list[Disk]) -> Driver:
    if name == "ipmi":
        if stim.kind != "fan":
            raise ConfigError(
                f"the ipmi driver sets fans, not {stim.kind}", "use --driver cmd for a shaker"
            )
        from iowatt.sweep.ipmi_fan import IpmiFanDriver

        bmc = parse_source(f"ipmi:{req.bmc}") if req.bmc else SourceSpec("ipmi", "bmc")
        if bmc.name == "ipmi":
            bmc.name = "bmc"
        bmc.options.setdefault("interface", "lanplus" if "host" in bmc.options else "open")
        vendor = req.vendor or ("generic" if req.set_template else None)
        if vendor is None:
            raise ConfigError(
                "the ipmi driver needs --vendor (dell, supermicro) or your own --set template",
                "e.g. --vendor dell, or --set 'raw 0x30 0x30 0x02 0xff {value:#04x}'",
            )
        return IpmiFanDriver(bmc, vendor, req.set_template, req.reset)
    if name == "cmd":
        if req.set_template is None:
            raise ConfigError(
                "the cmd driver needs --set", "e.g. --set 'shaker-ctl --grms {value}'"
            )
        return CmdDriver(req.set_template, req.reset, req.safe, fan=stim.kind == "fan")
    if name == "manual":
        return ManualDriver(stim.describe)
    from iowatt.sweep.emulated import EmulatedDisk, EmulatedDriver
    from iowatt.sweep.profiles import get_profile, load_profiles

    profiles = load_profiles(req.profiles)
    emulated = [EmulatedDisk(d.name, d.path, get_profile(d.profile or "", profiles)) for d in disks]
    return EmulatedDriver(stim, emulated)
