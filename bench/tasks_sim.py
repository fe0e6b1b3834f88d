#!/usr/bin/env python3
"""The task-packing simulator (crates/iowatt-sim/src/tasks) beside SimPy, and at cluster scale.

Usage::

    pip install simpy && python bench/tasks_sim.py    # ~1.5 min
    python bench/tasks_sim.py --requests 50000 --nodes 100 --tasks 10000
    python bench/tasks_sim.py --smoke                 # seconds: that it runs, not how fast

Each part runs `--repeat` times (3) and prints the median and the spread (min–max); the
machine's load average is printed before and after, and the CPU the rest of the machine used
while the script ran (/proc/stat less the script's own).

1. The disk station alone, beside SimPy: `--readers` tasks (16) with no CPU time, each reading
   its own file (laid one after another from byte 0, each rounded up to 4 KiB) in scattered
   128 KiB requests at 4 KiB-aligned offsets, one request outstanding per task, on one
   barracuda-es2 (disks.toml) served in arrival order (scheduler `none`, command queue of 1:
   FIFO). iowatt: `iowatt._engine.tasks_simulate`, its config built as `iowatt sim tasks`
   builds it (`engine_disk`, `engine_type`), one core, k = readers. SimPy: the same closed
   model written here from the engine's source: a process per task looping over its requests,
   a FIFO `Resource` for the disk, the service time of `DiskModel::charge` (overhead + seek of
   the head's move / capacity + rotation uniform in [0, 1) of a revolution + bytes at the
   zone's rate; no rotation for a request starting where the head stopped, as the engine's
   read-ahead). Both simulate `--requests` requests (200,000) in all; their offsets and
   rotations come from different generators, so their simulated throughputs (MB/s of
   simulated time) agree within a few per cent, not to the bit: more than 5 % apart fails the
   script. The ratio is of requests simulated per wall second, iowatt/SimPy, each repeat's
   pair and the medians, the sides taking turns. Goal: ≥ 100, as for the other simulators
   beside SimPy. The iowatt side does more than the peer: its CPU station (an event per task
   between its chunk and the next, here of 0 s), the draw of every task's profile, the node's
   energy and the task records.
2. Scale, no peer: `--nodes` (1,000) × `--tasks` (100,000) of a shipped study set (`--set`
   mixed, its types in its order, cycled) at k = 2 on node.toml's hdd (barracuda-es2 under
   CFQ), the shipped spread and one seed, through the same engine call: wall time, requests
   simulated and requests per wall second, a measured figure rather than a ratio.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _smoke import alternate, busy_jiffies, fail, parse, python_peer, ratio_line, service_time
from iowatt._engine import tasks_simulate
from iowatt.sim.disks import load_disks
from iowatt.sim.tasks import engine_disk, engine_type, load_node, plan

MODEL = "barracuda-es2"
REQUEST = 128 * 1024
BLOCK = 4096
AGREE = 0.05


def load_line() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} / {five:.2f} / {fifteen:.2f}, {os.cpu_count()} CPUs"


def spread(values: list[float], digits: int = 2, scale: float = 1.0) -> str:
    """``median (min–max)`` of ``values`` divided by ``scale``."""
    v = [x / scale for x in values]
    return f"{statistics.median(v):,.{digits}f} ({min(v):,.{digits}f}–{max(v):,.{digits}f})"


def own_cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


# --- part 1: the disk station ---------------------------------------------------------------


def station_config(readers: int, per_reader: int, seed: int) -> dict[str, Any]:
    """The engine's config: `readers` tasks of `per_reader` requests each on one FIFO disk."""
    input_mb = per_reader * REQUEST / 1e6
    entry = {"model": MODEL, "scheduler": "none", "ncq_depth": 1}
    node = {**load_node(None, [])["node"], "cores": 1}
    reader = {
        "cpu_s": 0.0,
        "input_mb": input_mb,
        "request_kb": REQUEST / 1024,
        "pattern": "scattered",
        "memory_gb": 0.0,
    }
    return {
        "node": {**node, "disk": engine_disk("hdd", entry, load_disks(None))},
        "types": [engine_type("reader", reader)],
        "queue": [0] * readers,
        "per_core": readers,
        "nodes": 1,
        # One chunk per task, a whole number of requests: each request is 128 KiB (chunks of
        # node.toml's 4 MB would cut every 31st short).
        "chunk_mb": input_mb,
        "spread": 0.0,
        "seed": seed,
    }


def iowatt_station(readers: int, per_reader: int, seed: int) -> tuple[int, float, float]:
    """(requests, simulated s, wall s) on the engine."""
    config = station_config(readers, per_reader, seed)
    t = time.perf_counter()
    r = tasks_simulate(config)
    wall = time.perf_counter() - t
    assert r["requests"] == readers * per_reader, (r["requests"], readers * per_reader)
    return r["requests"], r["makespan_s"], wall


def simpy_station(
    m: dict[str, Any], readers: int, per_reader: int, seed: int
) -> tuple[int, float, float]:
    """(requests, simulated s, wall s) of the same closed model on SimPy."""
    import simpy

    rng = random.Random(seed)
    service_s = service_time(m)
    file_bytes = per_reader * REQUEST
    stride = math.ceil(file_bytes / BLOCK) * BLOCK
    blocks = (file_bytes - REQUEST) // BLOCK + 1
    head = 0
    served = 0

    def reader(env: simpy.Environment, disk: simpy.Resource, base: int) -> Any:
        nonlocal head, served
        for _ in range(per_reader):
            offset = base + rng.randrange(blocks) * BLOCK
            with disk.request() as req:
                yield req
                rotation = 0.0 if offset == head else rng.random()
                took = service_s(head, offset, REQUEST, rotation)
                head = offset + REQUEST
                yield env.timeout(took)
            served += 1

    t = time.perf_counter()
    env = simpy.Environment()
    disk = simpy.Resource(env, capacity=1)
    for i in range(readers):
        env.process(reader(env, disk, i * stride))
    env.run()
    return served, env.now, time.perf_counter() - t


def station(readers: int, requests: int, repeat: int, seed: int, has_simpy: bool) -> None:
    m = load_disks(None)[MODEL]
    per_reader = requests // readers
    if readers * math.ceil(per_reader * REQUEST / BLOCK) * BLOCK > m["capacity_gb"] * 1e9:
        fail(
            f"{readers} files of {per_reader:,} requests do not fit on {MODEL}", "fewer --requests"
        )
    n = readers * per_reader
    print(f"1. disk station: {readers} tasks × {per_reader:,} scattered 128 KiB requests "
          f"({n:,} in all, files of {per_reader * REQUEST / 1e9:.2f} GB), one FIFO {MODEL}, "
          f"{repeat} repeats, seeds {seed}..{seed + repeat - 1}")  # fmt: skip
    runs: dict[str, list[tuple[int, float, float]]] = {"iowatt": [], "simpy": []}
    for rep in range(repeat):
        for side in alternate(rep, ["simpy", "iowatt"] if has_simpy else ["iowatt"]):
            if side == "simpy":
                runs[side].append(simpy_station(m, readers, per_reader, seed + rep))
            else:
                runs[side].append(iowatt_station(readers, per_reader, seed + rep))
    rate, mb_s = {}, {}
    for side, label in (("simpy", "SimPy"), ("iowatt", "iowatt")):
        if not runs[side]:
            continue
        rate[side] = [req / wall for req, _, wall in runs[side]]
        mb_s[side] = [req * REQUEST / 1e6 / sim for req, sim, _ in runs[side]]
        walls = [wall for *_, wall in runs[side]]
        print(f"   {label:>6}: {runs[side][0][0]:,} requests; wall {spread(walls, 3)} s; "
              f"{spread(rate[side], 0)} requests/s; "
              f"simulated {spread(mb_s[side])} MB/s")  # fmt: skip
    print("   (iowatt's side also runs its CPU station, the tasks' draws and their bookkeeping)")
    if not has_simpy:
        ratio_line("station requests/s iowatt/SimPy", None, "≥ 100", "simpy")
        ratio_line("station simulated MB/s iowatt/SimPy", None, "1 ± 0.05", "simpy")
        return
    pairs = [i / s for i, s in zip(rate["iowatt"], rate["simpy"], strict=True)]
    agree = [i / s for i, s in zip(mb_s["iowatt"], mb_s["simpy"], strict=True)]
    print(f"   iowatt/SimPy per repeat: requests/s {', '.join(f'{p:,.1f}' for p in pairs)}; "
          f"simulated MB/s {', '.join(f'{a:.4f}' for a in agree)}")  # fmt: skip
    med = statistics.median(rate["iowatt"]) / statistics.median(rate["simpy"])
    ratio_line("station requests/s iowatt/SimPy", med, "≥ 100")
    agreed = statistics.median(mb_s["iowatt"]) / statistics.median(mb_s["simpy"])
    ratio_line("station simulated MB/s iowatt/SimPy", agreed, "1 ± 0.05")
    worst = max(agree, key=lambda a: abs(a - 1))
    if abs(worst - 1) > AGREE:
        print(
            f"error: the two models' simulated throughputs differ by {worst - 1:+.1%} "
            f"(more than {AGREE:.0%}): they no longer model the same disk",
            file=sys.stderr,
        )
        print("hint: compare simpy_station with `charge` in crates/iowatt-sim/src/disk/model.rs "
              "and `ask` in crates/iowatt-sim/src/tasks/node.rs", file=sys.stderr)  # fmt: skip
        raise SystemExit(1)


# --- part 2: scale ------------------------------------------------------------------------


def scale(set_name: str, nodes: int, tasks: int, repeat: int, seed: int) -> None:
    p = plan(set_name, per_core="2", disk="hdd", nodes=nodes, results=Path(tempfile.gettempdir()))
    s = p.sets[set_name]  # one batch: the --set choices are not sets of sets
    one = s.batches[0][: s.tasks_per_job]
    order = list(dict.fromkeys(one))
    config = {
        "node": p.node("hdd"),
        "types": [engine_type(t, p.types[t]) for t in order],
        "queue": [order.index(one[i % len(one)]) for i in range(tasks)],
        "per_core": 2,
        "nodes": nodes,
        "chunk_mb": p.model["chunk_mb"],
        "spread": p.spread,
        "seed": seed,
    }
    print(f"\n2. scale: {nodes:,} nodes × {tasks:,} tasks of `{set_name}` (its {len(one)} a job, "
          f"cycled), k = 2, hdd ({p.disk_model('hdd')} under CFQ), spread {p.spread}, seed "
          f"{seed}, {repeat} repeats")  # fmt: skip
    print("   no peer simulates this: a measured figure, not a ratio")
    walls, results = [], []
    for _ in range(repeat):
        t = time.perf_counter()
        results.append(tasks_simulate(config))
        walls.append(time.perf_counter() - t)
    r = results[0]
    requests = r["requests"]
    assert all(x["requests"] == requests for x in results), "one seed, one run"
    print(f"   wall {spread(walls)} s ({', '.join(f'{w:.2f}' for w in walls)}); "
          f"{requests:,} requests, {spread([requests / w for w in walls], 2, 1e6)} M requests/s; "
          f"makespan {r['makespan_s'] / 3600:.2f} h, "
          f"{r['tasks'] * 3600 / r['makespan_s']:,.0f} tasks/h")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--readers", type=int, default=16, help="part 1's tasks at once [16]")
    ap.add_argument("--requests", type=int, default=200_000, help="part 1's, per side [200,000]")
    ap.add_argument("--nodes", type=int, default=1000, help="part 2's [1,000]")
    ap.add_argument("--tasks", type=int, default=100_000, help="part 2's [100,000]")
    ap.add_argument("--set", default="mixed", choices=("io", "cpu", "mixed"), help="part 2's")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3, help="runs of each part and side [3]")
    args = parse(ap, {"requests": 16_000, "nodes": 10, "tasks": 1_000, "repeat": 3})
    for name, value, least in (("--readers", args.readers, 1), ("--repeat", args.repeat, 1),
                               ("--nodes", args.nodes, 1), ("--tasks", args.tasks, 1),
                               ("--requests", args.requests, args.readers)):  # fmt: skip
        if value < least:
            fail(f"`{name} {value}` is below {least}", f"`{name}` takes {least} or more")
    print(f"machine before: {load_line()}")
    has_simpy = python_peer("simpy")
    before, cpu0, t0 = busy_jiffies(), own_cpu_s(), time.perf_counter()
    station(args.readers, args.requests, args.repeat, args.seed, has_simpy)
    scale(args.set, args.nodes, args.tasks, args.repeat, args.seed)
    after, cpu, span = busy_jiffies(), own_cpu_s() - cpu0, time.perf_counter() - t0
    if before is not None and after is not None:
        used = (after[0] - before[0]) / os.sysconf("SC_CLK_TCK")
        other = max(0.0, used - cpu) / span
        print(f"\nwhile it ran ({span:.0f} s) the rest of the machine kept {other:.2f} CPUs "
              f"busy (this script {cpu / span:.2f})")  # fmt: skip
    print(f"machine after: {load_line()}")
    if args.smoke:
        print("(smoke: a check that it runs; these figures are not to be quoted)")


if __name__ == "__main__":
    main()
