#!/usr/bin/env python3
"""Many benches finishing into one results directory: runs lost, and what the catalog costs.

Usage::

    python bench/reliability.py                   # N = 2, 8, 32 concurrent benches, 3 rounds
    python bench/reliability.py --n 8 --rounds 1
    python bench/reliability.py --smoke           # N = 2, 1 round, a check that it works

For each N it starts N ``iowatt bench randomread`` processes at once (0.5 s measured, 2 MiB file,
``--no-report``), each its own process as a user would run them, into one fresh results
directory, while another process holds the README's read-only DuckDB connection open on the
catalog the whole time. Each bench runs through a small driver that times the catalog update of
its own run (``iowatt.store.catalog.refresh`` called by ``publish``: waiting for the writer lock
included) and prints it.

Reported per N:

- runs lost: benches started minus runs ``iowatt runs`` lists (goal 0), and benches that failed;
- the catalog's added latency per run: median, p95 and max of the timed updates; and the runs
  that found their run already indexed by a neighbour's update (the writers batch).

There is no peer: the figure to watch is "lost" (0) and the added latency against the run's
own length (0.5 s here, minutes in real use).
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _smoke import parse, ratio_line

RUN_S = 0.5  # each bench's measured time, as the driver below sets it

DRIVER = r"""
import json, sys, time
from pathlib import Path
import iowatt.store.catalog as catalog
from iowatt.bench import Options, plan, run

timed = []
original = catalog.refresh
def refresh(*args, **kwargs):
    t = time.perf_counter()
    done = original(*args, **kwargs)
    timed.append((time.perf_counter() - t, len(done.added)))
    return done
catalog.refresh = refresh

results, target = Path(sys.argv[1]), Path(sys.argv[2])
opts = Options(runtime="0.5s", filesize="2m")
run_dir = run(plan("randomread", opts, target=target, results=results, report=False))
print(json.dumps({"run": run_dir.name, "catalog_s": timed[0][0], "added": timed[0][1]}))
"""

HOLDER = r"""
import sys, duckdb
con = duckdb.connect(sys.argv[1], read_only=True)
print(con.execute("SELECT count(*) FROM runs").fetchone()[0], flush=True)
sys.stdin.readline()
"""


def one_round(n: int, workdir: Path) -> dict[str, float]:
    results, target = workdir / "results", workdir / "target"
    target.mkdir(parents=True)
    seed = subprocess.run(
        [sys.executable, "-c", DRIVER, str(results), str(target)], capture_output=True, text=True
    )
    assert seed.returncode == 0, seed.stderr  # one run first, so there is a catalog to hold
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(results / "catalog.duckdb")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert holder.stdout is not None
    holder.stdout.readline()
    driver = [sys.executable, "-c", DRIVER, str(results), str(target)]
    procs = [
        subprocess.Popen(driver, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(n)
    ]
    outputs = [p.communicate() for p in procs]
    holder.communicate("done\n")
    failed = sum(p.returncode != 0 for p in procs)
    timings = [
        json.loads(out) for (out, _), p in zip(outputs, procs, strict=True) if not p.returncode
    ]
    cli = [sys.executable, "-c", "from iowatt.cli import main; main()"]
    listed = subprocess.run(
        [*cli, "runs", "--results", str(results), "--json"],
        capture_output=True, text=True, check=True,
    ).stdout.splitlines()  # fmt: skip
    lost = (n + 1) - len(listed)
    waits = sorted(t["catalog_s"] for t in timings)
    return {
        "lost": lost,
        "failed": failed,
        "median_s": statistics.median(waits) if waits else float("nan"),
        "p95_s": waits[math.ceil(0.95 * len(waits)) - 1] if waits else float("nan"),
        "max_s": waits[-1] if waits else float("nan"),
        "batched": sum(t["added"] == 0 for t in timings),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", default="2,8,32", help="concurrent benches per round (list)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parse(parser, {"n": "2", "rounds": 1})
    print(f"{'N':>4} {'round':>5} {'lost':>5} {'failed':>6} {'catalog median':>15} "
          f"{'p95':>8} {'max':>8} {'batched':>8}")  # fmt: skip
    for n in (int(x) for x in args.n.split(",")):
        medians: list[float] = []
        lost = 0
        for r in range(args.rounds):
            workdir = Path(tempfile.mkdtemp(prefix="iowatt-reliability-"))
            try:
                got = one_round(n, workdir)
            finally:
                shutil.rmtree(workdir, ignore_errors=True)
            print(f"{n:>4} {r + 1:>5} {got['lost']:>5} {got['failed']:>6} "
                  f"{got['median_s'] * 1000:>12.0f} ms {got['p95_s'] * 1000:>5.0f} ms "
                  f"{got['max_s'] * 1000:>5.0f} ms {got['batched']:>8}")  # fmt: skip
            medians.append(got["median_s"])
            lost += got["lost"] + got["failed"]
        # No peer: the catalog's cost is weighed against the run's own length.
        ratio_line(f"catalog median / {RUN_S:g} s run at N={n}", max(medians) / RUN_S, "≪ 1")
        ratio_line(f"runs lost or failed / started at N={n}", lost / (n * args.rounds), "0")


if __name__ == "__main__":
    main()
