"""The machine's side of the tests: commands that must succeed, mounts that are always undone,
partition tables written by hand."""

from __future__ import annotations

import os
import struct
import subprocess
from pathlib import Path

import pytest


def run(*cmd: str | Path) -> subprocess.CompletedProcess[str]:
    """Run a command without input, failing the test with its stderr if it fails."""
    args = [str(c) for c in cmd]
    result = subprocess.run(
        args, stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        pytest.fail(f"`{' '.join(args)}` failed: {result.stderr.strip()}")
    return result


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
