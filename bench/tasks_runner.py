#!/usr/bin/env python3
"""`iowatt tasks` beside GNU parallel, and the simulator against the runner.

Usage (as root for parts 2 and 3: FUSE mounts)::

    python bench/tasks_runner.py                  # ~10 min
    python bench/tasks_runner.py --skip-validate  # part 1 only, ~1 min, any user
    python bench/tasks_runner.py --smoke          # 4 short tasks, part 1, seconds

1. The runner's own overhead (scheduling on Dask, bookkeeping): `--tasks` (24) synthetic CPU
   tasks of `--task-s` (1.5 s) each, at the machine's cores in flight, once through GNU parallel
   (`apt-get install parallel`: `parallel -j CORES`) and once through `iowatt tasks` (a set file
   of the same command, `--per-core 1`), alternately, `--repeat` (3) times each. Both are timed
   from outside, start to exit (iowatt then also does its Dask start-up, the run's probe-less
   bookkeeping and its commit); iowatt's own makespan (first start to last end) is printed too.
   Goal: iowatt's wall time within 5 % of parallel's.
2. The simulator's prediction against measured jobs/h on disks that seek: the README demo's
   three sets (io, cpu, mixed at `--scale`, `--rounds`) at k = 1 and 2 on an emulated
   `barracuda-7200` (hdd) and an emulated `dc-s3700` (ssd), both under the emulator's CFQ
   (examples/task-disks.sh), then `iowatt sim tasks --validate all --json`, which predicts each
   run on its disk's model under the simulator's CFQ. Goal: every run within 15 % on a quiet
   node.
3. The disk's part alone: an I/O-bound set (`cat` of `--cat-mb` MB inputs, eight tasks) at
   k = 1 and 2 on an emulated `barracuda-7200` under each of the emulator's schedulers (cfq,
   elevator, fifo), each run predicted under the matching simulator scheduler. Goal: every run
   within 15 %; the tasks barely compute, so a busy node moves it little.

The simulator's own speed, beside SimPy and at cluster scale, is bench/tasks_sim.py's.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _smoke import alternate, fail, mounted, parse, ratio_line


def gnu_parallel_present() -> bool:
    """moreutils installs a different `parallel` under the same name, which takes none of GNU
    parallel's options."""
    found = shutil.which("parallel")
    version = found and subprocess.run([found, "--version"], capture_output=True, text=True)
    if not (version and "GNU parallel" in version.stdout):
        print("peer missing: GNU parallel", flush=True)
        return False
    return True


def overhead(tasks: int, task_s: float, repeat: int, work: Path) -> None:
    cores = os.cpu_count() or 1
    has_parallel = gnu_parallel_present()
    cmd = f"{sys.executable} -m iowatt.tasks.synthetic --cpu-s {task_s} --output /dev/null"
    (work / "data").mkdir(exist_ok=True)
    set_file = work / "burn.toml"
    set_file.write_text(
        f'[types.burn]\ncommand = "{cmd}"\ncpu_s = {task_s}\n'
        f'[sets]\nburns = {{ repeat = {tasks}, tasks = ["burn"] }}\n'
    )
    par, iow, spans = [], [], []

    def gnu_parallel() -> None:
        t = time.perf_counter()
        # The input goes into a shell comment: every job runs the same command.
        subprocess.run(
            [
                "parallel",
                "-j",
                str(cores),
                "--halt",
                "now,fail=1",
                cmd + " # {}",
                ":::",
                *map(str, range(tasks)),
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        par.append(time.perf_counter() - t)

    def iowatt_tasks(i: int) -> None:
        t = time.perf_counter()
        out = subprocess.run(
            [
                "iowatt",
                "tasks",
                str(set_file),
                "--data",
                f"x={work / 'data'}",
                "--results",
                str(work / "r"),
                "--no-resume",
                "--json",
                "--quiet",
                "--label",
                f"i={i}",
            ],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        iow.append(time.perf_counter() - t)
        spans.append(json.loads(out)[0]["makespan_s"])

    for i in range(repeat):
        for side in alternate(i, ["parallel", "iowatt"] if has_parallel else ["iowatt"]):
            gnu_parallel() if side == "parallel" else iowatt_tasks(i)
    ideal = tasks * task_s / cores
    print(
        f"1. {tasks} tasks × {task_s} s CPU at {cores} in flight (ideal {ideal:.2f} s), "
        f"best of {repeat}:"
    )
    print(
        f"   GNU parallel wall {min(par) if par else math.nan:.2f} s; iowatt tasks wall "
        f"{min(iow):.2f} s (its makespan {min(spans):.2f} s)"
    )
    for name, mine in (("wall", min(iow)), ("makespan", min(spans))):
        value = mine / min(par) if par else None
        ratio_line(f"{name} iowatt/parallel", value, "≤ 1.05", "parallel")


def validate(scale: float, rounds: int, work: Path) -> None:
    script = Path(__file__).resolve().parent.parent / "examples" / "task-disks.sh"
    # The emulator's own runs go apart from the tasks runs.
    env = {**os.environ, "RESULTS": str(work / "disks")}
    subprocess.run(["bash", str(script), "up"], check=True, stdout=subprocess.DEVNULL, env=env)
    try:
        t = time.perf_counter()
        subprocess.run(
            [
                "iowatt",
                "tasks",
                "io,cpu,mixed",
                "--scale",
                str(scale),
                "--rounds",
                str(rounds),
                "--per-core",
                "1,2",
                "--data",
                "hdd=/mnt/iowatt-hdd",
                "--data",
                "ssd=/mnt/iowatt-ssd",
                "--results",
                str(work / "v"),
                "--quiet",
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        took = time.perf_counter() - t
    finally:
        subprocess.run(["bash", str(script), "down"], check=False, env=env)
    rows = validated(work / "v")
    print(f"2. the demo's {len(rows)} runs ({took:.0f} s), predicted against measured jobs/h:")
    for r in rows:
        on = r["predicted_on"]
        disk = f"{on['model']}/{on['scheduler']}" if on["source"] == "emulated" else on["source"]
        print(
            f"   {r['set']:<6} {r['disk']} ({disk}) k={r['per_core']}: measured "
            f"{r['jobs_per_h_measured']:8.1f}, predicted {r['jobs_per_h_predicted']:8.1f}, "
            f"{r['jobs_per_h_error_pct']:+5.1f} %"
        )
    worst = max(abs(r["jobs_per_h_error_pct"]) for r in rows)
    print(f"   largest error {worst:.1f} % (goal ≤ 15 %)")
    ratio_line("largest jobs/h error / 15 %", worst / 15, "≤ 1")


def validated(results: Path) -> list[dict[str, Any]]:
    """`iowatt sim tasks --validate all` on the runs in `results`: one row per run."""
    out = subprocess.run(
        ["iowatt", "sim", "tasks", "--validate", "all", "--json", "--results", str(results)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return list(json.loads(out))


def disk_part(cat_mb: float, work: Path) -> None:
    sets = work / "cats.toml"
    sets.write_text(
        f'[types.cat]\ncommand = "cat {{input}}"\ninput_mb = {cat_mb}\n'
        '[sets]\ncats = { repeat = 8, tasks = ["cat"] }\n'
    )
    results = work / "cats"
    # The files behind the emulated disk in memory, so only the model's time is spent reading.
    shm = Path(tempfile.mkdtemp(prefix="iowatt-bench-", dir="/dev/shm"))
    try:
        for sched in ("cfq", "elevator", "fifo"):
            backing, mount = shm / sched, work / f"m-{sched}"
            backing.mkdir()
            mount.mkdir()
            emulated = mounted(
                "iowatt", backing, mount, work / "disks", "--disk-model", "barracuda-7200",
                "--scheduler", sched, failed=lambda m: fail(m, "root and /dev/fuse are needed"),
            )  # fmt: skip
            with emulated:
                subprocess.run(
                    ["iowatt", "tasks", str(sets), "--per-core", "1,2", "--data", f"hdd={mount}",
                     "--results", str(results), "--quiet", "--label", f"sched={sched}"],
                    check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                )  # fmt: skip
    finally:
        shutil.rmtree(shm, ignore_errors=True)
    rows = validated(results)
    print(f"3. {cat_mb:g} MB cats on an emulated barracuda-7200, predicted against measured:")
    for r in rows:
        on = r["predicted_on"]
        print(
            f"   {on['emulator_scheduler']:<8} as {on['scheduler']:<8} k={r['per_core']}: "
            f"measured {r['jobs_per_h_measured']:8.1f}, predicted "
            f"{r['jobs_per_h_predicted']:8.1f}, {r['jobs_per_h_error_pct']:+5.1f} %"
        )
    worst = max(abs(r["jobs_per_h_error_pct"]) for r in rows)
    ratio_line("largest I/O-bound jobs/h error / 15 %", worst / 15, "≤ 1")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tasks", type=int, default=24)
    p.add_argument("--task-s", type=float, default=1.5)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--scale", type=float, default=0.005)
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--cat-mb", type=float, default=16.0)
    p.add_argument("--skip-validate", action="store_true")
    # The demo's validation mounts emulated disks and runs minutes: a smoke run leaves it out.
    a = parse(p, {"tasks": 4, "task_s": 0.2, "repeat": 2}, narrow={"skip_validate": True})
    with tempfile.TemporaryDirectory(prefix="iowatt-bench-") as tmp:
        work = Path(tmp)
        overhead(a.tasks, a.task_s, a.repeat, work)
        if not a.skip_validate:
            validate(a.scale, a.rounds, work)
            disk_part(a.cat_mb, work)


if __name__ == "__main__":
    main()
