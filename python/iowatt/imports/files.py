"""Reading result files of other tools and committing each as a run."""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from iowatt import __version__
from iowatt.errors import ConfigError, ImportFormatError
from iowatt.imports.filebench import parse as parse_filebench
from iowatt.imports.fio import parse as parse_fio
from iowatt.imports.model import Histogram, Parsed, read_text
from iowatt.store.catalog import publish
from iowatt.store.runs import results_dir
from iowatt.store.schemas import LATENCY_SCHEMA
from iowatt.store.writer import RunWriter, new_run_id

FORMATS = ("auto", "fio", "filebench")


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
    return publish(writer)


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
