#!/usr/bin/env python3
"""How fast iowatt starts, and what a short bench costs beyond the engine's own work.

Usage::

    python bench/startup.py                  # 10 runs of each command
    python bench/startup.py --runs 20 --json-out /tmp/startup.json
    python bench/startup.py --smoke          # 2 runs each, a check that it works

Times with hyperfine (Debian package ``hyperfine``; a plain loop where it is missing), one run of
each command per round with the order alternating, each a fresh process as a user runs them:

- ``iowatt --version`` beside ``python -c pass`` (the interpreter's own start on this machine);
- ``iowatt runs`` on a catalog of 100 synthetic bench runs (bench/catalog_scale.py writes them);
- ``iowatt bench randomread --runtime 1s --filesize 64m`` with and without its report.

A bench's overhead is its wall time minus the engine's own time — laying out the file
(``layout_s`` in summary.json) and measuring (``runtime_s``) — read from each run's summary.
Goals: ``--version`` ≤ 150 ms; overhead ≤ 0.5 s with the report, ≤ 0.3 s
with ``--no-report``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from _side_by_side import fmt, render_table
from _smoke import parse, peer, ratio_line, timed_runs
from catalog_scale import build

BENCH = "bench randomread --runtime 1s --filesize 64m --seed 1 --quiet"
GOALS = {"version": 0.150, "report overhead": 0.5, "no-report overhead": 0.3}


def engine_seconds(results: Path) -> list[float]:
    """Per bench run in ``results``, in the order they ran: the engine's layout plus measured
    time."""
    runs = sorted(
        (json.loads((d / "manifest.json").read_text())["started_ns"], d)
        for d in results.glob("*-bench-*")
    )
    out = []
    for _, run_dir in runs:
        workloads = json.loads((run_dir / "summary.json").read_text())["workloads"].values()
        out.append(sum((w["layout_s"] or 0.0) + w["runtime_s"] for w in workloads))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=10, help="timed runs per command")
    ap.add_argument("--json-out", type=Path, help="write the figures here as JSON")
    args = parse(ap, {"runs": 2})
    tool = peer("hyperfine")
    iowatt = shutil.which("iowatt")
    if iowatt is None:
        sys.exit("iowatt is not installed: pip install .")
    with tempfile.TemporaryDirectory(prefix="iowatt-startup-") as tmp:
        root = Path(tmp)
        build(root / "catalog", 20 if args.smoke else 100, 3)
        target = root / "target"
        target.mkdir()
        res = {k: root / f"results-{k}" for k in ("report", "no-report")}
        bench = f"{iowatt} {BENCH} --target {target}"
        times = timed_runs(
            {
                "python": f"{sys.executable} -c pass",
                "version": f"{iowatt} --version",
                "runs": f"{iowatt} runs --results {root / 'catalog'}",
                "report": f"{bench} --results {res['report']}",
                "no-report": f"{bench} --results {res['no-report']} --no-report",
            },
            args.runs,
            2,
            tool,
        )
        engine = {k: engine_seconds(v) for k, v in res.items()}
    figures = {k: statistics.median(v) for k, v in times.items()}
    for k in ("report", "no-report"):
        # The warm-up runs write runs too: pair the last N runs with the N timings.
        spent = engine[k][-len(times[k]) :]
        figures[f"{k} overhead"] = statistics.median(
            t - e for t, e in zip(times[k], spent, strict=True)
        )
    rows = [["command", "median s", "goal s"]]
    for name, value in figures.items():
        goal = GOALS.get(name)
        rows.append([name, fmt(value, 3), "" if goal is None else f"≤ {goal:g}"])
    print("\n".join(render_table(rows, {1, 2})))
    # The peers here are the interpreter and the goals, not another tool.
    ratio_line(
        "iowatt --version / python -c pass",
        figures["version"] / figures["python"],
        "none: the floor",
    )
    for name, goal in GOALS.items():
        ratio_line(f"{name} / {goal:g} s", figures[name] / goal, "≤ 1")
    if args.json_out:
        args.json_out.write_text(json.dumps({"times": times, "figures": figures}, indent=2))


if __name__ == "__main__":
    main()
