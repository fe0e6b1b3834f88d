"""A fleet run's hosts as the run stores them: summary.json's ``hosts`` and ``fleet`` sections,
the manifest's ``fleet`` section and the three per-host Parquet files (docs/run-store.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from iowatt._engine import WorkloadResult
from iowatt.bench.summary import histogram_parts, histogram_rows, interval_table, repeated
from iowatt.fleet.spec import ClusterSpec
from iowatt.store.schemas import HOST_INTERVAL_SCHEMA, HOST_LATENCY_SCHEMA, HOSTS_SCHEMA
from iowatt.store.writer import RunWriter


@dataclass
class HostRun:
    """One host's part of one workload, as the run records it."""

    host: str
    worker: str
    target: str | None
    result: WorkloadResult | None
    error: str | None
    offset_ns: int
    delay_ns: int
    start_skew_ns: int | None  # after the first host's start, in the driver's clock
    late_ns: int | None
    layout_s: float | None = None
    facts: dict[str, Any] | None = None
    summary: dict[str, Any] | None = None


@dataclass
class Fleet:
    """What a fleet run adds to a bench run: the cluster, and each workload's hosts."""

    cluster: ClusterSpec
    hosts: dict[str, str] = field(default_factory=dict)  # worker address → host
    targets: dict[str, str | None] = field(default_factory=dict)  # host → target
    facts: dict[str, dict[str, Any]] = field(default_factory=dict)  # host → host_facts
    runs: dict[str, list[HostRun]] = field(default_factory=dict)  # workload → its hosts


def manifest_section(fleet: Fleet) -> dict[str, Any]:
    return {
        "cluster": fleet.cluster.describe(),
        "hosts": {
            h: {"worker": a, "target": fleet.targets[h], "host": fleet.facts.get(h)}
            for a, h in fleet.hosts.items()
        },
    }


def summary_section(fleet: Fleet) -> dict[str, Any]:
    """Per host, per workload: its summary with its clock and start, or why it has none."""
    out: dict[str, Any] = {
        h: {"worker": a, "target": fleet.targets[h], "workloads": {}}
        for a, h in fleet.hosts.items()
    }
    for wl, runs in fleet.runs.items():
        for r in runs:
            out[r.host]["workloads"][wl] = {
                **(r.summary or {"status": "failed", "reason": r.error}),
                "error": r.error,
                "offset_ns": r.offset_ns,
                "delay_ns": r.delay_ns,
                "start_skew_ns": r.start_skew_ns,
                "late_ns": r.late_ns,
                "layout_s": r.layout_s,
            }
    return out


def write_tables(writer: RunWriter, fleet: Fleet) -> None:
    rows: dict[str, list[Any]] = {name: [] for name in HOSTS_SCHEMA.names}
    intervals: list[pa.Table] = []
    seconds: list[tuple[str, int]] = []  # each host's rows of `intervals`
    histograms: list[tuple[str, str | None, Any]] = []
    owners: list[str] = []
    for wl, runs in fleet.runs.items():
        for r in runs:
            s = r.summary or {}
            lat = s.get("latency_ns") or {}
            row = {
                "run_id": writer.run_id,
                "host": r.host,
                "worker": r.worker,
                "target": r.target,
                "workload": wl,
                "status": s.get("status", "failed"),
                "reason": r.error or s.get("reason"),
                "ops": s.get("ops"),
                "bytes": s.get("bytes"),
                "errors": s.get("errors"),
                "runtime_s": s.get("runtime_s"),
                "ops_s": s.get("ops_s"),
                "mib_s": s.get("mib_s"),
                "p50_ns": lat.get("p50"),
                "p99_ns": lat.get("p99"),
                "p999_ns": lat.get("p99.9"),
                "max_ns": lat.get("max"),
                "offset_ns": r.offset_ns,
                "delay_ns": r.delay_ns,
                "start_skew_ns": r.start_skew_ns,
                "late_ns": r.late_ns,
                "layout_s": r.layout_s,
            }
            for k, v in row.items():
                rows[k].append(v)
            if r.result is not None:
                intervals.append(interval_table(writer.run_id, [r.result]))
                seconds.append((r.host, intervals[-1].num_rows))
                parts = histogram_parts([r.result])
                histograms += parts
                owners += [r.host] * len(parts)
    writer.write_table("hosts.parquet", pa.table(rows, schema=HOSTS_SCHEMA))
    host = repeated([h for h, _ in seconds], [n for _, n in seconds])
    writer.write_table(
        "host_intervals.parquet",
        pa.concat_tables(intervals).add_column(1, "host", host).cast(HOST_INTERVAL_SCHEMA)
        if intervals
        else HOST_INTERVAL_SCHEMA.empty_table(),
    )
    writer.write_table(
        "host_latency.parquet",
        histogram_rows(writer.run_id, histograms, HOST_LATENCY_SCHEMA, host=owners),
    )
