#!/usr/bin/env python3
"""How long ``iowatt compare`` takes on a large catalog.

Usage::

    python bench/catalog_scale.py                        # 10,000 runs, 4 envs, 10 workloads
    python bench/catalog_scale.py --runs 1000 --keep DIR
    python bench/catalog_scale.py --smoke                # 40 runs, a check that it works

Generates a campaign-shaped results directory: N bench runs, each a 10-workload FileIO suite
run labelled with one of four environments (interleaved), with the files a real run writes —
manifest.json, summary.json, latency.parquet (the whole-workload HDR buckets plus the flowop's,
~300 buckets each) and intervals.parquet (one row per second, with slow counts) — and indexes
them in one transaction. Then it times, each as a fresh process the way a user runs them:

- ``iowatt compare --by env --control env-a`` (catalog rows, tail fractions from every
  histogram, bootstrap CIs, tests, the latent-effect analysis of every workload's series);
- ``iowatt compare ... --format json`` (adds every run's own tail fractions);
- ``iowatt runs --limit 20`` as the floor (process start and opening the catalog).

No peer tool does this; the figure to watch is the compare time in seconds (goal: seconds,
not minutes, at 10,000 runs).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from _smoke import parse, ratio_line
from iowatt.histogram import heat_bands
from iowatt.store.catalog import refresh
from iowatt.store.schemas import INTERVAL_SCHEMA, LATENCY_SCHEMA

WORKLOADS = ("randomread2k", "randomread8k", "randomread1m", "randomwrite2k", "randomwrite8k",
             "randomwrite1m", "singlestreamread1m", "singlestreamreaddirect1m",
             "singlestreamwrite1m", "singlestreamwritedirect1m")  # fmt: skip
ENVS = ("env-a", "env-b", "env-c", "env-d")
T0_NS = 1_795_271_400_000_000_000


def _buckets(rng: np.random.Generator, median_ns: float, ops: int) -> tuple[np.ndarray, np.ndarray]:
    """HDR-like buckets (3 significant digits) of lognormal latencies with a slow tail."""
    ns = rng.lognormal(np.log(median_ns), 0.5, size=min(ops, 4000))
    ns[: len(ns) // 50] *= 40  # ~2% of operations 40× slower: the study's tail
    digits = np.floor(np.log10(ns)) - 2
    values = (np.ceil(ns / 10**digits) * 10**digits).astype(np.int64)
    uniq, counts = np.unique(values, return_counts=True)
    return uniq, counts * max(1, ops // len(ns))


def write_run(results: Path, i: int, seconds: int, rng: np.random.Generator) -> Path:
    env = ENVS[i % len(ENVS)]
    run_id = f"20261121-{i:06d}-bench-scale"
    run = results / run_id
    run.mkdir()
    started = T0_NS + i * 10 * 60 * 1_000_000_000
    slow = 1.0 - 0.1 * (i % len(ENVS))  # each env a little slower
    lat_cols: dict[str, list] = {n: [] for n in LATENCY_SCHEMA.names}
    iv_cols: dict[str, list] = {n: [] for n in INTERVAL_SCHEMA.names}
    summaries = {}
    for k, name in enumerate(WORKLOADS):
        ops_s = 2000.0 * (k + 1) * slow * rng.normal(1, 0.03)
        ops = int(ops_s * seconds)
        values, counts = _buckets(rng, 2e6 * (k + 1) / slow, ops)
        for flowop in (None, name):
            lat_cols["run_id"] += [run_id] * len(values)
            lat_cols["workload"] += [name] * len(values)
            lat_cols["flowop"] += [flowop] * len(values)
            lat_cols["value_ns"] += values.tolist()
            lat_cols["count"] += counts.tolist()
        per_s = rng.poisson(ops_s, size=seconds)
        # Each second's operations spread over the heatmap's bands as the whole run's are.
        share = np.asarray(heat_bands(values, counts), dtype=float)
        share /= share.sum()
        for t, n in enumerate(per_s.tolist()):
            iv_cols["run_id"].append(run_id)
            iv_cols["workload"].append(name)
            iv_cols["t_s"].append(float(t))
            iv_cols["duration_s"].append(1.0)
            iv_cols["mono_ns"].append(t * 1_000_000_000)
            for key, v in (("ops", n), ("bytes", n * 8192), ("errors", 0), ("p50_ns", 2_000_000),
                           ("p99_ns", 90_000_000), ("p999_ns", 150_000_000),
                           ("max_ns", 250_000_000)):  # fmt: skip
                iv_cols[key].append(v)
            iv_cols["ops_s"].append(float(n))
            iv_cols["mib_s"].append(n * 8192 / 2**20)
            iv_cols["slow_ns"].append([100_000_000, 200_000_000])
            iv_cols["slow_ops"].append([n // 50, n // 200])
            iv_cols["heat_ops"].append(np.round(share * n).astype(np.int64).tolist())
        latency = {"p50": int(values[len(values) // 2]), "p99": int(values[-5]),
                   "max": int(values[-1])}  # fmt: skip
        summaries[name] = {"ops": ops, "ops_s": ops_s, "mib_s": ops_s * 8192 / 2**20, "errors": 0,
                           "runtime_s": float(seconds), "latency_ns": latency}  # fmt: skip
    manifest = {
        "run_id": run_id, "kind": "bench", "status": "complete", "reason": None,
        "iowatt_version": "0.1.0", "started_ns": started,
        "ended_ns": started + seconds * 10**9 * len(WORKLOADS), "seed": i,
        "labels": {"campaign": "scale", "env": env, "rep": str(i // len(ENVS) + 1)},
        "config": {"target": "/mnt/disk", "workloads": [{"name": w} for w in WORKLOADS]},
        "host": {"hostname": "scale"},
    }  # fmt: skip
    (run / "manifest.json").write_text(json.dumps(manifest))
    (run / "summary.json").write_text(json.dumps({"run_id": run_id, "workloads": summaries}))
    pq.write_table(pa.table(lat_cols, schema=LATENCY_SCHEMA), run / "latency.parquet")
    pq.write_table(pa.table(iv_cols, schema=INTERVAL_SCHEMA), run / "intervals.parquet")
    return run


def build(results: Path, n: int, seconds: int) -> None:
    results.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(1)
    t = time.perf_counter()
    for i in range(n):
        write_run(results, i, seconds, rng)
    generated = time.perf_counter() - t
    t = time.perf_counter()
    refresh(results)
    indexed = time.perf_counter() - t
    size = sum(f.stat().st_size for f in results.rglob("*") if f.is_file())
    print(f"{n} runs × {len(WORKLOADS)} workloads: generated in {generated:.1f} s, "
          f"indexed in {indexed:.1f} s, {size / 2**30:.2f} GiB on disk")  # fmt: skip


def timed(cmd: list[str]) -> float:
    t = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - t
    if done.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{done.stderr}")
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10_000)
    ap.add_argument("--seconds", type=int, default=30, help="intervals per workload")
    ap.add_argument("--reps", type=int, default=3, help="timings of each command")
    ap.add_argument("--keep", type=Path, help="build the catalog here and keep it (or reuse it)")
    args = parse(ap, {"runs": 40, "seconds": 3, "reps": 1})
    results = args.keep or Path(tempfile.mkdtemp(prefix="iowatt-scale-"))
    if (results / "catalog.duckdb").exists():
        print(f"reusing the catalog in {results}")
    else:
        build(results, args.runs, args.seconds)
    iowatt = [shutil.which("iowatt") or "iowatt"]
    base = [*iowatt, "compare", "--results", str(results), "--by", "env", "--control", "env-a"]
    commands = {
        "runs --limit 20 (floor)": [*iowatt, "runs", "--results", str(results), "--limit", "20"],
        "compare (text)": base,
        "compare --format json": [*base, "--format", "json"],
    }
    report = {}
    for name, cmd in commands.items():
        times = [timed(cmd) for _ in range(args.reps)]
        report[name] = sorted(times)[len(times) // 2]
        print(
            f"{name:<28} median {report[name]:6.2f} s  (min {min(times):.2f}, max {max(times):.2f})"
        )
    if not args.keep:
        shutil.rmtree(results)
    print(json.dumps({"runs": args.runs, "median_seconds": report}))
    # No peer does this; the goal, seconds rather than minutes, is a minute at most.
    ratio_line(f"compare s / 60 s at {args.runs} runs", report["compare (text)"] / 60, "< 1")


if __name__ == "__main__":
    main()
