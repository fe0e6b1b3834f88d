#!/usr/bin/env python3
"""The simulation core (crates/iowatt-sim) beside SimPy and NumPy on the same models.

Usage::

    python bench/sim_core.py                      # ~20 s
    python bench/sim_core.py --customers 200000 --ticks 200000 --repeat 1
    python bench/sim_core.py --smoke              # seconds: that it runs, not how fast

In 1 and 2 each side's time is the best of `--repeat` runs (3), the two sides taking turns.

1. Events: the M/M/1 queue (λ = 1/ms, μ = 2/ms, FIFO, one server) with the same number of
   customers and the same seed, on the event core (the `mm1` example, built in release) and
   on SimPy (PyPI `simpy`). Both report their mean time in the system, which must be about
   1 / (μ − λ) = 1 ms. SimPy counts six events per customer (its processes, request, timeout,
   release), the core two (arrival, departure), so the ratio is of customers simulated per
   second: the same model's wall time. Goal: iowatt ≥ 100× SimPy.
2. Thermal ticks: the same 30-node RC network (the `thermal` example's `chain`), discretised
   for 1 ms steps with the same exact step matrices, advanced by the core and by NumPy
   (`A @ T + B @ P + b_air · T_amb` per tick). Both must end at the same temperatures.
   Goal: iowatt ≥ 20× NumPy.
3. The full server: one simulated hour of the shipped model (8 cores, 8 DIMMs, 1 ms ticks) on
   one thread (the `server_hour` example: set W2 under FSTM, its service job scaled to run
   past the hour, every tick simulated). Goal: ≤ 3 s of wall time per simulated hour. The same
   run to two hours shows the peak RSS flat in simulated time (the series are 1 s bins, the
   events capped at 20,000 per run).
"""

from __future__ import annotations

import argparse
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import scipy.linalg

from _smoke import alternate, parse, python_peer, ratio_line

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "target" / "release" / "examples"


def build() -> None:
    subprocess.run(
        ["cargo", "build", "--release", "-q", "-p", "iowatt-sim", "--examples"],
        cwd=REPO,
        check=True,
    )


def core(example: str, *args: int) -> list[float]:
    out = subprocess.run(
        [str(EXAMPLES / example), *map(str, args)], check=True, capture_output=True, text=True
    ).stdout
    return [float(x) for x in out.split()]


def server_hour(hours: float) -> tuple[float, float, float]:
    """(simulated s, wall s, peak RSS in MiB) of the `server_hour` example's run.

    The peak RSS comes from GNU time: a child's own rusage (wait4, RUSAGE_CHILDREN) would
    start at this interpreter's RSS, which Linux carries into a forked child across its exec.
    """
    if shutil.which("/usr/bin/time") is None:
        sys.exit("the server run's peak RSS needs GNU time: apt-get install time")
    proc = subprocess.run(
        ["/usr/bin/time", "-f", "maxrss_kib %M", str(EXAMPLES / "server_hour"), str(hours)],
        check=True,
        capture_output=True,
        text=True,
    )
    simulated, wall = (float(x) for x in proc.stdout.split())
    rss_kib = float(proc.stderr.strip().splitlines()[-1].split()[1])
    return simulated, wall, rss_kib / 1024


def simpy_mm1(customers: int, seed: int) -> tuple[int, float, float]:
    """(events, seconds, mean time in the system in s), time in ms as the core's ns/1e6."""
    import simpy

    rng = random.Random(seed)
    env = simpy.Environment()
    server = simpy.Resource(env, capacity=1)
    total = [0.0]

    def customer(env: simpy.Environment) -> object:
        came = env.now
        with server.request() as req:
            yield req
            yield env.timeout(rng.expovariate(2.0))
        total[0] += env.now - came

    def source(env: simpy.Environment) -> object:
        for _ in range(customers):
            env.process(customer(env))
            yield env.timeout(rng.expovariate(1.0))

    env.process(source(env))
    start = time.perf_counter()
    events = 0
    while True:
        try:
            env.step()
        except simpy.core.EmptySchedule:
            break
        events += 1
    return events, time.perf_counter() - start, total[0] / customers / 1000


def chain(nodes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """C, G and the air conductances of the `thermal` example's network."""
    c = np.array([0.05 + 0.45 * (i % 4) / 3 for i in range(nodes)])
    g = np.zeros((nodes, nodes))
    for i in range(1, nodes):
        g[i - 1, i - 1] += 2.0
        g[i, i] += 2.0
        g[i - 1, i] -= 2.0
        g[i, i - 1] -= 2.0
    air = np.zeros(nodes)
    air[::3] = 0.5
    g += np.diag(air)
    return c, g, air


def numpy_ticks(nodes: int, ticks: int) -> tuple[float, float]:
    """(seconds, checksum) of the same exact 1 ms steps, advanced with NumPy."""
    c, g, air = chain(nodes)
    a = scipy.linalg.expm(-(g / c[:, None]) * 1e-3)
    b = (np.eye(nodes) - a) @ np.linalg.inv(g)
    b_air = b @ air
    power = np.array([5.0 if i % 3 == 0 else 0.5 for i in range(nodes)])
    t = np.full(nodes, 45.0)
    start = time.perf_counter()
    for _ in range(ticks):
        t = a @ t + b @ power + b_air * 45.0
    return time.perf_counter() - start, float(t.sum())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--customers", type=int, default=300_000)
    ap.add_argument("--ticks", type=int, default=300_000)
    ap.add_argument("--nodes", type=int, default=30)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3, help="runs per side, the best kept")
    args = parse(ap, {"customers": 20_000, "ticks": 20_000, "repeat": 2})
    repeat = max(1, args.repeat)
    has_simpy = python_peer("simpy")
    build()

    print(f"1. M/M/1, {args.customers:,} customers, seed {args.seed}")
    s_seconds = seconds = float("inf")
    for rep in range(repeat):
        for side in alternate(rep, ["simpy", "iowatt"] if has_simpy else ["iowatt"]):
            if side == "simpy":
                s_events, s_run, s_mean = simpy_mm1(args.customers, args.seed)
                s_seconds = min(s_seconds, s_run)
            else:
                events, run, mean = core("mm1", args.customers, args.seed)
                seconds = min(seconds, run)
    rate = events / seconds
    if has_simpy:
        s_rate = s_events / s_seconds
        print(f"   SimPy: {s_events:,} events in {s_seconds:.2f} s ({s_rate:,.0f}/s), "
              f"mean time in system {s_mean * 1e3:.4f} ms")  # fmt: skip
    print(f"   iowatt: {events:,.0f} events in {seconds:.3f} s ({rate:,.0f}/s), "
          f"mean time in system {mean * 1e3:.4f} ms")  # fmt: skip
    ratio = s_seconds / seconds if has_simpy else None
    ratio_line("M/M/1 time SimPy/iowatt", ratio, "≥ 100", "simpy")

    print(f"\n2. thermal RC network, {args.nodes} nodes, {args.ticks:,} ticks of 1 ms")
    n_seconds = seconds = float("inf")
    for rep in range(repeat):
        for side in alternate(rep, ["numpy", "iowatt"]):
            if side == "numpy":
                n_run, n_sum = numpy_ticks(args.nodes, args.ticks)
                n_seconds = min(n_seconds, n_run)
            else:
                ticks, run, checksum = core("thermal", args.nodes, args.ticks)
                seconds = min(seconds, run)
    print(f"   NumPy: {n_seconds:.2f} s ({args.ticks / n_seconds:,.0f} ticks/s), Σ T = {n_sum:.6f}")
    print(f"   iowatt: {seconds:.3f} s ({ticks / seconds:,.0f} ticks/s), Σ T = {checksum:.6f}")
    ratio = n_seconds / seconds
    print(f"   ratio {ratio:,.0f}× (goal ≥ 20×): {'met' if ratio >= 20 else 'not met'}; "
          f"same temperatures: {abs(n_sum - checksum) < 1e-6 * abs(n_sum)}")  # fmt: skip
    ratio_line("thermal time NumPy/iowatt", ratio, "≥ 20")

    print("\n3. full server (8 cores, 8 DIMMs, 1 ms ticks), W2 under FSTM, one thread")
    per_hour, rss = {}, {}
    # A smoke run's simulated minutes check the run, not the memory's flatness.
    for h in (0.05, 0.1) if args.smoke else (1, 2):
        simulated, wall, rss[h] = server_hour(h)
        per_hour[h] = wall * 3600 / simulated
        print(f"   {h} h: {simulated:,.0f} simulated s in {wall:.2f} s wall "
              f"({per_hour[h]:.2f} s per simulated hour), peak RSS {rss[h]:.1f} MiB")  # fmt: skip
    # What an hour adds by design: the series' 16 columns of f64, one row per 1 s bin.
    series_mib = 16 * 8 * 3600 / 2**20
    one, two = per_hour
    extra = rss[two] - rss[one]
    verdict = "flat but for the series" if extra <= 2 * series_mib else "grows"
    print(f"   {per_hour[one]:.2f} s per simulated hour (goal ≤ 3 s): "
          f"{'met' if per_hour[one] <= 3.0 else 'not met'}; peak RSS 2 h vs 1 h: "
          f"{extra:+.1f} MiB, the 1 s series {series_mib:.2f} MiB an hour ({verdict})")  # fmt: skip
    ratio_line("wall s per simulated hour / 3 s", per_hour[one] / 3.0, "≤ 1")


if __name__ == "__main__":
    main()
