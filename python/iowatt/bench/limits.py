"""What a workload takes from the machine — threads, memory, open files — checked against what
the machine has before the engine allocates anything.

The engine allocates every thread's buffers and histograms up front and keeps its files open
while it runs; a workload asking for more than the machine has would otherwise end with the OOM
killer (no message at all), failed thread spawns, or operations failing with EMFILE that still
count as a complete run. The sizes below follow the engine's source, so the estimate is what it
will really take (``crates/iowatt-workload``: ``worker.rs``, ``interp/mod.rs``,
``recorder.rs``, ``fileset.rs``; ``crates/iowatt-metrics/src/histogram.rs``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from iowatt.errors import ConfigError
from iowatt.limits import open_files_limit, raise_open_files_limit
from iowatt.units import format_bytes

if TYPE_CHECKING:
    from iowatt.bench.config import WorkloadConfig
    from iowatt.wml import Program

PAGE = 4096  # buffers.rs: I/O buffers are whole 4 KiB pages (O_DIRECT alignment)
INTERP_MIN_BUF = 64 << 10  # interp/mod.rs: a FileMacro thread's buffer is at least 64 KiB
SLOTS = 128  # interp/mod.rs: FileBench's THREADFLOW_MAXFD descriptor slots per thread
# Flowops that open a file into the thread's slot (interp/files.rs `ensure_open`, `open_into`).
_OPENING = frozenset(
    (
        "read",
        "write",
        "aiowrite",
        "createfile",
        "openfile",
        "readwholefile",
        "writewholefile",
        "appendfile",
        "appendfilerand",
    )
)
# Share of MemAvailable a workload may take: the rest is for iowatt itself (collecting and
# writing results) and for the page cache a buffered workload goes through.
MEMORY_SHARE = 0.8
# Descriptors and threads beyond the workload's own: the file-laying writers (populate.rs runs
# up to 8), the result files, the catalog and Python's own.
FILES_RESERVE = 64
THREADS_RESERVE = 16
MEMINFO = Path("/proc/meminfo")


def _histogram_bytes(highest_ns: int = 100_000_000_000, sigfig: int = 3) -> int:
    """Bytes of one latency histogram: HDR from 1 ns to 100 s at 3 significant digits with u64
    counts, sized as the hdrhistogram crate sizes it (27 buckets of 1,024 half-buckets, + 1)."""
    sub_buckets = 1 << math.ceil(math.log2(2 * 10**sigfig))
    buckets, untrackable = 1, sub_buckets
    while untrackable <= highest_ns:
        untrackable <<= 1
        buckets += 1
    return (buckets + 1) * (sub_buckets // 2) * 8


HISTOGRAM_BYTES = _histogram_bytes()  # 224 KiB


@dataclass(frozen=True)
class Part:
    """One thread definition (or fileset) of a workload and what it takes."""

    what: str  # e.g. "thread `shadow` ×200"
    threads: int = 0
    memory: int = 0  # bytes, all its instances together
    files: int = 0  # descriptors, all its instances together
    line: int | None = None  # in the workload file, when it comes from one


@dataclass(frozen=True)
class Demand:
    """Everything one run of workloads takes at once, and how to name it in a message."""

    name: str  # "workload `fileserver`", "the sweep"
    parts: tuple[Part, ...]
    fewer: str  # the hint's way to ask for less, e.g. "use fewer --nthreads"
    source: str | None = None  # the workload file, for FILE:LINE

    def total(self, key: str) -> int:
        return sum(getattr(p, key) for p in self.parts)

    def place(self, key: str) -> str:
        """``FILE:LINE: `` of the part taking the most of ``key``, when it has a line."""
        top = self.largest(key)
        return f"{self.source}:{top.line}: " if self.source and top.line else ""

    def largest(self, key: str) -> Part:
        return max(self.parts, key=lambda p: getattr(p, key))


def _pages(n: int) -> int:
    return max(n, 1) + (-max(n, 1)) % PAGE


def fileio_parts(wl: WorkloadConfig) -> list[Part]:
    """A FileIO personality (multistream ones run five threads, one per file)."""
    threads = 5 if wl.personality.startswith("multistream") else wl.nthreads
    label = f"{threads:,} thread{'s' if threads != 1 else ''}"
    return [fileio_part(label, threads, wl.iosize, wl.engine, wl.iodepth)]


def fileio_part(label: str, threads: int, iosize: int, engine: str, iodepth: int) -> Part:
    """FileIO threads: each has one flowop on its own descriptor, one buffer (psync) or
    ``iodepth`` of them and a ring (io_uring), and two histograms (its flowop's and the current
    interval's)."""
    if engine == "io_uring":
        per_thread = iodepth * _pages(iosize) + _ring_bytes(iodepth)
        files = 2  # the file and the ring
    else:
        per_thread = _pages(iosize)
        files = 1
    per_thread += 2 * HISTOGRAM_BYTES
    return Part(label, threads, threads * per_thread, threads * files)


def _ring_bytes(depth: int) -> int:
    # A submission entry is 64 bytes and the completion queue twice as long, 16 bytes each.
    entries = 1 << max(depth - 1, 0).bit_length()
    return entries * (64 + 2 * 16)


def program_parts(program: Program) -> list[Part]:
    """A FileBench workload file: each thread instance gets a buffer for its largest I/O (64 KiB
    at least), a histogram per flowop plus the interval's, and keeps a file open in every
    descriptor slot its flowops use; every fileset entry is tracked in memory."""
    lines: list[int | None] = [*program.thread_lines] or [None] * len(program.threads)
    parts = [_thread_part(t, line) for t, line in zip(program.threads, lines, strict=True)]
    for fs in program.filesets:
        parts.append(_fileset_part(fs, program.fileset_lines.get(fs["name"])))
    return parts


def _thread_part(thread: dict[str, Any], line: int | None) -> Part:
    flowops = thread["flowops"]
    n = thread["instances"]
    biggest = max([f["iosize"] for f in flowops] + [INTERP_MIN_BUF])
    per_thread = _pages(biggest) + (len(flowops) + 1) * HISTOGRAM_BYTES
    return Part(
        f"thread `{thread['name']}` ×{n:,}",
        threads=n,
        memory=n * per_thread,
        files=n * _slots_used(flowops),
        line=line,
    )


def _slots_used(flowops: list[dict[str, Any]]) -> int:
    """Descriptor slots a thread ends up holding open (interp/files.rs ``slot_of``): a flowop's
    own ``fd``, slot 0 by default, or with ``opennext`` every slot of the rotation."""
    slots: set[int] = set()
    for f in flowops:
        if f["kind"] not in _OPENING:
            continue
        if f["fd"] > 0:
            slots.add(min(f["fd"], SLOTS))
        elif f["opennext"]:
            slots.update(range(SLOTS))
        else:
            slots.add(0)
    return len(slots)


def _fileset_part(fs: dict[str, Any], line: int | None) -> Part:
    """A fileset's entries as the engine tracks them (fileset.rs): each file's path twice (the
    layout's and the C string it is opened by), a third copy for files written before the
    clock, and a few words of state. A path is the fileset's root plus one 8-digit name per
    level of the tree, ln(entries)/ln(dirwidth) levels deep on average."""
    entries = fs["entries"] + fs["leafdirs"]
    depth = math.log(max(entries, 2)) / math.log(max(fs["dirwidth"], 2)) + 1
    path = len(fs["path"]) + len(fs["name"]) + 9 * math.ceil(depth)
    per_entry = 3 * (path + 40) + 24
    return Part(
        f"fileset `{fs['name']}` ({entries:,} entries)", memory=entries * per_entry, line=line
    )


def workload_demand(wl: WorkloadConfig) -> Demand:
    name = f"workload `{wl.name}`"
    if wl.wml and wl.program is not None:
        fewer = "use fewer threads (the file's instances=, or --set for the variable they use)"
        return Demand(name, tuple(program_parts(wl.program)), fewer, wl.program.source)
    return Demand(name, tuple(fileio_parts(wl)), "use fewer --nthreads")


def check_workload(wl: WorkloadConfig) -> None:
    """Refuses a workload the machine cannot hold (memory, threads, open files)."""
    check(workload_demand(wl))


def check(demand: Demand) -> None:
    _check_memory(demand, mem_available())
    _check_threads(demand, threads_available())
    _check_files(demand, open_files_limit(), open_files_now())


def _check_memory(demand: Demand, available: int | None) -> None:
    needed = demand.total("memory")
    if available is None or needed <= available * MEMORY_SHARE:
        return
    raise ConfigError(
        f"{demand.place('memory')}{demand.name} needs about {format_bytes(needed)} of memory "
        f"for {demand.total('threads'):,} threads ({_detail(demand)}) but "
        f"{format_bytes(available)} is available (MemAvailable)",
        f"{demand.fewer}, or smaller I/O sizes; iowatt uses at most "
        f"{MEMORY_SHARE:.0%} of the available memory",
    )


def _detail(demand: Demand) -> str:
    """What takes the most memory: ``512 KiB each``, or ``thread `t` ×10 at 2 MiB each``."""
    top = demand.largest("memory")
    if not top.threads:
        return f"{top.what}: {format_bytes(top.memory)}"
    each = f"{format_bytes(top.memory / top.threads)} each"
    return each if len(demand.parts) == 1 else f"most for {top.what}, at {each}"


def _check_threads(demand: Demand, available: int | None) -> None:
    needed = demand.total("threads")
    if available is None or needed + THREADS_RESERVE <= available:
        return
    top = demand.largest("threads")
    most = f" (most in {top.what})" if len(demand.parts) > 1 else ""
    raise ConfigError(
        f"{demand.place('threads')}{demand.name} needs {needed:,} threads{most} but the "
        f"system can start only {available:,} more (threads-max, pids.max)",
        demand.fewer,
    )


def _check_files(demand: Demand, limit: tuple[int, int], now: int) -> None:
    needed = demand.total("files")
    top = demand.largest("files")
    each = f"up to {top.files // max(top.threads, 1):,} per thread"
    detail = each if len(demand.parts) == 1 else f"{top.what}: {each}"
    raise_open_files_limit(
        needed + now + FILES_RESERVE,
        f"{demand.place('files')}{demand.name} keeps up to {needed:,} files open ({detail})",
        demand.fewer,
        limit,
    )


# --- what the machine has -------------------------------------------------------------------


def mem_available() -> int | None:
    """MemAvailable in bytes; None where /proc/meminfo does not say."""
    try:
        text = MEMINFO.read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return None


def open_files_now() -> int:
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:
        return 0


def threads_available() -> int | None:
    """Threads the system can still start: the tightest of the kernel's threads-max and
    pid_max (every thread takes an id) and the cgroup's pids.max, less what runs already; None
    when none can be read."""
    room = [r for r in (_kernel_room(), _cgroup_room()) if r is not None]
    return min(room) if room else None


def _kernel_room() -> int | None:
    try:
        most = min(
            int(Path("/proc/sys/kernel/threads-max").read_text()),
            int(Path("/proc/sys/kernel/pid_max").read_text()),
        )
        # /proc/loadavg's fourth field is "running/total" scheduling entities (threads).
        running = int(Path("/proc/loadavg").read_text().split()[3].split("/")[1])
    except (OSError, ValueError, IndexError):
        return None
    return most - running


def _cgroup_room() -> int | None:
    for directory in _cgroup_pids_dirs():
        try:
            most = (directory / "pids.max").read_text().strip()
            current = int((directory / "pids.current").read_text())
            if most != "max":
                return int(most) - current
        except (OSError, ValueError):
            continue
    return None


def _cgroup_pids_dirs() -> Iterable[Path]:
    """This process's pids cgroup directories (v2, or v1's pids controller)."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        _, controllers, path = [*line.split(":", 2), "", ""][:3]
        if controllers == "":  # cgroup v2
            out.append(Path("/sys/fs/cgroup") / path.lstrip("/"))
        elif "pids" in controllers.split(","):
            out.append(Path("/sys/fs/cgroup/pids") / path.lstrip("/"))
    return out
