"""What the catalog holds of one run directory: its rows in the ``runs``, ``workloads``,
``flowops``, ``energy``, ``replays``, ``sim_server``, ``sim_raid`` and ``task_runs`` tables and
its Parquet files, read and checked before anything is inserted, so a damaged run is named
(with the file) and set aside while the others are indexed.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from iowatt.store.runs import DamagedRun, read_manifest, read_summary

# view → the run file it reads
VIEW_FILES = {
    "intervals": "intervals.parquet",
    "latency": "latency.parquet",
    "power": "power.parquet",
    "sensors": "sensors.parquet",
    "events": "events.parquet",
    "steps": "steps.parquet",
    "sweep": "sweep.parquet",
    "requests": "requests.parquet",
    "policies": "policies.parquet",
    "sim_series": "sim_series.parquet",
    "sim_events": "sim_events.parquet",
    "raid_runs": "raid_runs.parquet",
    "raid_power": "raid_power.parquet",
    "raid_requests": "raid_requests.parquet",
    "disk_requests": "disk_requests.parquet",
    "tasks_sim": "tasks_sim.parquet",
    "tasks": "tasks.parquet",
    "utilisation": "utilisation.parquet",
    "hosts": "hosts.parquet",
    "host_intervals": "host_intervals.parquet",
    "host_latency": "host_latency.parquet",
    "grid": "grid.parquet",
}
_INT64 = 2**63
EPOCH = datetime(1970, 1, 1)


@dataclass
class RunRows:
    run_id: str
    run: list[Any]
    workloads: list[list[Any]] = field(default_factory=list)
    flowops: list[list[Any]] = field(default_factory=list)
    energy: list[list[Any]] = field(default_factory=list)
    replay: list[Any] = field(default_factory=list)  # a replay run's row of `replays`
    sim_server: list[list[Any]] = field(default_factory=list)  # rows of `sim_server`
    sim_raid: list[list[Any]] = field(default_factory=list)  # rows of `sim_raid`
    task_run: list[Any] = field(default_factory=list)  # a tasks run's row of `task_runs`
    # view → absolute path of this run's file for it
    files: dict[str, str] = field(default_factory=dict)


def read_run(run_dir: Path) -> RunRows:
    """The run's catalog rows; :class:`DamagedRun` when a file is missing, malformed or holds
    values the catalog's columns cannot take."""
    manifest = read_manifest(run_dir)
    summary = read_summary(run_dir)
    try:
        rows = _rows(run_dir, manifest, summary)
    except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as e:
        raise DamagedRun(run_dir, "manifest.json/summary.json", f"odd ({e!r})") from None
    rows.files = _parquet_files(run_dir)
    return rows


def _rows(run_dir: Path, manifest: Mapping[str, Any], summary: Mapping[str, Any]) -> RunRows:
    run_id = _text(manifest["run_id"])
    config = manifest.get("config") or {}
    workloads_cfg = {w["name"]: w for w in config.get("workloads") or []}
    run = [
        run_id,
        _text(manifest["kind"]),
        _text(manifest["status"]),
        manifest.get("reason"),
        _timestamp(manifest["started_ns"]),
        _timestamp(manifest["ended_ns"]),
        json.dumps(manifest.get("labels") or {}),
        config.get("target"),
        (manifest.get("host") or {}).get("hostname"),
        manifest.get("iowatt_version"),
        str(run_dir.resolve()),
        run_dir.name,
    ]
    rows = RunRows(run_id, run)
    for name, w in (summary.get("workloads") or {}).items():
        cfg = workloads_cfg.get(name, {})
        lat = w["latency_ns"]
        rows.workloads.append(
            [
                run_id,
                name,
                cfg.get("personality"),
                cfg.get("engine"),
                _int(cfg.get("iosize")),
                _int(cfg.get("nthreads")),
                _int(cfg.get("iodepth")),
                cfg.get("directio"),
                _int(w["ops"]),
                _float(w["ops_s"]),
                _float(w["mib_s"]),
                _int(w["errors"]),
                _float(w["runtime_s"]),
                _int(lat["p50"]),
                _int(lat["p99"]),
                _int(lat["max"]),
            ]
        )
        for fname, f in (w.get("flowops") or {}).items():
            rows.flowops.append(
                [
                    run_id,
                    name,
                    fname,
                    f.get("kind"),
                    bool(f.get("io", True)),
                    _int(f.get("ops")),
                    _float(f.get("ops_s")),
                    _float(f.get("mib_s")),
                    _int(f.get("errors")),
                    _float(f.get("mean_ns")),
                    _int(f.get("p50_ns")),
                    _int(f.get("p99_ns")),
                    _int(f.get("max_ns")),
                ]
            )
    rows.energy = [[run_id, *row] for row in energy_rows(summary.get("power") or {})]
    if isinstance(r := summary.get("replay"), Mapping):
        rows.replay = [
            run_id,
            _int(r["requests"]),
            _int(r["measured"]),
            _float(r["success_rate"]),
            _float(r["log_success_rate"]),
            _float(r["conns_s"]),
            _int(r["max_open"]),
            _int(r["ttfb_ns"]["p50"]),
            _int(r["ttfb_ns"]["p99"]),
            _int(r["completion_ns"]["p50"]),
            _int(r["completion_ns"]["p99"]),
            _int(r["lateness_ns"]["p99"]),
            _float(r["speedup"]),
        ]
    if manifest["kind"] == "sim-server":
        for p in summary.get("policies") or []:
            e, saving = p["energy_j"], p["energy_saving_vs_dlb"]
            rows.sim_server.append(
                [
                    run_id,
                    _text(p["workload"]),
                    _text(p["policy"]),
                    _int(p["seeds"]),
                    _float(p["service_time_s"]),
                    _float(p["speedup_vs_dlb"]),
                    _float(p["batch_slowdown"]),
                    _float(e["socket"]),
                    _float(e["memory"]),
                    _float(e["fans"]),
                    _float(e["total"]),
                    _float(saving["total"]),
                    _float(p["peak_temp_c"]),
                    _float(p["gating_s"]),
                    _float(p["mean_pwm"]),
                ]
            )
    if manifest["kind"] == "sim-raid":
        for p in summary.get("raid") or []:
            lat, comp = p["latency_s"], p["completion_s"]
            rows.sim_raid.append(
                [
                    run_id,
                    _text(p["personality"]),
                    _int(p["seeds"]),
                    _float(p["energy_j"]),
                    _float(p["energy_saving_vs_raid0"]),
                    _float(p["mean_w"]),
                    _float(lat["p50"]),
                    _float(lat["p99"]),
                    _float(lat["max"]),
                    _float(comp["p50"]),
                    _float(comp["p99"]),
                    _float(comp["max"]),
                    _float(p["success_rate"]),
                    _float(p["timeouts"]),
                ]
            )
    if manifest["kind"] == "tasks":
        t = summary["tasks"]
        rows.task_run = [
            run_id,
            _text(t["set"]),
            _text(t["disk"]),
            _int(t["per_core"]),
            _int(t["slots"]),
            _int(t["cores"]),
            _int(t["rep"]),
            _int(t["tasks"]),
            _int(t["done"]),
            _int(t["failed"]),
            _float(t["makespan_s"]),
            _float(t["jobs_per_h"]),
            _float(t["avg_w"]),
            _float(t["peak_w"]),
            _float(t["wh_per_job"]),
            t["power"],
            _text(t["key"]),
            _failed_tasks(t),
            _float(t.get("other_cpu_share")),
        ]
    return rows


def energy_rows(power: Mapping[str, Any]) -> Iterator[list[Any]]:
    """The catalog's reading of summary.json's ``power`` section (written by
    ``iowatt.power.summary``): one row of the ``energy`` table per window and channel."""
    idle = (power.get("idle") or {}).get("channels", {})
    windows = {"work": power.get("work") or {}, **(power.get("workloads") or {})}
    for window, channels in windows.items():
        for key, e in channels.items():
            source, _, channel = key.partition("/")
            yield [
                window,
                source,
                channel,
                e.get("scope"),
                _float(e["energy_j"]),
                _float(e["avg_w"]),
                _float(e["peak_w"]),
                _float(e["duration_s"]),
                _float(e["gap_s"]),
                _float((idle.get(key) or {}).get("avg_w")),
                _float(e.get("dynamic_j")),
                _float(e.get("j_per_op")),
                _float(e.get("j_per_byte")),
            ]


def _failed_tasks(row: Mapping[str, Any]) -> str | None:
    """A tasks run's ``failed_tasks`` as JSON text; a run written before it was recorded has
    only the count."""
    failed = row.get("failed_tasks")
    if failed is None and row.get("failed"):
        failed = {"count": row["failed"], "kinds": None}
    return None if failed is None else json.dumps(failed)


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected text, got {value!r}")
    return value


def _timestamp(ns: Any) -> datetime:
    """A TIMESTAMP column's value (UTC, microseconds) from nanoseconds since the epoch."""
    value = _int(ns)
    if value is None:
        raise ValueError("expected a time in ns, got null")
    return EPOCH + timedelta(microseconds=value // 1000)


def _int(value: Any) -> int | None:
    """A BIGINT column's value: an integer that fits, or None."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not -_INT64 <= value < _INT64:
        raise ValueError(f"expected a 64-bit integer, got {value!r}")
    return value


def _float(value: Any) -> float | None:
    """A DOUBLE column's value (NaN stays NaN: a rate of nothing is not a number)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"expected a number, got {value!r}")
    result = float(value)
    if math.isinf(result):
        raise ValueError(f"expected a finite number, got {value!r}")
    return result


def _parquet_files(run_dir: Path) -> dict[str, str]:
    """The run's Parquet files by view, each checked against its schema: a file another
    process or a disk damaged would otherwise break every query over the view."""
    import pyarrow as pa  # only when a run is indexed: `iowatt runs` usually reads only
    import pyarrow.parquet as pq

    from iowatt.store.schemas import VIEW_SCHEMAS

    files = {}
    for view, name in VIEW_FILES.items():
        path = run_dir / name
        if not path.exists():
            continue
        try:
            schema = pq.read_schema(path)
        except (OSError, pa.ArrowException) as e:
            raise DamagedRun(run_dir, name, f"not a readable Parquet file: {e}") from None
        expected = VIEW_SCHEMAS[view]
        for col in schema:
            want = expected.field(col.name).type if col.name in expected.names else None
            if want is not None and not _compatible(col.type, want):
                why = f"odd: column `{col.name}` is {col.type}, expected {want}"
                raise DamagedRun(run_dir, name, why)
        files[view] = str(path.resolve())
    return files


def _compatible(got: Any, want: Any) -> bool:
    """Whether DuckDB can read ``got`` into a view whose other files have ``want`` (a column
    that was all null, or an integer of another width, unites; text with a number does not)."""
    import pyarrow.types as t

    families = (t.is_integer, t.is_floating, t.is_string, t.is_large_string, t.is_timestamp)
    return (
        got.equals(want)
        or t.is_null(got)
        or any(f(got) and f(want) for f in families)
        or (t.is_integer(got) and t.is_floating(want))
    )
