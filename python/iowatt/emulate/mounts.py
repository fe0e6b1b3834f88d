"""Mount points as the kernel lists them (/proc/self/mountinfo): which are iowatt's emulated
disks, which are stale, and taking one down."""

from __future__ import annotations

import ctypes
import errno
import os
import shutil
import subprocess
from pathlib import Path

# What the emulator mounts as (crates/iowatt-emulate FS_NAME): the mount's source.
SOURCE = "iowatt-emulate"
MNT_DETACH = 2


def _unescape(field: str) -> str:
    # mountinfo escapes space, tab, newline and backslash as octal.
    for code, char in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        field = field.replace(code, char)
    return field


def mounts() -> dict[Path, tuple[str, str]]:
    """Every mount point: (file system type, source)."""
    out: dict[Path, tuple[str, str]] = {}
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            fields, rest = left.split(), right.split()
            if len(fields) >= 5 and len(rest) >= 2:
                out[Path(_unescape(fields[4]))] = (rest[0], _unescape(rest[1]))
    return out


def is_emulated(path: Path) -> bool:
    """Whether ``path`` is the mount point of an iowatt emulated disk."""
    fstype, source = mounts().get(Path(os.path.abspath(path)), ("", ""))
    return fstype.startswith("fuse") and source == SOURCE


def is_stale(path: Path) -> bool:
    """A FUSE mount whose process is gone: "Transport endpoint is not connected"."""
    try:
        os.stat(path)
    except OSError as e:
        return e.errno == errno.ENOTCONN
    return False


def unmount(path: Path) -> bool:
    """Takes the mount at ``path`` down; lazily (detached now, gone once its files close) when
    it is busy. Returns whether it had to be lazy."""
    target = os.fsencode(os.path.abspath(path))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.umount2(target, 0) == 0:
        return False
    busy = ctypes.get_errno() == errno.EBUSY
    if libc.umount2(target, MNT_DETACH) == 0:
        return busy
    # Not root: the setuid helper unmounts a FUSE mount its user made.
    helper = shutil.which("fusermount3")
    if helper is not None:
        done = subprocess.run(
            [helper, "-u", "-q", "-z", "--", str(path)], capture_output=True, check=False
        )
        if done.returncode == 0:
            return busy
    raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()), str(path))
