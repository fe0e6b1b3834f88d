"""Where the tasks' input lives: the ``--data NAME=DIR`` locations, checked before anything
runs; a run's own work directory in one, with fresh input files the page cache has never seen;
and the caches dropped between sets.

Everything iowatt writes goes under ``DIR/iowatt-tasks-RUNID/``, a directory it creates, and
only that directory is removed afterwards.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from iowatt import pagecache
from iowatt.errors import ConfigError

BLOCK = 1 << 20


@dataclass(frozen=True)
class Location:
    """A place for input data, as named on the command line (``hdd``, ``ssd``, …)."""

    name: str
    path: Path

    @property
    def devnum(self) -> int | None:
        """The block device the directory is on (None on tmpfs and other memory file systems,
        whose device numbers have major 0)."""
        dev = os.stat(self.path).st_dev
        return dev if os.major(dev) != 0 else None


# What a run keeps of an emulated disk's counters (`iowatt emulate mount`, docs/emulate.md).
DISK_COUNTERS = ("read_ops", "write_ops", "read_bytes", "write_bytes", "energy_j")
# And of how the emulator was set up (its `.iowatt/config.json`): what `--validate` predicts
# the run from.
DISK_SETTINGS = ("disk_model", "scheduler", "slice_s", "idle_window_s", "page_cache", "array")


def _control(location: Location, name: str) -> dict[str, Any] | None:
    try:
        found = json.loads((location.path / ".iowatt" / name).read_text())
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None


def disk_counters(location: Location) -> dict[str, Any] | None:
    """The emulated disk's counters now, when the location is an ``iowatt emulate mount``
    (it has ``.iowatt/counters.json``), with its settings under ``settings`` (None from an
    emulator older than ``.iowatt/config.json``); None for any other directory."""
    counters = _control(location, "counters.json")
    if counters is None:
        return None
    out: dict[str, Any] = {
        k: counters[k] for k in DISK_COUNTERS if isinstance(counters.get(k), int | float)
    }
    settings = _control(location, "config.json")
    out["settings"] = None if settings is None else {k: settings.get(k) for k in DISK_SETTINGS}
    return out


def disk_totals(segments: list[dict[str, Any]]) -> dict[str, Any] | None:
    """What the emulated disk served for the run: each counter's growth over every segment
    measured on it, with ``requests`` (reads and writes), the mean bytes per request, and the
    emulator's ``settings`` (its model and scheduler) as the first segment found them."""
    pairs = [s["disk_counters"] for s in segments if s.get("disk_counters")]
    if not pairs:
        return None
    out: dict[str, Any] = {
        k: sum(p["after"].get(k, 0) - p["before"].get(k, 0) for p in pairs) for k in DISK_COUNTERS
    }
    out["requests"] = out["read_ops"] + out["write_ops"]
    out["mean_read_b"] = out["read_bytes"] / out["read_ops"] if out["read_ops"] else None
    out["settings"] = next(
        (p["before"]["settings"] for p in pairs if p["before"].get("settings")), None
    )
    return out


def parse_locations(items: tuple[str, ...]) -> list[Location]:
    if not items:
        raise ConfigError("no --data location", "e.g. --data hdd=/mnt/disk --data ssd=/mnt/ssd")
    out: dict[str, Location] = {}
    for item in items:
        name, sep, path = item.partition("=")
        name, path = name.strip(), path.strip()
        if not sep or not name or not path:
            raise ConfigError(f"--data `{item}` is not NAME=DIR", "e.g. --data hdd=/mnt/disk")
        if name in out:
            raise ConfigError(f"--data names `{name}` twice", "give each location its own name")
        p = Path(path)
        if not p.is_dir():
            raise ConfigError(f"--data {name}: `{path}` is not a directory", "create it first")
        if not os.access(p, os.W_OK | os.X_OK):
            raise ConfigError(
                f"--data {name}: `{path}` is not writable", "the tasks' input is written there"
            )
        out[name] = Location(name, p.resolve())
    return list(out.values())


def check_space(location: Location, needed: int) -> None:
    free = shutil.disk_usage(location.path).free
    if free < needed * 1.05:
        raise ConfigError(
            f"--data {location.name}: `{location.path}` has {free / 1e6:.0f} MB free, the set's "
            f"input needs {needed / 1e6:.0f} MB",
            "free space there, or use --rounds/--scale to make the set smaller",
        )


def make_workdir(location: Location, run_id: str) -> Path:
    work = location.path / f"iowatt-tasks-{run_id}"
    work.mkdir()  # exclusive: never adopt a directory that is not this run's
    for sub in ("in", "out", "err"):
        (work / sub).mkdir()
    return work


def remove_workdir(work: Path) -> None:
    if work.name.startswith("iowatt-tasks-"):
        shutil.rmtree(work, ignore_errors=True)


def write_input(path: Path, size: int, block: bytes, source: Path | None = None) -> None:
    """A new file of ``size`` bytes (a copy of ``source``, or ``block`` repeated), synced and
    dropped from the page cache, so the task reads it from the device."""
    with path.open("xb") as f:
        if source is not None:
            with source.open("rb") as s:
                shutil.copyfileobj(s, f, BLOCK)
        else:
            left = size
            while left > 0:
                f.write(block[: min(left, len(block))])
                left -= len(block)
        f.flush()
        os.fsync(f.fileno())
        os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)


def check_drop_caches() -> None:
    if not pagecache.can_drop():
        raise ConfigError(
            f"--drop-caches needs write access to {pagecache.DROP_CACHES}",
            "run as root, or leave it out",
        )
