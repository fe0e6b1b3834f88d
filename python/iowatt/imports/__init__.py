"""``iowatt import``: results other tools already produced, stored as iowatt runs.

Each input file becomes one run of kind ``import`` with the same files and catalog rows as a
run iowatt measured, so ``iowatt runs``, ``compare`` and DuckDB queries treat both alike. The
mapping of every format and what it keeps exactly is in docs/import.md.

Every file is parsed into a :class:`Parsed` before anything is written, so a bad file among
many imports nothing; the input files are only read.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from iowatt import __version__
from iowatt.errors import ConfigError, ImportFormatError
from iowatt.store import LATENCY_SCHEMA, RunWriter, index_run, new_run_id, results_dir

FORMATS = ("auto", "fio", "filebench")


@dataclass
class Histogram:
    """Exact latency buckets of one workload (``flowop`` None) or one of its flowops."""

    workload: str
    flowop: str | None
    value_ns: list[int]
    count: list[int]


@dataclass
class Parsed:
    """One input file turned into a run's content; nothing has been written yet."""

    source: str
    path: Path
    tool_version: str | None
    started_ns: int
    ended_ns: int
    workloads: list[dict[str, Any]]
    summaries: dict[str, dict[str, Any]]
    # More summary.json sections, e.g. the whole fio document under "fio".
    extra: dict[str, Any] = field(default_factory=dict)
    histograms: list[Histogram] = field(default_factory=list)
    host: dict[str, Any] = field(default_factory=dict)


def latency(
    *,
    min: int | None = None,
    mean: float | None = None,
    stdev: float | None = None,
    percentiles: Mapping[float, int | None] | None = None,
    max: int | None = None,
) -> dict[str, Any]:
    """A summary's ``latency_ns`` with iowatt's keys; a value the source did not give is None."""
    pct = percentiles or {}
    out: dict[str, Any] = {"min": min, "mean": mean, "stdev": stdev}
    for p in (50.0, 90.0, 95.0, 99.0, 99.9, 99.99):
        out[f"p{p:g}"] = pct.get(p)
    out["max"] = max
    return out


def workload(
    *,
    status: str,
    reason: str | None,
    ops: int | None,
    nbytes: int | None,
    errors: int | None,
    errors_by_kind: dict[str, int] | None,
    runtime_s: float | None,
    ops_s: float | None,
    mib_s: float | None,
    latency_ns: dict[str, Any],
    latency_saturated: bool | None,
    cpu: dict[str, float | None],
    flowops: dict[str, dict[str, Any]],
) -> dict[str, Any]:
    """A workload's summary with exactly the keys :func:`iowatt.summary.workload_summary` has,
    so readers of summary.json need no special case for imported runs."""
    return {
        "status": status,
        "reason": reason,
        "ops": ops,
        "bytes": nbytes,
        "errors": errors,
        "errors_by_kind": errors_by_kind,
        "runtime_s": runtime_s,
        "ops_s": ops_s,
        "mib_s": mib_s,
        "latency_ns": latency_ns,
        "latency_saturated": latency_saturated,
        "cpu": cpu,
        "flowops": flowops,
    }


def read_text(path: Path) -> str:
    """The file's text; a ConfigError naming it when it is missing or unreadable."""
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        raise ConfigError(
            f"no file `{path}`", "check the path; give fio JSON or FileBench output files"
        ) from None
    except IsADirectoryError:
        raise ConfigError(f"`{path}` is a directory", "give the result files inside it") from None
    except OSError as e:
        raise ConfigError(f"cannot read `{path}`: {e.strerror}", "check its permissions") from None


def detect(path: Path, text: str) -> str:
    """``fio`` for a JSON document (possibly after lines fio printed before it), ``filebench``
    for text with an ``IO Summary:`` line."""
    if text.lstrip().startswith("{") or re.search(r'^\{\s*$(?=[\s\S]*"jobs")', text, re.M):
        return "fio"
    if re.search(r"IO Summary:", text):
        return "filebench"
    raise ImportFormatError(
        f"`{path}` is neither fio JSON output nor FileBench output",
        "iowatt imports `fio --output-format=json` (or json+) files and FileBench's end-of-run"
        " text (with its `IO Summary:` line); pass --format to say which it is",
    )


def parse(path: str | Path, fmt: str = "auto", workload_name: str | None = None) -> Parsed:
    """Reads and checks one file; raises an IowattError naming it if it cannot be imported."""
    # The parsers use this module's types, so they are imported once it is complete.
    from iowatt.imports.filebench import parse as parse_filebench
    from iowatt.imports.fio import parse as parse_fio

    if fmt not in FORMATS:
        raise ConfigError(f"unknown format `{fmt}`", f"formats are: {', '.join(FORMATS)}")
    path = Path(path).absolute()
    text = read_text(path)
    kind = detect(path, text) if fmt == "auto" else fmt
    if kind == "fio":
        return parse_fio(path, text, workload_name)
    return parse_filebench(path, text, workload_name)


def write(parsed: Parsed, labels: Mapping[str, str], results: Path) -> Path:
    """Commits one parsed file as a run and indexes it; returns the run directory."""
    writer = RunWriter(results, new_run_id("import"))
    writer.write_json("manifest.json", _manifest(parsed, writer.run_id, labels))
    summary = {
        "run_id": writer.run_id,
        "status": "complete",
        "workloads": parsed.summaries,
        **parsed.extra,
    }
    writer.write_json("summary.json", summary)
    if parsed.histograms:
        writer.write_table("latency.parquet", _latency_table(writer.run_id, parsed.histograms))
    run_dir = writer.commit()
    index_run(results, run_dir)
    return run_dir


def import_files(
    paths: Sequence[str | Path],
    *,
    fmt: str = "auto",
    labels: Mapping[str, str] | None = None,
    workload_name: str | None = None,
    results: str | Path | None = None,
) -> list[Path]:
    """Imports every file as its own run, or none if any of them cannot be imported."""
    parsed = [parse(p, fmt, workload_name) for p in paths]
    out = results_dir(results)
    return [write(p, labels or {}, out) for p in parsed]


def import_file(
    path: str | Path,
    *,
    fmt: str = "auto",
    labels: Mapping[str, str] | None = None,
    results: str | Path | None = None,
    workload_name: str | None = None,
) -> Path:
    """Imports one file as a run; returns the committed run directory."""
    return import_files(
        [path], fmt=fmt, labels=labels, workload_name=workload_name, results=results
    )[0]


def _manifest(parsed: Parsed, run_id: str, labels: Mapping[str, str]) -> dict[str, Any]:
    return {
        "run_id": run_id,
        "kind": "import",
        "status": "complete",
        "reason": None,
        "iowatt_version": __version__,
        "imported_ns": time.time_ns(),
        "started_ns": parsed.started_ns,
        "ended_ns": parsed.ended_ns,
        "seed": None,
        "labels": {"source": parsed.source, **labels},
        "config": {
            "source": parsed.source,
            "file": str(parsed.path),
            "tool_version": parsed.tool_version,
            "target": None,
            "workloads": parsed.workloads,
        },
        # Only what the file itself says: the importing machine is not the one measured.
        "host": parsed.host,
    }


def _latency_table(run_id: str, histograms: Sequence[Histogram]) -> pa.Table:
    cols: dict[str, list[Any]] = {name: [] for name in LATENCY_SCHEMA.names}
    for h in histograms:
        n = len(h.value_ns)
        cols["run_id"] += [run_id] * n
        cols["workload"] += [h.workload] * n
        cols["flowop"] += [h.flowop] * n
        cols["value_ns"] += h.value_ns
        cols["count"] += h.count
    return pa.table(cols, schema=LATENCY_SCHEMA)
