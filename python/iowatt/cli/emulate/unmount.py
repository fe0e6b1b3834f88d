"""``iowatt emulate unmount``: take down an emulated disk whose process is gone."""

from __future__ import annotations

from pathlib import Path

import click

from iowatt.errors import ConfigError, TargetError


@click.command("unmount")
@click.argument("mount", type=click.Path(path_type=Path))
def unmount(mount: Path) -> None:
    """Unmount MOUNT, an emulated disk (only iowatt's own, as /proc/self/mountinfo lists it):
    one left stale by a killed `iowatt emulate mount`, or one still serving (its process then
    writes its run). Lazily when files under it are still open.

    \b
      iowatt emulate unmount /mnt/hdd
    """
    from iowatt.emulate import mounts

    if not mounts.is_emulated(mount):
        raise ConfigError(
            f"`{mount}` is not an emulated disk",
            "`iowatt emulate unmount` takes down only mounts made by `iowatt emulate mount`",
        )
    try:
        lazy = mounts.unmount(mount)
    except OSError as e:
        raise TargetError(
            f"cannot unmount `{mount}`: {e.strerror}", "as root: umount -l " + str(mount)
        ) from None
    click.echo(f"unmounted {mount}" + (" (lazily: files under it are still open)" if lazy else ""))
