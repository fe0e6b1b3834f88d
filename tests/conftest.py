"""Shared fixtures: markers, loop devices and mounts that are always cleaned up (the helpers
they use are in support/)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from support.bmc import bmc, bmc_plugin  # noqa: F401 - fixtures for the IPMI source tests
from support.system import Mounts, run, write_dos_table

# Property and fuzz tests: a bounded number of examples by default, so the suite stays quick;
# HYPOTHESIS_PROFILE=fuzz runs many more for a longer local search (docs/testing in README).
settings.register_profile("default", max_examples=60, deadline=None)
settings.register_profile(
    "fuzz", max_examples=5000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

LOOP_SIZE = 64 * 1024 * 1024
SHM_LOOP_SIZE = 256 * 1024 * 1024


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Skip ``needs_root`` tests when not running as root."""
    if item.get_closest_marker("needs_root") and os.geteuid() != 0:
        pytest.skip("needs root")


@pytest.fixture
def sh() -> Callable[..., subprocess.CompletedProcess[str]]:
    """Return :func:`run`: ``sh("mkfs.ext4", "-q", dev)`` fails the test if the command fails."""
    return run


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
