"""FileBench's end-of-run lines for a workload file's run — the per-operation breakdown and the
``IO Summary:`` line, in FileBench 1.5's format (``stats.c``: ``stats_snap``) — so scripts that
parse FileBench's output keep working on iowatt's."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MB = 1 << 20  # FileBench's MB_FLOAT
# FileBench's FLOW_ATTR_READ and FLOW_ATTR_WRITE flowops: its rd/wr rates.
READS = ("read", "readwholefile")
WRITES = ("write", "writewholefile", "appendfile", "appendfilerand", "aiowrite")


def io_summary(workload: Mapping[str, Any], elapsed_s: float) -> list[str]:
    """The lines FileBench prints at the end of a run; ``elapsed_s`` is their time stamp (the
    flowops are in FileBench's order, the last defined first)."""
    secs = workload["runtime_s"] or 1e-9
    stamp = f"{elapsed_s:.3f}:"
    lines = [f"{stamp} Per-Operation Breakdown"]
    ops = nbytes = rd = wr = 0
    lat_ns = 0.0
    # FileBench lists the flowops last defined first.
    for name, f in reversed(workload["flowops"].items()):
        ms = f["mean_ns"] / 1e6 if f["ops"] else 0.0
        lines.append(
            f"{name:<20} {f['ops']}ops {f['ops'] / secs:8.0f}ops/s "
            f"{f['bytes'] / MB / secs:5.1f}mb/s {ms:8.3f}ms/op "
            f"[{f['min_ns'] / 1e6:.3f}ms - {f['max_ns'] / 1e6:5.3f}ms]"
        )
        if f["io"]:
            ops += f["ops"]
            nbytes += f["bytes"]
            lat_ns += f["mean_ns"] * f["ops"]
            rd += f["ops"] if f["kind"] in READS else 0
            wr += f["ops"] if f["kind"] in WRITES else 0
    ms_op = lat_ns / ops / 1e6 if ops else 0.0
    lines.append(
        f"{stamp} IO Summary: {ops:5d} ops {ops / secs:5.3f} ops/s "
        f"{rd / secs:0.0f}/{wr / secs:0.0f} rd/wr {nbytes / MB / secs:5.1f}mb/s {ms_op:5.3f}ms/op"
    )
    return lines
