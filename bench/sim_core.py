#!/usr/bin/env python3
"""The simulation core (crates/iowatt-sim) beside SimPy and NumPy on the same models.

Usage::

    python bench/sim_core.py                      # ~1 min
    python bench/sim_core.py --customers 200000 --ticks 200000

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
"""

from __future__ import annotations

import argparse
import random
import subprocess
import time
from pathlib import Path

import numpy as np
import scipy.linalg

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
    args = ap.parse_args()
    build()

    print(f"1. M/M/1, {args.customers:,} customers, seed {args.seed}")
    s_events, s_seconds, s_mean = simpy_mm1(args.customers, args.seed)
    events, seconds, mean = core("mm1", args.customers, args.seed)
    s_rate, rate = s_events / s_seconds, events / seconds
    print(f"   SimPy: {s_events:,} events in {s_seconds:.2f} s ({s_rate:,.0f}/s), "
          f"mean time in system {s_mean * 1e3:.4f} ms")  # fmt: skip
    print(f"   iowatt: {events:,.0f} events in {seconds:.3f} s ({rate:,.0f}/s), "
          f"mean time in system {mean * 1e3:.4f} ms")  # fmt: skip
    print(f"   same model: ratio {s_seconds / seconds:,.0f}× in time (goal ≥ 100×); "
          "closed form 1.0000 ms")  # fmt: skip

    print(f"\n2. thermal RC network, {args.nodes} nodes, {args.ticks:,} ticks of 1 ms")
    n_seconds, n_sum = numpy_ticks(args.nodes, args.ticks)
    ticks, seconds, checksum = core("thermal", args.nodes, args.ticks)
    print(f"   NumPy: {n_seconds:.2f} s ({args.ticks / n_seconds:,.0f} ticks/s), Σ T = {n_sum:.6f}")
    print(f"   iowatt: {seconds:.3f} s ({ticks / seconds:,.0f} ticks/s), Σ T = {checksum:.6f}")
    print(f"   ratio {n_seconds / seconds:,.0f}× (goal ≥ 20×); "
          f"same temperatures: {abs(n_sum - checksum) < 1e-6 * abs(n_sum)}")  # fmt: skip


if __name__ == "__main__":
    main()
