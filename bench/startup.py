#!/usr/bin/env python3
"""How fast iowatt starts, and what a short bench costs beyond the engine's own work, beside fio.

Usage::

    python bench/startup.py                  # 10 runs of each command
    python bench/startup.py --runs 20 --json-out /tmp/startup.json
    python bench/startup.py --smoke          # 2 runs each, a check that it works

Times with hyperfine (Debian package ``hyperfine``; a plain loop where it is missing), one run of
each command per round with the order alternating, each a fresh process as a user runs them:

- ``iowatt --version`` beside ``python -c pass`` (the interpreter's own start on this machine);
- ``iowatt runs`` on a catalog of 100 synthetic bench runs (bench/catalog_scale.py writes them);
- ``iowatt bench randomread --runtime 1s --filesize 64m`` with and without its report;
- fio on the same job: ``--rw=randread --bs=8k --size=64m --ioengine=psync --iodepth=1``, one
  job, buffered, ``--runtime=1 --time_based`` (the randomread personality's 8k, one thread,
  psync, through the page cache).

A bench's overhead is its wall time minus the engine's own time — laying out the file
(``layout_s`` in summary.json) and measuring (``runtime_s``) — read from each run's summary.
fio's is its wall time minus ``job_runtime`` in its JSON (written with ``--output``, read after
every round). fio's layout is kept out of its wall time instead of measured: its file is laid
out once before the timed runs (a read job with ``--create_only=1``, so every block is written,
as iowatt writes its file) and every fio run reuses it, dropping it from the page cache at the
start (fio's default ``invalidate``) as iowatt drops its own. So both overheads leave laying
out the file out; iowatt's still holds creating its work directory and deleting the 64 MiB file
after the run, which fio does not do. iowatt's modules are compiled to bytecode first, as an
installed package has them: a source checkout run with PYTHONDONTWRITEBYTECODE would otherwise
compile every edited module again in every run (~30 ms).

Goals: ``--version`` ≤ 150 ms; overhead ≤ 0.5 s with the report, ≤ 0.3 s with ``--no-report``;
the no-report overhead beside fio's is printed for the record (fio is C and writes no store).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import iowatt as iowatt_package
from _smoke import fmt, parse, peer, ratio_line, render_table, timed_runs
from catalog_scale import build

BENCH = "bench randomread --runtime 1s --filesize 64m --seed 1 --quiet"
# The same job as fio runs it: the randomread personality is 8k, one thread, psync, buffered.
FIO_JOB = (
    "--name=randomread --rw=randread --bs=8k --size=64m --ioengine=psync --iodepth=1 "
    "--numjobs=1 --randseed=1"
)
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


def fio_runtime(out: Path) -> float:
    """The measured time (s) of the fio run whose JSON is in ``out``."""
    text = out.read_text()
    job = json.loads(text[text.index("{") :])["jobs"][0]  # fio may print notes before it
    return float(job["job_runtime"]) / 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=10, help="timed runs per command")
    ap.add_argument("--json-out", type=Path, help="write the figures here as JSON")
    args = parse(ap, {"runs": 2})
    tool = peer("hyperfine")
    fio = peer("fio")
    iowatt = shutil.which("iowatt")
    if iowatt is None:
        sys.exit("iowatt is not installed: pip install .")
    package = Path(iowatt_package.__file__).parent
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)], check=True)
    with tempfile.TemporaryDirectory(prefix="iowatt-startup-") as tmp:
        root = Path(tmp)
        build(root / "catalog", 20 if args.smoke else 100, 3)
        target = root / "target"
        target.mkdir()
        res = {k: root / f"results-{k}" for k in ("report", "no-report")}
        bench = f"{iowatt} {BENCH} --target {target}"
        commands = {
            "python": f"{sys.executable} -c pass",
            "version": f"{iowatt} --version",
            "runs": f"{iowatt} runs --results {root / 'catalog'}",
            "report": f"{bench} --results {res['report']}",
            "no-report": f"{bench} --results {res['no-report']} --no-report",
        }
        fio_out, fio_runtimes = root / "fio.json", []
        if fio is not None:
            job = f"{FIO_JOB} --filename={root / 'fio' / 'randomread.dat'}"
            (root / "fio").mkdir()
            subprocess.run(
                [fio, *job.split(), "--rw=read", "--create_only=1", "--output-format=json"],
                check=True,
                stdout=subprocess.DEVNULL,
            )
            commands["fio"] = (
                f"{fio} {job} --runtime=1 --time_based --output-format=json --output={fio_out}"
            )
        times = timed_runs(
            commands,
            args.runs,
            2,
            tool,
            after_round=(lambda: fio_runtimes.append(fio_runtime(fio_out))) if fio else None,
        )
        engine = {k: engine_seconds(v) for k, v in res.items()}
    figures = {k: statistics.median(v) for k, v in times.items()}
    overheads = {}
    for k in ("report", "no-report"):
        # The warm-up runs write runs too: pair the last N runs with the N timings.
        spent = engine[k][-len(times[k]) :]
        overheads[f"{k} overhead"] = [t - e for t, e in zip(times[k], spent, strict=True)]
    if fio is not None:
        overheads["fio overhead"] = [t - e for t, e in zip(times["fio"], fio_runtimes, strict=True)]
    for name, values in overheads.items():
        figures[name] = statistics.median(values)
    rows = [["command", "median s", "min s", "max s", "goal s"]]
    for name, value in figures.items():
        goal = GOALS.get(name)
        spread = overheads.get(name, times.get(name, []))
        rows.append(
            [
                name,
                fmt(value, 3),
                fmt(min(spread), 3),
                fmt(max(spread), 3),
                "" if goal is None else f"≤ {goal:g}",
            ]
        )
    print("\n".join(render_table(rows, {1, 2, 3, 4})))
    ratio_line(
        "iowatt --version / python -c pass",
        figures["version"] / figures["python"],
        "none: the floor",
    )
    for name, goal in GOALS.items():
        ratio_line(f"{name} / {goal:g} s", figures[name] / goal, "≤ 1")
    ratio_line(
        "no-report overhead / fio overhead",
        figures["no-report overhead"] / figures["fio overhead"] if fio else None,
        "none: fio writes no store; the goal is the 0.3 s above",
        missing="fio",
    )
    if args.json_out:
        out = {"times": times, "overheads": overheads, "figures": figures}
        args.json_out.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
