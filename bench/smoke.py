#!/usr/bin/env python3
"""Run every bench/ script with ``--smoke`` and fail if one crashes or prints no ratio line.

Usage::

    python bench/smoke.py                    # every script
    python bench/smoke.py startup fio_compare

A script passes when it exits 0 within ``--timeout`` seconds and prints at least one
``ratio:`` line, each with a number or with the peer that is missing. Times are printed, never
judged: a smoke run is too short to measure anything, it only keeps the scripts from rotting
between the runs that are quoted.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

from _smoke import RATIO_PREFIX

HERE = Path(__file__).resolve().parent


def scripts() -> list[Path]:
    """The runnable scripts: helper modules have no ``__main__`` block, and this one is skipped."""
    return [
        p
        for p in sorted(HERE.glob("*.py"))
        if p.name != Path(__file__).name
        and not p.name.startswith("_")
        and '__name__ == "__main__"' in p.read_text()
    ]


def check(output: str) -> str | None:
    """What is wrong with one script's ratio lines, if anything."""
    ratios = [line for line in output.splitlines() if line.startswith(RATIO_PREFIX)]
    if not ratios:
        return "no ratio line"
    bad = [line for line in ratios if "n/a (no figure)" in line]
    return f"{len(bad)} ratio line(s) without a figure" if bad else None


def run(script: Path, timeout: float) -> tuple[float, str | None, str]:
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(
            [sys.executable, str(script), "--smoke"],
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else e.stdout or ""
        return time.perf_counter() - t0, f"still running after {timeout:g} s", out
    took = time.perf_counter() - t0
    output = proc.stdout + proc.stderr
    problem = check(proc.stdout)
    if proc.returncode != 0:
        problem = f"exit status {proc.returncode}"
    return took, problem, output


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", help="scripts to run (default: all), with or without .py")
    ap.add_argument("--timeout", type=float, default=300, help="seconds per script [300]")
    a = ap.parse_args()
    chosen = scripts()
    if a.names:
        wanted = {n.removesuffix(".py") for n in a.names}
        unknown = wanted - {p.stem for p in chosen}
        if unknown:
            print(f"error: no bench script `{sorted(unknown)[0]}`", file=sys.stderr)
            print(f"hint: one of {', '.join(p.stem for p in chosen)}", file=sys.stderr)
            return 2
        chosen = [p for p in chosen if p.stem in wanted]
    failed = []
    t0 = time.perf_counter()
    for script in chosen:
        print(f"== {script.name} --smoke", flush=True)
        took, problem, output = run(script, a.timeout)
        for line in output.splitlines():
            if line.startswith(("peer missing: ", RATIO_PREFIX)):
                print(f"   {line}")
        if problem:
            failed.append(script.name)
            print(f"   FAILED ({problem}) after {took:.1f} s; its output ends:")
            for line in output.strip().splitlines()[-20:]:
                print(f"   | {line}")
        else:
            print(f"   ok in {took:.1f} s")
    total = time.perf_counter() - t0
    print(f"{len(chosen) - len(failed)} of {len(chosen)} scripts passed in {total:.0f} s")
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
