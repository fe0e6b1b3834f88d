"""Reading result files of other tools and committing each as a run."""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from iowatt.errors import ConfigError, ImportFormatError
from iowatt.imports.filebench import parse as parse_filebench
from iowatt.imports.fio import parse as parse_fio
from iowatt.imports.model import Histogram, Parsed, check_storable_run, read_source
from iowatt.store.catalog import publish
from iowatt.store.runs import results_dir
from iowatt.store.schemas import LATENCY_SCHEMA
from iowatt.store.writer import RunWriter, new_run_id

FORMATS = ("auto", "fio", "filebench")


def detect(path: Path, text: str) -> str:
    """``fio`` for a JSON document (possibly after lines fio printed before it), ``filebench``
    for text with an ``IO Summary:`` line."""
    if re.match(r"\s*\{", text) or _json_after_notes(text):
        return "fio"
    if re.search(r"IO Summary:", text):
        return "filebench"
    raise ImportFormatError(
        f"`{path}` is neither fio JSON output nor FileBench output",
        "iowatt imports `fio --output-format=json` (or json+) files and FileBench's end-of-run"
        " text (with its `IO Summary:` line); pass --format to say which it is",
    )


def _json_after_notes(text: str) -> bool:
    """A line of only ``{`` with ``"jobs"`` after it: notes fio printed, then its JSON."""
    # Two linear searches: a lookahead from every such line is quadratic in a hostile file.
    brace = re.search(r"^\{\s*$", text, re.M)
    return brace is not None and text.find('"jobs"', brace.end()) >= 0


def parse(path: str | Path, fmt: str = "auto", workload_name: str | None = None) -> Parsed:
    """Reads and checks one file; raises an IowattError naming it if it cannot be imported."""
    if fmt not in FORMATS:
        raise ConfigError(f"unknown format `{fmt}`", f"formats are: {', '.join(FORMATS)}")
    path = Path(path).absolute()
    source = read_source(path)
    kind = detect(path, source.text) if fmt == "auto" else fmt
    parser = parse_fio if kind == "fio" else parse_filebench
    parsed = parser(source, workload_name)
    check_storable_run(parsed)
    return parsed


def write(parsed: Parsed, labels: Mapping[str, str], results: Path) -> Path:
    """Commits one parsed file as a run and indexes it; returns the run directory."""
    run_id = new_run_id("import")
    # Built before the run's directory exists: a value pyarrow refuses leaves nothing behind.
    table = _latency_table(run_id, parsed.histograms) if parsed.histograms else None
    writer = RunWriter(results, run_id)
    try:
        writer.finish(
            "import",
            None,
            started_ns=parsed.started_ns,
            ended_ns=parsed.ended_ns,
            seed=None,
            labels={"source": parsed.source, **labels},
            config={
                "source": parsed.source,
                "file": str(parsed.path),
                "tool_version": parsed.tool_version,
                "target": None,
                "workloads": parsed.workloads,
            },
            summary={"workloads": parsed.summaries, **parsed.extra},
            # Only what the file itself says: the importing machine is not the one measured.
            host=parsed.host,
            manifest_extra={"imported_ns": time.time_ns()},
        )
        if table is not None:
            writer.write_table("latency.parquet", table)
        return publish(writer)
    except BaseException:
        # No half-written `.tmp-*` directory stays (once committed, the directory is the run).
        writer.abandon()
        raise


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
