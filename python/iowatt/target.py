"""Checks that a benchmark target can be used, and used safely.

iowatt never destroys data it was not told it may destroy: a block device holding a filesystem
or partition-table signature needs ``--destroy-data``, and a device in use (mounted, held by
device-mapper or md, active swap, or opened exclusively) is refused outright. Directory
targets must exist, be writable, have room for the files and, for direct I/O, accept
``O_DIRECT``.

Signature offsets follow util-linux libblkid (``libblkid/src/superblocks/*.c``,
``libblkid/src/partitions/*.c``); names are blkid's ``TYPE``/``PTTYPE`` values.
"""

from __future__ import annotations

import errno
import os
import secrets
import shutil
import stat
import struct
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from iowatt.errors import TargetError, UnsafeTargetError
from iowatt.hostinfo import block_dir, read_mounts, read_text, whole_disk_dir
from iowatt.units import format_bytes

PROBE_PREFIX = ".iowatt-probe-"
PROBE_BYTES = 70 * 1024  # covers btrfs (64 KiB + 64) and swap on 64 KiB pages
PROC_SWAPS = Path("/proc/swaps")

# (name, offset, magic): the fixed-position signatures.
_MAGICS: list[tuple[str, int, bytes]] = [
    ("crypto_LUKS", 0, b"LUKS\xba\xbe"),
    ("xfs", 0, b"XFSB"),
    ("ntfs", 3, b"NTFS    "),
    ("exfat", 3, b"EXFAT   "),
    ("LVM2_member", 512, b"LABELONE"),
    ("gpt", 512, b"EFI PART"),
    ("gpt", 4096, b"EFI PART"),  # 4Kn disks
    ("btrfs", 65600, b"_BHRfS_M"),
    ("iso9660", 32769, b"CD001"),
    *[
        ("swap", page - 10, magic)
        for page in (4096, 8192, 16384, 65536)
        for magic in (b"SWAPSPACE2", b"SWAP-SPACE")
    ],
]


def data_signature(device: Path) -> str | None:
    """Return the name of a filesystem or partition-table signature on ``device``, or ``None``.

    Reads the first 70 KiB of a block device or file; ``blkid -p``, when installed, is asked too.
    Raises :class:`OSError` when ``device`` cannot be read.
    """
    with open(device, "rb") as f:
        head = f.read(PROBE_BYTES)
    return signature_in(head) or blkid_signature(device)


def signature_in(head: bytes) -> str | None:
    """Return the signature found in the first bytes of a device, or ``None``."""
    head = head.ljust(PROBE_BYTES, b"\0")  # a short file reads as zeros past its end
    for name, offset, magic in _MAGICS:
        if head[offset : offset + len(magic)] == magic:
            return name
    for probe in _PROBES:
        found = probe(head)
        if found:
            return found
    return None


def _ext_signature(head: bytes) -> str | None:
    """Recognise an ext2/3/4 superblock (magic ``0xEF53`` at 1080) and tell the versions apart."""
    if head[1080:1082] != b"\x53\xef":
        return None
    compat, incompat, ro_compat = struct.unpack_from("<3I", head, 1024 + 0x5C)
    ext4_incompat = 0x40 | 0x80 | 0x200  # extents, 64bit, flex_bg
    # huge_file, gdt_csum, dir_nlink, extra_isize, metadata_csum
    ext4_ro_compat = 0x8 | 0x10 | 0x20 | 0x40 | 0x400
    if incompat & ext4_incompat or ro_compat & ext4_ro_compat:
        return "ext4"
    return "ext3" if compat & 0x4 else "ext2"  # has_journal


def _fat_signature(head: bytes) -> str | None:
    """Recognise a FAT boot sector: ``FAT`` at 54 or ``FAT32`` at 82, ending in ``0x55AA``."""
    if head[510:512] != b"\x55\xaa":
        return None
    return "vfat" if head[54:57] == b"FAT" or head[82:87] == b"FAT32" else None


def _dos_signature(head: bytes) -> str | None:
    """Recognise an MBR partition table: ``0x55AA`` at 510 and a used, valid entry."""
    if head[510:512] != b"\x55\xaa":
        return None
    entries = [head[446 + 16 * i : 462 + 16 * i] for i in range(4)]
    if any(e[0] not in (0x00, 0x80) for e in entries):
        return None  # boot code, not a partition table
    return "dos" if any(e[4] != 0 for e in entries) else None


_PROBES: list[Callable[[bytes], str | None]] = [
    _ext_signature,
    _fat_signature,
    _dos_signature,
]


def blkid_signature(device: Path) -> str | None:
    """Ask ``blkid -p`` for a ``TYPE`` or ``PTTYPE`` on ``device``; ``None`` if none or no blkid."""
    blkid = shutil.which("blkid")
    if blkid is None:
        return None
    try:
        out = subprocess.run(
            [blkid, "-p", "-o", "export", str(device)],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    fields = dict(line.partition("=")[::2] for line in out.stdout.splitlines())
    return fields.get("TYPE") or fields.get("PTTYPE") or None


def check_block_target(device: Path, destroy_data: bool) -> None:
    """Refuse a block device that is in use, or that holds data unless ``destroy_data``."""
    if not device.exists():
        raise TargetError(f"`{device}` does not exist", hint="pick another --target")
    user = device_user(device)
    if user is not None:
        raise TargetError(
            f"`{device}` is in use ({user}); iowatt will not write to it, even with --destroy-data",
            hint="unmount it and its partitions first, or choose another device",
        )
    try:
        sig = data_signature(device)
    except OSError as e:
        raise TargetError(
            f"cannot read `{device}`: {e.strerror}",
            hint="run iowatt as root or check the device's permissions",
        ) from e
    if sig is not None and not destroy_data:
        raise UnsafeTargetError(
            f"`{device}` holds a {sig} signature; iowatt would overwrite it",
            hint="pass --destroy-data if its contents may be destroyed, or choose an empty device",
        )


def device_size(device: Path) -> int:
    """The size of block device ``device`` in bytes."""
    fd = os.open(device, os.O_RDONLY)
    try:
        return os.lseek(fd, 0, os.SEEK_END)
    finally:
        os.close(fd)


def device_user(device: Path) -> str | None:
    """Describe what keeps ``device`` or one of its partitions busy, or return ``None``.

    Looks for a mount (by device number, and by mount source for filesystems such as btrfs
    that report an anonymous one), a holder in sysfs (device-mapper, md, bcache) and swap.
    """
    try:
        st = device.stat()
    except OSError:
        return None
    if not stat.S_ISBLK(st.st_mode):
        return None
    devnums = device_and_partitions(st.st_rdev)
    for mount in read_mounts():
        if os.makedev(mount.major, mount.minor) in devnums or _devnum_of(mount.source) in devnums:
            return f"`{mount.source}` is mounted at `{mount.mount_point}`"
    holders = _holders(st.st_rdev)
    if holders:
        return f"held by `{holders[0]}`"
    for swap in _swap_devices():
        if _devnum_of(swap) in devnums:
            return f"`{swap}` is active swap"
    return "opened exclusively by another program" if _is_claimed(device) else None


def _is_claimed(device: Path) -> bool:
    """Whether the kernel refuses an exclusive open of ``device`` (``EBUSY``): something owns it."""
    try:
        os.close(os.open(device, os.O_RDONLY | os.O_EXCL))
    except OSError as e:
        return e.errno == errno.EBUSY
    return False


def device_and_partitions(devnum: int) -> set[int]:
    """Return ``devnum`` and the device numbers of its partitions, from sysfs."""
    found = {devnum}
    node = block_dir(devnum)
    if node is None:
        return found
    for child in node.iterdir():
        dev = read_text(child / "dev") if (child / "partition").exists() else None
        if dev and dev.count(":") == 1:
            major, minor = dev.split(":")
            found.add(os.makedev(int(major), int(minor)))
    return found


def _holders(devnum: int) -> list[str]:
    """Return the names in ``holders/`` of the device and of each of its partitions."""
    node = block_dir(devnum)
    if node is None:
        return []
    dirs = [node, *(c for c in node.iterdir() if (c / "partition").exists())]
    return sorted(
        h.name for d in dirs if (d / "holders").is_dir() for h in (d / "holders").iterdir()
    )


def _swap_devices(swaps: Path = PROC_SWAPS) -> list[str]:
    """Return the paths listed in ``/proc/swaps`` (octal escapes left as they are)."""
    lines = (read_text(swaps) or "").splitlines()[1:]
    return [line.split()[0] for line in lines if line.strip()]


def _devnum_of(node: str) -> int | None:
    """Return the device number of block-device node ``node``, or ``None``."""
    if not node.startswith("/"):
        return None
    try:
        st = os.stat(node)
    except OSError:
        return None
    return st.st_rdev if stat.S_ISBLK(st.st_mode) else None


BOOT_MOUNTS = ("/", "/boot", "/boot/efi", "/efi")


def boot_disks() -> set[str]:
    """The sysfs names of the whole disks holding the root and boot file systems (``vda``)."""
    disks = set()
    for mount in read_mounts():
        if mount.mount_point in BOOT_MOUNTS:
            devnum = os.makedev(mount.major, mount.minor)
            if mount.major == 0:
                devnum = _devnum_of(mount.source) or devnum  # btrfs: an anonymous st_dev
            node = block_dir(devnum) if os.major(devnum) != 0 else None
            if node is not None:
                disks.add(whole_disk_dir(node).name)
    return disks


def disk_of(path: Path) -> str | None:
    """The whole disk under ``path`` (a block device, or a file system's backing device)."""
    try:
        st = path.stat()
    except OSError:
        return None
    devnum = st.st_rdev if stat.S_ISBLK(st.st_mode) else st.st_dev
    node = block_dir(devnum) if os.major(devnum) != 0 else None
    return whole_disk_dir(node).name if node is not None else None


def check_not_boot_disk(path: Path) -> None:
    """Refuse ``path`` when it is, or lives on, the disk the system boots from: it carries the
    operating system's own I/O, and a write load there can take the machine down."""
    disk = disk_of(path)
    if disk is not None and disk in boot_disks():
        raise TargetError(
            f"`{path}` is on `{disk}`, the disk holding the root or boot file system",
            hint="measure a disk the system does not boot from (the boot disk is never a disk "
            "under test), or pass --allow-boot-disk for a directory you accept to load",
        )


def check_dir_target(path: Path) -> None:
    """Refuse a directory target that does not exist, is not a directory or is not writable."""
    if not path.exists():
        raise TargetError(f"`{path}` does not exist", hint="create it or pick another --target")
    if not path.is_dir():
        raise TargetError(
            f"`{path}` is not a directory",
            hint="pick a directory (or a block device) as --target",
        )
    try:
        fd, probe = tempfile.mkstemp(prefix=PROBE_PREFIX, dir=path)
    except OSError as e:
        raise TargetError(
            f"`{path}` is not writable: {e.strerror}",
            hint="pick a writable directory as --target, or fix its permissions or mount options",
        ) from e
    os.close(fd)
    os.unlink(probe)


def fs_usage(path: Path) -> dict[str, int]:
    """Size, used, free and available bytes (and block size) of the file system holding ``path``;
    used is size minus free, the way statvfs counts it (df's Use% leaves out reserved blocks)."""
    st = os.statvfs(path)
    size, free = st.f_blocks * st.f_frsize, st.f_bfree * st.f_frsize
    avail = st.f_bavail * st.f_frsize
    return {
        "size": size,
        "used": size - free,
        "free": free,
        "available": avail,
        "block": st.f_frsize,
    }


def available_bytes(path: Path) -> int | None:
    """Bytes the file system holding ``path`` has available; None for one that reports no size
    (ramfs and similar grow until memory runs out)."""
    try:
        usage = fs_usage(path)
    except OSError as e:
        raise TargetError(
            f"cannot check the free space of `{path}`: {e.strerror}",
            hint="pick another --target",
        ) from e
    return usage["available"] if usage["size"] else None


def check_free_space(path: Path, needed_bytes: int) -> None:
    """Refuse a target whose filesystem has less than ``needed_bytes`` available."""
    available = available_bytes(path)
    if available is not None and available < needed_bytes:
        raise TargetError(
            f"`{path}` has {format_bytes(available)} available but the run needs "
            f"{format_bytes(needed_bytes)}",
            hint="use a smaller --filesize, or free some space",
        )


def supports_odirect(path: Path) -> bool:
    """Whether files in directory ``path`` can be opened with ``O_DIRECT`` (tmpfs may, ramfs not).

    Creates, then removes, a probe file named ``.iowatt-probe-…``. Raises :class:`TargetError`
    when the probe cannot be created for another reason than ``O_DIRECT``.
    """
    probe = path / f"{PROBE_PREFIX}{secrets.token_hex(8)}"
    flags = os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_DIRECT
    try:
        os.close(os.open(probe, flags, 0o600))
    except OSError as e:
        if e.errno != errno.EEXIST:
            probe.unlink(missing_ok=True)  # some filesystems create the file, then refuse
        if e.errno == errno.EINVAL:
            return False
        raise TargetError(
            f"cannot create a probe file in `{path}`: {e.strerror}",
            hint="pick a writable directory as --target",
        ) from e
    probe.unlink()
    return True
