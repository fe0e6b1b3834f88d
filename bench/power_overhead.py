#!/usr/bin/env python3
"""The power sampler's own CPU cost at 100 Hz, beside a peer reading the same sources.

Usage::

    python bench/power_overhead.py                    # 20 s per measurement, 3 reps
    python bench/power_overhead.py --seconds 5 --reps 1
    python bench/power_overhead.py --smoke            # 2 reps of 1 s, a check that it works

Sources: a RAPL powercap tree (package-0 with core, uncore and dram subzones, and psys) and an
hwmon tree (an INA226 and coretemp) built as directory fixtures with the real sysfs layout, and
a CSV meter log that a separate process appends 10 lines/s to. Separate processes also advance
the RAPL counters, so their CPU is not counted.

iowatt: ``iowatt.power.Recording`` at 100 Hz in this process, drained every 0.5 s as
``iowatt power record`` does; its cost is this process's CPU time (user + system) over the
window, as a % of one core. Peer: whichever of these Debian tools works here, at 100 Hz on
the real machine (each measured as the CPU time of its process):

- ``turbostat --quiet --interval 0.01 --show PkgWatt`` (linux-cpupower; needs MSRs, so not in
  a VM), or
- ``powerstat -R 0.5`` (powerstat; needs RAPL; 0.5 s is its finest interval).

The baseline peer that always works is a shell loop that ``cat``s the same fixture files 100
times a second, the simplest sampler one could write. Goal: iowatt ≤ 1 % of a core.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _smoke import alternate, parse, peer, ratio_line

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from support.power import make_hwmon, make_rapl

HZ = 100.0

COUNTER = """
import sys, time
paths = sys.argv[1:]
t0 = time.monotonic()
while True:
    time.sleep(0.005)
    uj = int((time.monotonic() - t0) * 25e6) % 262143328850
    for p in paths:
        with open(p, "r+") as f:
            f.write(f"{uj}\\n"); f.truncate()
"""
METER = """
import sys, time
with open(sys.argv[1], "a", buffering=1) as f:
    while True:
        f.write(f"{time.time():.3f},0.05,11.9,0.06,150.0\\n")
        time.sleep(0.1)
"""


def cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def measure_iowatt(root: Path, log: Path, seconds: float) -> float:
    from iowatt.power.recording import Recording
    from iowatt.power.sources import parse_source

    specs = [
        parse_source(f"rapl:root={root / 'class/powercap'}"),
        parse_source(f"hwmon:root={root / 'class/hwmon'}"),
        parse_source(f"meter:path={log}"),
    ]
    rec = Recording(specs, HZ)
    rec.start()
    time.sleep(1.0)  # threads started, first polls done
    rec.drain()
    c0, t0 = cpu_s(), time.monotonic()
    end = t0 + seconds
    while time.monotonic() < end:
        time.sleep(0.5)
        rec.drain()
    c1, t1 = cpu_s(), time.monotonic()
    data = rec.stop()
    readings = len(data.value)
    print(f"  iowatt: {readings} readings, {len(data.channels)} channels", file=sys.stderr)
    return 100.0 * (c1 - c0) / (t1 - t0)


def measure_process(cmd: list[str], seconds: float) -> float | None:
    """CPU % of one core used by ``cmd`` (and its children) over ``seconds``."""
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    except FileNotFoundError:
        return None
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds and proc.poll() is None:
        time.sleep(0.1)  # a tool that cannot run here exits at once
    if proc.poll() is not None:
        err = proc.stderr.read().decode(errors="replace").strip() if proc.stderr else ""
        print(f"  {cmd[0]} unavailable here: {err.splitlines()[-1:] or ['exited']}",
              file=sys.stderr)  # fmt: skip
        return None
    proc.terminate()
    _, _, usage = os.wait4(proc.pid, 0)
    return 100.0 * (usage.ru_utime + usage.ru_stime) / (time.monotonic() - t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--json-out", type=Path)
    args = parse(ap, {"seconds": 1.0, "reps": 2})
    with tempfile.TemporaryDirectory(prefix="iowatt-power-bench-") as tmp:
        root = Path(tmp) / "sys"
        zones = make_rapl(root)
        make_hwmon(root)
        log = Path(tmp) / "meter.csv"
        log.write_text("time,s12,d12,s5,server\n")
        helpers = [
            subprocess.Popen([sys.executable, "-c", COUNTER,
                              *[str(z / "energy_uj") for z in zones.values()]]),
            subprocess.Popen([sys.executable, "-c", METER, str(log)]),
        ]  # fmt: skip
        files = [str(z / "energy_uj") for z in zones.values()] + [
            str(p) for p in (root / "class/hwmon").glob("*/*_input")
        ]
        loop = f"while :; do cat {' '.join(files)} >/dev/null; tail -c 200 {log} >/dev/null; "
        shell_loop = ["sh", "-c", loop + "sleep 0.01; done"]
        peers = {
            "shell cat loop": shell_loop,
            "turbostat": ["turbostat", "--quiet", "--interval", "0.01", "--show", "PkgWatt"],
            "powerstat": ["powerstat", "-R", "0.5", "1000000"],  # its finest interval
        }
        peers = {name: cmd for name, cmd in peers.items() if peer(cmd[0])}
        results: dict[str, list[float]] = {"iowatt": []}
        try:
            for rep in range(args.reps):
                print(f"rep {rep + 1}/{args.reps}", file=sys.stderr)
                for name in alternate(rep, ["iowatt", *peers]):
                    if name == "iowatt":
                        results["iowatt"].append(measure_iowatt(root, log, args.seconds))
                        continue
                    pct = measure_process(peers[name], args.seconds)
                    if pct is not None:
                        results.setdefault(name, []).append(pct)
        finally:
            for h in helpers:
                h.terminate()
                h.wait()
    print(f"\nCPU of one core at {HZ:g} Hz, median of {args.reps} × {args.seconds:g} s")
    medians = {name: statistics.median(v) for name, v in results.items() if v}
    for name, m in medians.items():
        ratio = "" if name == "iowatt" else f"   iowatt/{name} = {medians['iowatt'] / m:.2f}"
        print(f"  {name:<16} {m:6.3f} %  (min {min(results[name]):.3f}, "
              f"max {max(results[name]):.3f}){ratio}")  # fmt: skip
    goal = "met" if medians["iowatt"] <= 1.0 else "NOT met"
    print(f"goal ≤ 1 % of a core: {goal}")
    ratio_line("iowatt CPU % / 1 %", medians["iowatt"], "≤ 1")
    for name in peers:
        # turbostat and powerstat start but measure nothing without MSRs or RAPL (a VM).
        value = medians["iowatt"] / medians[name] if medians.get(name) else None
        ratio_line(f"CPU iowatt/{name}", value, "≤ 1", None if value else name)
    if args.json_out:
        args.json_out.write_text(json.dumps({"hz": HZ, "runs": results, "median": medians}))


if __name__ == "__main__":
    main()
