"""FileBench's end-of-run text (what ``filebench -f WORKLOAD.f`` prints) as an iowatt run.

The figures come from ``stats_snap`` in FileBench's stats.c: a "Per-Operation Breakdown" with
one line per flowop (``%-20s %dops %8.0lfops/s %5.1lfmb/s %8.3fms/op [%.3fms - %5.3fms]``; 1.4.9
adds ``%8.0fus/op-cpu`` and prints the range in whole ms) and the ``IO Summary:`` line, which
counts only the read and write flowops. Each ``IO Summary`` closes one run of the workload and
becomes one iowatt workload. FileBench prints means, not percentiles, so those stay null.
"""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path
from typing import Any

from iowatt.errors import ImportFormatError
from iowatt.imports.model import Parsed, latency, workload

HINT = (
    "import the text FileBench prints at the end of a run (e.g. `filebench -f w.f > out.txt`),"
    " which ends with an `IO Summary:` line"
)
# FileBench's log prefix: an optional pid (debug levels above info), then seconds since start.
_PREFIX = r"^\s*(?:\d+:\s+)?(?:\d+\.\d+:\s+)?"
_NUM = r"(\d+(?:\.\d+)?)"
_FLOWOP = re.compile(
    _PREFIX + rf"(?P<name>\S+)\s+(?P<ops>\d+)ops\s+{_NUM}ops/s\s+{_NUM}mb/s\s+{_NUM}ms/op"
    rf"(?:\s+{_NUM}us/op-cpu)?(?:\s+\[{_NUM}ms\s*-\s*{_NUM}ms\])?(?:\s+\[[\d\s]*\])?\s*$"
)
# 1.5: "IO Summary: %5d ops %5.3lf ops/s %0.0lf/%0.0lf rd/wr %5.1lfmb/s %5.3fms/op"
# 1.4.9: "IO Summary: %5d ops, %5.3lf ops/s, (%0.0lf/%0.0lf r/w), %5.1lfmb/s, %6.0fus cpu/op,
#         %5.1fms latency"
_SUMMARY = re.compile(
    rf"IO Summary:\s+(?P<ops>\d+) ops,? +{_NUM} ops/s,? +\(?{_NUM}/{_NUM} (?:rd/wr|r/w)\)?,?"
    rf"\s+{_NUM}mb/s,?\s+(?:{_NUM}ms/op|{_NUM}us cpu/op,\s+{_NUM}ms latency)"
)
_VERSION = re.compile(r"Filebench Version:? (\S+)")
_PERSONALITY = re.compile(r"(.+?) Version [\d.]+ personality successfully loaded")
_RUN_TOOK = re.compile(r"Run took (\d+) seconds")


def parse(path: Path, text: str, workload_name: str | None) -> Parsed:
    blocks = _blocks(text)
    if not blocks:
        raise ImportFormatError(f"`{path}` is not FileBench output: no `IO Summary:` line", HINT)
    version = _VERSION.search(text)
    personality = _PERSONALITY.search(text)
    took = [int(m) for m in _RUN_TOOK.findall(text)]
    name = workload_name or path.stem
    names = [name] if len(blocks) == 1 else [f"{name}.{i + 1}" for i in range(len(blocks))]
    summaries, configs = {}, []
    for i, (summary, flowops, line) in enumerate(blocks):
        if summary is None:
            raise ImportFormatError(
                f"`{path}` has an `IO Summary:` line iowatt cannot read: `{line.strip()}`",
                "iowatt reads the summaries of FileBench 1.4.9 and 1.5; report the line's format",
            )
        runtime = took[i] if len(took) == len(blocks) else None
        summaries[names[i]] = _workload(summary, flowops, runtime)
        configs.append(
            {
                "name": names[i],
                "personality": _personality(personality.group(1)) if personality else None,
                "iosize": None,
                "nthreads": None,
                "iodepth": None,
                "directio": None,
                "engine": None,
            }
        )
    # The lines as FileBench printed them, for whoever needs more than the mapping keeps.
    runs = [{**s, "flowops": [f["text"] for f in fl]} for s, fl, _ in blocks if s is not None]
    ended = path.stat().st_mtime_ns
    runtime_s = sum(s["runtime_s"] or 0.0 for s in summaries.values())
    return Parsed(
        source="filebench",
        path=path,
        tool_version=f"filebench-{version.group(1)}" if version else None,
        started_ns=ended - round(runtime_s * 1e9),
        ended_ns=ended,
        workloads=configs,
        summaries=summaries,
        extra={"filebench": {"version": version.group(1) if version else None, "runs": runs}},
    )


Block = tuple[dict[str, Any] | None, list[dict[str, Any]], str]


def _blocks(text: str) -> list[Block]:
    """Each ``IO Summary`` with the flowop lines printed since the previous one; lines that
    match neither are skipped."""
    blocks: list[Block] = []
    flowops: list[dict[str, Any]] = []
    for line in text.splitlines():
        if "IO Summary:" in line:
            blocks.append((_summary(line), flowops, line))
            flowops = []
        elif m := _FLOWOP.match(line):
            ops_s, mib_s, ms, cpu, lo, hi = m.groups()[2:]
            flowops.append(
                {"name": m["name"], "ops": int(m["ops"]), "ops_s": float(ops_s),
                 "mib_s": float(mib_s), "mean_ns": _ns(ms), "us_per_op": _float(cpu),
                 "min_ns": _ns(lo), "max_ns": _ns(hi), "text": line.strip()}
            )  # fmt: skip
    return blocks


def _summary(line: str) -> dict[str, Any] | None:
    m = _SUMMARY.search(line)
    if not m:
        return None
    ops_s, rd_s, wr_s, mib_s, ms_op, cpu, ms_latency = m.groups()[1:]
    return {
        "ops": int(m["ops"]),
        "ops_s": float(ops_s),
        "rd_s": float(rd_s),
        "wr_s": float(wr_s),
        "mib_s": float(mib_s),
        "mean_ns": _ns(ms_op or ms_latency),
        "us_per_op": _float(cpu),
        "text": line.strip(),
    }


def _workload(
    summary: dict[str, Any], flowops: list[dict[str, Any]], run_took_s: int | None
) -> dict[str, Any]:
    ops, ops_s = summary["ops"], summary["ops_s"]
    # ops / ops_s is FileBench's own stats period (ops/s has 3 decimals); "Run took" is whole s.
    runtime = ops / ops_s if ops and ops_s else (float(run_took_s) if run_took_s else None)
    # The workload's range is the flowops' only when every flowop is a read or write one.
    io_only = flowops and sum(f["ops"] for f in flowops) == ops
    mins = [int(f["min_ns"]) for f in flowops if f["min_ns"] is not None]
    maxs = [int(f["max_ns"]) for f in flowops if f["max_ns"] is not None]
    ranged = io_only and len(mins) == len(flowops)
    return workload(
        status="complete",
        reason=None,
        ops=ops,
        nbytes=None,
        # FileBench stops a run at the first failed flowop and then prints no IO Summary.
        errors=0,
        errors_by_kind={},
        runtime_s=runtime,
        ops_s=ops_s,
        mib_s=summary["mib_s"],
        latency_ns=latency(
            min=min(mins) if ranged else None,
            mean=summary["mean_ns"],
            max=max(maxs) if ranged else None,
        ),
        latency_saturated=None,
        cpu={"usr_s": None, "sys_s": None, "us_per_op": summary["us_per_op"]},
        flowops={f["name"]: _flowop(f, runtime) for f in flowops},
    )


def _flowop(f: dict[str, Any], runtime: float | None) -> dict[str, Any]:
    return {
        "ops": f["ops"],
        "bytes": None,
        "errors": 0,
        # The printed ops/s has no decimals; ops over the stats period is what it rounds.
        "ops_s": f["ops"] / runtime if runtime else f["ops_s"],
        "mib_s": f["mib_s"],
        "mean_ns": f["mean_ns"],
        "min_ns": None if f["min_ns"] is None else int(f["min_ns"]),
        "max_ns": None if f["max_ns"] is None else int(f["max_ns"]),
        "p50_ns": None,
        "p99_ns": None,
    }


def _personality(title: str) -> str:
    """``Random Read`` → ``randomread``: the name of FileBench's workload file (and of iowatt's
    personality where there is one)."""
    return re.sub(r"[^a-z0-9]", "", title.split(": ")[-1].lower())


def _ns(ms: str | None) -> float | None:
    """Milliseconds as printed → ns, exactly (decimal, not binary, arithmetic)."""
    return None if ms is None else float(Decimal(ms) * 1_000_000)


def _float(text: str | None) -> float | None:
    return None if text is None else float(text)
