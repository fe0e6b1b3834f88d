"""An aging planned against the file system: how many files of which sizes fit, what is deleted."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from iowatt.age.fs import fill_percent, fresh_root, fs_facts
from iowatt.age.params import FILES_PER_DIR, PENDING, AgeConfig
from iowatt.age.sizes import plan_sizes
from iowatt.errors import ConfigError, TargetError
from iowatt.units import format_bytes


@dataclass
class Plan:
    """What an aging will do, checked against the file system before anything is written."""

    directory: Path
    seed: int
    fs: dict[str, Any]
    target_used: int | None  # the used bytes to reach (a percentage fill), else None
    write_bytes: int
    files: int
    largest: int
    delete_bytes: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "dry_run": True,
            "dir": str(self.directory),
            "seed": self.seed,
            "fs": {**self.fs, "fill_now": fill_percent(self.fs["used"], self.fs["size"])},
            "fill_target": fill_percent(self.target_used, self.fs["size"]),
            "bytes_to_write": self.write_bytes,
            "files": self.files,
            "largest_file": self.largest,
            "bytes_to_delete": self.delete_bytes,
        }


def overhead(sizes: Sequence[int], block: int) -> int:
    """Room the files take beyond their data: the rest of each one's last block, a block per
    directory, and the manifest twice over (it is replaced by a new copy)."""
    tails = sum(-s % block for s in sizes) if block else 0
    manifest = len(sizes) * 72 + PENDING * 24 + 4096
    return tails + (len(sizes) // FILES_PER_DIR + 1) * block + 2 * manifest


def plan(directory: Path, config: AgeConfig) -> Plan:
    """Check ``directory`` and the options against its file system; raise if the fill is already
    exceeded, cannot be reached, or the files to delete could not hold ``--delete``."""
    fresh_root(directory)
    fs = fs_facts(directory)
    target_used, fill = None, config.fill
    if fill.percent is not None:
        if fs["size"] == 0:
            raise TargetError(
                f"the file system of `{directory}` reports no size, so --fill `{fill.text}` "
                "means nothing there",
                hint="give a size of data to write instead, e.g. `--fill 1g`",
            )
        target_used = round(fs["size"] * fill.percent / 100)
        write = target_used - fs["used"]
        if write <= 0:
            raise TargetError(
                f"`{directory}` is already {fill_percent(fs['used'], fs['size']):.1f}% full, "
                f"at or above --fill `{fill.text}`",
                hint="give a higher --fill, or a size of data to write such as `--fill 1g`",
            )
    else:
        write = fill.of(0)
    lo, hi = config.sizes
    sizes = plan_sizes(write, config.seed, lo, hi, config.dist)
    if target_used is not None:
        # The target counts the files' overhead as used: only the manifests need more room.
        room = fs["available"] - overhead(sizes, 0)
        if write > room:
            most = fill_percent(fs["used"] + room, fs["size"]) or 0.0
            raise TargetError(
                f"--fill `{fill.text}` is out of reach: `{directory}` is "
                f"{fill_percent(fs['used'], fs['size']):.1f}% full with "
                f"{format_bytes(fs['available'])} available",
                hint=f"give a --fill of at most {math.floor(most * 10) / 10:.1f}%, "
                "or free some space",
            )
    elif write + overhead(sizes, fs["block"]) > fs["available"]:
        need = write + overhead(sizes, fs["block"])
        fits = fs["available"] * write // need
        raise TargetError(
            f"--fill `{fill.text}` needs {format_bytes(need)} with the file system's overhead, "
            f"but `{directory}` has {format_bytes(fs['available'])} available",
            hint=f"give a --fill of at most about {format_bytes(fits)}, or free some space",
        )
    delete = config.delete.of(write)
    window = config.delete_sizes or (0, hi)
    eligible = sum(s for s in sizes if window[0] <= s <= window[1])
    if delete > eligible:
        raise ConfigError(
            f"--delete `{config.delete.text}` asks for {format_bytes(delete)} but the files of "
            f"{format_bytes(window[0])}..{format_bytes(window[1])} would hold "
            f"{format_bytes(eligible)}",
            hint="widen --delete-sizes or --sizes, or lower --delete",
        )
    return Plan(directory, config.seed, fs, target_used, write, len(sizes), max(sizes), delete)
