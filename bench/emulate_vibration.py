#!/usr/bin/env python3
"""A fan sweep over an emulated disk that follows the built-in ``hit-sata`` fan curve: does the
sweep recover the curve it was given? And does a campaign "quiet" against "fans at 100 %" find
the loss the curve injects?

Usage::

    python bench/emulate_vibration.py                   # sweep ~3 min, then campaign 6 × 2 × 5 s
    python bench/emulate_vibration.py --hold 5s --passes 2 --reps 8
    python bench/emulate_vibration.py --smoke           # 3 steps 1s + 2s, 2 × 2 runs of 1 s

Every ``iowatt`` it starts (the mount, the sweep, the sweep's and the campaign's ``iowatt
emulate set``) is the ``iowatt`` on PATH.

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

The campaign, on the same mount: ``iowatt campaign`` of one workload (``randomread``
``--directio``, a ``--filesize`` file, ``--runtime`` each) in two environments, interleaved,
``--reps`` repetitions: "quiet" (setup ``iowatt emulate set MOUNT 40``, r = 1) and "fans-100"
(setup ``iowatt emulate set MOUNT 100``, r = 0.12), then ``iowatt compare --by env --control
quiet --format json``. The injected loss is 1 − r(100) = 88 %; the campaign's is −diff_pct, its
interval the bootstrap CI of the difference. Goal: the injected loss within that interval.
As in the sweep, FUSE's own time per request (~0.15 ms, bench/emulate_disk.py) is not slowed,
so the measured loss sits slightly below 1 − r: the script says by how much the interval
misses, if it does, the time per read the medians leave unslowed, and the loss a client should
see with FUSE's 154 µs per read (measured by bench/emulate_disk.py) not slowed.
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
QUIET, LOUD = 40, 100  # % PWM: r = 1 and r = 0.12 on hit-sata
CAMPAIGN_LABEL = "injected loss within the campaign's interval (1 yes, 0 no)"
# FUSE's own time per request at QD 1, measured by bench/emulate_disk.py (bench/README.md,
# "Emulated disk": client − emulator, 154 µs): not slowed by the curve
FUSE_S = 154e-6


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


CAMPAIGN = """name = "vibration"
repetitions = {reps}
order = "interleaved"
target = "{target}"
seed = 1

[defaults]
runtime = "{runtime}"
filesize = "{filesize}"
directio = true

[[workload]]
run = "randomread"

[[env]]
name = "quiet"
setup = "iowatt emulate set {target} {quiet}"

[[env]]
name = "fans-100"
setup = "iowatt emulate set {target} {loud}"
"""


def campaign(
    target: Path, results: Path, a: argparse.Namespace
) -> tuple[dict[str, dict], list[str]] | None:
    """The campaign quiet against fans-100 on the mounted disk: its comparison's cells by env
    (ops/s) and the lines that describe it, or None after printing why."""
    results.mkdir(parents=True, exist_ok=True)
    spec = results / "vibration.toml"
    spec.write_text(
        CAMPAIGN.format(
            reps=a.reps, target=target, runtime=a.runtime, filesize=a.filesize,
            quiet=QUIET, loud=LOUD,
        )
    )  # fmt: skip
    t0 = time.perf_counter()
    run = subprocess.run(
        ["iowatt", "campaign", str(spec), "--results", str(results), "--no-report", "-q"],
        stdin=subprocess.DEVNULL, capture_output=True, text=True,
    )  # fmt: skip
    took = time.perf_counter() - t0
    if run.returncode != 0:
        print(run.stdout + run.stderr, file=sys.stderr)
        return None
    cmp = subprocess.run(
        ["iowatt", "compare", "--by", "env", "--control", "quiet", "--label",
         "campaign=vibration", "--format", "json", "--results", str(results)],
        stdin=subprocess.DEVNULL, capture_output=True, text=True,
    )  # fmt: skip
    if cmp.returncode != 0:
        print(cmp.stdout + cmp.stderr, file=sys.stderr)
        return None
    cells = {c["env"]: c for c in json.loads(cmp.stdout)["cells"]}
    lines = [
        f"\ncampaign quiet ({QUIET} %) vs fans-100 ({LOUD} %): {a.reps} × 2 runs of "
        f"randomread --directio, {a.filesize}, {a.runtime}, interleaved, in {took:.1f} s"
    ]
    for env in ("quiet", "fans-100"):
        c = cells[env]
        lines.append(
            f"  {env:9} n={c['n']} median {c['median']:.1f} ops/s "
            f"(CI {c['ci_low']:.1f}–{c['ci_high']:.1f}, coverage {c['ci_coverage']:.1%})"
        )
    return cells, lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", default=STEPS, help="fan values, %% PWM")
    ap.add_argument("--settle", default="2s")
    ap.add_argument("--hold", default="20s")
    ap.add_argument("--passes", type=int, default=1)
    ap.add_argument("--disk-model", default="ultrastar-36z15")
    ap.add_argument("--dir", default="/dev/shm", help="where BACKING and MOUNT are made")
    ap.add_argument("--reps", type=int, default=6, help="campaign repetitions per env")
    ap.add_argument("--runtime", default="5s", help="each campaign run")
    ap.add_argument("--filesize", default="16m", help="the campaign's file")
    a = parse(
        ap,
        {"steps": "50,80,100", "settle": "1s", "hold": "2s", "reps": 2, "runtime": "1s",
         "filesize": "4m"},
    )  # fmt: skip
    if os.geteuid() != 0 or not os.path.exists("/dev/fuse") or shutil.which("iowatt") is None:
        ratio_line("max |recovered / injected − 1|", None, GOAL, missing="root and /dev/fuse")
        ratio_line(CAMPAIGN_LABEL, None, "= 1", missing="root and /dev/fuse")
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
            done = campaign(target, results / "campaign", a) if sweep.returncode == 0 else None
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
    if done is None or done[0]["fans-100"]["diff_pct"] is None:
        ratio_line(CAMPAIGN_LABEL, None, "= 1")
        return 1
    cells, lines = done
    print("\n".join(lines))
    cell = cells["fans-100"]
    injected_loss = 1 - interpolate(injected, LOUD) / interpolate(injected, QUIET)
    # a loss is minus the difference: the interval's high end of the difference is its low end
    measured = -cell["diff_pct"] / 100
    lo, hi = -cell["diff_ci_high"] / 100, -cell["diff_ci_low"] / 100
    inside = lo <= injected_loss <= hi
    off = 0.0 if inside else (injected_loss - hi if injected_loss > hi else injected_loss - lo)
    print(
        f"  injected loss 1 − r({LOUD})/r({QUIET}) = {injected_loss:.1%}; measured "
        f"{measured:.1%} (interval {lo:.1%}–{hi:.1%}); injected "
        + ("inside" if inside else f"outside, {off:+.2%} past the nearer end")
    )
    # what the medians imply: per request, t = S / r + F, F the time the curve does not slow
    r = interpolate(injected, LOUD) / interpolate(injected, QUIET)
    t_quiet, t_loud = 1 / cells["quiet"]["median"], 1 / cell["median"]
    unslowed = (t_quiet / r - t_loud) / (1 / r - 1)
    print(
        f"  the medians imply {t_quiet * 1e3:.3f} ms per read quiet, {t_loud * 1e3:.2f} ms at "
        f"{LOUD} %: {unslowed * 1e3:.3f} ms of each read not slowed (FUSE, the bench itself)"
    )
    # the loss a client should see if each read is S / r + FUSE_S, S = t_quiet − FUSE_S
    seen = 1 - t_quiet / ((t_quiet - FUSE_S) / r + FUSE_S)
    print(
        f"  with FUSE's {FUSE_S * 1e6:.0f} µs per read not slowed (bench/emulate_disk.py), the "
        f"injected loss a client sees is {seen:.1%}: "
        + ("inside" if lo <= seen <= hi else "outside")
        + " the interval"
    )
    ratio_line("campaign measured loss / injected loss", measured / injected_loss, "≈ 1")
    ratio_line(CAMPAIGN_LABEL, 1.0 if inside else 0.0, "= 1")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
