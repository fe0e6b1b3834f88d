"""Facts about the host and the storage under a target, for the ``host`` section of a manifest.

:func:`host_facts` returns exactly the ``host`` object described in ``docs/run-store.md``.
Everything is read from ``/proc`` and ``/sys``; a fact that cannot be read is ``None``, and
nothing here raises because a file is missing. The helpers take the file or directory they
read as an argument, so tests can point them at fixtures.
"""

from __future__ import annotations

import os
import platform
import re
import socket
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PROC_CPUINFO = Path("/proc/cpuinfo")
PROC_MEMINFO = Path("/proc/meminfo")
PROC_MOUNTINFO = Path("/proc/self/mountinfo")
SYS = Path("/sys")

_OCTAL_ESCAPE = re.compile(r"\\([0-7]{3})")


@dataclass(frozen=True)
class Mount:
    """One line of ``/proc/self/mountinfo``."""

    major: int
    minor: int
    mount_point: str
    fs_type: str
    source: str


def host_facts(target: Path | None) -> dict[str, Any]:
    """Return the ``host`` section of ``manifest.json`` for a run against ``target`` (``None``
    for runs without one, such as ``iowatt power record``)."""
    return {
        "hostname": socket.gethostname(),
        "kernel": platform.release() or None,
        "cpu_model": cpu_model(),
        "ncpus": os.cpu_count(),
        "mem_bytes": mem_bytes(),
        "target": target_facts(target) if target is not None else None,
    }


def target_facts(target: Path) -> dict[str, Any]:
    """Return the filesystem and device facts of ``target`` (a path or a block device)."""
    path = Path(os.path.realpath(target))
    st = _stat(_nearest_existing(path))
    facts: dict[str, Any] = {"path": str(path), "fs_type": None, "mount_point": None}
    devnum: int | None = None
    if st is not None and stat.S_ISBLK(st.st_mode):
        devnum = st.st_rdev  # a raw device: no filesystem between iowatt and the disk
    else:
        mount = find_mount(path, read_mounts())
        if mount is not None:
            facts["fs_type"] = mount.fs_type
            facts["mount_point"] = mount.mount_point
        devnum = _backing_devnum(st, mount)
    facts.update(device_facts(devnum))
    return facts


def cpu_model(cpuinfo: Path = PROC_CPUINFO) -> str | None:
    """Return the first ``model name`` of ``/proc/cpuinfo``, or ``None``."""
    for line in (read_text(cpuinfo) or "").splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() == "model name":
            return value.strip() or None
    return None


def smt_active(sys_root: Path = SYS) -> bool:
    """Whether the CPUs run two or more hardware threads per core."""
    return read_text(sys_root / "devices/system/cpu/smt/active") == "1"


def mem_bytes(meminfo: Path = PROC_MEMINFO) -> int | None:
    """Return ``MemTotal`` of ``/proc/meminfo`` in bytes, or ``None``."""
    for line in (read_text(meminfo) or "").splitlines():
        fields = line.split()
        if len(fields) >= 2 and fields[0] == "MemTotal:" and fields[1].isdigit():
            unit = fields[2].lower() if len(fields) > 2 else ""
            return int(fields[1]) * (1024 if unit == "kb" else 1)
    return None


def unescape_mount_field(field: str) -> str:
    """Undo the octal escapes (``\\040`` for a space …) the kernel writes in mountinfo."""
    return _OCTAL_ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), field)


def parse_mountinfo(text: str) -> list[Mount]:
    """Parse the text of ``/proc/self/mountinfo``; malformed lines are skipped."""
    mounts = []
    for line in text.splitlines():
        fields = line.split()
        if "-" not in fields[6:]:
            continue
        sep = fields.index("-", 6)
        major, _, minor = fields[2].partition(":")
        if len(fields) < sep + 3 or not (major.isdigit() and minor.isdigit()):
            continue
        mounts.append(
            Mount(
                major=int(major),
                minor=int(minor),
                mount_point=unescape_mount_field(fields[4]),
                fs_type=fields[sep + 1],
                source=unescape_mount_field(fields[sep + 2]),
            )
        )
    return mounts


def read_mounts(mountinfo: Path = PROC_MOUNTINFO) -> list[Mount]:
    """Return the mounts of this process's mount namespace (empty when unreadable)."""
    return parse_mountinfo(read_text(mountinfo) or "")


def find_mount(path: Path, mounts: list[Mount]) -> Mount | None:
    """Return the mount holding ``path``: the longest matching mount point, topmost if stacked."""
    best: Mount | None = None
    for mount in mounts:
        if _is_under(path, mount.mount_point) and (
            best is None or len(mount.mount_point) >= len(best.mount_point)
        ):
            best = mount
    return best


def device_facts(devnum: int | None, sys_root: Path = SYS) -> dict[str, Any]:
    """Return the device fields of ``host.target`` for the block device ``devnum``."""
    node = block_dir(devnum, sys_root) if devnum is not None else None
    if node is None:
        return dict.fromkeys(
            ("device", "device_model", "rotational", "scheduler", "logical_block_size")
        )
    disk = whole_disk_dir(node)
    queue = disk / "queue"
    return {
        "device": node.name,
        "device_model": device_model(disk),
        "rotational": parse_rotational(read_text(queue / "rotational")),
        "scheduler": parse_scheduler(read_text(queue / "scheduler")),
        "logical_block_size": parse_int(read_text(queue / "logical_block_size")),
    }


def block_dir(devnum: int, sys_root: Path = SYS) -> Path | None:
    """Return the sysfs directory of block device ``devnum`` (``/sys/dev/block/MAJ:MIN``)."""
    link = sys_root / "dev" / "block" / f"{os.major(devnum)}:{os.minor(devnum)}"
    try:
        return link.resolve(strict=True)
    except OSError:
        return None


def whole_disk_dir(node: Path) -> Path:
    """Return the sysfs directory of the disk a partition belongs to (``node`` if a disk)."""
    return node.parent if (node / "partition").exists() else node


def device_model(disk: Path) -> str | None:
    """Return the disk's model, else its vendor (virtio disks have no model), else ``None``."""
    for name in ("model", "vendor"):
        value = read_text(disk / "device" / name)
        if value:
            return value
    return None


def parse_rotational(text: str | None) -> bool | None:
    """Turn ``queue/rotational`` (``0`` or ``1``) into a bool."""
    return {"0": False, "1": True}.get(text or "")


def parse_scheduler(text: str | None) -> str | None:
    """Return the active I/O scheduler: the bracketed entry of ``queue/scheduler``, or ``none``."""
    if text is None:
        return None
    match = re.search(r"\[([^\]]+)\]", text)
    return match.group(1) if match else "none"


def parse_int(text: str | None) -> int | None:
    """Return ``text`` as an int, or ``None`` when it is missing or not a number."""
    return int(text) if text and text.isdigit() else None


def read_text(path: Path) -> str | None:
    """Return the stripped contents of a small proc/sysfs file, or ``None`` if unreadable."""
    try:
        return path.read_text(errors="replace").strip()
    except OSError:
        return None


def _backing_devnum(st: os.stat_result | None, mount: Mount | None) -> int | None:
    """Return the block device under a file: its ``st_dev``, else the mount's source device.

    Filesystems such as btrfs report an anonymous ``st_dev``; their mount source names the
    device node. tmpfs, ramfs and overlay have neither, so the answer is ``None``.
    """
    if st is not None and os.major(st.st_dev) != 0:
        return st.st_dev
    if mount is not None and mount.source.startswith("/dev/"):
        source = _stat(Path(mount.source))
        if source is not None and stat.S_ISBLK(source.st_mode):
            return source.st_rdev
    return None


def _is_under(path: Path, mount_point: str) -> bool:
    """Whether ``path`` is ``mount_point`` or below it."""
    return mount_point == "/" or path == Path(mount_point) or Path(mount_point) in path.parents


def _nearest_existing(path: Path) -> Path:
    """Return ``path`` or its closest existing ancestor (a target may not exist yet)."""
    for candidate in (path, *path.parents):
        if candidate.exists():
            return candidate
    return path


def _stat(path: Path) -> os.stat_result | None:
    """``os.stat`` that returns ``None`` instead of raising."""
    try:
        return path.stat()
    except OSError:
        return None
