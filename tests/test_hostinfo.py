"""Tests for iowatt.hostinfo: parsers on fixtures, then host_facts on this machine."""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from iowatt.hostinfo import (
    Mount,
    cpu_model,
    device_facts,
    find_mount,
    host_facts,
    mem_bytes,
    parse_mountinfo,
    parse_rotational,
    parse_scheduler,
    unescape_mount_field,
)

HOST_KEYS = {"hostname", "kernel", "cpu_model", "ncpus", "mem_bytes", "target"}
TARGET_KEYS = {
    "path",
    "fs_type",
    "mount_point",
    "device",
    "device_model",
    "rotational",
    "scheduler",
    "logical_block_size",
}
if TYPE_CHECKING:
    from support.system import Mounts

DEVICE_KEYS = TARGET_KEYS - {"path", "fs_type", "mount_point"}

MOUNTINFO = """\
22 27 0:21 / /proc rw,relatime - proc proc rw
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard
25 24 0:23 / /dev/shm rw,relatime - tmpfs tmpfs rw,size=24684092k
30 25 0:27 / /dev/shm rw,relatime - tmpfs tmpfs rw,size=1k
50 27 8:17 / /mnt/my\\040disk rw,relatime shared:5 master:2 - xfs /dev/sdb1 rw
garbage line
"""


def test_parse_mountinfo_reads_fields_and_optional_tags() -> None:
    mounts = parse_mountinfo(MOUNTINFO)
    assert len(mounts) == 5
    assert mounts[1] == Mount(254, 0, "/", "ext4", "/dev/vda")
    assert mounts[4] == Mount(8, 17, "/mnt/my disk", "xfs", "/dev/sdb1")


def test_unescape_mount_field() -> None:
    assert unescape_mount_field(r"/a\040b\011c\134d") == "/a b\tc\\d"


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/", "/"),
        ("/home/x", "/"),
        ("/mnt/my disk/data", "/mnt/my disk"),
        ("/mnt/my diskette", "/"),  # a prefix of the name is not a parent
        ("/proc", "/proc"),
    ],
)
def test_find_mount_picks_longest_mount_point(path: str, expected: str) -> None:
    mount = find_mount(Path(path), parse_mountinfo(MOUNTINFO))
    assert mount is not None
    assert mount.mount_point == expected


def test_find_mount_prefers_the_topmost_of_stacked_mounts() -> None:
    mount = find_mount(Path("/dev/shm/x"), parse_mountinfo(MOUNTINFO))
    assert mount == Mount(0, 27, "/dev/shm", "tmpfs", "tmpfs")


def test_find_mount_without_mounts_is_none() -> None:
    assert find_mount(Path("/x"), []) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("none [mq-deadline] kyber bfq", "mq-deadline"),
        ("[none] mq-deadline", "none"),
        ("none", "none"),
        (None, None),
    ],
)
def test_parse_scheduler(text: str | None, expected: str | None) -> None:
    assert parse_scheduler(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"), [("0", False), ("1", True), ("", None), (None, None)]
)
def test_parse_rotational(text: str | None, expected: bool | None) -> None:
    assert parse_rotational(text) is expected


def test_cpu_model_and_mem_bytes_from_files(tmp_path: Path) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nmodel name\t: Test CPU @ 3.0GHz\n\nmodel name\t: other\n")
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemFree:   10 kB\nMemTotal:       2048 kB\n")
    assert cpu_model(cpuinfo) == "Test CPU @ 3.0GHz"
    assert mem_bytes(meminfo) == 2048 * 1024


def test_cpu_model_and_mem_bytes_missing_are_none(tmp_path: Path) -> None:
    (tmp_path / "cpuinfo").write_text("processor\t: 0\n")  # e.g. arm64 has no model name
    assert cpu_model(tmp_path / "cpuinfo") is None
    assert mem_bytes(tmp_path / "absent") is None


def _fake_disk(sys_root: Path, name: str, files: dict[str, str]) -> Path:
    """Create ``/sys/devices/<name>`` with ``files`` and link it as block device 8:0."""
    disk = sys_root / "devices" / name
    for rel, text in files.items():
        (disk / rel).parent.mkdir(parents=True, exist_ok=True)
        (disk / rel).write_text(text + "\n")
    (sys_root / "dev" / "block").mkdir(parents=True)
    (sys_root / "dev" / "block" / "8:0").symlink_to(disk)
    return disk


def test_device_facts_of_a_partition_come_from_its_disk(tmp_path: Path) -> None:
    disk = _fake_disk(
        tmp_path,
        "sda",
        {
            "queue/rotational": "1",
            "queue/scheduler": "none [bfq]",
            "queue/logical_block_size": "4096",
            "device/model": "ST4000NM0033   ",
            "sda1/partition": "1",
        },
    )
    (tmp_path / "dev" / "block" / "8:1").symlink_to(disk / "sda1")
    assert device_facts(os.makedev(8, 1), sys_root=tmp_path) == {
        "device": "sda1",
        "device_model": "ST4000NM0033",
        "rotational": True,
        "scheduler": "bfq",
        "logical_block_size": 4096,
    }


def test_device_facts_fall_back_to_vendor_and_none(tmp_path: Path) -> None:
    _fake_disk(tmp_path, "vda", {"device/vendor": "0x1af4"})
    facts = device_facts(os.makedev(8, 0), sys_root=tmp_path)
    assert facts == {
        "device": "vda",
        "device_model": "0x1af4",
        "rotational": None,
        "scheduler": None,
        "logical_block_size": None,
    }


def test_device_facts_without_a_block_device_are_none(tmp_path: Path) -> None:
    assert device_facts(None) == dict.fromkeys(DEVICE_KEYS)
    assert device_facts(os.makedev(0, 42), sys_root=tmp_path) == dict.fromkeys(DEVICE_KEYS)


def _proc_mounts_type(mount_point: str) -> str | None:
    """The filesystem type /proc/mounts gives for ``mount_point`` (the topmost mount)."""
    found = None
    for line in Path("/proc/mounts").read_text().splitlines():
        fields = line.split()
        if fields[1].replace("\\040", " ") == mount_point:
            found = fields[2]
    return found


def _sysfs_name(devnum: int) -> str | None:
    link = Path(f"/sys/dev/block/{os.major(devnum)}:{os.minor(devnum)}")
    return link.resolve().name if link.exists() else None


def test_host_facts_shape_and_host_fields() -> None:
    facts = host_facts(Path("/"))
    assert set(facts) == HOST_KEYS
    assert set(facts["target"]) == TARGET_KEYS
    assert facts["hostname"] == socket.gethostname()
    assert facts["kernel"] == os.uname().release
    assert facts["ncpus"] == os.cpu_count()
    assert facts["mem_bytes"] > 0
    assert facts["cpu_model"] is None or facts["cpu_model"].strip() == facts["cpu_model"]


def test_host_facts_of_root_filesystem() -> None:
    target = host_facts(Path("/"))["target"]
    assert target["path"] == "/"
    assert target["mount_point"] == "/"
    assert target["fs_type"] == _proc_mounts_type("/")
    name = _sysfs_name(os.stat("/").st_dev)
    if name is None:
        pytest.skip("/ is not on a block device here")
    assert target["device"] == name
    assert isinstance(target["rotational"], bool)
    disk = Path("/sys/class/block", name).resolve()
    disk = disk.parent if (disk / "partition").exists() else disk
    scheduler_text = (disk / "queue" / "scheduler").read_text()
    assert target["scheduler"] in scheduler_text.replace("[", " ").replace("]", " ").split()
    assert target["logical_block_size"] == int((disk / "queue/logical_block_size").read_text())


def test_host_facts_of_dev_shm_has_no_device() -> None:
    if _proc_mounts_type("/dev/shm") != "tmpfs":
        pytest.skip("/dev/shm is not a tmpfs here")
    target = host_facts(Path("/dev/shm"))["target"]
    assert target["fs_type"] == "tmpfs"
    assert target["mount_point"] == "/dev/shm"
    assert {k: target[k] for k in DEVICE_KEYS} == dict.fromkeys(DEVICE_KEYS)


def test_host_facts_of_a_path_not_yet_created(tmp_path: Path) -> None:
    target = host_facts(tmp_path / "later" / "file")["target"]
    assert target["path"] == str(tmp_path / "later" / "file")
    assert target["device"] == host_facts(tmp_path)["target"]["device"]


@pytest.mark.needs_root
def test_host_facts_of_a_mount_point_with_a_space(tmp_path: Path, mounts: Mounts) -> None:
    point = mounts.mount("-t", "tmpfs", "-o", "size=1m", "tmpfs", target=tmp_path / "my disk")
    target = host_facts(point / "sub")["target"]
    assert target["mount_point"] == str(point)
    assert target["fs_type"] == "tmpfs"


@pytest.mark.needs_root
def test_host_facts_of_a_partition_use_the_whole_disk(
    loop_device: Path,
    loop_partition: Path,
    mounts: Mounts,
    sh: Callable[..., Any],
    tmp_path: Path,
) -> None:
    sh("mkfs.ext4", "-q", loop_partition)
    point = mounts.mount(loop_partition, target=tmp_path / "mnt")
    target = host_facts(point)["target"]
    disk = Path("/sys/block", loop_device.name)
    assert target["fs_type"] == "ext4"
    assert target["mount_point"] == str(point)
    assert target["device"] == loop_partition.name
    assert target["scheduler"] == parse_scheduler((disk / "queue/scheduler").read_text())
    assert target["rotational"] is parse_rotational((disk / "queue/rotational").read_text().strip())
    assert target["logical_block_size"] == int((disk / "queue/logical_block_size").read_text())


@pytest.mark.needs_root
def test_host_facts_of_a_block_device(loop_device: Path) -> None:
    target = host_facts(loop_device)["target"]
    assert target["path"] == str(loop_device)
    assert target["device"] == loop_device.name
    assert target["fs_type"] is None
    assert target["mount_point"] is None
    assert target["device_model"] is None  # loop devices have no device/ directory
