"""FileBench's end-of-run text (what ``filebench -f WORKLOAD.f`` prints) as an iowatt run.

The figures come from ``stats_snap`` in FileBench's stats.c: a "Per-Operation Breakdown" with
one line per flowop (``%-20s %dops %8.0lfops/s %5.1lfmb/s %8.3fms/op [%.3fms - %5.3fms]``; 1.4.9
adds ``%8.0fus/op-cpu`` and prints the range in whole ms) and the ``IO Summary:`` line, which
counts only the read and write flowops. Each ``IO Summary`` closes one run of the workload and
becomes one iowatt workload. FileBench prints means, not percentiles, so those stay null.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any, NoReturn

from iowatt.errors import ImportFormatError
from iowatt.imports.model import Parsed, Source, latency, workload
from iowatt.imports.shape import INT64_MAX, printable

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
# The lines the mapping reads, found without a Python loop over every line (or a list of them,
# which for a file of empty lines would take gigabytes).
_READ_LINES = re.compile(r"^[^\n]*(?:ops|IO Summary:|Run took)[^\n]*", re.MULTILINE)
_PERSONALITY_LINES = re.compile(r"^[^\n]*personality successfully loaded[^\n]*", re.MULTILINE)
# FileBench prints figures of a few digits: a number far longer is not its output (and float,
# Decimal and int take time and memory in the length of what they convert).
_MAX_DIGITS = 24
# FileBench workloads have a few dozen flowops and a file a few runs; bounds far above keep a
# hostile file of millions of lines from costing gigabytes as summaries and catalog rows.
_MAX_FLOWOPS = 4096
_MAX_RUNS = 4096
_VALUE_HINT = "iowatt reads FileBench's figures as it prints them; was the file edited or damaged?"


def parse(source: Source, workload_name: str | None) -> Parsed:
    path, text = source.path, source.text
    blocks, took = _blocks(path, text)
    if not blocks:
        raise ImportFormatError(f"`{path}` is not FileBench output: no `IO Summary:` line", HINT)
    version = _VERSION.search(text)
    personality = _personality_line(text)
    name = workload_name or path.stem
    names = [name] if len(blocks) == 1 else [f"{name}.{i + 1}" for i in range(len(blocks))]
    summaries, configs = {}, []
    for i, (summary, flowops, line) in enumerate(blocks):
        if summary is None:
            raise ImportFormatError(
                f"`{path}` has an `IO Summary:` line iowatt cannot read:"
                f" `{printable(line.text.strip(), 200)}`",
                "iowatt reads the summaries of FileBench 1.4.9 and 1.5; report the line's format",
            )
        runtime = took[i] if len(took) == len(blocks) else None
        summaries[names[i]] = _workload(summary, flowops, runtime)
        configs.append(
            {
                "name": names[i],
                "personality": _personality(personality) if personality else None,
                "iosize": None,
                "nthreads": None,
                "iodepth": None,
                "directio": None,
                "engine": None,
            }
        )
    # The lines as FileBench printed them, for whoever needs more than the mapping keeps.
    runs = [{**s, "flowops": [f["text"] for f in fl]} for s, fl, _ in blocks if s is not None]
    ended = source.mtime_ns
    runtime_s = sum(s["runtime_s"] or 0.0 for s in summaries.values())
    started = ended - round(runtime_s * 1e9)
    if started < 0:
        raise ImportFormatError(
            f"`{path}`: its runs took {runtime_s:g} s, longer than from 1970 to the file's mtime",
            _VALUE_HINT,
        )
    return Parsed(
        source="filebench",
        path=path,
        tool_version=f"filebench-{version.group(1)}" if version else None,
        started_ns=started,
        ended_ns=ended,
        workloads=configs,
        summaries=summaries,
        extra={"filebench": {"version": version.group(1) if version else None, "runs": runs}},
    )


@dataclass(frozen=True)
class _Line:
    """A line of the file, which names it when one of its figures cannot be stored."""

    path: Path
    whole: str  # the file's text: the line's number is counted only when it is named
    start: int
    text: str

    @property
    def line_no(self) -> int:
        return self.whole.count("\n", 0, self.start) + 1

    def fail(self, problem: str) -> NoReturn:
        raise ImportFormatError(f"`{self.path}` line {self.line_no}: {problem}", _VALUE_HINT)

    def _digits(self, digits: str, what: str) -> str:
        if len(digits) > _MAX_DIGITS:
            self.fail(f"{what} `{printable(digits, 30)}` has more digits than FileBench prints")
        return digits

    def count(self, digits: str, what: str) -> int:
        value = int(self._digits(digits, what))
        if value > INT64_MAX:
            self.fail(f"{what} {value} is more than 2^63 − 1")
        return value

    def number(self, digits: str | None, what: str) -> float | None:
        return None if digits is None else float(self._digits(digits, what))

    def ns(self, ms: str | None, what: str) -> float | None:
        """Milliseconds as printed → ns, exactly (decimal, not binary, arithmetic)."""
        if ms is None:
            return None
        ns = float(Decimal(self._digits(ms, what)) * 1_000_000)
        if ns >= 2.0**63:  # as a float: the int of the float is what the catalog stores
            self.fail(f"{what} {ms} ms is 2^63 ns or more")
        return ns


Block = tuple[dict[str, Any] | None, list[dict[str, Any]], _Line]


def _blocks(path: Path, text: str) -> tuple[list[Block], list[int]]:
    """Each ``IO Summary`` with the flowop lines printed since the previous one (lines that
    match neither are skipped), and the seconds of each ``Run took`` line."""
    blocks: list[Block] = []
    flowops: dict[str, dict[str, Any]] = {}
    took: list[int] = []
    for found in _READ_LINES.finditer(text):
        text_line = found.group()
        line = _Line(path, text, found.start(), text_line)
        if "IO Summary:" in text_line:
            if len(blocks) == _MAX_RUNS:
                line.fail(f"more than {_MAX_RUNS} `IO Summary:` lines, more than FileBench runs")
            blocks.append((_summary(line), list(flowops.values()), line))
            flowops = {}
        elif m := _FLOWOP.match(text_line):
            if m["name"] in flowops:  # one would overwrite the other in the summary
                line.fail(f"flowop `{printable(m['name'])}` is printed twice in one run")
            if len(flowops) == _MAX_FLOWOPS:
                line.fail(f"more than {_MAX_FLOWOPS} flowops in one run, more than FileBench has")
            flowops[m["name"]] = _flowop_line(line, m)
        elif m := _RUN_TOOK.search(text_line):
            took.append(line.count(m[1], "`Run took` seconds"))
    return blocks, took


def _flowop_line(line: _Line, m: re.Match[str]) -> dict[str, Any]:
    ops_s, mib_s, ms, cpu, lo, hi = m.groups()[2:]
    return {
        "name": m["name"],
        "ops": line.count(m["ops"], "ops"),
        "ops_s": line.number(ops_s, "ops/s"),
        "mib_s": line.number(mib_s, "mb/s"),
        "mean_ns": line.ns(ms, "ms/op"),
        "us_per_op": line.number(cpu, "us/op-cpu"),
        "min_ns": line.ns(lo, "the minimum"),
        "max_ns": line.ns(hi, "the maximum"),
        "text": line.text.strip(),
    }


def _summary(line: _Line) -> dict[str, Any] | None:
    m = _SUMMARY.search(line.text)
    if not m:
        return None
    ops_s, rd_s, wr_s, mib_s, ms_op, cpu, ms_latency = m.groups()[1:]
    return {
        "ops": line.count(m["ops"], "ops"),
        "ops_s": line.number(ops_s, "ops/s"),
        "rd_s": line.number(rd_s, "rd/s"),
        "wr_s": line.number(wr_s, "wr/s"),
        "mib_s": line.number(mib_s, "mb/s"),
        "mean_ns": line.ns(ms_op or ms_latency, "ms/op"),
        "us_per_op": line.number(cpu, "us cpu/op"),
        "text": line.text.strip(),
    }


def _personality_line(text: str) -> str | None:
    """The title in "Random Read Version 3.0 personality successfully loaded"."""
    for line in _PERSONALITY_LINES.finditer(text):
        # Matched from the start of the line only: a search from every position of a long
        # line without the phrase would be quadratic.
        if m := _PERSONALITY.match(line.group()):
            return m.group(1)
    return None


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
