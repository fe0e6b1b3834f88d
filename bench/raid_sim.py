#!/usr/bin/env python3
"""The RAID power-policy simulator (crates/iowatt-sim/src/raid) beside SimPy, and at scale.

Usage::

    python bench/raid_sim.py                      # ~45 s
    python bench/raid_sim.py --requests 50000 --big-requests 1000000 --repeat 1
    python bench/raid_sim.py --smoke              # 5,000 and 50,000 requests, seconds
    python bench/raid_sim.py --day-only           # part 3 alone, ~12 s

The array is the `iowatt sim raid` default: 4 × ultrastar-36z15 striped in 64 KiB units
(raid.toml), its config dicts built as `RaidPlan.array()` and `RaidPlan.spec()` build them.
The trace is synthetic and seeded: exponential gaps (mean `--gap-ms`, 15 ms), one in 10,000
followed by a quiet spell (exponential, mean 60 s) so that LRU has idle disks to spin down;
offsets uniform over the first 45 % of the array (4 KiB aligned: PARAID's lowest gear, 2 of 4
disks, holds the rest as replicas, so the data may fill at most half); sizes log-uniform from
4 KiB to 1 MiB.

1. RAID-0 with LRU spin-down (the disk's break-even timeout) on the engine
   (`iowatt._engine.raid_simulate`) and on a SimPy model of the same thing written here from
   the engine's source: one FIFO queue per disk, a request split into per-disk extents by the
   striping and complete when its last extent is served, service = overhead + seek(distance)
   + rotation · 60/rpm + bytes / rate(zone), rotation uniform per request from each disk's own
   seeded stream (Python's `random`, so not the engine's numbers: means are compared, not
   bits), an idle disk spun down after the timeout, a request to a spun-down disk waiting for
   it to spin up, energy by state until the last request completes. Both print mean and
   median latency (first extent) and completion, the energy and the spin-downs; the ratio is
   of requests simulated per second, each side's best of `--repeat` runs (3), seed s, s+1, ...
   on both. Goal: iowatt ≥ 100× SimPy.
2. `--big-requests` (3.5 M: a month of a busy 1990s web server) through raid0, lru and paraid
   (raid.toml's defaults). The trace's generation (NumPy) and its column buffers are timed on
   their own. Goal: ≤ 10 s per personality. Then the peak RSS (GNU time, `apt-get install
   time`) of a fresh interpreter that reads the columns and runs the three personalities,
   keeping each result (as `iowatt sim raid` does), at 0, half and all of those requests: what
   it adds per request is the trace and the per-request outputs, and nothing else.
3. The study's day (issue 39): `iowatt trace generate --preset study-web` (30 h, ~21,000
   requests, its 509,000-file tree written beside the log), then `iowatt sim raid` on it with
   the tree, 8× speed-up, `--day-seeds` seeds (3) and a 30 s timeout, `--day-repeat` times (3)
   in a child under GNU time: the median and spread of the wall times, the child's peak RSS,
   the per-personality table of its `--json` and the size of raid_requests.parquet. No goal: a
   figure to quote. The machine's other load (load average; CPU the rest of the machine used
   while the children ran, from /proc/stat) is printed beside the times.

--smoke runs part 3 at `--scale 0.01` (a few hundred requests) and one seed, and checks only
that it runs and that its JSON has the three personalities.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from _smoke import (
    alternate,
    busy_jiffies,
    parse,
    python_peer,
    ratio_line,
    render_table,
    service_time,
)
from iowatt._engine import raid_simulate
from iowatt.sim.disks import disk_model
from iowatt.sim.model import load_overridden

MODEL = "ultrastar-36z15"
DISKS = 4
PERSONALITIES = ("raid0", "lru", "paraid")
U64 = "<u8"

# A child that only runs the engine: the columns from files, every personality, results kept.
CHILD = """
import json, sys
from pathlib import Path
from iowatt._engine import raid_simulate
d, n, seed = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
cfg = json.loads((d / "config.json").read_text())
cols = {}
for k in ("t_ns", "offset", "bytes"):
    with open(d / f"{k}.u64", "rb") as f:
        cols[k] = f.read(8 * n)
kept = [raid_simulate({"array": cfg["array"], "spec": s}, cols, n, seed) for s in cfg["specs"]]
print(sum(len(r["latency_ns"]) + len(r["completion_ns"]) for r in kept) // 8)
"""


def config() -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The array and the three personalities' specs, as RaidPlan.array() and .spec() give them."""
    params = load_overridden("raid.toml", None, "--params")
    a = params["array"]
    array = {
        "model": disk_model(MODEL), "model_name": MODEL, "disks": DISKS,
        "stripe_bytes": round(a["stripe_kb"] * 1024), "bin_s": a["bin_s"], "cache_bytes": 0,
    }  # fmt: skip
    t = params["lru"]["timeout_s"]
    p = dict(params["paraid"])
    p["cycles_per_day"] = p["cycles_per_day"] if p["cycles_per_day"] > 0 else None
    p["gears"] = [int(g) for g in p["gears"]]
    specs = {
        "raid0": {"personality": "raid0"},
        "lru": {"personality": "lru", "timeout_s": t if t > 0 else None},
        "paraid": {"personality": "paraid", **p},
    }
    return array, specs


def watts(power: dict[str, float]) -> float:
    """disk.rs `Power::watts`: as given, or 12 V · I₁₂ + 5 V · I₅."""
    return power["w"] if "w" in power else 12.0 * power.get("a12", 0.0) + 5.0 * power.get("a5", 0.0)


def capacity_bytes(m: dict[str, Any]) -> int:
    return int(m["capacity_gb"] * 1e9)


def break_even_s(m: dict[str, Any]) -> float:
    """disk.rs `break_even_s`: LRU's timeout when raid.toml leaves it at 0."""
    idle, standby = watts(m["idle"]), watts(m["standby"])
    trip = m["spin_down_s"] + m["spin_up_s"]
    if idle <= standby:
        return math.inf
    return max((m["spin_down_j"] + m["spin_up_j"] - standby * trip) / (idle - standby), trip)


def make_trace(n: int, seed: int, array_bytes: int, gap_ms: float) -> tuple[np.ndarray, ...]:
    """(t_ns, offset, bytes) as uint64: exponential gaps, some followed by a quiet spell."""
    rng = np.random.default_rng(seed)
    gaps = rng.exponential(gap_ms * 1e6, n)
    quiet = rng.random(n) < 1e-4
    gaps[quiet] += rng.exponential(60e9, int(quiet.sum()))
    gaps[0] = 0.0
    t_ns = np.round(np.cumsum(gaps)).astype(np.uint64)
    size = np.exp(rng.uniform(0.0, math.log(257), n)).astype(np.uint64) * 4096  # 4 KiB–1 MiB
    offset = rng.integers(0, (array_bytes - 2**20) // 4096, n, dtype=np.uint64) * 4096
    return t_ns, offset, size


def columns(t_ns: np.ndarray, offset: np.ndarray, size: np.ndarray) -> dict[str, bytes]:
    """The trace as requests.py `Requests.columns()` hands it to the engine."""
    return {
        "t_ns": t_ns.astype(U64).tobytes(),
        "offset": offset.astype(U64).tobytes(),
        "bytes": size.astype(U64).tobytes(),
    }


def engine(array: dict[str, Any], spec: dict[str, Any], cols: dict[str, bytes], n: int,
           seed: int) -> tuple[float, dict[str, Any]]:  # fmt: skip
    start = time.perf_counter()
    r = raid_simulate({"array": array, "spec": spec}, cols, n, seed)
    return time.perf_counter() - start, r


def simpy_lru(
    m: dict[str, Any], trace: tuple[np.ndarray, ...], seed: int, timeout_s: float, unit: int
) -> tuple[float, dict[str, Any]]:
    """(seconds, what the engine returns, in its units) of RAID-0 with LRU spin-down on SimPy,
    time in integer ns as the engine keeps it (every duration rounded to ns the same way)."""
    import simpy

    t_ns, offsets, sizes = (a.tolist() for a in trace)
    n = len(t_ns)
    service_s = service_time(m)
    power = {
        "idle": watts(m["idle"]), "busy": watts(m["active"]), "standby": watts(m["standby"]),
        "down": m["spin_down_j"] / m["spin_down_s"] if m["spin_down_s"] > 0 else 0.0,
        "up": m["spin_up_j"] / m["spin_up_s"] if m["spin_up_s"] > 0 else 0.0,
    }  # fmt: skip
    timeout_ns = int(min(timeout_s, 1e9) * 1e9)
    down_ns, up_ns = round(m["spin_down_s"] * 1e9), round(m["spin_up_s"] * 1e9)

    env = simpy.Environment()
    queues = [simpy.Store(env) for _ in range(DISKS)]
    remaining, latency, completion = [0] * n, [-1] * n, [0] * n
    state, since = ["idle"] * DISKS, [0] * DISKS
    energy, cycles = [0.0] * DISKS, [0] * DISKS
    served, finished = [0], env.event()

    def enter(d: int, nxt: str) -> None:
        energy[d] += power[state[d]] * (env.now - since[d]) / 1e9
        state[d], since[d] = nxt, env.now

    def disk(d: int) -> Any:
        store, rng, head = queues[d], random.Random(seed << 6 | d), 0
        while True:
            if store.items:
                i, offset, nbytes = yield store.get()
            else:
                enter(d, "idle")
                get = store.get()
                if get not in (yield get | env.timeout(timeout_ns)):
                    # Idle past the timeout: spin down, and up again for the next request.
                    enter(d, "down")
                    cycles[d] += 1
                    yield env.timeout(down_ns)
                    enter(d, "standby")
                    yield get
                    enter(d, "up")
                    yield env.timeout(up_ns)
                i, offset, nbytes = get.value
            enter(d, "busy")
            s = service_s(head, offset, nbytes, rng.random())
            head = offset + nbytes
            yield env.timeout(round(s * 1e9))
            if latency[i] < 0:
                latency[i] = env.now - t_ns[i]
            remaining[i] -= 1
            if remaining[i] == 0:
                completion[i] = env.now - t_ns[i]
                served[0] += 1
                if served[0] == n:
                    finished.succeed()

    def arrivals() -> Any:
        now = 0
        for i in range(n):
            if t_ns[i] > now:
                yield env.timeout(t_ns[i] - now)
                now = t_ns[i]
            # personality.rs `Striping::route`: each disk's units of a request are one extent.
            extents: dict[int, list[int]] = {}
            at, end = offsets[i], offsets[i] + max(sizes[i], 1)
            while at < end:
                stripe, within = divmod(at, unit)
                d = stripe % DISKS
                take = min(unit - within, end - at)
                on_disk = stripe // DISKS * unit + within
                if d in extents:
                    extents[d][1] = on_disk + take - extents[d][0]
                else:
                    extents[d] = [on_disk, take]
                at += take
            remaining[i] = len(extents)
            for d, (on_disk, nbytes) in extents.items():
                queues[d].put((i, on_disk, nbytes))

    for d in range(DISKS):
        env.process(disk(d))
    env.process(arrivals())
    start = time.perf_counter()
    env.run(until=finished)
    seconds = time.perf_counter() - start
    for d in range(DISKS):
        enter(d, state[d])
    return seconds, {
        "latency": np.array(latency), "completion": np.array(completion),
        "energy_j": energy, "spin_cycles": cycles, "end_ns": env.now,
    }  # fmt: skip


def figures(latency: np.ndarray, completion: np.ndarray) -> str:
    return (f"latency mean {latency.mean() / 1e6:.3f} ms, median {np.median(latency) / 1e6:.3f} ms;"
            f" completion mean {completion.mean() / 1e6:.3f} ms, "
            f"median {np.median(completion) / 1e6:.3f} ms")  # fmt: skip


def peak_rss_mib(folder: Path, n: int, seed: int) -> float:
    """Peak RSS of a fresh interpreter running only the engine on the first `n` requests.

    From GNU time: a child's own rusage would start at this interpreter's RSS, which Linux
    carries into a forked child across its exec."""
    proc = subprocess.run(
        ["/usr/bin/time", "-f", "maxrss_kib %M", sys.executable, "-c", CHILD, str(folder),
         str(n), str(seed)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    assert int(proc.stdout) == 2 * len(PERSONALITIES) * n, proc.stdout
    return float(proc.stderr.strip().splitlines()[-1].split()[1]) / 1024


def load_line() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} / {five:.2f} / {fifteen:.2f}, {os.cpu_count()} CPUs"


def timed_child(cmd: list[str]) -> tuple[float, float, float, subprocess.CompletedProcess[str]]:
    """(wall s, peak RSS MiB, CPU s) of one child under GNU time, and what it printed.

    GNU time reports its own child's maximum RSS: this interpreter's RUSAGE_CHILDREN would be the
    largest of every child so far, and a child forked from here starts at this one's RSS."""
    with tempfile.NamedTemporaryFile(prefix="raid-day-time-", mode="r") as out:
        start = time.perf_counter()
        proc = subprocess.run(
            ["/usr/bin/time", "-o", out.name, "-f", "%M %U %S", *cmd],
            capture_output=True, text=True,
        )  # fmt: skip
        wall = time.perf_counter() - start
        if proc.returncode != 0:
            sys.exit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
        kib, user, system = out.read().strip().splitlines()[-1].split()
    return wall, int(kib) / 1024, float(user) + float(system), proc


def seconds_text(s: float) -> str:
    return f"{s * 1e3:,.1f} ms" if s < 1 else f"{s:,.2f} s"


def study_day(scale: float, seeds: int, repeat: int, smoke: bool) -> None:
    """Part 3: the study's day generated, then `iowatt sim raid` on it, timed `repeat` times."""
    iowatt = shutil.which("iowatt")
    if iowatt is None:
        sys.exit("part 3 needs the iowatt CLI on PATH: pip install -e . at the repository root")
    which = "the study's day" if scale == 1 else f"the study's day at --scale {scale:g}"
    print(f"\n3. {which}: iowatt trace generate --preset study-web, then\n   iowatt sim "
          f"raid (tree, 8×, {seeds} seed{'s' * (seeds != 1)}, 30 s timeout), {repeat} "
          f"runs")  # fmt: skip
    print(f"   before: {load_line()}")
    with tempfile.TemporaryDirectory(prefix="raid-day-") as tmp:
        d = Path(tmp)
        log, tree, results = d / "day.log", d / "day.tree.parquet", d / "r"
        gen = [iowatt, "trace", "generate", "--preset", "study-web", "-o", str(log)]
        if scale != 1:
            gen += ["--scale", f"{scale:g}"]
        start = time.perf_counter()
        subprocess.run(gen, check=True, capture_output=True, text=True)
        made = time.perf_counter() - start
        lines = sum(1 for _ in log.open("rb"))
        print(f"   generated in {made:.2f} s: {lines:,} log lines ({log.stat().st_size / 2**20:.2f}"
              f" MiB), tree {tree.stat().st_size / 2**20:.1f} MiB")  # fmt: skip
        sim = [iowatt, "sim", "raid", str(log), "--tree", str(tree), "--speedup", "8",
               "--seeds", str(seeds), "--timeout", "30s", "--no-report", "--results",
               str(results), "--json"]  # fmt: skip
        walls, peaks, cpu = [], [], 0.0
        before, t0 = busy_jiffies(), time.perf_counter()
        for _ in range(repeat):
            wall, peak, used, proc = timed_child(sim)
            walls.append(wall)
            peaks.append(peak)
            cpu += used
            rows = json.loads(proc.stdout)
            got = sorted(r["personality"] for r in rows)
            assert got == sorted(PERSONALITIES), f"the JSON's personalities are {got}"
            assert all(r["seeds"] == seeds for r in rows), [r["seeds"] for r in rows]
        span, after = time.perf_counter() - t0, busy_jiffies()
        runs = sorted(results.glob("*/raid_requests.parquet"), key=lambda f: f.stat().st_mtime)
        assert len(runs) == repeat, f"{len(runs)} runs in {results}, {repeat} expected"
        import pyarrow.parquet as pq

        n_rows = pq.ParquetFile(runs[-1]).metadata.num_rows
        size = runs[-1].stat().st_size
        manifest = json.loads((runs[-1].parent / "manifest.json").read_text())
    trace = manifest["config"]["trace"]
    assert n_rows == trace["requests"] * seeds * len(PERSONALITIES), (n_rows, trace["requests"])
    print(f"   {trace['requests']:,} requests simulated ({trace['left_out']:,} of the log's lines "
          f"left out: no disk I/O), {trace['files']:,} files in the tree")  # fmt: skip

    table = [["personality", "saving", "latency p50", "p99", "max", "success", "timeouts",
              "spin cycles", "most a day (per disk)", "rated a day"]]  # fmt: skip
    for r in sorted(rows, key=lambda r: PERSONALITIES.index(r["personality"])):
        lat = r["latency_s"]
        table.append([
            r["personality"], f"{r['energy_saving_vs_raid0']:.1%}", seconds_text(lat["p50"]),
            seconds_text(lat["p99"]), seconds_text(lat["max"]), f"{r['success_rate']:.2%}",
            f"{r['timeouts']:g}", f"{sum(r['spin_cycles']):g}",
            " ".join(str(c) for c in r["most_cycles_a_day"]),
            f"{r['rated_cycles_per_day']:.1f}",
        ])  # fmt: skip
    print("   (spin cycles: all disks, mean of the seeds; most a day: each disk's busiest day)")
    for line in render_table(table, right=set(range(1, 10))):
        print(f"   {line}")
    print(f"   raid_requests.parquet: {n_rows:,} rows ({trace['requests']:,} × {seeds} seed"
          f"{'s' * (seeds != 1)} × {len(PERSONALITIES)}), {size / 2**20:.2f} MiB")  # fmt: skip
    med = statistics.median(walls)
    print(f"   wall time of iowatt sim raid (a fresh process each, import included):\n   median "
          f"{med:.2f} s, spread {min(walls):.2f}–{max(walls):.2f} s "
          f"({', '.join(f'{w:.2f}' for w in walls)}); peak RSS {max(peaks):,.0f} MiB "
          f"(runs {', '.join(f'{p:,.0f}' for p in peaks)} MiB)")  # fmt: skip
    if before is not None and after is not None:
        hz = os.sysconf("SC_CLK_TCK")
        other = max(0.0, (after[0] - before[0]) / hz - cpu) / span
        print(f"   while they ran the rest of the machine kept {other:.2f} CPUs busy "
              f"(all CPU used {(after[0] - before[0]) / hz / span:.2f}, these runs "
              f"{cpu / span:.2f})")  # fmt: skip
    print(f"   after: {load_line()}")
    if smoke:
        print("   (smoke: a check that it runs; these times are not to be quoted)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=200_000, help="the SimPy comparison's")
    ap.add_argument("--big-requests", type=int, default=3_500_000)
    ap.add_argument("--gap-ms", type=float, default=15.0, help="mean gap between requests")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3, help="runs per side, the best kept")
    ap.add_argument("--day-scale", type=float, default=1.0, help="part 3's --scale [1]")
    ap.add_argument("--day-seeds", type=int, default=3, help="part 3's --seeds [3]")
    ap.add_argument("--day-repeat", type=int, default=3, help="part 3's timed runs [3]")
    ap.add_argument("--day-only", action="store_true", help="part 3 alone")
    args = parse(ap, {"requests": 5_000, "big_requests": 50_000, "repeat": 2, "day_scale": 0.01,
                      "day_seeds": 1})  # fmt: skip
    repeat = max(1, args.repeat)
    if shutil.which("/usr/bin/time") is None:
        sys.exit("the peak RSS needs GNU time: apt-get install time")
    print(f"machine: {load_line()}")
    if args.day_only:
        study_day(args.day_scale, args.day_seeds, max(1, args.day_repeat), args.smoke)
        return
    has_simpy = python_peer("simpy")

    array, specs = config()
    m, unit = array["model"], array["stripe_bytes"]
    # The data fills 45 % of the array: PARAID's 2-of-4 gear keeps replicas in the rest.
    array_bytes = capacity_bytes(m) * DISKS * 45 // 100
    timeout_s = specs["lru"]["timeout_s"] or break_even_s(m)

    n = args.requests
    trace = make_trace(n, args.seed, array_bytes, args.gap_ms)
    cols = columns(*trace)
    span_h = trace[0][-1] / 3.6e12
    print(f"1. RAID-0 with LRU spin-down ({timeout_s:.2f} s break-even), {DISKS} × {MODEL}, "
          f"{unit // 1024} KiB stripes;\n   {n:,} requests over {span_h:.2f} simulated h; "
          f"seeds {args.seed}..{args.seed + repeat - 1}")  # fmt: skip
    s_seconds = seconds = math.inf
    s_runs, runs = [], []
    for k in range(repeat):
        seed = args.seed + k
        for side in alternate(k, ["simpy", "iowatt"] if has_simpy else ["iowatt"]):
            if side == "simpy":
                s_run, s_out = simpy_lru(m, trace, seed, timeout_s, unit)
                s_seconds = min(s_seconds, s_run)
                s_runs.append(s_out)
            else:
                run, out = engine(array, specs["lru"], cols, n, seed)
                seconds = min(seconds, run)
                runs.append(out)
    sides = {
        "SimPy": (s_seconds, [(r["latency"], r["completion"], r) for r in s_runs]),
        "iowatt": (seconds, [(np.frombuffer(r["latency_ns"], U64).astype(np.int64),
                              np.frombuffer(r["completion_ns"], U64).astype(np.int64), r)
                             for r in runs]),
    }  # fmt: skip
    if not has_simpy:
        del sides["SimPy"]
    means = {}
    for side, (best, outs) in sides.items():
        lat = np.concatenate([o[0] for o in outs])
        comp = np.concatenate([o[1] for o in outs])
        energy = float(np.mean([sum(o[2]["energy_j"]) for o in outs]))
        spins = round(float(np.mean([sum(o[2]["spin_cycles"]) for o in outs])))
        means[side] = (comp.mean(), np.median(comp), energy)
        print(
            f"   {side:>6}: {best:6.3f} s ({n / best:>9,.0f} requests/s), "
            f"{energy / 1e3:,.1f} kJ, {spins} spin-downs\n           {figures(lat, comp)}"
        )
    if has_simpy:
        (sm, smed, se), (im, imed, ie) = means["SimPy"], means["iowatt"]
        off = max(abs(im / sm - 1), abs(imed / smed - 1), abs(ie / se - 1))
        print(f"   completion mean {im / sm - 1:+.2%}, median {imed / smed - 1:+.2%}, energy "
              f"{ie / se - 1:+.2%} iowatt vs SimPy "
              f"({'same model' if off < 0.03 else 'apart: check the models'})")  # fmt: skip
    ratio_line(
        "LRU requests/s iowatt/SimPy", s_seconds / seconds if has_simpy else None, "≥ 100", "simpy"
    )

    n = args.big_requests
    print(f"\n2. {n:,} requests, raid0, lru and paraid (raid.toml), seed {args.seed}")
    start = time.perf_counter()
    big = make_trace(n, args.seed, array_bytes, args.gap_ms)
    made = time.perf_counter() - start
    start = time.perf_counter()
    cols = columns(*big)
    packed = time.perf_counter() - start
    print(f"   trace generated in {made:.2f} s (NumPy), columns packed in {packed:.2f} s; "
          f"{big[0][-1] / 3.6e12:,.1f} simulated h")  # fmt: skip
    worst = 0.0
    for name in PERSONALITIES:
        run, r = engine(array, specs[name], cols, n, args.seed)
        worst = max(worst, run)
        comp = np.frombuffer(r["completion_ns"], U64)
        shifts = f", gear shifts {len(r['gears']) - 1}" if r["gears"] else ""
        print(f"   {name:>6}: {run:5.2f} s ({n / run:>11,.0f} requests/s); completion mean "
              f"{comp.mean() / 1e6:8.3f} ms; {sum(r['energy_j']) / 1e6:.3f} MJ, "
              f"{sum(r['spin_cycles'])} spin-downs{shifts}")  # fmt: skip
    print(f"   slowest {worst:.2f} s (goal ≤ 10 s): {'met' if worst <= 10 else 'not met'}")
    ratio_line(f"slowest personality s / 10 s at {n:,} requests", worst / 10, "≤ 1")
    del r, comp

    with tempfile.TemporaryDirectory(prefix="raid-sim-") as tmp:
        folder = Path(tmp)
        (folder / "config.json").write_text(
            json.dumps({"array": array, "specs": [specs[p] for p in PERSONALITIES]})
        )
        for k, v in cols.items():
            (folder / f"{k}.u64").write_bytes(v)
        del cols, big
        sizes = (0, n // 2, n)
        rss = {k: peak_rss_mib(folder, k, args.seed) for k in sizes}
    half, full = sizes[1], sizes[2]
    per_request = (rss[full] - rss[half]) * 2**20 / (full - half)
    # What a request costs by design at the peak (in the last personality's call, while its
    # outputs are copied to Python): its trace columns as Python bytes and the engine's copy,
    # 8 + 8 B of outputs for each personality kept, and the last one's Vecs beside their copy.
    p = len(PERSONALITIES)
    expected = 24 + 24 + 16 * p + 16
    print(f"   peak RSS of a child running only the engine (all {p} personalities, results "
          f"kept):\n   {rss[0]:.1f} MiB at 0, {rss[half]:.1f} MiB at {half:,}, "
          f"{rss[full]:.1f} MiB at {full:,} requests")  # fmt: skip
    verdict = (
        "nothing else grows per request or per event"
        if abs(per_request - expected) <= 0.15 * expected
        else "more than the trace and outputs account for"
    )
    print(f"   {per_request:.1f} B per request; by design {expected} B = the trace's 24 B in "
          f"Python + 24 B the engine's copy\n   + {p} × 16 B of latency and completion kept + 16 B "
          f"while the last is copied out:\n   {verdict}")  # fmt: skip

    study_day(args.day_scale, args.day_seeds, max(1, args.day_repeat), args.smoke)


if __name__ == "__main__":
    main()
