#!/usr/bin/env python3
"""Start skew of iowatt's fleet barrier (iowatt.fleet.barrier) across local worker processes.

Usage::

    python bench/fleet_skew.py                 # 8 workers, 50 starts, ~30 s
    python bench/fleet_skew.py --workers 4 --starts 20
    python bench/fleet_skew.py --smoke         # 2 workers, 5 starts, a check that it works

`--workers` worker processes (`--cluster local:N`) prepare for a random 0–50 ms, then start
together through the barrier and wait 100 ms (as a bench's threads wait on a disk), `--starts`
times. Each start's skew is the spread of the workers'
real start instants, read on this host's clock (one machine: one clock, so the spread is the
barrier's alone, not the offsets' error). Printed: the skew's median, p99 and maximum, the
largest lateness of a worker against the common instant, and the clock offsets' round trips.
Goal: p99 skew ≤ 5 ms.
"""

from __future__ import annotations

import argparse
import random
import time

import _smoke


def _work(args: dict, ready) -> None:
    time.sleep(args["prep_s"])
    ready()
    time.sleep(0.1)  # the work: waiting on a disk, as a bench's threads mostly do


def main() -> None:
    from iowatt.fleet.barrier import start_together
    from iowatt.fleet.cluster import connect
    from iowatt.fleet.spec import parse

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--workers", type=int, default=8)
    p.add_argument("--starts", type=int, default=50)
    a = _smoke.parse(p, {"workers": 2, "starts": 5})
    rng = random.Random(1)
    skews, late, delays = [], [], []
    with connect(parse(f"local:{a.workers}"), 1) as client:
        addrs = list(client.scheduler_info()["workers"])
        for _ in range(a.starts):
            out = start_together(
                client, _work, {w: {"prep_s": rng.uniform(0, 0.05)} for w in addrs}
            ).hosts
            starts = [o["start_ns"] for o in out.values()]
            skews.append((max(starts) - min(starts)) / 1e6)
            late += [o["late_ns"] / 1e6 for o in out.values()]
            delays += [o["delay_ns"] / 1e6 for o in out.values()]
    skews.sort()
    p99 = skews[min(len(skews) - 1, int(0.99 * len(skews)))]
    print(
        f"{a.workers} workers, {a.starts} starts: skew median {skews[len(skews) // 2]:.3f} ms, "
        f"p99 {p99:.3f} ms, max {skews[-1]:.3f} ms (goal p99 ≤ 5 ms)"
    )
    print(
        f"lateness against the instant: max {max(late):.3f} ms; clock round trips: median "
        f"{sorted(delays)[len(delays) // 2]:.3f} ms, max {max(delays):.3f} ms"
    )
    # No peer: the barrier is iowatt's own, so the ratio is to the goal.
    _smoke.ratio_line(f"p99 skew / 5 ms at {a.workers} workers", p99 / 5, "≤ 1")


if __name__ == "__main__":
    main()
