"""The report's per-flowop tables: what FileBench prints at the end of a run (ops, ops/s, MB/s,
ms/op, min-max per flowop), with iowatt's exact percentiles, for every workload that has more
than one flowop. Waits, limits and CPU work are marked: they do not count toward ops/s.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from iowatt.report.load import Run
from iowatt.report.plots import Style
from iowatt.units import format_ns, format_rate


@dataclass
class FlowopRow:
    name: str
    kind: str
    io: bool
    ops: str
    ops_s: str
    mib_s: str
    mean: str
    p50: str
    p99: str
    max: str


@dataclass
class FlowopTable:
    run_id: str
    workload: str
    style: Style
    rows: list[FlowopRow]


def _ns(f: dict[str, Any], key: str) -> str:
    value = f.get(key)
    return format_ns(value) if isinstance(value, int | float) and f.get("ops") else "—"


def _row(name: str, f: dict[str, Any]) -> FlowopRow:
    ops = f.get("ops")
    return FlowopRow(
        name=name,
        kind=f.get("kind") or "",
        io=f.get("io", True),
        ops=f"{ops:,}" if isinstance(ops, int) else "—",
        ops_s=format_rate(f["ops_s"]) if isinstance(f.get("ops_s"), int | float) else "—",
        mib_s=format_rate(f["mib_s"]) if isinstance(f.get("mib_s"), int | float) else "—",
        mean=_ns(f, "mean_ns"),
        p50=_ns(f, "p50_ns"),
        p99=_ns(f, "p99_ns"),
        max=_ns(f, "max_ns"),
    )


def flowop_tables(runs: Sequence[Run], style: dict[tuple[str, str], Style]) -> list[FlowopTable]:
    tables = []
    for run in runs:
        for workload in run.workloads:
            flowops = (run.summary.get("workloads", {}).get(workload) or {}).get("flowops") or {}
            if len(flowops) < 2:
                continue  # a FileIO workload's one flowop is the workload's own row
            rows = [_row(name, f) for name, f in flowops.items()]
            tables.append(FlowopTable(run.run_id, workload, style[run.run_id, workload], rows))
    return tables
