#!/usr/bin/env python3
"""The RAID simulator beside the emulated array: a study-like day replayed through nginx over
`iowatt emulate mount --array P`, then `iowatt sim raid` on that replay run, per personality.

Usage::

    python bench/raid_emulated.py                       # the full day at 8×: ~3.75 h
    python bench/raid_emulated.py --scale 0.1 --from 15h --span 3h
    python bench/raid_emulated.py --cache 256m          # the cached pair
    python bench/raid_emulated.py --smoke               # an hour at --scale 0.01, 60×: ~1.5 min

Needs root, /dev/fuse and nginx (Debian's nginx-light); without them it says `fuse3 missing`
or `nginx missing` and every ratio names the missing peer.

1. The day: `iowatt trace generate --preset study-web [--scale X]` (its tree manifest beside
   it), cut to `--span` of log time from `--from` after its first line, recreated as sparse
   files in BACKING (`iowatt tree recreate --sparse`, on tmpfs by default). Two kinds of log
   line are rewritten so both sides serve the same reads, and the counts are printed: the
   replayer sends a logged 304 as a plain GET, which nginx answers with the whole file, so
   such a line becomes a 200 of the file's size (the simulator would leave it out); a line for
   the generator's slow endpoint (`/slow`) is dropped (nginx answers it without the disk; the
   simulator would lay out a file for it).
2. Per personality (raid0, lru, paraid): `iowatt emulate mount BACKING MOUNT --array P --disks 4
   --seed 1` (direct I/O: no page cache above the array), nginx on 127.0.0.1 serving MOUNT
   (tests/support/nginx.py with `--nginx-workers` workers, 16: sendfile and open_file_cache off,
   reads of 32 KiB, its output buffers; its reads block, so with one worker a spin-up holds
   every connection behind it), and `iowatt replay LOG --speedup 8 --warmup 6h --cooldown 2h
   --power emulated:path=MOUNT`; the three personalities run at once, each on its own mount and
   nginx (`--serial`: one after another, the order reversed every other repeat). Then `iowatt
   sim raid REPLAY-RUN --personalities P --cache 0 --tree MANIFEST --arrival-jitter none` with
   the same disk model, --params and seed (the replay's speed-up is its own; it sends a second's
   requests at the second's start, so no jitter).
3. With `--cache SIZE` the cached pair instead: each nginx in a memory cgroup capped at SIZE
   over what it holds once moved in (pages charged before the move stay outside), the mount
   with --page-cache, against `sim raid --cache SIZE`.
   Every run is labelled `cache=SIZE` (`cache=0` for direct I/O) and `personality=P`.

Printed per personality, simulator beside emulated array, over the replay's measured window
(from the first measured request's due time to the last one's end, as the replay's own power
figure takes it), both sides on the replay's clock (the simulator's time 0 is the first
request it serves, the replay's due time of that request):

- energy: the emulated array's from the replay's power recording of `emulated/disk` (the
  counters read at 10 Hz, the replay's `power.work` figure: what a user measuring the array
  gets); the simulator's from its 15 s bins (raid_power.parquet, the array's rows), the bins
  at the window's edges counted by their share of time. The emulate run's own bins over the
  same window are printed beside, as a check of the recording. Goal: within 5 %.
- spin cycles: raid_runs.parquet's, over the whole replay on both sides (sim raid counts them
  per run, not per time). Goal: within 10 % (0 and 0 count as equal).
- the KS distance (the largest gap between the two empirical CDFs) between the replay's time
  to first byte (from the due time) and the simulator's latency, and between the replay's
  completion and the simulator's, over the measured window's requests the simulator serves.
  No goal: the replay's side includes nginx, FUSE and the emulator's timer (bench/README.md,
  "Emulated disk": ~0.15 ms a request).

Each row is printed twice: the simulation laid out by the tree manifest (the comparison the
ratio lines give) and the same simulation without --tree, laid out in the log's order of first
request, as the mount allocates its files (bench/README.md says what each difference comes
from).

The machine's load average before and after and the CPU the rest of the machine used while the
replays ran are printed beside the wall times; `--reps` repeats the whole comparison.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, NoReturn

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from _smoke import alternate, busy_jiffies, fail, fmt, parse, ratio_line, render_table
from _smoke import mounted as emulated_mount

PERSONALITIES = ("raid0", "lru", "paraid")
READY_S = 120.0  # deadline for a mount to say it is mounted (it walks BACKING first)
LOG_TIME = re.compile(r"\[([^\]]+)\]")
REQUEST = re.compile(r'"(\S+) (\S+)( [^"]*)?" (\d{3}) (\S+)')
SLOW = "/slow"


class BenchError(RuntimeError):
    """A step that did not work: its command and what it said."""


def iowatt_cli() -> str:
    found = shutil.which("iowatt")
    if found is None:
        raise BenchError("the iowatt CLI is not on PATH: pip install -e . at the repository root")
    return found


# The day, cut and made equal for both sides.


@dataclass
class Day:
    log: Path  # the log the replays serve
    tree: Path  # the tree manifest (as generated)
    backing: Path
    lines: int
    rewritten_304: int
    dropped_slow: int


def generate(work: Path, scale: float) -> tuple[Path, Path]:
    log = work / "day.log"
    cmd = [iowatt_cli(), "trace", "generate", "--preset", "study-web", "-o", str(log), "-q"]
    if scale != 1:
        cmd += ["--scale", f"{scale:g}"]
    run(cmd)
    return log, work / "day.tree.parquet"


def log_time(line: str) -> float:
    found = LOG_TIME.search(line)
    if found is None:
        raise BenchError(f"no time in the log line {line[:120]!r}")
    return datetime.strptime(found.group(1), "%d/%b/%Y:%H:%M:%S %z").timestamp()


def cut(log: Path, tree: Path, out: Path, start_s: float, span_s: float | None) -> Day:
    """The lines of ``log`` from ``start_s`` after its first to ``start_s + span_s``, with the
    logged 304s made 200s of the file's size and the slow endpoint's lines dropped (module doc)."""
    import pyarrow.parquet as pq

    t = pq.read_table(tree, columns=["path", "type", "size"]).to_pydict()
    sizes = {
        "/" + p.lstrip("/"): s
        for p, k, s in zip(t["path"], t["type"], t["size"], strict=True)
        if k == "file"
    }
    first: float | None = None
    kept = rewritten = dropped = 0
    with log.open() as src, out.open("w") as dst:
        for line in src:
            when = log_time(line)
            first = when if first is None else first
            if when < first + start_s or (span_s is not None and when >= first + start_s + span_s):
                continue
            m = REQUEST.search(line)
            if m is None:
                raise BenchError(f"no request in the log line {line[:120]!r}")
            method, target, _, status, _ = m.groups()
            path = target.split("?", 1)[0]
            if path == SLOW or path.startswith(SLOW + "/"):
                dropped += 1
                continue
            if method == "GET" and status == "304" and path in sizes:
                a, b = m.span(4)[0], m.span(5)[1]
                line = f"{line[:a]}200 {sizes[path]}{line[b:]}"
                rewritten += 1
            dst.write(line)
            kept += 1
    if kept == 0:
        raise BenchError(f"no log line between {start_s:g} s and the span's end in `{log}`")
    return Day(out, tree, Path(), kept, rewritten, dropped)


def recreate(tree: Path, backing: Path) -> None:
    run([iowatt_cli(), "tree", "recreate", "--sparse", "-q", str(tree), str(backing)])


def prepare(work: Path, scale: float, start_s: float, span_s: float | None, backing: Path) -> Day:
    """The day generated, cut, and its tree recreated in ``backing`` (new or empty)."""
    log, tree = generate(work, scale)
    day = cut(log, tree, work / "replayed.log", start_s, span_s)
    day.backing = backing
    recreate(tree, backing)
    return day


def run(cmd: Sequence[str]) -> str:
    proc = subprocess.run(list(cmd), capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        raise BenchError(
            f"`{' '.join(cmd)}` ended with {proc.returncode}: {proc.stderr.strip()[-2000:]}"
        )
    return proc.stdout


# One personality's pair of runs.


@dataclass
class Setup:
    speedup: float = 8.0
    warmup: str = "6h"
    cooldown: str = "2h"
    cache: str = "0"  # as given: 0 is direct I/O
    cache_bytes: int = 0
    disk_model: str = "ultrastar-36z15"
    disk_models: Path | None = None
    params: Path | None = None
    seed: int = 1
    disks: int = 4
    timeout: str = "30s"  # a client's, both sides (the replay's and sim raid's --timeout)
    # nginx reads files with blocking read(2): one worker waits out a disk's spin-up with every
    # connection queued behind it, which the simulator's array does not. Enough workers that
    # the array, not nginx, queues (the study's Apache had a process per connection).
    nginx_workers: int = 16

    def model_args(self) -> list[str]:
        """The options both sides take alike."""
        out = [
            "--disk-model",
            self.disk_model,
            "--disks",
            str(self.disks),
            "--seed",
            str(self.seed),
        ]
        if self.disk_models is not None:
            out += ["--disk-models", str(self.disk_models)]
        if self.params is not None:
            out += ["--params", str(self.params)]
        return out


@dataclass
class Pair:
    personality: str
    emulate: Path
    replay: Path
    sim: Path  # laid out by the tree manifest
    sim_log: Path  # laid out in the log's order of first request, as the mount allocates
    wall_s: float  # the replay's
    replay_summary: dict[str, Any] = field(default_factory=dict)


def mounted(
    backing: Path, mount: Path, results: Path, *args: str
) -> AbstractContextManager[dict[str, Path]]:
    """``iowatt emulate mount`` until the block ends (bench/_emulated.py)."""

    def failed(message: str) -> NoReturn:
        raise BenchError(message)

    return emulated_mount(iowatt_cli(), backing, mount, results, *args, failed=failed,
                          ready_s=READY_S)  # fmt: skip


@contextmanager
def memory_cgroup(name: str, limit: int) -> Iterator[Path | None]:
    """A memory cgroup (v1 or v2, as iowatt's --memory makes one) for a page cache of ``limit``
    bytes (:func:`cap` sets its limit); yields its directory, or None for 0 (direct I/O)."""
    if limit == 0:
        yield None
        return
    from iowatt.sweep.throttle import find_hierarchy, make_cgroup

    found = find_hierarchy(v1_file="memory.limit_in_bytes", v2_controller="memory")
    if found is None:
        raise BenchError("no memory cgroup is mounted here")
    path = found.root / name
    make_cgroup(path)
    try:
        yield path
    finally:
        with suppress(OSError):
            os.rmdir(path)


def cap(group: Path, pids: list[int], cache_bytes: int) -> None:
    """``pids`` moved into ``group``, then capped at ``cache_bytes`` over what the group holds
    once they are in: what is charged to them from then on is the page cache they read and
    their own few new allocations (pages charged before the move stay where they were)."""
    v1 = (group / "memory.limit_in_bytes").exists()
    for pid in pids:
        (group / "cgroup.procs").write_text(str(pid))
    held = int((group / ("memory.usage_in_bytes" if v1 else "memory.current")).read_text())
    (group / ("memory.limit_in_bytes" if v1 else "memory.max")).write_text(str(cache_bytes + held))


def nginx_pids(workdir: Path, workers: int) -> list[int]:
    """nginx's master and its ``workers`` workers, once all are forked."""
    master = int((workdir / "nginx.pid").read_text())
    deadline = time.monotonic() + READY_S
    while True:
        found = subprocess.run(["pgrep", "-P", str(master)], capture_output=True, text=True)
        children = [int(p) for p in found.stdout.split()]
        if len(children) >= workers:
            return [master, *children]
        if time.monotonic() > deadline:
            raise BenchError(f"nginx started {len(children)} of its {workers} workers")
        time.sleep(0.02)


def replay_and_simulate(personality: str, day: Day, work: Path, setup: Setup) -> Pair:
    """The emulated array under ``personality`` serving the day to nginx, replayed; then sim
    raid on the replay run."""
    from support.nginx import nginx

    root = work / personality
    mount, emu, rep, sim = (root / n for n in ("mount", "emulate", "replay", "sim"))
    mount.mkdir(parents=True)
    labels = ["--label", f"cache={setup.cache}", "--label", f"personality={personality}"]
    cached = ["--page-cache"] if setup.cache_bytes else []
    name = f"iowatt-bench-raid-{os.getpid()}-{personality}"
    args = ("--array", personality, *setup.model_args(), *cached, *labels)
    with (
        memory_cgroup(name, setup.cache_bytes) as group,
        mounted(day.backing, mount, emu, *args) as emulated,
        nginx(mount, root / "nginx", workers=setup.nginx_workers) as url,
    ):
        if group is not None:
            cap(group, nginx_pids(root / "nginx", setup.nginx_workers), setup.cache_bytes)
        start = time.perf_counter()
        out = run([iowatt_cli(), "replay", str(day.log), "--target", url, "--speedup",
                   f"{setup.speedup:g}", "--warmup", setup.warmup, "--cooldown",
                   setup.cooldown, "--timeout", setup.timeout, "--power",
                   f"emulated:path={mount}", "--results",
                   str(rep), "--no-report", "-q", "--json", *labels])  # fmt: skip
        wall = time.perf_counter() - start
    summary = json.loads(out)
    replay = rep / summary["run_id"]
    sims = []
    for layout, tree in (("tree", ["--tree", str(day.tree)]), ("log", [])):
        results = sim / layout
        run([iowatt_cli(), "sim", "raid", str(replay), *tree, "--personalities", personality,
             *setup.model_args(), "--cache", setup.cache, "--timeout", setup.timeout,
             "--arrival-jitter", "none",
             "--results", str(results), "--no-report", "-q", *labels,
             "--label", f"layout={layout}"])  # fmt: skip
        sims += [p.parent for p in results.glob("*/manifest.json")]
    return Pair(personality, emulated["run"], replay, sims[0], sims[1], wall, summary)


def run_all(
    personalities: Sequence[str], day: Day, work: Path, setup: Setup, serial: bool
) -> dict[str, Pair]:
    """Each personality's pair: at once (a thread each), or one after another."""
    if serial:
        return {p: replay_and_simulate(p, day, work, setup) for p in personalities}
    done: dict[str, Pair] = {}
    errors: list[BaseException] = []

    def one(p: str) -> None:
        try:
            done[p] = replay_and_simulate(p, day, work, setup)
        except BaseException as e:  # reported below, with the others' results
            errors.append(e)

    threads = [threading.Thread(target=one, args=(p,)) for p in personalities]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return {p: done[p] for p in personalities}


# What the two sides did.


def table(path: Path, personality: str | None = None) -> dict[str, np.ndarray]:
    """A run's table as columns; with ``personality``, its rows alone (sim raid adds RAID-0's
    run to any other personality's, for the saving)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    t = pq.read_table(path)
    if personality is not None:
        t = t.filter(pc.equal(t["personality"], personality))
    return {c: t[c].to_numpy(zero_copy_only=False) for c in t.column_names}


def window_energy(bins: dict[str, np.ndarray], lo_s: float, hi_s: float) -> float:
    """The energy of the array's bins (rows whose ``disk`` is null) within [lo_s, hi_s], a bin
    cut by the window counted by its share of time."""
    rows = np.array([d is None or d != d for d in bins["disk"]], dtype=bool)
    t, w, e = bins["t_s"][rows], bins["width_s"][rows], bins["energy_j"][rows]
    share = np.clip((np.minimum(t + w, hi_s) - np.maximum(t, lo_s)) / np.where(w > 0, w, 1), 0, 1)
    return float((e * share).sum())


def ks(a: np.ndarray, b: np.ndarray) -> float | None:
    """The two-sample Kolmogorov–Smirnov statistic: the largest gap between the empirical CDFs
    (Kolmogorov 1933, Smirnov 1948)."""
    a, b = np.sort(a[np.isfinite(a)]), np.sort(b[np.isfinite(b)])
    if not a.size or not b.size:
        return None
    x = np.concatenate([a, b])
    fa = np.searchsorted(a, x, side="right") / a.size
    fb = np.searchsorted(b, x, side="right") / b.size
    return float(np.abs(fa - fb).max())


def emulate_t0_ns(run_dir: Path) -> int:
    """The emulated array's clock zero on CLOCK_MONOTONIC: from its events (each has both
    clocks), else the manifest's anchor."""
    ev = table(run_dir / "events.parquet")
    if ev["mono_ns"].size:
        return int(ev["mono_ns"][0] - round(ev["t_s"][0] * 1e9))
    return int(json.loads((run_dir / "manifest.json").read_text())["clock_anchor"][1])


def simulated(
    run_dir: Path, personality: str, kept: np.ndarray, measured: np.ndarray, window: tuple[int, int]
) -> dict[str, Any]:
    """One simulation's side: energy over ``window`` (ns on its own clock), cycles and file
    system blocks over the run, and the measured requests' latency and completion."""
    req = table(run_dir / "raid_requests.parquet", personality)
    order = np.argsort(req["seq"])
    if order.size != kept.sum():
        raise BenchError(f"sim raid served {order.size} requests in {run_dir}, not {kept.sum()}")
    runs = table(run_dir / "raid_runs.parquet", personality)
    bins = table(run_dir / "raid_power.parquet", personality)
    return {
        "energy_j": window_energy(bins, window[0] / 1e9, window[1] / 1e9),
        "cycles": int(np.sum(runs["spin_cycles"][0])),
        "gear_shifts": int(runs["gear_shifts"][0]),
        "fs_reads": int(runs["fs_reads"][0]),
        "fs_writes": int(runs["fs_writes"][0]),
        "latency_ns": req["latency_ns"][order][measured[kept]].astype(float),
        "completion_ns": req["completion_ns"][order][measured[kept]].astype(float),
    }


def median_ms(values: np.ndarray) -> float | None:
    values = values[np.isfinite(values)]
    return float(np.median(values)) / 1e6 if values.size else None


def compare(pair: Pair) -> dict[str, Any]:
    """One personality's figures, both sides (module doc)."""
    req = table(pair.replay / "requests.parquet")
    status = np.nan_to_num(req["log_status"].astype(float))
    size = np.nan_to_num(req["log_bytes"].astype(float))
    # What sim raid serves of a replay run (python/iowatt/sim/requests.py).
    kept = (req["method"] == "GET") & (status >= 200) & (status < 300) & (size > 0)
    measured = req["phase"] == "measured"
    zero = int(req["due_ns"][kept][0])  # the simulator's time 0
    lo = int(req["due_ns"][measured].min())
    hi = int(np.nanmax(np.where(measured, req["done_ns"].astype(float), np.nan)))
    sims = {
        name: simulated(run, pair.personality, kept, measured, (lo - zero, hi - zero))
        for name, run in (("tree", pair.sim), ("log", pair.sim_log))
    }
    rows = measured & kept
    ttfb, completion = (req[c][rows].astype(float) for c in ("ttfb_ns", "completion_ns"))
    emulate = table(pair.emulate / "raid_runs.parquet", pair.personality)
    array = json.loads((pair.emulate / "summary.json").read_text())["array"]
    shift = pair.replay_summary["replay"]["t0_ns"] - emulate_t0_ns(pair.emulate)
    emu_bins = table(pair.emulate / "raid_power.parquet")
    return {
        "window_s": (hi - lo) / 1e9,
        "requests": int(rows.sum()),
        "energy_emulated_j": float(
            pair.replay_summary["power"]["work"]["emulated/disk"]["energy_j"]
        ),
        "energy_emulated_bins_j": window_energy(emu_bins, (lo + shift) / 1e9, (hi + shift) / 1e9),
        "cycles_emulated": int(np.sum(emulate["spin_cycles"][0])),
        "gear_shifts_emulated": int(emulate["gear_shifts"][0]),
        "array_reads": int(array["read_ops"]),
        "array_lookups": int(array["lookups"]),
        "array_fs": (int(array["fs_reads"]), int(array["fs_writes"])),
        "ttfb_p50_ms": median_ms(ttfb),
        "completion_p50_ms": median_ms(completion),
        "wall_s": pair.wall_s,
        **{
            f"{k}_{name}": v
            for name, sim in sims.items()
            for k, v in {
                "energy_simulated_j": sim["energy_j"],
                "cycles_simulated": sim["cycles"],
                "gear_shifts_simulated": sim["gear_shifts"],
                "fs_simulated": (sim["fs_reads"], sim["fs_writes"]),
                "ks_latency": ks(ttfb, sim["latency_ns"]),
                "ks_completion": ks(completion, sim["completion_ns"]),
                "latency_p50_ms": median_ms(sim["latency_ns"]),
                "completion_sim_p50_ms": median_ms(sim["completion_ns"]),
            }.items()
        },
    }


def ratio_of(sim: float, emulated: float) -> float:
    """simulated/emulated; two zeros are equal (1), a count on the simulator's side alone is
    infinitely more."""
    if emulated == 0:
        return 1.0 if sim == 0 else float("inf")
    return sim / emulated


# The machine's other load.


def load_line() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} / {five:.2f} / {fifteen:.2f}, {os.cpu_count()} CPUs"


def children_cpu_s() -> float:
    """CPU seconds of this process's children that have ended (the replays, sim raid, the
    mounts and nginx once stopped)."""
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return float(r.ru_utime + r.ru_stime)


# The command line.


def missing_peer() -> str | None:
    if not os.path.exists("/dev/fuse") or (
        os.geteuid() != 0 and shutil.which("fusermount3") is None
    ):
        return "fuse3"
    if shutil.which("nginx") is None and not os.path.exists("/usr/sbin/nginx"):
        return "nginx"
    return None


def check_cache(text: str) -> int:
    """``--cache`` in bytes, refused (exit 2) where a memory cgroup cannot hold it."""
    from iowatt.errors import ConfigError
    from iowatt.units import parse_size

    try:
        n = parse_size(text, "--cache")
    except ConfigError as e:
        fail(e.message, e.hint or "e.g. --cache 256m, or 0 for direct I/O")
    if n == 0:
        return 0
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    hint = f"give a size from 1m to below {total / 2**30:.0f}g, or 0 for direct I/O"
    if n >= total:
        fail(f"--cache `{text}` ({n:,} bytes) is not below this machine's memory "
             f"({total:,} bytes): a memory cgroup cannot hold it", hint)  # fmt: skip
    if n < 2**20:
        fail(f"--cache `{text}` ({n:,} bytes) is below 1 MiB: nginx in a memory cgroup that "
             "small has no room to run", hint)  # fmt: skip
    from iowatt.sweep.throttle import find_hierarchy

    if find_hierarchy(v1_file="memory.limit_in_bytes", v2_controller="memory") is None:
        fail(
            f"--cache `{text}` needs a memory cgroup, and none is mounted here",
            "mount cgroup v1's memory hierarchy or use cgroup v2 with the memory controller",
        )
    return n


def main(argv: Sequence[str] | None = None) -> None:
    from iowatt.units import parse_duration

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scale", type=float, default=1.0, help="the day's --scale [1]")
    ap.add_argument("--from", dest="start", default="0s", help="log time to start at [0s]")
    ap.add_argument("--span", default=None, help="log time to replay [the whole day]")
    ap.add_argument("--speedup", type=float, default=8.0)
    ap.add_argument("--warmup", default="6h", help="log time left out at the start [6h]")
    ap.add_argument("--cooldown", default="2h", help="log time left out at the end [2h]")
    ap.add_argument("--timeout", default="30s", help="a client's timeout, both sides [30s]")
    ap.add_argument("--cache", default="0", help="0: direct I/O; SIZE: the cached pair [0]")
    ap.add_argument("--personalities", default=",".join(PERSONALITIES))
    ap.add_argument("--disk-model", default="ultrastar-36z15")
    ap.add_argument("--disk-models", type=Path)
    ap.add_argument("--params", type=Path, help="raid.toml overrides, both sides")
    ap.add_argument("--nginx-workers", type=int, default=16, help="nginx's worker processes [16]")
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--serial", action="store_true", help="one personality at a time")
    ap.add_argument("--dir", type=Path, default=Path("/dev/shm"), help="where BACKING goes")
    ap.add_argument("--keep", type=Path, help="keep the runs in this directory")
    ap.add_argument("--json-out", type=Path, help="write every repeat's figures here")
    args = parse(ap, {"scale": 0.01, "start": "16h", "span": "1h", "speedup": 60.0,
                      "warmup": "10m", "cooldown": "10m", "reps": 1}, argv)  # fmt: skip
    personalities = [p.strip() for p in args.personalities.split(",") if p.strip()]
    unknown = [p for p in personalities if p not in PERSONALITIES]
    if unknown or not personalities:
        fail(f"--personalities `{args.personalities}` names no personality or an unknown one",
             f"any of {', '.join(PERSONALITIES)}")  # fmt: skip
    if not 1 <= args.nginx_workers <= 256:
        fail(f"--nginx-workers `{args.nginx_workers}` is outside 1..256", "e.g. --nginx-workers 16")
    if not 0 < args.scale <= 1:
        fail(f"--scale `{args.scale:g}` is outside 0 < X ≤ 1", "e.g. --scale 0.1")
    cache_bytes = check_cache(args.cache)
    start_s = parse_duration(args.start, "--from")
    span_s = None if args.span is None else parse_duration(args.span, "--span")
    setup = Setup(args.speedup, args.warmup, args.cooldown, args.cache, cache_bytes,
                  args.disk_model, args.disk_models, args.params,
                  nginx_workers=args.nginx_workers, timeout=args.timeout)  # fmt: skip
    goals = {"energy": "0.95–1.05", "cycles": "0.9–1.1", "ks": "none (printed)"}
    missing = missing_peer()
    if missing is not None:
        print(f"skipped: {missing} missing", flush=True)
        for p in personalities:
            for what, goal in goals.items():
                ratio_line(f"{p} {what}", None, goal, missing=missing)
        return
    print(f"machine: {load_line()}")
    span = "the whole day" if span_s is None else f"{args.span} from {args.start}"
    pair_text = "direct I/O against --cache 0" if not cache_bytes else (
        f"nginx in a memory cgroup of {args.cache} + what it holds at start, --page-cache, against "
        f"--cache {args.cache}")  # fmt: skip
    print(f"study-web at --scale {args.scale:g}, {span} of log time, {args.speedup:g}×, warm-up "
          f"{args.warmup}, cool-down {args.cooldown}; {setup.disks} × {args.disk_model}; nginx "
          f"{args.nginx_workers} worker{'s' * (args.nginx_workers != 1)}; "
          f"{pair_text}")  # fmt: skip
    keep = args.keep
    everything: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="iowatt-raid-emulated-") as tmp:
        work = keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        backing = Path(tempfile.mkdtemp(prefix="iowatt-raid-backing-", dir=args.dir))
        try:
            try:
                day = prepare(work, args.scale, start_s, span_s, backing)
            except BenchError as e:
                fail(str(e), "run the step by hand to see why")
            print(f"log: {day.lines:,} lines replayed ({day.rewritten_304:,} logged 304s sent as "
                  f"200s of the file, {day.dropped_slow:,} {SLOW} lines dropped); BACKING "
                  f"{day.backing}")  # fmt: skip
            for rep in range(args.reps):
                order = alternate(rep, personalities)
                how = "one after another: " + ", ".join(order) if args.serial else "at once"
                print(f"\nrep {rep + 1}/{args.reps}: {', '.join(personalities)} {how}")
                print(f"   before: {load_line()}", flush=True)
                before, cpu0, t0 = busy_jiffies(), children_cpu_s(), time.perf_counter()
                try:
                    pairs = run_all(order, day, work / f"rep{rep + 1}", setup, args.serial)
                except BenchError as e:
                    fail(str(e), "run the step by hand to see why (root, /dev/fuse, nginx)")
                span_wall, after = time.perf_counter() - t0, busy_jiffies()
                figures = {p: compare(pairs[p]) for p in personalities}
                report(figures, goals)
                if args.json_out is not None:
                    everything.append({"rep": rep + 1, "order": order, "figures": figures})
                if before is not None and after is not None:
                    hz = os.sysconf("SC_CLK_TCK")
                    used = (after[0] - before[0]) / hz
                    ours = children_cpu_s() - cpu0
                    print(f"   {span_wall:,.0f} s in all; while they ran the machine kept "
                          f"{used / span_wall:.2f} CPUs busy, these runs (emulators, nginx, "
                          f"replays, sim raid) {ours / span_wall:.2f} of them")  # fmt: skip
                print(f"   after: {load_line()}")
        finally:
            shutil.rmtree(backing, ignore_errors=True)
    if args.json_out is not None:
        args.json_out.write_text(json.dumps({"args": sys.argv[1:], "reps": everything}, indent=1))
    if args.smoke:
        print("(smoke: a check that it runs; these figures are not to be quoted)")


def report(figures: dict[str, dict[str, Any]], goals: dict[str, str]) -> None:
    """The table of both sides (the simulation laid out by the tree, then by the log's order)
    and the ratio lines (the tree's, as the issue sets the goals)."""
    head = ["personality", "layout", "requests", "window", "energy emu", "(its bins)", "sim",
            "sim/emu", "cycles emu", "sim", "gears emu/sim", "KS latency", "KS completion",
            "TTFB p50 emu/sim", "done p50 emu/sim", "wall"]  # fmt: skip
    rows = [head]
    for p, f in figures.items():
        for layout in ("tree", "log"):
            g = {k.removesuffix(f"_{layout}"): v for k, v in f.items() if k.endswith(layout)}
            rows.append([
                p, layout, f"{f['requests']:,}", f"{f['window_s']:,.0f} s",
                f"{fmt(f['energy_emulated_j'] / 1e3, 2)} kJ",
                f"{fmt(f['energy_emulated_bins_j'] / 1e3, 2)} kJ",
                f"{fmt(g['energy_simulated_j'] / 1e3, 2)} kJ",
                fmt(ratio_of(g["energy_simulated_j"], f["energy_emulated_j"]), 3),
                str(f["cycles_emulated"]), str(g["cycles_simulated"]),
                f"{f['gear_shifts_emulated']}/{g['gear_shifts_simulated']}",
                fmt(g["ks_latency"], 3), fmt(g["ks_completion"], 3),
                f"{fmt(f['ttfb_p50_ms'], 2)}/{fmt(g['latency_p50_ms'], 2)} ms",
                f"{fmt(f['completion_p50_ms'], 2)}/{fmt(g['completion_sim_p50_ms'], 2)} ms",
                f"{f['wall_s']:,.0f} s",
            ])  # fmt: skip
    for line in render_table(rows, right=set(range(2, len(head)))):
        print(f"   {line}")
    print("   (layout: the simulation's, by the tree manifest or by the log's order of first "
          "request, as the mount allocates)")  # fmt: skip
    for p, f in figures.items():
        print(f"   {p}: the array answered {f['array_reads']:,} reads and {f['array_lookups']:,} "
              f"lookups; file system blocks read/written: emulated {f['array_fs'][0]:,}/"
              f"{f['array_fs'][1]:,}, simulated (tree) {f['fs_simulated_tree'][0]:,}/"
              f"{f['fs_simulated_tree'][1]:,}")  # fmt: skip
    for p, f in figures.items():
        ratio_line(
            f"{p} energy simulated/emulated",
            ratio_of(f["energy_simulated_j_tree"], f["energy_emulated_j"]),
            goals["energy"],
        )
        ratio_line(
            f"{p} spin cycles simulated/emulated",
            ratio_of(f["cycles_simulated_tree"], f["cycles_emulated"]),
            goals["cycles"],
        )
        ratio_line(f"{p} KS latency", f["ks_latency_tree"], goals["ks"])
        ratio_line(f"{p} KS completion", f["ks_completion_tree"], goals["ks"])  # fmt: skip


if __name__ == "__main__":
    main()
