#!/usr/bin/env python3
"""The emulated disk's timings beside its model's prediction: QD1 random reads on
``ultrastar-36z15`` (15k rpm), throughput at QD 1, 4 and 16 against FIFO, and what FUSE adds
per request.

Usage::

    python bench/emulate_disk.py                      # 3 reps, 2000 reads per mount
    python bench/emulate_disk.py --reps 5 --requests 4000
    python bench/emulate_disk.py --smoke              # 1 rep, 150 reads: that it runs

Needs root (a FUSE mount) and /dev/fuse; without them every ratio says the peer is missing.

Setup: BACKING is a directory on /dev/shm (``--dir``) holding one sparse file the size of the
disk (``capacity_gb`` · 10^9 bytes). tmpfs gives no extents, so the emulator lays the file out
whole from the disk's start: offsets in the file are offsets on the disk, and random reads over
the file span the whole stroke. Each measurement is a fresh ``iowatt emulate mount BACKING
MOUNT --no-report`` (ready once it says "mounted at", stopped with SIGTERM), read by threads of
this script with ``os.preadv`` of 4 KiB at uniformly random 4 KiB-aligned offsets on an
O_DIRECT descriptor, ``--requests`` reads in all; the queue depth is the number of threads.
The mount's ``emulate`` run holds what the emulator charged each request
(``disk_requests.parquet``).

1. Prediction (``crates/iowatt-sim/src/disk/model.rs``, ``DiskModel::charge``): for two
   uniform random positions the seek distance d has density 2(1 − d) on [0, 1], so the mean
   seek is ∫ seek_s(d) · 2(1 − d) dd (numerically, from the model's formula); plus half a
   revolution (60 / rpm / 2), plus 4 KiB over the zone's rate averaged over the stroke
   (bytes · ln(outer / inner) / (outer − inner)), plus the overhead. Printed beside the QD1
   client mean (each ``preadv`` timed in this process) and the emulator's mean charge.
   Goal: both within 5 % of the prediction.
2. Throughput at QD 1, 4, 16 (reads / wall time of the phase) against FIFO's prediction:
   one disk serving in arrival order without reordering serves 1 / (mean service time) per
   second at any depth that keeps it busy. QD1 falls short by the client's and FUSE's own
   time between requests. Goal: QD 4 and 16 within 5 %.
3. FUSE overhead per request, two ways: (a) at QD1, each read's client latency minus the
   emulator's latency of the same request (arrival at the mount to answer), mean; (b) the same
   reads on BACKING directly and through a mount of a model with every time 0 (a
   ``--disk-models`` file defining ``zero``), the difference of the mean latencies. Goal:
   (a) ≤ 5 % of the predicted service time.

The orders alternate from rep to rep (QD 1, 4, 16 then 16, 4, 1; direct then mount, then
mount then direct). Figures are medians over the reps with their min–max.
"""

from __future__ import annotations

import argparse
import math
import mmap
import os
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, NoReturn

import numpy as np

from _smoke import alternate, fail, parse, ratio_line
from _smoke import mounted as emulated_mount

MODEL = "ultrastar-36z15"
BLOCK = 4096
DEPTHS = (1, 4, 16)
READY_S = 60.0  # deadline for a mount to say it is mounted
ZERO = """
[zero]
label = "zero-time disk (bench/emulate_disk.py)"
kind = "ssd"
capacity_gb = {capacity_gb}
rpm = 0
seek_track_ms = 0.0
seek_avg_ms = 0.0
seek_full_ms = 0.0
outer_mb_s = 1e12
inner_mb_s = 1e12
overhead_ms = 0.0
active = {{ w = 1.0 }}
idle = {{ w = 1.0 }}
standby = {{ w = 1.0 }}
spin_up_s = 0.0
spin_up_j = 0.0
spin_down_s = 0.0
spin_down_j = 0.0
start_stop_cycles = 1
"""


def seek_s(m: dict[str, Any], d: np.ndarray) -> np.ndarray:
    """``DiskModel::seek_s``: √ growth to the average at a third of the stroke, then linear."""
    tr, av, full = m["seek_track_ms"], m["seek_avg_ms"], m["seek_full_ms"]
    near = tr + (av - tr) * np.sqrt(3.0 * np.minimum(d, 1 / 3))
    far = av + (full - av) * (d - 1 / 3) * 1.5
    return np.where(d == 0, 0.0, np.where(d <= 1 / 3, near, far)) / 1e3


def predict(m: dict[str, Any], nbytes: int) -> dict[str, float]:
    """The model's mean charge, s, of a read of ``nbytes`` at a uniformly random offset."""
    d = np.linspace(0.0, 1.0, 1_000_001)
    density = 2.0 * (1.0 - d)
    seek = float(np.trapezoid(seek_s(m, d) * density, d))
    outer, inner = m["outer_mb_s"] * 1e6, m["inner_mb_s"] * 1e6
    mean_inverse = 1 / outer if outer == inner else math.log(outer / inner) / (outer - inner)
    return {
        "overhead": m["overhead_ms"] / 1e3,
        "seek": seek,
        "rotation": 0.5 * 60.0 / m["rpm"] if m["rpm"] else 0.0,
        "transfer": nbytes * mean_inverse,
    }


def mounted(
    iowatt: str, backing: Path, mount: Path, results: Path, *args: str
) -> AbstractContextManager[dict[str, Path]]:
    """``iowatt emulate mount`` until the block ends (bench/_emulated.py)."""

    def failed(message: str) -> NoReturn:
        fail(message, "run it by hand to see why (it needs root and /dev/fuse)")
        raise AssertionError("fail() exits")

    return emulated_mount(iowatt, backing, mount, results, *args, failed=failed, ready_s=READY_S)


def read_random(path: Path, offsets: list[int], depth: int) -> tuple[np.ndarray, float]:
    """Each read's latency, ns, in the order of ``offsets``, and the wall time of them all:
    ``depth`` threads, each taking the next offset as it is free."""
    latency = np.zeros(len(offsets), dtype=np.int64)
    nxt = iter(range(len(offsets)))
    lock = threading.Lock()
    flags = os.O_RDONLY | os.O_DIRECT

    def worker() -> None:
        fd = os.open(path, flags)
        buf = mmap.mmap(-1, BLOCK)  # page-aligned, as O_DIRECT wants
        try:
            while True:
                with lock:
                    i = next(nxt, None)
                if i is None:
                    return
                t0 = time.perf_counter_ns()
                if os.preadv(fd, [buf], offsets[i]) != BLOCK:
                    raise OSError(f"short read at {offsets[i]} of {path}")
                latency[i] = time.perf_counter_ns() - t0
        finally:
            os.close(fd)

    threads = [threading.Thread(target=worker) for _ in range(depth)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return latency, time.perf_counter() - t0


def requests(run: Path) -> dict[str, np.ndarray]:
    import pyarrow.parquet as pq

    table = pq.read_table(run / "disk_requests.parquet").sort_by("t_s")
    return {c: table[c].to_numpy() for c in table.column_names if c != "run_id"}


def spread(values: list[float], fmt: str) -> str:
    """The median and the min–max of the reps."""
    med = statistics.median(values)
    if len(values) == 1:
        return format(med, fmt)
    return f"{format(med, fmt)} ({format(min(values), fmt)}–{format(max(values), fmt)})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--requests", type=int, default=2000, help="reads per emulated-disk mount")
    ap.add_argument("--fast-requests", type=int, default=5000,
                    help="reads on BACKING directly and through the zero-time model")  # fmt: skip
    ap.add_argument("--dir", type=Path, default=Path("/dev/shm"), help="tmpfs for BACKING")
    ap.add_argument("--iowatt", default=shutil.which("iowatt") or "iowatt")
    args = parse(ap, {"reps": 1, "requests": 150, "fast_requests": 300})
    goals = [
        ("QD1 mean latency client/predicted", "0.95–1.05"),
        ("QD1 mean latency emulator/predicted", "0.95–1.05"),
        *[(f"throughput QD{q}/FIFO prediction", "0.95–1.05") for q in DEPTHS[1:]],
        ("FUSE overhead per request/predicted service", "≤ 0.05"),
    ]
    if not os.path.exists("/dev/fuse") or (os.geteuid() != 0 and not shutil.which("fusermount3")):
        for label, goal in goals:
            ratio_line(label, None, goal, missing="FUSE (root and /dev/fuse)")
        return
    from iowatt.sim.disks import disk_model

    model = disk_model(MODEL)
    parts = predict(model, BLOCK)
    predicted = sum(parts.values())
    capacity = int(model["capacity_gb"] * 1e9)
    blocks = capacity // BLOCK
    runs: dict[str, list[float]] = {}

    def note(key: str, value: float) -> None:
        runs.setdefault(key, []).append(value)

    with tempfile.TemporaryDirectory(prefix="iowatt-emulate-bench-", dir=args.dir) as tmp:
        root = Path(tmp)
        backing, mount, results = root / "backing", root / "mount", root / "results"
        for d in (backing, mount):
            d.mkdir()
        big = backing / "big"
        with open(big, "wb") as f:
            f.truncate(capacity)  # sparse: the whole disk, no page of it stored
        zero = root / "zero.toml"
        zero.write_text(ZERO.format(capacity_gb=model["capacity_gb"]))
        for rep in range(args.reps):
            print(f"rep {rep + 1}/{args.reps}", file=sys.stderr, flush=True)
            for depth in alternate(rep, DEPTHS):
                rng = random.Random(1000 * rep + depth)
                offsets = [rng.randrange(blocks) * BLOCK for _ in range(args.requests)]
                seed = str(1000 * rep + depth)
                with mounted(args.iowatt, backing, mount, results, "--disk-model", MODEL,
                             "--seed", seed) as done:  # fmt: skip
                    client, wall = read_random(mount / "big", offsets, depth)
                served = requests(done["run"])
                shutil.rmtree(done["run"])
                note(f"ops_s QD{depth}", len(offsets) / wall)
                note(f"service QD{depth}", float(served["service_ns"].mean()) / 1e9)
                note(f"latency QD{depth}", float(served["latency_ns"].mean()) / 1e9)
                if depth != 1:
                    continue
                note("client", float(client.mean()) / 1e9)
                note("emulator", float(served["latency_ns"].mean()) / 1e9)
                for p in parts:
                    note(f"charge {p}", float(served[f"{p}_s"].mean()))
                if len(served["latency_ns"]) == len(client):
                    note("fuse", float((client - served["latency_ns"]).mean()) / 1e9)
                else:
                    print(f"  {len(served['latency_ns'])} requests served for {len(client)}"
                          " reads: no per-request overhead", file=sys.stderr)  # fmt: skip
            rng = random.Random(-rep - 1)
            offsets = [rng.randrange(blocks) * BLOCK for _ in range(args.fast_requests)]
            for side in alternate(rep, ["direct", "zero"]):
                if side == "direct":
                    client, _ = read_random(big, offsets, 1)
                    note("direct", float(client.mean()) / 1e9)
                    continue
                with mounted(args.iowatt, backing, mount, results, "--disk-models", str(zero),
                             "--disk-model", "zero") as done:  # fmt: skip
                    client, _ = read_random(mount / "big", offsets, 1)
                shutil.rmtree(done["run"])
                note("zero", float(client.mean()) / 1e9)

    def ms(key: str) -> str:
        return spread([v * 1e3 for v in runs[key]], ".3f") + " ms"

    def us(key: str) -> str:
        return spread([v * 1e6 for v in runs[key]], ".1f") + " µs"

    med = {k: statistics.median(v) for k, v in runs.items()}
    n = args.reps
    print(f"\n{model['label']}: {args.requests} random 4 KiB O_DIRECT reads per mount over"
          f" the whole {model['capacity_gb']:g} GB; median (min–max) of {n} rep(s)")  # fmt: skip
    print(f"  {'':<12}{'predicted':>12}  emulator's mean charge at QD1")
    for p in parts:
        print(f"  {p:<12}{parts[p] * 1e3:9.3f} ms  {ms(f'charge {p}')}")
    print(f"  {'total':<12}{predicted * 1e3:9.3f} ms  {ms('emulator')} (latency, arrival to"
          " answer)")  # fmt: skip
    print(f"  QD1 client mean latency: {ms('client')}")
    print(f"  FIFO prediction: {1 / predicted:.1f} ops/s at any depth that keeps the disk busy")
    for q in DEPTHS:
        print(f"  QD{q:<3} {spread(runs[f'ops_s QD{q}'], '.1f')} ops/s; emulator's mean"
              f" service {ms(f'service QD{q}')}, latency {ms(f'latency QD{q}')}")  # fmt: skip
    print(f"  FUSE overhead per request (a) client − emulator at QD1: {us('fuse')}")
    print(f"  (b) zero-time model through the mount {us('zero')} − BACKING directly"
          f" {us('direct')} = {(med['zero'] - med['direct']) * 1e6:.1f} µs")  # fmt: skip
    ratio_line(goals[0][0], med["client"] / predicted, goals[0][1])
    ratio_line(goals[1][0], med["emulator"] / predicted, goals[1][1])
    ratio_line("throughput QD1/FIFO prediction", med["ops_s QD1"] * predicted, "≤ 1")
    for q, (label, goal) in zip(DEPTHS[1:], goals[2:4], strict=True):
        ratio_line(label, med[f"ops_s QD{q}"] * predicted, goal)
    ratio_line(goals[4][0], med["fuse"] / predicted if "fuse" in med else None, goals[4][1])


if __name__ == "__main__":
    main()
