"""What a run measured, read from its manifest: the target, the device under it, and whether
the page cache was in the path — the first thing to know before believing a figure (a buffered
read of a file that fits in memory measures memory, not the disk)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

# File systems whose "device" is memory.
_MEMORY_FS = frozenset({"tmpfs", "ramfs"})
# Flowops that move data through a file (the ones whose O_DIRECT matters).
_DATA_FLOWOPS = frozenset(
    {
        "read",
        "write",
        "readwholefile",
        "writewholefile",
        "appendfile",
        "appendfilerand",
        "aiowrite",
    }
)


@dataclass(frozen=True)
class Measured:
    target: str
    # `/dev/vda (QEMU HARDDISK, SSD)`, `memory (tmpfs)`, or `unknown`
    device: str
    # True: every data operation went through the page cache; False: none did (O_DIRECT, or a
    # raw device with O_DIRECT); None: some did, or the run says nothing about it.
    cached: bool | None
    cache: str
    # The target is tmpfs or ramfs: no device at all.
    in_memory: bool = False

    def line(self) -> str:
        """``/mnt/disk on /dev/sdb (…): O_DIRECT, the page cache bypassed``."""
        return f"{self.target} on {self.device}: {self.cache}"


def measured(manifest: dict[str, Any]) -> Measured | None:
    """What the run in ``manifest`` measured; None for runs that measure no single target (a
    fleet's hosts, a sweep's disks, a replay's server and simulations say what they measured
    themselves)."""
    config = manifest.get("config") or {}
    workloads = config.get("workloads")
    target = (manifest.get("host") or {}).get("target") or {}
    if manifest.get("kind") not in ("bench", "power", None) or not workloads or not target:
        return None
    path = str(target.get("path") or config.get("target") or "unknown")
    fs = target.get("fs_type")
    if fs in _MEMORY_FS:
        device = f"memory ({fs})"
    elif target.get("device"):
        model = target.get("device_model")
        spins = target.get("rotational")
        what = ", ".join(
            x for x in (model, None if spins is None else "HDD" if spins else "SSD") if x
        )
        device = f"{target['device']} ({what})" if what else str(target["device"])
    else:
        device = "an unknown device"
    direct = [_direct(w) for w in workloads]
    if fs in _MEMORY_FS:
        # tmpfs has no O_DIRECT to speak of: its files are the page cache.
        return Measured(path, device, True, "no device, the files live in the page cache", True)
    if all(d is True for d in direct):
        return Measured(path, device, False, "O_DIRECT, the page cache bypassed")
    if all(d is False for d in direct):
        return Measured(path, device, True, "buffered I/O, through the page cache")
    return Measured(path, device, None, "partly: some operations O_DIRECT, others buffered")


def _direct(workload: dict[str, Any]) -> bool | None:
    """Whether a workload's data operations all use O_DIRECT (None: some do)."""
    model = workload.get("model")
    if not model:
        return bool(workload.get("directio"))
    flags = {bool(f.get("directio")) for f in _data_flowops(model.get("threads") or [])}
    if not flags:
        return False  # no data moved: metadata operations always go through the caches
    return flags.pop() if len(flags) == 1 else None


def _data_flowops(threads: Iterable[dict[str, Any]]) -> Iterable[dict[str, Any]]:
    for t in threads:
        for f in t.get("flowops") or []:
            if f.get("kind") in _DATA_FLOWOPS:
                yield f
