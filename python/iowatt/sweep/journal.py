"""A sweep's journal: everything measured, appended as it happens, so nothing is lost.

A sweep lasts minutes to hours and changes the machine (fans, throttles), so it must survive its
own death: every finished step, every sensor reading and every event is appended to JSON-lines
files in the run's temporary directory as soon as it exists. :func:`finalize` turns a journal
into the run directory of docs/run-store.md and docs/sweep.md — called by the sweep when it
ends, or by the guardian process (:mod:`iowatt.sweep.guard`) when the sweep was killed.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import IO, Any

import numpy as np
import pyarrow as pa

from iowatt import curve
from iowatt.bench.summary import interval_table
from iowatt.power import meter_map
from iowatt.power.record import write_power_files
from iowatt.power.recording import PowerData
from iowatt.store.catalog import publish
from iowatt.store.manifest import run_status
from iowatt.store.schemas import LATENCY_SCHEMA, STEP_SCHEMA
from iowatt.store.writer import RunWriter

PLAN = "sweep.json"
STEPS = "steps.jsonl"
READINGS = "readings.jsonl"
EVENTS = "events.jsonl"


class Journal:
    """Appends to the journal files of one sweep (thread-safe per file: one writer each)."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self._files: dict[str, IO[str]] = {}

    def begin(self, plan: Mapping[str, Any]) -> None:
        """The sweep's plan: under ``manifest`` the manifest's keys known at the start
        (``run_id``, ``started_ns``, ``clock_anchor``, ``seed``, ``labels``, ``config``,
        ``host``), the sensor channels, ``t0_ns``."""
        (self.dir / PLAN).write_text(json.dumps(plan, default=str))

    def step(self, row: Mapping[str, Any], result: Mapping[str, Any]) -> None:
        """One disk's hold window: its ``steps.parquet`` row and the engine's histogram and
        intervals."""
        record = {
            "row": row,
            "hist": {k: result["histogram"][k] for k in ("value_ns", "count")},
            "intervals": result["intervals"],
            "measure_start_ns": result["measure_start_ns"],
        }
        self._append(STEPS, record)

    def readings(self, chunk: Mapping[str, Any]) -> None:
        """A drained chunk of sensor readings (its events are journaled with :meth:`event`)."""
        if len(chunk["mono_ns"]):
            values = [None if not math.isfinite(v) else v for v in chunk["value"]]
            self._append(
                READINGS,
                {
                    "mono_ns": list(chunk["mono_ns"]),
                    "channel": list(chunk["channel"]),
                    "value": values,
                },
            )
        for e in chunk.get("events", []):
            self.event(e["kind"], e["message"], e["source"], e["mono_ns"])

    def event(
        self, kind: str, message: str, source: str = "sweep", mono_ns: int | None = None
    ) -> None:
        self._append(
            EVENTS,
            {
                "mono_ns": mono_ns if mono_ns is not None else time.monotonic_ns(),
                "source": source,
                "kind": kind,
                "message": message,
            },
        )

    def close(self) -> None:
        for f in self._files.values():
            f.close()
        self._files.clear()

    def _append(self, name: str, record: Mapping[str, Any]) -> None:
        f = self._files.get(name)
        if f is None:
            f = self._files[name] = open(self.dir / name, "a", encoding="utf-8")  # noqa: SIM115
        # One line per write, flushed: a killed sweep loses at most the line being written.
        f.write(json.dumps(record) + "\n")
        f.flush()


def read_lines(path: Path) -> Iterable[dict[str, Any]]:
    """The records of a JSON-lines file; a line cut short by a crash ends it."""
    if not path.exists():
        return
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                yield json.loads(line)
            except json.JSONDecodeError:
                return


def recover(directory: Path) -> Path:
    """Commits the journal of a sweep whose process and guardian were both killed."""
    return finalize(directory, "the sweep and its guardian were killed", report=False)


def finalize(directory: Path, reason: str | None, *, report: bool = True) -> Path:
    """Turns the journal in ``directory`` (a run's temporary directory) into the committed run,
    complete unless ``reason`` says why not; returns the run directory."""
    plan = json.loads((directory / PLAN).read_text())
    start = plan["manifest"]
    run_id = start["run_id"]
    writer = RunWriter.resume(directory, run_id)
    t0 = plan["t0_ns"]
    steps = list(read_lines(directory / STEPS))
    rows = [{**s["row"], "run_id": run_id} for s in steps]
    step_table = pa.Table.from_pylist(rows, schema=STEP_SCHEMA)
    latency = _latency_table(run_id, steps)
    curves = curve.curve_table(run_id, step_table, latency)
    data = _power_data(plan, directory)
    meta = curve.curve_meta({**start, "status": run_status(reason)})
    docs = curve.curve_documents(curves, meta)
    summary = {
        "stimulus": start["config"]["stimulus"],
        "steps_measured": step_table.num_rows,
        "disks": {
            name: {
                "max_mib_s": doc["max_mib_s"],
                "curve": curve.curve_filename(name),
                "points": doc["points"],
            }
            for name, doc in docs.items()
        },
        "watchdog": plan.get("watchdog"),
    }
    writer.finish(
        "sweep",
        reason,
        started_ns=start["started_ns"],
        seed=start["seed"],
        labels=start["labels"],
        config=start["config"],
        summary=summary,
        clock_anchor=start["clock_anchor"],
        host=start["host"],
    )
    writer.write_table("steps.parquet", step_table)
    writer.write_table("sweep.parquet", curves)
    writer.write_table("latency.parquet", latency)
    writer.write_table("intervals.parquet", _interval_table(run_id, steps))
    write_power_files(writer, data, t0)
    for name, doc in docs.items():
        writer.write_json(curve.curve_filename(name), doc)
    for name in (PLAN, STEPS, READINGS, EVENTS):
        (directory / name).unlink(missing_ok=True)
    run_dir = publish(writer)
    if report:
        from iowatt.report import write_report  # matplotlib is slow to import

        write_report([run_dir], run_dir / "report.html")
    return run_dir


def _step_keys(steps: list[dict[str, Any]], counts: list[int]) -> dict[str, list[Any]]:
    """``pass_no``, ``step`` and ``value`` repeated for each step's ``counts`` rows."""
    return {
        key: [s["row"][key] for s, n in zip(steps, counts, strict=True) for _ in range(n)]
        for key in ("pass_no", "step", "value")
    }


def _latency_table(run_id: str, steps: list[dict[str, Any]]) -> pa.Table:
    counts = [len(s["hist"]["value_ns"]) for s in steps]
    cols: dict[str, list[Any]] = {
        "run_id": [run_id] * sum(counts),
        "workload": [
            s["row"]["disk"] for s, n in zip(steps, counts, strict=True) for _ in range(n)
        ],
        "flowop": [None] * sum(counts),
        "value_ns": [v for s in steps for v in s["hist"]["value_ns"]],
        "count": [c for s in steps for c in s["hist"]["count"]],
    }
    schema = LATENCY_SCHEMA.append(pa.field("pass_no", pa.int32()))
    schema = schema.append(pa.field("step", pa.int32())).append(pa.field("value", pa.float64()))
    return pa.table({**cols, **_step_keys(steps, counts)}, schema=schema)


def _interval_table(run_id: str, steps: list[dict[str, Any]]) -> pa.Table:
    results = [
        {
            "name": s["row"]["disk"],
            "intervals": s["intervals"],
            "measure_start_ns": s["measure_start_ns"],
        }
        for s in steps
    ]
    table = interval_table(run_id, results)
    keys = _step_keys(steps, [len(s["intervals"]["t_ns"]) for s in steps])
    table = table.append_column(
        pa.field("pass_no", pa.int32()), pa.array(keys["pass_no"], pa.int32())
    )
    table = table.append_column(pa.field("step", pa.int32()), pa.array(keys["step"], pa.int32()))
    return table.append_column(
        pa.field("value", pa.float64()), pa.array(keys["value"], pa.float64())
    )


def _power_data(plan: Mapping[str, Any], directory: Path) -> PowerData:
    chunks = list(read_lines(directory / READINGS))
    values = [np.nan if v is None else v for c in chunks for v in c["value"]]
    return PowerData(
        channels=plan["channels"],
        mono_ns=np.asarray([t for c in chunks for t in c["mono_ns"]], np.int64),
        channel=np.asarray([i for c in chunks for i in c["channel"]], np.int64),
        value=np.asarray(values, np.float64),
        events=sorted(read_lines(directory / EVENTS), key=lambda e: e["mono_ns"]),
        stats=[],
        anchor=tuple(plan["clock_anchor"]),  # type: ignore[arg-type]
        maps={name: meter_map.load(Path(p)) for name, p in plan.get("maps", {}).items()},
    )
