"""``iowatt emulate set``: the stimulus of a mounted emulated disk, through its control file."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import click

from iowatt.errors import ConfigError, TargetError


@click.command("set")
@click.argument("mount", type=click.Path(path_type=Path))
@click.argument("value")
def set_(mount: Path, value: str) -> None:
    """Set the stimulus of the emulated disk at MOUNT to VALUE, in its curve's unit (PWM %,
    grms, Hz): requests that start from now on take S / r(VALUE). It holds until the next
    row of the mount's --schedule, if it has one.

    \b
      iowatt emulate set /mnt/hdd 80
    """
    from iowatt.emulate import mounts

    if not mounts.is_emulated(mount):
        raise ConfigError(
            f"`{mount}` is not an emulated disk",
            "mount one with `iowatt emulate mount BACKING MOUNT --curve REF`",
        )
    control = mount / ".iowatt"
    try:
        fd = os.open(control / "stimulus", os.O_WRONLY)
        try:
            os.write(fd, f"{value.strip()}\n".encode())
        finally:
            os.close(fd)
    except OSError as e:
        raise _refused(e, mount, value) from None
    speed = _read(control / "speed").strip()
    click.echo(f"{mount}: stimulus {value.strip()}, speed r = {float(speed):.4g}")


def _refused(e: OSError, mount: Path, value: str) -> ConfigError | TargetError:
    if e.errno == errno.ERANGE:
        low, high = _range(mount)
        return ConfigError(
            f"{value} is outside the curve's {low:g}..{high:g}", "give a value the curve covers"
        )
    if e.errno == errno.ENODATA:
        return ConfigError(
            f"the disk at `{mount}` has no curve", "mount it with --curve REF to set a stimulus"
        )
    if e.errno == errno.EPERM:
        return ConfigError(
            f"the disk at `{mount}` follows a BMC's fan duty: `{value}` was not set",
            "it is set by the BMC while it is followed",
        )
    if e.errno == errno.EINVAL:
        return ConfigError(f"`{value}` is not a number", "e.g. iowatt emulate set MOUNT 80")
    return TargetError(f"cannot set the stimulus at `{mount}`: {e.strerror}", None)


def _read(path: Path) -> str:
    # One read(2): each read of a control file renders it afresh, so a second read at an offset
    # could take the tail of a later, longer rendering.
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.read(fd, 1 << 16).decode()
    finally:
        os.close(fd)


def _range(mount: Path) -> tuple[float, float]:
    counters = json.loads(_read(mount / ".iowatt" / "counters.json"))
    low, high = counters.get("stimulus_range") or (float("nan"), float("nan"))
    return float(low), float(high)
