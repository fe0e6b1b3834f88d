#!/usr/bin/env python3
"""A fan sweep over an emulated disk that follows the built-in ``hit-sata`` fan curve: does the
sweep recover the curve it was given?

Usage::

    python bench/emulate_vibration.py                   # steps 0,50,60,…,100; 2s + 20s each: ~3 min
    python bench/emulate_vibration.py --hold 5s --passes 2
    python bench/emulate_vibration.py --smoke           # 3 steps, 1s + 2s each: that it runs

Needs root (a FUSE mount) and /dev/fuse; without them the ratio says the peer is missing.

Setup: BACKING and MOUNT are directories under ``--dir`` (/dev/shm by default). The disk is
``iowatt emulate mount BACKING MOUNT --curve hit-sata --disk-model DISK --no-report`` (ready
once it says "mounted at", stopped with SIGTERM). The sweep is

    iowatt sweep --stimulus fan --driver cmd --set 'iowatt emulate set MOUNT {value}'
        --no-watchdog --disk MOUNT --steps … --settle … --hold …

(its own writes of 128 KiB at its default depth), and its curve file (``curve-*.json``)
gives the recovered ``norm`` per step: the step's MiB/s ÷ the best step's. The injected r is
the profile's fan curve at the same value, linear between points, as the emulator takes it.

Goal: the recovered curve within 5 % of the injected one at every step (the largest
|norm / r − 1| over the steps is the ratio line). FUSE's own time per request is not slowed by
the curve, so the recovered curve sits slightly above the injected one where r is small; and
the sweep's step throughput came in steps of 2 MiB per hold here (0.4 MiB/s at a 5 s hold),
which alone is 15 % of the slowest step's bytes at 5 s: hence the 20 s hold.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _smoke import parse, ratio_line

STEPS = "0,50,60,70,80,90,100"
GOAL = "≤ 0.05"


def mount(backing: Path, target: Path, results: Path, disk: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        ["iowatt", "emulate", "mount", str(backing), str(target), "--curve", "hit-sata",
         "--disk-model", disk, "--results", str(results), "--no-report"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    lines: list[str] = []

    def read() -> None:
        assert proc.stderr is not None
        lines.extend(proc.stderr)

    threading.Thread(target=read, daemon=True).start()
    deadline = time.monotonic() + 60
    while not any("mounted at" in line for line in lines):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise SystemExit(f"the mount did not come up:\n{''.join(lines)}")
        time.sleep(0.05)
    return proc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", default=STEPS, help="fan values, %% PWM")
    ap.add_argument("--settle", default="2s")
    ap.add_argument("--hold", default="20s")
    ap.add_argument("--passes", type=int, default=1)
    ap.add_argument("--disk-model", default="ultrastar-36z15")
    ap.add_argument("--dir", default="/dev/shm", help="where BACKING and MOUNT are made")
    a = parse(ap, {"steps": "50,80,100", "settle": "1s", "hold": "2s"})
    if os.geteuid() != 0 or not os.path.exists("/dev/fuse") or shutil.which("iowatt") is None:
        ratio_line("max |recovered / injected − 1|", None, GOAL, missing="root and /dev/fuse")
        return 0
    from iowatt.sweep.profiles import interpolate, load_profiles

    injected = load_profiles()["hit-sata"].curves["fan"]
    with tempfile.TemporaryDirectory(dir=a.dir, prefix="iowatt-vib-") as tmp:
        base = Path(tmp)
        backing, target, results = base / "backing", base / "mount", base / "results"
        backing.mkdir()
        target.mkdir()
        proc = mount(backing, target, results / "emulate", a.disk_model)
        try:
            t0 = time.perf_counter()
            sweep = subprocess.run(
                ["iowatt", "sweep", "--stimulus", "fan", "--driver", "cmd", "--set",
                 f"iowatt emulate set {target} {{value}}", "--no-watchdog", "--disk", str(target),
                 "--steps", a.steps, "--settle", a.settle, "--hold", a.hold, "--passes",
                 str(a.passes), "--results", str(results / "sweep"), "--no-report"],
                stdin=subprocess.DEVNULL, capture_output=True, text=True,
            )  # fmt: skip
            took = time.perf_counter() - t0
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)
        if sweep.returncode != 0:
            print(sweep.stdout + sweep.stderr, file=sys.stderr)
            ratio_line("max |recovered / injected − 1|", None, GOAL)
            return 1
        (curve_file,) = (results / "sweep").glob("*/curve-*.json")
        points = json.loads(curve_file.read_text())["points"]
    print(f"sweep of {len(points)} steps × {a.passes} pass(es) in {took:.1f} s")
    print(f"{'PWM %':>6} {'MiB/s':>7} {'recovered':>9} {'injected':>8} {'error':>7}")
    worst = 0.0
    for p in points:
        r = interpolate(injected, p["value"])
        error = p["norm"] / r - 1
        worst = max(worst, abs(error))
        print(f"{p['value']:6g} {p['mib_s']:7.2f} {p['norm']:9.3f} {r:8.3f} {error:+7.1%}")
    ratio_line("max |recovered / injected − 1|", worst, GOAL)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
