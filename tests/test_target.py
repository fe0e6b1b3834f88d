"""Tests for iowatt.target: signatures on synthetic images and loop devices, target checks."""

from __future__ import annotations

import os
import struct
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from iowatt.errors import TargetError, UnsafeTargetError
from iowatt.target import (
    PROBE_BYTES,
    PROBE_PREFIX,
    blkid_signature,
    check_block_target,
    check_dir_target,
    check_free_space,
    data_signature,
    signature_in,
    supports_odirect,
)
from iowatt.units import format_bytes

if TYPE_CHECKING:
    from support.system import Mounts

Sh = Callable[..., Any]
MiB = 1024 * 1024


def image(*patches: tuple[int, bytes]) -> bytes:
    """A zeroed device head with ``bytes`` written at each ``offset``."""
    buf = bytearray(PROBE_BYTES)
    for offset, data in patches:
        buf[offset : offset + len(data)] = data
    return bytes(buf)


def mbr_entry(boot: int, part_type: int, start: int = 2048, sectors: int = 1000) -> bytes:
    return struct.pack("<B3sB3sII", boot, b"\0\0\0", part_type, b"\0\0\0", start, sectors)


BOOT_SIG = (510, b"\x55\xaa")
EXT_MAGIC = (1080, b"\x53\xef")


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        (image(), None),
        (image(EXT_MAGIC), "ext2"),
        (image(EXT_MAGIC, (1024 + 0x5C, struct.pack("<I", 0x4))), "ext3"),
        (image(EXT_MAGIC, (1024 + 0x60, struct.pack("<I", 0x40))), "ext4"),
        (image((0, b"XFSB")), "xfs"),
        (image((65600, b"_BHRfS_M")), "btrfs"),
        (image((4086, b"SWAPSPACE2")), "swap"),
        (image((65526, b"SWAP-SPACE")), "swap"),
        (image((0, b"LUKS\xba\xbe")), "crypto_LUKS"),
        (image((512, b"EFI PART"), (446, mbr_entry(0, 0xEE)), BOOT_SIG), "gpt"),
        (image((512, b"LABELONE")), "LVM2_member"),
        (image((32769, b"CD001")), "iso9660"),
        (image((3, b"NTFS    "), BOOT_SIG), "ntfs"),
        (image((54, b"FAT16   "), BOOT_SIG), "vfat"),
        (image((82, b"FAT32   "), BOOT_SIG), "vfat"),
        (image((54, b"FAT16   ")), None),  # no boot signature
        (image((446, mbr_entry(0x80, 0x83)), BOOT_SIG), "dos"),
        (image((462, mbr_entry(0x00, 0x07)), BOOT_SIG), "dos"),
        (image(BOOT_SIG), None),  # an MBR with no partitions
        (
            image((446, b"\xfa\x33\xc0\x8e" * 16), BOOT_SIG),
            None,
        ),  # boot code, not a table
        (b"short", None),
    ],
)
def test_signature_in(head: bytes, expected: str | None) -> None:
    assert signature_in(head) == expected


def test_data_signature_reads_a_file(tmp_path: Path) -> None:
    blank = tmp_path / "blank.img"
    blank.write_bytes(bytes(PROBE_BYTES))
    formatted = tmp_path / "xfs.img"
    formatted.write_bytes(image((0, b"XFSB")))
    assert data_signature(blank) is None
    assert data_signature(formatted) == "xfs"


def test_blkid_signature_without_blkid_is_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert blkid_signature(Path("/dev/null")) is None


# --- block devices (loop) ------------------------------------------------------------------


@pytest.mark.needs_root
def test_blank_loop_device_has_no_signature(loop_device: Path) -> None:
    assert data_signature(loop_device) is None
    check_block_target(loop_device, destroy_data=False)


@pytest.mark.needs_root
def test_ext4_loop_device_needs_destroy_data(loop_device: Path, sh: Sh) -> None:
    sh("mkfs.ext4", "-q", loop_device)
    assert data_signature(loop_device) == "ext4"
    with pytest.raises(UnsafeTargetError) as exc:
        check_block_target(loop_device, destroy_data=False)
    assert f"`{loop_device}` holds a ext4 signature" in exc.value.message
    assert "--destroy-data" in (exc.value.hint or "")
    check_block_target(loop_device, destroy_data=True)


@pytest.mark.needs_root
def test_swap_loop_device(loop_device: Path, sh: Sh) -> None:
    sh("mkswap", loop_device)
    assert data_signature(loop_device) == "swap"


@pytest.mark.needs_root
def test_dos_table_written_by_sfdisk(loop_device: Path, sh: Sh, need_tool: Callable) -> None:
    sfdisk = need_tool("sfdisk")
    result = sh("sh", "-c", f"printf 'label: dos\\n2048,,83\\n' | {sfdisk} -q {loop_device}")
    assert result.returncode == 0
    assert data_signature(loop_device) == "dos"
    with pytest.raises(UnsafeTargetError, match="dos signature"):
        check_block_target(loop_device, destroy_data=False)


@pytest.mark.needs_root
def test_dos_table_written_by_hand(loop_device: Path, loop_partition: Path) -> None:
    assert loop_partition.exists()
    assert data_signature(loop_device) == "dos"


@pytest.mark.needs_root
def test_signature_only_blkid_knows(loop_device: Path, sh: Sh, need_tool: Callable) -> None:
    need_tool("blkid")
    sh(need_tool("mkfs.minix"), loop_device)
    with open(loop_device, "rb") as f:
        assert signature_in(f.read(PROBE_BYTES)) is None
    assert data_signature(loop_device) == "minix"


@pytest.mark.needs_root
def test_mounted_device_is_refused_even_with_destroy_data(
    loop_device: Path, mounts: Mounts, sh: Sh, tmp_path: Path
) -> None:
    sh("mkfs.ext4", "-q", loop_device)
    point = mounts.mount(loop_device, target=tmp_path / "mnt")
    with pytest.raises(TargetError) as exc:
        check_block_target(loop_device, destroy_data=True)
    assert not isinstance(exc.value, UnsafeTargetError)
    assert f"`{loop_device}` is in use" in exc.value.message
    assert str(point) in exc.value.message
    assert "unmount" in (exc.value.hint or "")


@pytest.mark.needs_root
def test_device_with_a_mounted_partition_is_refused(
    loop_device: Path, loop_partition: Path, mounts: Mounts, sh: Sh, tmp_path: Path
) -> None:
    sh("mkfs.ext4", "-q", loop_partition)
    mounts.mount(loop_partition, target=tmp_path / "mnt")
    with pytest.raises(TargetError, match="is in use"):
        check_block_target(loop_device, destroy_data=True)


def test_missing_block_target(tmp_path: Path) -> None:
    with pytest.raises(TargetError, match="does not exist"):
        check_block_target(tmp_path / "sdz", destroy_data=True)


# --- directories -----------------------------------------------------------------------------


def test_dir_target_ok_leaves_no_probe(tmp_path: Path) -> None:
    check_dir_target(tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_dir_target_missing(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    with pytest.raises(TargetError) as exc:
        check_dir_target(missing)
    assert exc.value.message == f"`{missing}` does not exist"
    assert exc.value.hint == "create it or pick another --target"


def test_dir_target_is_a_file(tmp_path: Path) -> None:
    file = tmp_path / "file"
    file.write_text("")
    with pytest.raises(TargetError, match=f"`{file}` is not a directory"):
        check_dir_target(file)


@pytest.mark.needs_root
def test_dir_target_read_only(tmp_path: Path, mounts: Mounts) -> None:
    point = mounts.mount("-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", target=tmp_path / "ro")
    with pytest.raises(TargetError) as exc:
        check_dir_target(point)
    assert exc.value.message.startswith(f"`{point}` is not writable")
    assert exc.value.hint


@pytest.mark.needs_root
def test_free_space_on_a_small_tmpfs(tmp_path: Path, mounts: Mounts) -> None:
    point = mounts.mount("-t", "tmpfs", "-o", "size=8m", "tmpfs", target=tmp_path / "small")
    check_free_space(point, 1 * MiB)
    with pytest.raises(TargetError) as exc:
        check_free_space(point, 64 * MiB)
    st = os.statvfs(point)
    assert f"`{point}`" in exc.value.message
    assert "64 MiB" in exc.value.message
    assert format_bytes(st.f_bavail * st.f_frsize) in exc.value.message
    assert "--filesize" in (exc.value.hint or "")


def test_free_space_of_a_missing_path(tmp_path: Path) -> None:
    with pytest.raises(TargetError, match="nope"):
        check_free_space(tmp_path / "nope", 1)


def test_odirect_on_tmp_path(tmp_path: Path) -> None:
    assert supports_odirect(tmp_path) is True
    assert list(tmp_path.iterdir()) == []


@pytest.mark.needs_root
def test_odirect_refused_on_ramfs(tmp_path: Path, mounts: Mounts) -> None:
    point = mounts.mount("-t", "ramfs", "ramfs", target=tmp_path / "ram")
    assert supports_odirect(point) is False
    assert not [p for p in point.iterdir() if p.name.startswith(PROBE_PREFIX)]


def test_odirect_in_a_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(TargetError, match="nope"):
        supports_odirect(tmp_path / "nope")
