"""The emulated driver: a stimulus becomes a real slowdown of a real block device.

No fan or shaker is touched. Each disk under test (a loop device in tests and demos) gets a disk
profile (:mod:`iowatt.sweep.profiles`); at every step its write throughput is capped, through a
blk-throttle cgroup holding the iowatt process (:mod:`iowatt.sweep.throttle`), at the profile's
throughput for that stimulus value. The I/O generator then measures a curve shaped like the
study's disk, which exercises the whole sweep — settle, hold, curves, report — end to end.
"""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from iowatt.errors import ConfigError, IowattError, TargetError
from iowatt.power.sources import SourceSpec
from iowatt.sweep.drivers import DriverError, GuardPlan
from iowatt.sweep.profiles import DiskProfile
from iowatt.sweep.stimulus import Stimulus
from iowatt.sweep.throttle import Throttle, whole_disk_devnum

# The lowest cap: four 64 KiB writes a second, so a "stalled" disk still completes I/O (the
# sweep measures a trickle, not a hang) and a cap is never 0, which the kernel reads as none.
MIN_BPS = 4 * 64 * 1024
_LOOP_HINT = (
    "make one: truncate -s 1G disk.img && losetup --find --show disk.img, "
    "then give the /dev/loopN it prints"
)


@dataclass
class EmulatedDisk:
    """A block device under test and the disk it should behave like."""

    name: str
    path: Path
    profile: DiskProfile


def limit_bps(profile: DiskProfile, stim: Stimulus, value: float, min_bps: int = MIN_BPS) -> int:
    """The write cap, bytes/s, that makes a device follow ``profile`` at ``value`` of ``stim``."""
    return max(round(profile.write_mb_s * 1e6 * profile.fraction(stim, value)), min_bps)


class EmulatedDriver:
    """Caps each disk's writes to its profile's throughput at the current stimulus value."""

    name = "emulated"

    def __init__(
        self,
        stimulus: Stimulus,
        disks: list[EmulatedDisk],
        throttle_factory: Callable[[str], Throttle] = Throttle.create,
    ) -> None:
        if not disks:
            raise ConfigError(
                "the emulated driver needs a disk", f"give a loop device; {_LOOP_HINT}"
            )
        self.stimulus = stimulus
        self.disks = disks
        self._devnums = [_block_devnum(d.path) for d in disks]
        self._throttled = [whole_disk_devnum(n) for n in self._devnums]
        _check_distinct(disks, self._throttled)
        for d in disks:
            d.profile.check(stimulus)
        self._factory = throttle_factory
        self._throttle: Throttle | None = None
        self._lock = threading.Lock()  # safe() comes from the watchdog's thread
        self._safe = False
        self._closed = False

    def describe(self) -> dict[str, Any]:
        """Driver, cgroup (``None`` until ``prepare``) and every disk's profile."""
        t = self._throttle
        return {
            "driver": self.name,
            "cgroup": t.version if t else None,
            "cgroup_path": str(t.path) if t else None,
            "min_bps": MIN_BPS,
            "disks": [
                {
                    "name": d.name,
                    "path": str(d.path),
                    "throttled_device": f"{os.major(dev)}:{os.minor(dev)}",
                    "profile": d.profile.name,
                    "label": d.profile.label,
                    "model": d.profile.model,
                    "write_mb_s": d.profile.write_mb_s,
                }
                for d, dev in zip(self.disks, self._throttled, strict=True)
            ],
        }

    def sensor_sources(self) -> list[SourceSpec]:
        return []

    def prepare(self) -> None:
        """Create the cgroup and move this process (the generator's threads too) into it."""
        with self._lock:
            if self._throttle is not None:
                return
            throttle = self._factory(f"iowatt-sweep-{os.getpid()}")
            try:
                throttle.enter()
            except BaseException:
                throttle.close()
                raise
            self._throttle = throttle

    def adopt(self, pids: list[int]) -> None:
        """Throttle these processes too: a local fleet's workers, where the generators run."""
        with self._lock:
            self._prepared().adopt(pids)

    def apply(self, value: float) -> None:
        with self._lock:
            if self._safe:
                raise DriverError("the stimulus is held at its safe setting", None)
            throttle = self._prepared()
            for d, devnum in zip(self.disks, self._devnums, strict=True):
                self._set(throttle, devnum, limit_bps(d.profile, self.stimulus, value))

    def safe(self) -> None:
        """Lift every cap: no emulated stimulus at all."""
        with self._lock:
            self._safe = True
            if self._throttle is not None and not self._closed:
                for devnum in self._devnums:
                    self._set(self._throttle, devnum, None)

    def restore(self) -> None:
        """Remove the caps and the cgroup, and move the process back where it was."""
        with self._lock:
            if self._throttle is not None and not self._closed:
                self._throttle.close()
                self._closed = True

    def guard_plan(self) -> GuardPlan:
        """Remove the cgroup if this process dies (its caps die with it); known after
        ``prepare``, which is when the sweep asks."""
        return GuardPlan(rmdirs=[str(self._throttle.path)] if self._throttle else [])

    def _prepared(self) -> Throttle:
        if self._throttle is None or self._closed:
            raise RuntimeError("EmulatedDriver.apply before prepare or after restore")
        return self._throttle

    @staticmethod
    def _set(throttle: Throttle, devnum: int, bps: int | None) -> None:
        try:
            throttle.set_write_bps(devnum, bps)
        except IowattError as e:
            raise DriverError(e.message, e.hint) from e


def _block_devnum(path: Path) -> int:
    try:
        st = os.stat(path)
    except OSError as e:
        raise TargetError(f"disk `{path}` cannot be used: {e.strerror}", _LOOP_HINT) from None
    if not stat.S_ISBLK(st.st_mode):
        raise TargetError(
            f"`{path}` is not a block device: the emulated driver throttles block devices; "
            "use a loop device",
            _LOOP_HINT,
        )
    return st.st_rdev


def _check_distinct(disks: list[EmulatedDisk], throttled: list[int]) -> None:
    """A cap covers a whole disk, so two partitions of one disk cannot follow two profiles."""
    seen: dict[int, EmulatedDisk] = {}
    for d, dev in zip(disks, throttled, strict=True):
        if dev in seen:
            raise TargetError(
                f"`{seen[dev].path}` and `{d.path}` are on the same disk "
                f"({os.major(dev)}:{os.minor(dev)}), and a write cap covers a whole disk",
                "give each emulated disk a loop device of its own",
            )
        seen[dev] = d
