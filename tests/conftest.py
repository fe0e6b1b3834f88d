"""Shared fixtures: markers, loop devices and mounts that are always cleaned up."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from bmc_sim import bmc, bmc_plugin  # noqa: F401 - fixtures for the IPMI source tests

LOOP_SIZE = 64 * 1024 * 1024
SHM_LOOP_SIZE = 256 * 1024 * 1024


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Skip ``needs_root`` tests when not running as root."""
    if item.get_closest_marker("needs_root") and os.geteuid() != 0:
        pytest.skip("needs root")


def run(*cmd: str | Path) -> subprocess.CompletedProcess[str]:
    """Run a command without input, failing the test with its stderr if it fails."""
    args = [str(c) for c in cmd]
    result = subprocess.run(
        args, stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        pytest.fail(f"`{' '.join(args)}` failed: {result.stderr.strip()}")
    return result


@pytest.fixture
def sh() -> Callable[..., subprocess.CompletedProcess[str]]:
    """Return :func:`run`: ``sh("mkfs.ext4", "-q", dev)`` fails the test if the command fails."""
    return run


class Mounts:
    """Mounts made by a test, unmounted (lazily if busy) when it ends."""

    def __init__(self) -> None:
        self._points: list[Path] = []

    def mount(self, *args: str | Path, target: Path) -> Path:
        """``mount ARGS TARGET``, creating TARGET; skip the test if mounting is not allowed."""
        target.mkdir(parents=True, exist_ok=True)
        cmd = ["mount", *map(str, args), str(target)]
        result = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            pytest.skip(f"cannot mount here: {result.stderr.strip()}")
        self._points.append(target)
        return target

    def unmount_all(self) -> None:
        """Unmount everything this object mounted, newest first."""
        while self._points:
            target = self._points.pop()
            if subprocess.run(["umount", str(target)], check=False).returncode != 0:
                subprocess.run(["umount", "-l", str(target)], check=False)


@pytest.fixture
def mounts() -> Iterator[Mounts]:
    """Mount helper whose mounts are always undone at teardown."""
    m = Mounts()
    try:
        yield m
    finally:
        m.unmount_all()


@pytest.fixture
def loop_device(tmp_path: Path, mounts: Mounts) -> Iterator[Path]:
    """A 64 MiB loop device over a sparse file, detached at teardown even if the test fails.

    Partition scanning is on, so partitions added with ``partx -u`` appear as ``loopNpM``.
    Mounts made through the ``mounts`` fixture are undone before the device is detached.
    """
    backing = tmp_path / "loop.img"
    with open(backing, "wb") as f:
        f.truncate(LOOP_SIZE)
    result = subprocess.run(
        ["losetup", "--find", "--show", "--partscan", str(backing)],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        pytest.skip(f"no loop device available: {result.stderr.strip()}")
    device = Path(result.stdout.strip())
    try:
        yield device
    finally:
        mounts.unmount_all()
        run("losetup", "-d", device)


@pytest.fixture
def need_tool() -> Callable[[str], str]:
    """Return a function that gives a program's path, or skips the test when it is missing."""

    def need(name: str) -> str:
        path = shutil.which(name)
        if path is None:
            pytest.skip(f"`{name}` is not installed")
        return path

    return need


def write_dos_table(device: Path, start_sector: int = 2048, part_type: int = 0x83) -> None:
    """Write an MBR holding one partition from ``start_sector`` to the end of ``device``."""
    with open(device, "r+b") as f:
        sectors = f.seek(0, os.SEEK_END) // 512 - start_sector
        chs = b"\xfe\xff\xff"  # "use LBA"
        entry = struct.pack("<B3sB3sII", 0, chs, part_type, chs, start_sector, sectors)
        f.seek(446)
        f.write(entry + bytes(48) + b"\x55\xaa")
        f.flush()
        os.fsync(f.fileno())


@pytest.fixture
def loop_partition(loop_device: Path, need_tool: Callable[[str], str]) -> Path:
    """The first partition (``/dev/loopNp1``) of a DOS-partitioned ``loop_device``."""
    write_dos_table(loop_device)
    run(need_tool("partx"), "-u", loop_device)
    partition = Path(f"{loop_device}p1")
    for _ in range(50):
        if partition.exists():
            return partition
        time.sleep(0.1)
    pytest.skip(f"`{partition}` did not appear after `partx -u`")


@pytest.fixture
def shm_loops() -> Iterator[Callable[[], Path]]:
    """Makes 256 MiB loop devices over files in /dev/shm (writes cost CPU, not a disk), all
    detached and removed at teardown; skips when not root or no loop device is free."""
    if os.geteuid() != 0:
        pytest.skip("needs root: loop devices")
    made: list[tuple[Path, Path]] = []

    def new() -> Path:
        fd, name = tempfile.mkstemp(prefix="iowatt-test-", suffix=".img", dir="/dev/shm")
        os.ftruncate(fd, SHM_LOOP_SIZE)
        os.close(fd)
        done = subprocess.run(
            ["losetup", "--find", "--show", name], capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            os.unlink(name)
            pytest.skip(f"no loop device available: {done.stderr.strip()}")
        made.append((Path(done.stdout.strip()), Path(name)))
        return made[-1][0]

    try:
        yield new
    finally:
        for device, backing in made:
            subprocess.run(["losetup", "-d", str(device)], check=False)
            backing.unlink()
