"""Power sources as users name them: ``KIND[:key=value,...]`` on the command line.

``rapl``, ``hwmon``, ``ipmi``, ``meter``, ``cmd`` and ``emulated`` (an emulated disk's
``MOUNT/.iowatt/energy_uj``); :func:`parse_source` checks each option
(and the ones a kind requires) before anything opens, and :func:`recorder_config` is the JSON
the Rust sampler takes.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from iowatt.errors import ConfigError

DEFAULT_HZ = 10.0
# The help of every option that takes a source.
SOURCE_HELP = (
    "A power source, repeatable: rapl, hwmon, ipmi[:host=H,interface=lanplus,user=U,"
    "password-env=VAR], meter:path=LOG[,map=MAP.toml], cmd:command=CMD, emulated:path=MOUNT. "
    "Options: name=, hz=."
)

# Options each kind takes on the command line (dashes or underscores), beside name= and hz=.
_OPTIONS: dict[str, tuple[str, ...]] = {
    "rapl": ("root",),
    "hwmon": ("root",),
    "ipmi": (
        "interface",
        "host",
        "port",
        "user",
        "password_env",
        "password_file",
        "dcmi",
        "sdr",
        "timeout",
        "ipmitool",
        "cipher_suite",
    ),
    "meter": (
        "path",
        "map",
        "format",
        "follow",
        "time_column",
        "time_format",
        "start",
        "utc_offset",
    ),
    "cmd": ("command", "timeout"),
    "emulated": ("path",),
}
_EXAMPLES = {
    "rapl": "rapl",
    "hwmon": "hwmon",
    "ipmi": "ipmi:interface=lanplus,host=10.0.0.5,user=admin,password-env=BMC_PW",
    "meter": "meter:path=meter.csv,map=disks.toml",
    "cmd": "cmd:command=cat /run/watts",
    "emulated": "emulated:path=/mnt/emulated",
}
_BOOL = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}


@dataclass
class SourceSpec:
    """A source as the user named it; ``options`` go to the Rust sampler as they are."""

    kind: str
    name: str
    hz: float | None = None
    options: dict[str, Any] = field(default_factory=dict)
    map: Path | None = None  # meter channel map, applied here, not in the sampler

    def describe(self) -> dict[str, Any]:
        opts = {k: v for k, v in self.options.items() if k != "password_env"}
        return {
            "kind": self.kind,
            "name": self.name,
            "hz": self.hz,
            "options": opts,
            "map": str(self.map) if self.map else None,
        }


def parse_source(text: str) -> SourceSpec:
    """``meter:path=log.csv,map=disks.toml,hz=1`` → SourceSpec. ``command=`` takes the rest of
    the text, commas included."""
    kind, _, rest = text.partition(":")
    kind = kind.strip()
    if kind not in _OPTIONS:
        raise ConfigError(
            f"unknown power source `{kind}`",
            f"sources are: {', '.join(_OPTIONS)} (e.g. --source {_EXAMPLES['meter']})",
        )
    spec = SourceSpec(kind, kind)
    while rest:
        key, sep, value = rest.partition("=")
        key = key.strip().replace("-", "_")
        if not sep:
            raise ConfigError(
                f"option `{key}` of source `{kind}` has no value",
                f"options are key=value, e.g. --source {_EXAMPLES[kind]}",
            )
        if key == "command":
            value, rest = value, ""
        else:
            value, _, rest = value.partition(",")
        _set_option(spec, key, value.strip())
    _check_required(spec)
    return spec


def _set_option(spec: SourceSpec, key: str, value: str) -> None:
    if key == "name":
        spec.name = value
    elif key == "hz":
        spec.hz = _positive(value, f"hz of source `{spec.kind}`")
    elif key == "map" and spec.kind == "meter":
        spec.map = Path(value).expanduser()
    elif key in ("follow", "sdr"):
        if value.lower() not in _BOOL:
            raise ConfigError(f"{key} `{value}` must be true or false", f"e.g. {key}=false")
        spec.options[key] = _BOOL[value.lower()]
    elif key == "timeout":
        spec.options["timeout_s"] = _positive(value, f"timeout of source `{spec.kind}`")
    elif key in ("port", "cipher_suite"):
        spec.options[key] = int(_positive(value, key.replace("_", "-")))
    elif key == "command":
        spec.options["argv"] = shlex.split(value)
    elif key in _OPTIONS[spec.kind]:
        spec.options[key] = value
    else:
        raise ConfigError(
            f"unknown option `{key}` for source `{spec.kind}`",
            f"options of {spec.kind}: {', '.join(('name', 'hz', *_OPTIONS[spec.kind]))}",
        )


def _positive(value: str, what: str) -> float:
    try:
        x = float(value)
    except ValueError:
        x = 0.0
    if not x > 0:
        raise ConfigError(f"{what} `{value}` must be a positive number", "e.g. hz=10")
    return x


def _check_required(spec: SourceSpec) -> None:
    if spec.kind == "meter" and "path" not in spec.options:
        raise ConfigError("source `meter` needs path=LOG", f"e.g. --source {_EXAMPLES['meter']}")
    if spec.kind == "cmd" and not spec.options.get("argv"):
        raise ConfigError("source `cmd` needs command=...", f"e.g. --source {_EXAMPLES['cmd']}")
    if spec.kind == "emulated" and not spec.options.get("path"):
        raise ConfigError(
            "source `emulated` needs path=MOUNT, the emulated disk's mount point",
            f"e.g. --source {_EXAMPLES['emulated']}; mount one with "
            "`iowatt emulate mount BACKING MOUNT --disk-model NAME`",
        )


def recorder_config(
    specs: list[SourceSpec], hz: float, anchor: tuple[int, int] | None = None
) -> str:
    names = [s.name for s in specs]
    for name in names:
        if names.count(name) > 1:
            raise ConfigError(
                f"two power sources are named `{name}`",
                "give one of them another name, e.g. --source meter:name=wall,path=...",
            )
    sources = [{"name": s.name, "kind": s.kind, "hz": s.hz or hz, **s.options} for s in specs]
    return json.dumps({"sources": sources, "clock_anchor": anchor})


# Power samples per second: the samplers' clock is in ns, and no meter reads faster than 10 kHz.
MAX_POWER_HZ = 10_000.0


def power_options(
    power: Sequence[str], power_hz: float, idle: str | None
) -> tuple[list[SourceSpec], float, float]:
    """A measuring verb's ``--power``, ``--power-hz`` and ``--idle``: the sources, the rate and
    the idle baseline's seconds, checked together."""
    from iowatt.units import check_finite, parse_duration

    if idle and not power:
        raise ConfigError("--idle needs --power", "e.g. --power rapl --idle 30s")
    if not 0 < check_finite(power_hz, "--power-hz", "--power-hz 10") <= MAX_POWER_HZ:
        raise ConfigError(
            f"--power-hz `{power_hz}` must be above 0 and at most {MAX_POWER_HZ:g}",
            "e.g. --power-hz 10",
        )
    sources = [parse_source(s) for s in power]
    return sources, power_hz, parse_duration(idle, "--idle") if idle else 0.0
