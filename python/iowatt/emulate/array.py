"""``iowatt emulate mount --array``: the mount served by an array of emulated disks under a
RAID personality — the simulator's own engine, built from the same raid.toml (with
``--params`` overrides under the same dotted keys) as ``iowatt sim raid`` builds it."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from iowatt.errors import ConfigError
from iowatt.sim.model import load_overridden
from iowatt.sim.raid import (
    PARAMS,
    PERSONALITIES,
    array_settings,
    check_params,
    personality_spec,
)
from iowatt.units import check_int

BLOCK = 4096


@dataclass
class ArraySetup:
    personality: str
    disks: int = 4
    params: Path | None = None


def plan(
    setup: ArraySetup, backing: Path, model_name: str, model: dict[str, Any]
) -> dict[str, Any]:
    """The engine's array for ``setup`` over BACKING's files (``Emulation``'s ``array_json``),
    refused with one line where ``iowatt sim raid`` would refuse it."""
    if setup.personality not in PERSONALITIES:
        raise ConfigError(
            f"--array `{setup.personality}` is not a personality",
            f"personalities are {', '.join(PERSONALITIES)}",
        )
    check_int(setup.disks, "--disks", 1, 64, "--disks 4")
    params = load_overridden(PARAMS, setup.params, "--params")
    check_params(params)
    if setup.personality == "paraid":
        top = max(int(g) for g in params["paraid"]["gears"])
        if top != setup.disks:
            raise ConfigError(
                f"--disks {setup.disks} is not PARAID's top gear ({top} disks)",
                f"give --disks {top}, or set paraid.gears in --params",
            )
    used, dirs = walk(backing)
    fs = params["fs"]
    return {
        "array": array_settings(model_name, model, setup.disks, params, 0, used),
        "spec": personality_spec(params, setup.personality),
        "used": used,
        "layout": {
            "group_bytes": round(fs["group_mb"] * 2**20),
            "inodes_per_group": int(fs["inodes_per_group"]),
            "inode_bytes": int(fs["inode_bytes"]),
            "dirs": dirs,
        },
    }


def walk(backing: Path) -> tuple[int, list[int]]:
    """The bytes BACKING's files take on the array, each rounded up to a block and a hard
    link counted once (where the mount lays them out from the array's start); and the
    directories holding files, by inode number, in the order of their paths' names — the
    order the simulator numbers a tree's directory blocks in (iowatt.sim.fs_layout)."""
    total, seen = 0, set()
    dirs: list[tuple[str, int]] = []
    for root, _, files in os.walk(backing):
        holds = False
        for name in files:
            try:
                st = os.lstat(os.path.join(root, name))
            except OSError:
                continue  # gone while walked
            if not stat.S_ISREG(st.st_mode):
                continue
            holds = True
            if (st.st_dev, st.st_ino) not in seen:
                seen.add((st.st_dev, st.st_ino))
                total += -(-st.st_size // BLOCK) * BLOCK
        if holds:
            rel = os.path.relpath(root, backing)
            dirs.append(("/" if rel == "." else "/" + rel, os.lstat(root).st_ino))
    return total, [ino for _, ino in sorted(dirs)]
