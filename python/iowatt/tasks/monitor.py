"""The node while tasks run: CPU cores busy (``/proc/stat``), the data location's disk busy
fraction and read rate (its ``/sys/dev/block/M:m/stat``), memory in use (``/proc/meminfo``)
and, given the file of the tasks' CPU group (:func:`iowatt.tasks.cgroup.usage_ns`), the cores
the tasks kept busy — sampled every half second on a thread of its own: the run's
``utilisation.parquet``, and what modelled power is computed from."""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from iowatt.tasks.cgroup import usage_ns

INTERVAL_S = 0.5


@dataclass
class Samples:
    mono_ns: list[int] = field(default_factory=list)
    cpu_busy: list[float] = field(default_factory=list)  # cores
    disk_util: list[float | None] = field(default_factory=list)  # 0..1
    read_mb_s: list[float | None] = field(default_factory=list)
    mem_used_gb: list[float] = field(default_factory=list)
    # The tasks' cores: from their CPU group, or else spread from their rusage afterwards.
    tasks_busy: list[float | None] = field(default_factory=list)
    cpus: int = 1


def _cpu() -> tuple[int, int]:
    """(busy, total) jiffies over all CPUs."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    total = sum(fields[:8])
    return total - idle, total


def _disk(stat: Path | None) -> tuple[int, int] | None:
    """(io_ticks ms, sectors read) of the block device, or None without one."""
    if stat is None:
        return None
    try:
        f = stat.read_text().split()
    except OSError:
        return None
    return int(f[9]), int(f[2])


def _mem_used_gb() -> float:
    info = {}
    with open("/proc/meminfo") as f:
        for line in f:
            key, _, rest = line.partition(":")
            info[key] = int(rest.split()[0])
    return (info["MemTotal"] - info.get("MemAvailable", info["MemFree"])) / 1e6


class Monitor:
    """Samples from :meth:`start` until :meth:`stop` (which returns the samples)."""

    def __init__(
        self, devnum: int | None, usage: str | None = None, interval_s: float = INTERVAL_S
    ) -> None:
        self._stat = (
            Path(f"/sys/dev/block/{os.major(devnum)}:{os.minor(devnum)}/stat")
            if devnum is not None
            else None
        )
        self._usage = usage
        self._interval = interval_s
        self._cpus = os.cpu_count() or 1
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="iowatt-monitor", daemon=True)
        self.samples = Samples(cpus=self._cpus)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> Samples:
        """Stops sampling, with a last sample up to now (so the samples cover the run)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        return self.samples

    def _group(self) -> int | None:
        return None if self._usage is None else usage_ns(self._usage)

    def _loop(self) -> None:
        last = time.monotonic_ns(), _cpu(), _disk(self._stat), self._group()
        while not self._stop.wait(self._interval):
            last = self._sample(*last)
        self._sample(*last)

    def _sample(
        self, t: int, cpu: tuple[int, int], disk: tuple[int, int] | None, group: int | None
    ) -> tuple[int, tuple[int, int], tuple[int, int] | None, int | None]:
        s = self.samples
        t2, cpu2, disk2, group2 = time.monotonic_ns(), _cpu(), _disk(self._stat), self._group()
        dt = max((t2 - t) / 1e9, 1e-9)
        s.mono_ns.append(t2)
        dtotal = cpu2[1] - cpu[1]
        s.cpu_busy.append(self._cpus * (cpu2[0] - cpu[0]) / dtotal if dtotal > 0 else 0.0)
        if group is not None and group2 is not None:
            s.tasks_busy.append(min((group2 - group) / 1e9 / dt, float(self._cpus)))
        else:
            s.tasks_busy.append(None)
        if disk is not None and disk2 is not None:
            s.disk_util.append(min((disk2[0] - disk[0]) / 1e3 / dt, 1.0))
            s.read_mb_s.append((disk2[1] - disk[1]) * 512 / 1e6 / dt)
        else:
            s.disk_util.append(None)
            s.read_mb_s.append(None)
        s.mem_used_gb.append(_mem_used_gb())
        return t2, cpu2, disk2, group2
