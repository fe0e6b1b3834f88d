"""``iowatt power import RUN --source meter:path=LOG``: a meter log recorded beside a run,
added to it after the fact.

Every run records a clock anchor (CLOCK_REALTIME and CLOCK_MONOTONIC read together), so the
log's wall-clock timestamps land on the run's monotonic axis; the energy of each window (the
workloads of a bench, the command of a power run) is computed as if the meter had been
recorded live, and merged into the run's summary, Parquet files, catalog and report.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from iowatt.errors import ConfigError
from iowatt.power.recording import Recording
from iowatt.power.sources import DEFAULT_HZ, SourceSpec
from iowatt.power.summary import Window, headline, span, summarize, warnings
from iowatt.store.catalog import refresh
from iowatt.store.runs import DamagedRun, read_manifest, read_summary, read_table
from iowatt.store.schemas import event_table
from iowatt.store.writer import rewrite_summary, write_atomic
from iowatt.warnings import WarningSink


def import_logs(
    run_dir: Path, specs: list[SourceSpec], results: Path, sink: WarningSink | None = None
) -> dict[str, Any]:
    """Adds the meter logs in ``specs`` to the run; returns its new ``power`` section. What is
    wrong with the logs goes to ``sink`` (by default stderr) and the run's events."""
    sink = sink or WarningSink()
    manifest, summary = read_manifest(run_dir), read_summary(run_dir)
    anchor = manifest.get("clock_anchor")
    if not anchor:
        raise ConfigError(
            f"run `{run_dir.name}` has no clock anchor to place a meter log on",
            "it was written by an older iowatt; record the meter live with --power",
        )
    old = summary.get("power") or {}
    taken = {s["source"] for s in old.get("sources", [])}
    for spec in specs:
        if spec.kind != "meter":
            raise ConfigError(
                f"only meter logs can be imported, not `{spec.kind}`",
                "rapl, hwmon, ipmi, cmd and emulated are read live: iowatt bench --power SOURCE",
            )
        if spec.name in taken:
            raise ConfigError(
                f"run `{run_dir.name}` already has a power source named `{spec.name}`",
                "give the import another name, e.g. --source meter:name=wall,path=...",
            )
        spec.options["follow"] = False
    rec = Recording(specs, DEFAULT_HZ, (int(anchor[0]), int(anchor[1])))
    rec.start()  # the first poll of an unfollowed log reads all of it
    data = rec.stop()
    t0 = int(old.get("t0_ns") or anchor[1])
    work, idle, workloads = _windows(run_dir, manifest, summary)
    new = summarize(data, t0, work, idle, workloads)
    power = _merge(old, new)
    sink.extend(warnings(new))
    summary["power"] = power
    rewrite_summary(run_dir, summary)
    for name, table in (
        ("power.parquet", data.power_table(manifest["run_id"], t0)),
        ("sensors.parquet", data.sensor_table(manifest["run_id"], t0)),
        ("events.parquet", event_table(manifest["run_id"], t0, [*data.events, *sink.events()])),
    ):
        _append_table(run_dir / name, table)
    refresh(results, [run_dir])
    if (run_dir / "report.html").exists():
        from iowatt.report import write_report

        write_report([run_dir], run_dir / "report.html")
    return power


def _windows(
    run_dir: Path, manifest: dict[str, Any], summary: dict[str, Any]
) -> tuple[Window, Window | None, dict[str, Window] | None]:
    if manifest["kind"] == "power":
        marks = {e["message"]: e["mono_ns"] for e in _phase_marks(run_dir)}
        idle = Window(marks["idle"], marks["work"]) if "idle" in marks else None
        return Window(marks["work"], marks["end"]), idle, None
    table = _table(run_dir, "intervals.parquet")
    workloads = {}
    for name, w in summary.get("workloads", {}).items():
        rows = table.filter(pc.equal(table["workload"], name))
        if rows.num_rows == 0:
            continue
        ends = pc.add(rows["mono_ns"], pc.cast(pc.multiply(rows["duration_s"], 1e9), pa.int64()))
        start, end = pc.min(rows["mono_ns"]).as_py(), pc.max(ends).as_py()
        workloads[name] = Window(start, end, w["ops"], w["bytes"])
    if not workloads:
        raise ConfigError(
            f"run `{run_dir.name}` measured nothing to attribute energy to",
            "import the log into a run with measured workloads",
        )
    return span(list(workloads.values())), None, workloads


def _phase_marks(run_dir: Path) -> list[dict[str, Any]]:
    events = _table(run_dir, "events.parquet").to_pylist()
    return [e for e in events if e["kind"] == "phase"]


def _table(run_dir: Path, name: str) -> pa.Table:
    table = read_table(run_dir, name)
    if table is None:
        raise DamagedRun(run_dir, name, "missing")
    return table


def _merge(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    if not old:
        return new
    merged = {**old}
    merged["sources"] = old["sources"] + new["sources"]
    merged["channels"] = old["channels"] + new["channels"]
    merged["work"] = {**old["work"], **new["work"]}
    if "workloads" in new:
        merged["workloads"] = {
            w: {**old.get("workloads", {}).get(w, {}), **chans}
            for w, chans in new["workloads"].items()
        }
    if "idle" in new and "idle" in old:
        merged["idle"]["channels"] = {**old["idle"]["channels"], **new["idle"]["channels"]}
    merged["headline"] = headline(merged["channels"])
    return merged


def _append_table(path: Path, table: pa.Table) -> None:
    if path.exists():
        table = pa.concat_tables([_table(path.parent, path.name), table])
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    write_atomic(path, sink.getvalue().to_pybytes())
