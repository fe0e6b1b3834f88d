"""Tool output for the import tests: real fio runs, and FileBench text as FileBench prints it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest


def run_fio(
    where: Path, fmt: str, *jobs: str, extra: tuple[str, ...] = (), size: str = "16m"
) -> Path:
    """Runs the real fio in ``where`` (short, on one small file), one job per ``rw`` in
    ``jobs``, and returns its output file; skips the test when fio is not installed."""
    if shutil.which("fio") is None:
        pytest.skip("`fio` is not on PATH: the fio import is tested against real fio output")
    out = where / f"{'-'.join(jobs)}.{fmt}.json"
    args = ["fio", f"--output-format={fmt}", f"--output={out}", f"--directory={where}"]
    for rw in jobs:
        args += [f"--name={rw}", "--filename=data", f"--size={size}", f"--rw={rw}", "--bs=4k",
                 "--ioengine=psync", *(extra or ("--runtime=1", "--time_based"))]  # fmt: skip
    subprocess.run(args, check=True, capture_output=True, stdin=subprocess.DEVNULL)
    return out


# What `filebench -f` printed (1.5-alpha3; 1.4.9 with debug-level pids), kept verbatim.
FILEBENCH_15 = """\
Filebench Version 1.5-alpha3
0.000: Allocated 173MB of shared memory
0.003: Random RW Version 3.0 personality successfully loaded
0.003: Populating and pre-allocating filesets
0.004: largefile1 populated: 1 files, avg. dir. width = 1000000, avg. dir. depth = 0.0, \
0 leafdirs, 5120.000MB total size
12.812: Starting 1 rand-rw instances
13.815: Running...
73.823: Run took 60 seconds...
73.824: Per-Operation Breakdown
rand-write1          389512ops     6491ops/s  50.7mb/s    0.150ms/op [0.005ms - 51.220ms]
rand-read1           1171302ops    19520ops/s 152.5mb/s    0.049ms/op [0.002ms - 9.876ms]
rand-stat1           17ops
73.824: IO Summary: 1560814 ops 26010.899 ops/s 19520/6491 rd/wr 203.2mb/s 0.074ms/op
73.824: Shutting down processes
"""

FILEBENCH_149 = """\
 5305: 61.562: Per-Operation Breakdown
rand-read1           1413226ops    23553ops/s 184.0mb/s      0.0ms/op       37us/op-cpu [0ms - 8ms]
 5305: 61.562: IO Summary: 1413226 ops, 23553.491 ops/s, (23553/0 r/w), 184.0mb/s, \
    43us cpu/op,   0.0ms latency
"""
