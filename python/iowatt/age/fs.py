"""The file system being aged: its facts and iowatt's own directory in it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from iowatt.age.params import AGE_DIR, MANIFEST
from iowatt.errors import TargetError
from iowatt.hostinfo import find_mount, read_mounts
from iowatt.target import fs_usage


def fs_facts(path: Path) -> dict[str, Any]:
    """:func:`fs_usage` with the file system's type, mount point and source (from mountinfo)."""
    mount = find_mount(path.resolve(), read_mounts())
    return {
        "type": mount.fs_type if mount else None,
        "mount_point": mount.mount_point if mount else None,
        "source": mount.source if mount else None,
        **fs_usage(path),
    }


def fill_percent(used: int | None, size: int) -> float | None:
    return round(100 * used / size, 3) if size and used is not None else None


def _check_dir(directory: Path) -> None:
    if not directory.exists():
        raise TargetError(
            f"`{directory}` does not exist",
            hint="give an existing directory on the file system to age",
        )
    if not directory.is_dir():
        raise TargetError(
            f"`{directory}` is not a directory",
            hint="give a directory on the file system to age",
        )


def _foreign(root: Path) -> TargetError:
    return TargetError(
        f"`{root}` exists but holds no {MANIFEST}; iowatt will neither use nor delete it",
        hint="`iowatt age` did not make it (or its manifest is gone): move or remove it yourself",
    )


def fresh_root(directory: Path) -> Path:
    """``DIR/iowatt-age``, which must not exist yet."""
    _check_dir(directory)
    root = directory / AGE_DIR
    if (root / MANIFEST).is_file():
        raise TargetError(
            f"`{directory}` is already aged (`{root / MANIFEST}` exists)",
            hint=f"`iowatt age {directory} --status` shows it; `--cleanup` removes it first",
        )
    if os.path.lexists(root):
        raise _foreign(root)
    return root


def aged_root(directory: Path) -> Path | None:
    """``DIR/iowatt-age`` with its manifest, or ``None`` when there is no such directory."""
    _check_dir(directory)
    root = directory / AGE_DIR
    if not os.path.lexists(root):
        return None
    if root.is_symlink():
        raise TargetError(
            f"`{root}` is a symbolic link, not the directory `iowatt age` made",
            hint="move it away; iowatt will not follow it",
        )
    if not (root / MANIFEST).is_file():
        raise _foreign(root)
    return root
