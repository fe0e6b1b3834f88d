"""Catalogs of synthetic bench runs with chosen throughput, labels, start times and latency
buckets, for comparison tests that need known answers (docs/run-store.md layouts)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from iowatt.store.catalog import refresh
from iowatt.store.schemas import LATENCY_SCHEMA

T0_NS = 1_795_271_400_000_000_000  # 2026-11-21 14:30 UTC


@dataclass(frozen=True)
class FakeRun:
    """One run of one or more workloads; ``buckets`` are (value_ns, count) of every workload."""

    ops_s: Mapping[str, float]
    labels: Mapping[str, str]
    buckets: Sequence[tuple[int, int]] = ((1_000_000, 990), (150_000_000, 7), (250_000_000, 3))
    status: str = "complete"
    extra: dict[str, object] = field(default_factory=dict)


def write_runs(results: Path, runs: Sequence[FakeRun], minutes_apart: int = 10) -> list[Path]:
    """Writes the runs in the given order (each ``minutes_apart`` after the last) and indexes
    them; returns their directories."""
    results.mkdir(parents=True, exist_ok=True)
    dirs = []
    for i, run in enumerate(runs):
        run_id = f"20261121-{i:05d}-bench-fake"
        d = results / run_id
        d.mkdir()
        started = T0_NS + i * minutes_apart * 60 * 1_000_000_000
        manifest = {
            "run_id": run_id,
            "kind": "bench",
            "status": run.status,
            "reason": None if run.status == "complete" else "interrupted",
            "iowatt_version": "0.1.0",
            "started_ns": started,
            "ended_ns": started + 60 * 1_000_000_000,
            "labels": dict(run.labels),
            "config": {"target": "/mnt/x", "workloads": [{"name": w} for w in run.ops_s]},
            "host": {"hostname": "fake"},
        }
        total = sum(c for _, c in run.buckets)
        workloads = {
            name: {
                "ops": total,
                "ops_s": ops_s,
                "mib_s": ops_s * 4096 / 2**20,
                "errors": 0,
                "runtime_s": 60.0,
                "latency_ns": {
                    "p50": run.buckets[0][0],
                    "p99": run.buckets[-1][0],
                    "max": run.buckets[-1][0],
                },
            }
            for name, ops_s in run.ops_s.items()
        }
        (d / "manifest.json").write_text(json.dumps(manifest))
        (d / "summary.json").write_text(json.dumps({"run_id": run_id, "workloads": workloads}))
        rows = [
            {"run_id": run_id, "workload": name, "flowop": flowop, "value_ns": v, "count": c}
            for name in run.ops_s
            for flowop in (None, "op")
            for v, c in run.buckets
        ]
        pq.write_table(pa.Table.from_pylist(rows, LATENCY_SCHEMA), d / "latency.parquet")
        dirs.append(d)
    refresh(results)
    return dirs
