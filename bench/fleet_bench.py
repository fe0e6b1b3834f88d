#!/usr/bin/env python3
"""A fleet bench's cost: the same workload run directly and on a one-worker fleet, and the time
to merge a thousand hosts' results into one run.

1. `iowatt bench randomread` in `--dir`, then the same with `--cluster local:1` — one host,
   so any difference is the fleet's own cost (a Dask worker process, the barrier, results
   shipped back) — alternated `--reps` times (the order swapped every time), each a fresh
   process. Printed: both medians of ops/s and the difference with its bootstrap interval
   and test, judged as `iowatt compare` does; goal: no difference significant against a 2 %
   noise band.
2. A real engine result (randomread for `--merge-runtime`: its histograms and seconds) copied
   to `--hosts` hosts with each copy's counts perturbed, then merged as a fleet run merges them: the
   workload's merged result and summary, the first/last-done rates, the per-host summaries and
   the three per-host Parquet files written. Printed: the median of `--reps` timings; goal:
   1,000 hosts in ≤ 2 s.

``--smoke`` (2 pairs of 1 s runs, 50 hosts) checks that the script still works.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from _smoke import alternate, parse, ratio_line


def _bench(target: Path, results: Path, runtime: str, fleet: bool) -> float:
    cmd = ["iowatt", "bench", "randomread", "--buffered", "--runtime",
           runtime, "--filesize", "64m", "--nthreads", "1", "--target", str(target),
           "--results", str(results), "--no-report", "--json"]  # fmt: skip
    if fleet:
        cmd += ["--cluster", "local:1"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return float(json.loads(out)["workloads"]["randomread"]["ops_s"])


def fleet_vs_direct(reps: int, runtime: str, where: str) -> float:
    direct, fleet = [], []
    with tempfile.TemporaryDirectory(dir=where) as d:
        target, results = Path(d) / "t", Path(d) / "r"
        target.mkdir()
        for rep in range(reps):
            for is_fleet in alternate(rep, [False, True]):
                got = _bench(target, results, runtime, fleet=is_fleet)
                (fleet if is_fleet else direct).append(got)
    import numpy as np

    from iowatt.compare.stats import difference

    a, b = statistics.median(direct), statistics.median(fleet)
    d = difference(fleet, direct, rng=np.random.default_rng(0))
    # iowatt compare's rule: real only when p < 0.05 and the interval clears the ±2 % band.
    real = d.p_value < 0.05 and (d.ci_low > 2.0 or d.ci_high < -2.0)
    print(
        f"direct: median {a:,.0f} ops/s (min–max {min(direct):,.0f}–{max(direct):,.0f}); "
        f"local:1 fleet: median {b:,.0f} ops/s (min–max {min(fleet):,.0f}–{max(fleet):,.0f})"
    )
    print(f"fleet against direct: {d.pct:+.1f} % (95 % CI {d.ci_low:+.1f} … {d.ci_high:+.1f} %, "
          f"Mann-Whitney p = {d.p_value:.3f}): {'a real' if real else 'no significant'} "
          "difference against the 2 % noise band (goal: none)")  # fmt: skip
    return b / a


def _perturbed(result: dict, rng: random.Random) -> dict:
    import numpy as np

    gen = np.random.default_rng(rng.randrange(2**32))

    def scaled(counts: list[int]) -> list[int]:
        c = np.asarray(counts, dtype=np.float64)
        return np.rint(c * gen.uniform(0.5, 1.5, c.size)).astype(np.int64).tolist()

    hist = {**result["histogram"], "count": scaled(result["histogram"]["count"])}
    flowops = []
    for f in result["flowops"]:
        counts = scaled(f["count"])
        flowops.append({**f, "count": counts, "ops": sum(counts), "bytes": 4096 * sum(counts)})
    iv = result["intervals"]
    seconds = {**iv, "ops": scaled(iv["ops"]), "bytes": scaled(iv["bytes"])}
    measured = round(result["measured_ns"] * rng.uniform(0.98, 1.0))
    return {**result, "histogram": hist, "flowops": flowops, "measured_ns": measured,
            "intervals": seconds}  # fmt: skip


def merge_many(hosts: int, reps: int, runtime: str) -> float:
    from iowatt._engine import WorkloadRun
    from iowatt.bench import Options, plan
    from iowatt.bench.hosts import Fleet, HostRun, summary_section, write_tables
    from iowatt.bench.merge import as_arrays, done_rates, merge_results
    from iowatt.bench.summary import workload_summary
    from iowatt.fleet.spec import parse
    from iowatt.store.writer import RunWriter

    with tempfile.TemporaryDirectory(dir="/var/tmp") as d:
        opts = Options(runtime=runtime, filesize="16m", directio=False)
        wl = plan("randomread", opts, results=Path(d)).workloads[0]
        run = WorkloadRun.fileio(wl.engine_spec(Path(d), False))
        run.start()
        while not run.wait(0.2):
            pass
        base = dict(run.result())
        rng = random.Random(1)
        lists = [_perturbed(base, rng) for _ in range(hosts)]
        buckets = len(base["histogram"]["value_ns"])
        timings = []
        for rep in range(reps):
            writer = RunWriter(Path(d) / "r", f"merge-{rep}")
            t0 = time.perf_counter()
            results = [as_arrays(r) for r in lists]
            merged = merge_results(results, 0)
            workload_summary(merged)
            done_rates(results)
            fleet = Fleet(parse("local:1"))
            runs = []
            for i, r in enumerate(results):
                name = f"host-{i}"
                fleet.hosts[f"tcp://10.0.0.{i}:1"] = name
                fleet.targets[name] = "/data"
                runs.append(HostRun(name, f"tcp://10.0.0.{i}:1", "/data", r, None, 0, 1000, i,
                                    0, summary=workload_summary(r)))  # fmt: skip
            fleet.runs["randomread"] = runs
            summary_section(fleet)
            write_tables(writer, fleet)
            timings.append(time.perf_counter() - t0)
            writer.abandon()
    print(f"merging {hosts:,} hosts ({buckets:,} histogram buckets and "
          f"{len(base['intervals']['t_ns'])} seconds each, into the run's merged result and "
          f"per-host files): median {statistics.median(timings):.2f} s of {reps} "
          f"(min {min(timings):.2f} s; goal ≤ 2 s)")  # fmt: skip
    return statistics.median(timings)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--runtime", default="10s")
    p.add_argument("--hosts", type=int, default=1000)
    p.add_argument(
        "--dir",
        default="/dev/shm",
        help="where the runs' files go [/dev/shm: no "
        "writeback of the laid-out file competes with the measured phase]",
    )
    p.add_argument("--merge-runtime", default="10s", help="the merged results' measured time")
    p.add_argument("--skip-runs", action="store_true", help="only the merge")
    a = parse(p, {"reps": 2, "runtime": "1s", "hosts": 50, "merge_runtime": "2s"})
    if not a.skip_runs:
        ratio_line("ops/s fleet/direct", fleet_vs_direct(a.reps, a.runtime, a.dir), "1 ± 0.02")
    merged = merge_many(a.hosts, 3, a.merge_runtime)
    ratio_line(f"merge of {a.hosts:,} hosts s / 2 s", merged / 2, "≤ 1")


if __name__ == "__main__":
    main()
