"""Channel maps: which columns of an external meter's log mean what, and the power they give.

The rig of the power study puts a small shunt resistor in series with each disk's 12 V and 5 V
lines; a multichannel multimeter logs the voltage across each shunt and across the drive. Per
rail, ``I = V_shunt / R`` and ``P = V_drive × I``; a disk draws ``P_12V + P_5V``; the disks
together are the aggregate, and with the server's own channel, the total. A wall meter that
logs watts is the same thing with one column. A map is a TOML file::

    shunt_ohms = 0.1              # default for every rail

    [disks.sdb]
    v12_shunt = "ch1"             # column: volts across the 12 V rail's shunt
    v12_drive = "ch2"             # column, or a constant in volts (12.0)
    v5_shunt = "ch3"
    v5_drive = 5.0
    # shunt_ohms = 0.1            # this disk's own resistors

    [server]
    watts = "server_w"            # a column in watts

    [watts]                       # other columns already in watts
    wall = "W"
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from iowatt.errors import ConfigError, MeterFormatError
from iowatt.power.energy import FloatArray

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

RAILS = ("v12", "v5")
_DISK_KEYS = {"v12_shunt", "v12_drive", "v5_shunt", "v5_drive", "shunt_ohms"}
_TOP_KEYS = {"shunt_ohms", "disks", "server", "watts"}


@dataclass
class Rail:
    shunt: str
    drive: str | float
    ohms: float


@dataclass
class Disk:
    name: str
    rails: dict[str, Rail]


@dataclass
class ChannelMap:
    disks: list[Disk] = field(default_factory=list)
    server: str | None = None
    watts: dict[str, str] = field(default_factory=dict)
    source: str = "map"

    def columns(self) -> set[str]:
        cols = set(self.watts.values())
        if self.server:
            cols.add(self.server)
        for d in self.disks:
            for r in d.rails.values():
                cols.add(r.shunt)
                if isinstance(r.drive, str):
                    cols.add(r.drive)
        return cols

    def check_columns(self, header: list[str], log: str) -> None:
        """A MeterFormatError naming the first mapped column that the log does not have."""
        for col in sorted(self.columns()):
            if col not in header:
                raise MeterFormatError(
                    f"channel map `{self.source}` names column `{col}`, "
                    f"which meter log `{log}` does not have",
                    f"its columns are: {', '.join(header)}",
                )


def load(path: Path) -> ChannelMap:
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"channel map `{path}` does not exist", "check the path") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"channel map `{path}`: {e}", "see docs/power.md") from None
    return parse(data, str(path))


def parse(data: Mapping[str, Any], source: str = "map") -> ChannelMap:
    _no_unknown(data, _TOP_KEYS, source, "")
    default_ohms = data.get("shunt_ohms")
    disks = []
    for name, spec in (data.get("disks") or {}).items():
        _no_unknown(spec, _DISK_KEYS, source, f"disks.{name}.")
        ohms = _ohms(spec.get("shunt_ohms", default_ohms), source, name)
        rails = {}
        for rail in RAILS:
            shunt, drive = spec.get(f"{rail}_shunt"), spec.get(f"{rail}_drive")
            if shunt is None and drive is None:
                continue
            if not isinstance(shunt, str) or not isinstance(drive, str | int | float):
                raise ConfigError(
                    f"channel map `{source}`: disk `{name}` needs both {rail}_shunt (a column) "
                    f"and {rail}_drive (a column or volts)",
                    'e.g. v12_shunt = "ch1" and v12_drive = 12.0',
                )
            rails[rail] = Rail(shunt, drive if isinstance(drive, str) else float(drive), ohms)
        if not rails:
            raise ConfigError(
                f"channel map `{source}`: disk `{name}` has no rail",
                "give v12_shunt/v12_drive and/or v5_shunt/v5_drive",
            )
        disks.append(Disk(name, rails))
    server = (data.get("server") or {}).get("watts")
    watts = dict(data.get("watts") or {})
    if not disks and not server and not watts:
        raise ConfigError(f"channel map `{source}` maps nothing", "add [disks.NAME] or [watts]")
    return ChannelMap(disks, server, watts, source)


def _ohms(value: Any, source: str, disk: str) -> float:
    if value is None:
        raise ConfigError(
            f"channel map `{source}`: no shunt resistance for disk `{disk}`",
            "add shunt_ohms = 0.1 (the study's resistors) at the top or in the disk's table",
        )
    if not isinstance(value, int | float) or value <= 0:
        raise ConfigError(
            f"channel map `{source}`: shunt_ohms `{value}` for disk `{disk}` must be positive",
            "the resistance of the shunt in ohms, e.g. 0.1",
        )
    return float(value)


def _no_unknown(data: Mapping[str, Any], known: set[str], source: str, prefix: str) -> None:
    for key in data:
        if key not in known:
            raise ConfigError(
                f"channel map `{source}`: unknown key `{prefix}{key}`",
                f"known keys here: {', '.join(sorted(known))}",
            )


@dataclass
class Derived:
    """A power channel computed from the meter's columns."""

    channel: str
    scope: str
    watts: FloatArray


def apply(cmap: ChannelMap, columns: Mapping[str, FloatArray]) -> list[Derived]:
    """Power channels from a meter's columns, all sampled at the same times (NaN = missing).

    A rail, disk or sum with a missing input is missing at that time — never taken as zero.
    """
    out: list[Derived] = []
    disk_watts = []
    for disk in cmap.disks:
        total: FloatArray | None = None
        for rail_name, rail in disk.rails.items():
            v_shunt = columns[rail.shunt]
            v_drive = columns[rail.drive] if isinstance(rail.drive, str) else rail.drive
            p = v_drive * (v_shunt / rail.ohms)
            out.append(Derived(f"disk:{disk.name}:{rail_name[1:]}v", "disk-rail", p))
            total = p if total is None else total + p
        assert total is not None  # parse() refuses a disk without rails
        out.append(Derived(f"disk:{disk.name}", "disk", total))
        disk_watts.append(total)
    if disk_watts:
        disks = np.sum(disk_watts, axis=0)
        if len(disk_watts) > 1:
            out.append(Derived("disks", "disks", disks))
        if cmap.server:
            out.append(Derived("server", "server", columns[cmap.server]))
            out.append(Derived("total", "total", disks + columns[cmap.server]))
    elif cmap.server:
        out.append(Derived("server", "server", columns[cmap.server]))
    for name, col in cmap.watts.items():
        out.append(Derived(name, "wall", columns[col]))
    return out
