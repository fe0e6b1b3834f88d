#!/usr/bin/env python3
"""How long ``iowatt report`` takes on a large campaign, and how big the report is.

Usage::

    python bench/report_scale.py                  # 1,000 runs, 4 envs, 10 workloads, 3 timings
    python bench/report_scale.py --runs 200 --keep DIR
    python bench/report_scale.py --smoke                # 40 runs, a check that it works

Builds the campaign-shaped results directory of ``catalog_scale.py`` (every run with the files
a real run writes, 30 s of intervals each), then times ``iowatt report --label
campaign=scale`` as a fresh process, the way a user runs it. Goals: a report of
1,000 runs in at most 10 s and at most 5 MB. No peer tool writes such a report.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _smoke import parse, ratio_line
from catalog_scale import build, timed

GOAL_S = 10.0
GOAL_MB = 5.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--seconds", type=int, default=30, help="intervals per workload")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", type=Path, help="build (or reuse) the results here")
    args = parse(ap, {"runs": 40, "seconds": 3, "repeat": 1})
    results = args.keep or Path(tempfile.mkdtemp(prefix="iowatt-report-scale-"))
    try:
        if not (results / "catalog.duckdb").exists():
            build(results, args.runs, args.seconds)
        out = results / "report.html"
        cmd = [shutil.which("iowatt") or "iowatt", "report", "--results", str(results),
               "--label", "campaign=scale", "-o", str(out)]  # fmt: skip
        times = []
        for _ in range(args.repeat):
            times.append(timed(cmd))
            print(f"  {times[-1]:.2f} s", flush=True)
        mb = out.stat().st_size / 1e6
        best, med = min(times), statistics.median(times)
        print(f"iowatt report of {args.runs} runs: median {med:.2f} s (best {best:.2f} s), "
              f"{mb:.2f} MB; goals ≤ {GOAL_S:g} s: {'met' if med <= GOAL_S else 'missed'}, "
              f"≤ {GOAL_MB:g} MB: {'met' if mb <= GOAL_MB else 'missed'}")  # fmt: skip
        # No peer writes such a report: the ratios are to the goals (set for 1,000 runs).
        ratio_line(f"report s / {GOAL_S:g} s at {args.runs} runs", med / GOAL_S, "≤ 1")
        ratio_line(f"report MB / {GOAL_MB:g} MB at {args.runs} runs", mb / GOAL_MB, "≤ 1")
    finally:
        if args.keep is None:
            shutil.rmtree(results, ignore_errors=True)


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"({time.perf_counter() - t0:.0f} s in all)")
