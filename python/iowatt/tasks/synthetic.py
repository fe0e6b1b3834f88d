"""The built-in synthetic tasks (``python -m iowatt.tasks.synthetic``), after the study's
profiles: an *analysis* reads its own input file sequentially, spending a set CPU time per MB as
it goes; a *simulation* holds a set amount of memory and burns CPU for a set time. Either writes
a small JSON summary, as the study's tasks did.

CPU time is the process's own (``time.process_time``), interpreter start-up included, so a task
costs its profile's CPU seconds whatever else the node is doing; its wall time is what the
packing makes of it. Only the standard library is imported: the task must start fast.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

PAGE = 4096


def _burn_until(cpu_s: float) -> None:
    x = 0
    while time.process_time() < cpu_s:
        for i in range(2000):
            x ^= i * i
    if x == -1:  # keeps the loop's result alive
        print(x)


def analysis(path: str, cpu_s: float, chunk: int) -> dict[str, float | int]:
    total = os.path.getsize(path)
    read = 0
    with open(path, "rb", buffering=0) as f:
        while data := f.read(chunk):
            read += len(data)
            _burn_until(cpu_s * read / total)
    _burn_until(cpu_s)
    return {"bytes_read": read}


def simulation(cpu_s: float, memory: int) -> dict[str, float | int]:
    held = bytearray(memory)
    for i in range(0, memory, PAGE):  # touch every page: resident, as the study's footprint
        held[i] = 1
    _burn_until(cpu_s)
    return {"bytes_held": len(held)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m iowatt.tasks.synthetic")
    p.add_argument("--cpu-s", type=float, required=True)
    p.add_argument("--input", help="the analysis's input file (none: a simulation)")
    p.add_argument("--chunk", type=int, default=4 << 20)
    p.add_argument("--memory", type=int, default=0, help="bytes a simulation holds")
    p.add_argument("--output", required=True, help="where the summary goes")
    a = p.parse_args(argv)
    started = time.time()
    out = analysis(a.input, a.cpu_s, a.chunk) if a.input else simulation(a.cpu_s, a.memory)
    summary = {
        "task": "analysis" if a.input else "simulation",
        **out,
        "cpu_s": time.process_time(),
        "wall_s": time.time() - started,
    }
    with open(a.output, "w") as f:
        json.dump(summary, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
