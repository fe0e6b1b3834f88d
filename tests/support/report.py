"""Synthetic run directories (docs/run-store.md) for hardware-independent report tests.

Latencies are lognormal, drawn with a seeded numpy generator, and bucketed like the engine's
HDR histogram at 3 significant digits: a bucket's ``value_ns`` is the highest value that rounds
into it. Every file a real ``bench`` run writes is produced, with the same columns and types;
:func:`make_sweep_run` does the same for a ``sweep`` run (docs/sweep.md).
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.parquet as pq

from iowatt.compare.tails import DEFAULT_THRESHOLDS_NS
from iowatt.curve import curve_documents, curve_meta, curve_table
from iowatt.histogram import HEAT_EDGES_NS
from iowatt.store.schemas import (
    EVENT_SCHEMA,
    LATENCY_SCHEMA,
    POWER_SCHEMA,
    SENSOR_SCHEMA,
    STEP_SCHEMA,
)
from iowatt.store.schemas import INTERVAL_SCHEMA as INTERVALS_SCHEMA
from iowatt.sweep.stimulus import Stimulus

_STARTED_NS = 1_795_271_400_000_000_000  # 2026-11-21 14:30:00 UTC
_REPORTED = (50.0, 90.0, 95.0, 99.0, 99.9, 99.99)


@dataclass(frozen=True)
class Workload:
    """A synthetic workload: lognormal latency around ``median_us`` at ``ops_s`` for ``seconds``.

    ``seconds=0`` models a workload that never got going (an immediately interrupted run).
    ``slow_share > 0`` models the study's slow run: in every ``slow_every``-th second that
    share of the operations takes about ``slow_ms`` (the study's slow I/Os averaged ~234 ms),
    and the second completes ``slow_loss`` fewer operations, as the stalls cost throughput.
    """

    median_us: float
    sigma: float = 0.6
    ops_s: float = 20_000
    seconds: int = 3
    iosize: int = 8192
    flowops: tuple[str, ...] = ("read1",)
    slow_share: float = 0.0
    slow_ms: float = 234.0
    slow_loss: float = 0.0
    slow_every: int = 2

    def stalled(self, t: int) -> bool:
        """Whether second ``t`` is one of the slow ones."""
        return self.slow_share > 0 and t % self.slow_every == self.slow_every - 1


def bucket(ns: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """The highest value of each sample's 3-significant-digit bucket (exact below 1000 ns)."""
    ns = np.maximum(ns, 1)
    step = 10 ** np.maximum(np.floor(np.log10(ns)).astype(np.int64) - 2, 0)
    return (ns // step + 1) * step - 1


def brute_percentile(sorted_ns: npt.NDArray[np.int64], p: float) -> int:
    """Percentile by the run-store rule on individual samples: the ceil(p/100·n)-th smallest."""
    rank = max(math.ceil(p / 100.0 * sorted_ns.size), 1)
    return int(sorted_ns[min(rank, sorted_ns.size) - 1])


def _latency_summary(ns: npt.NDArray[np.int64]) -> dict[str, Any]:
    if ns.size == 0:
        return {k: 0 for k in ("min", "mean", "stdev", "max")} | {f"p{p:g}": 0 for p in _REPORTED}
    s = np.sort(bucket(ns))
    return {
        "min": int(s[0]),
        "mean": float(ns.mean()),
        "stdev": float(ns.std()),
        **{f"p{p:g}": brute_percentile(s, p) for p in _REPORTED},
        "max": int(s[-1]),
    }


def _histogram_rows(
    run_id: str, workload: str, flowop: str | None, ns: npt.NDArray[np.int64]
) -> list[dict[str, Any]]:
    values, counts = np.unique(bucket(ns), return_counts=True)
    return [
        {
            "run_id": run_id,
            "workload": workload,
            "flowop": flowop,
            "value_ns": int(v),
            "count": int(c),
        }
        for v, c in zip(values, counts, strict=True)
    ]


def _samples(rng: np.random.Generator, spec: Workload, t: int) -> npt.NDArray[np.int64]:
    """The latencies of the operations completed in second ``t``."""
    stalled = spec.stalled(t)
    ops = int(rng.poisson(spec.ops_s * (1 - spec.slow_loss) if stalled else spec.ops_s))
    ns = rng.lognormal(math.log(spec.median_us * 1e3), spec.sigma, ops)
    if stalled:
        slow = rng.choice(ops, size=round(spec.slow_share * ops), replace=False)
        ns[slow] = rng.lognormal(math.log(spec.slow_ms * 1e6), 0.1, slow.size)
    return ns.astype(np.int64)


def _workload(
    rng: np.random.Generator,
    run_id: str,
    name: str,
    spec: Workload,
    slow_ns: Sequence[int] | None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
    """Intervals rows, latency rows and the summary.json entry of one workload."""
    intervals, samples = [], []
    for t in range(spec.seconds):
        ns = _samples(rng, spec, t)
        ops = int(ns.size)
        samples.append(ns)
        s = np.sort(bucket(ns))
        intervals.append(
            {
                "run_id": run_id,
                "workload": name,
                "t_s": float(t),
                "duration_s": 1.0,
                "mono_ns": 5_000_000_000 + t * 1_000_000_000,
                "ops": ops,
                "bytes": ops * spec.iosize,
                "errors": 0,
                "ops_s": float(ops),
                "mib_s": ops * spec.iosize / 2**20,
                "p50_ns": brute_percentile(s, 50),
                "p99_ns": brute_percentile(s, 99),
                "p999_ns": brute_percentile(s, 99.9),
                "max_ns": int(s[-1]),
                # The engine's rule: operations whose bucket value is above each threshold.
                "slow_ns": None if slow_ns is None else list(slow_ns),
                "slow_ops": None if slow_ns is None else [int((s > t).sum()) for t in slow_ns],
                # The heatmap's bands, counted one by one: up to the first edge, between two,
                # above the last.
                "heat_ops": [
                    int(((s > lo) & (s <= hi)).sum())
                    for lo, hi in itertools.pairwise((-1, *HEAT_EDGES_NS, 2**62))
                ],
            }
        )
    ns = np.concatenate(samples) if samples else np.zeros(0, dtype=np.int64)
    which = rng.integers(0, len(spec.flowops), ns.size)
    latency = _histogram_rows(run_id, name, None, ns)
    for i, flowop in enumerate(spec.flowops):
        latency += _histogram_rows(run_id, name, flowop, ns[which == i])
    runtime = float(spec.seconds)
    ops = int(ns.size)
    summary = {
        "ops": ops,
        "bytes": ops * spec.iosize,
        "errors": 0,
        "runtime_s": runtime,
        "ops_s": ops / runtime if runtime else 0.0,
        "mib_s": ops * spec.iosize / 2**20 / runtime if runtime else 0.0,
        "latency_ns": _latency_summary(ns),
        "cpu": {"usr_s": 0.1 * runtime, "sys_s": 0.3 * runtime, "us_per_op": 1.5},
        "errors_by_kind": {},
        "flowops": {
            f: {"ops": int((which == i).sum()), "bytes": int((which == i).sum()) * spec.iosize}
            for i, f in enumerate(spec.flowops)
        },
    }
    return intervals, latency, summary


def _fio_job(name: str, s: dict[str, Any]) -> dict[str, Any]:
    lat = {
        "min": s["latency_ns"]["min"],
        "max": s["latency_ns"]["max"],
        "N": s["ops"],
        "mean": s["latency_ns"]["mean"],
        "stddev": s["latency_ns"]["stdev"],
    }
    read = {
        "io_bytes": s["bytes"],
        "bw_bytes": s["mib_s"] * 2**20,
        "bw": s["mib_s"] * 1024,
        "iops": s["ops_s"],
        "runtime": s["runtime_s"] * 1000,
        "total_ios": s["ops"],
        "clat_ns": lat,
        "lat_ns": lat,
    }
    return {
        "jobname": name,
        "error": 0,
        "job_runtime": s["runtime_s"] * 1000,
        "usr_cpu": 3.0,
        "sys_cpu": 10.0,
        "read": read,
        "write": {},
    }


def _manifest(
    run_id: str,
    workloads: dict[str, Workload],
    seed: int,
    status: str,
    reason: str | None,
    started_ns: int,
    labels: Mapping[str, str],
) -> dict[str, Any]:
    runtime = max((w.seconds for w in workloads.values()), default=0)
    return {
        "run_id": run_id,
        "kind": "bench",
        "status": status,
        "reason": reason,
        "iowatt_version": "0.1.0",
        "started_ns": started_ns,
        "ended_ns": started_ns + (runtime + 1) * 1_000_000_000,
        "seed": seed,
        "labels": {"fixture": "yes", "seed": str(seed), **labels},
        "config": {
            "target": "/mnt/test",
            "suite": "fixture",
            "workloads": [
                {
                    "personality": "randomread",
                    "iosize": w.iosize,
                    "filesize": 2**30,
                    "nthreads": 1,
                    "iodepth": 1,
                    "engine": "psync",
                    "directio": True,
                    "dsync": False,
                    "runtime_s": w.seconds,
                    "ramp_s": 0,
                    "rate": None,
                    "seed": seed,
                }
                for w in workloads.values()
            ],
        },
        "host": {
            "hostname": "fixture-host",
            "kernel": "6.1.0-test-amd64",
            "cpu_model": "Synthetic CPU @ 3.00GHz",
            "ncpus": 8,
            "mem_bytes": 16 * 2**30,
            "target": {
                "path": "/mnt/test",
                "fs_type": "ext4",
                "mount_point": "/mnt",
                "device": "/dev/nvme0n1p1",
                "device_model": "FixtureDisk 1TB",
                "rotational": False,
                "scheduler": "none",
                "logical_block_size": 512,
            },
        },
    }


def make_run(
    dir: Path,
    run_id: str,
    workloads: dict[str, Workload],
    seed: int,
    status: str = "complete",
    reason: str | None = None,
    labels: Mapping[str, str] | None = None,
    started_ns: int = _STARTED_NS,
    slow_ns: Sequence[int] | None = DEFAULT_THRESHOLDS_NS,
) -> Path:
    """Write the run directory ``dir/run_id`` and return its path.

    ``labels`` are added to the fixture's own (e.g. ``{"env": "rack"}``); ``started_ns`` sets
    the run's place in a series. ``slow_ns=None`` writes the intervals as runs did before they
    counted slow operations: without the ``slow_ns``/``slow_ops`` columns.
    """
    rng = np.random.default_rng(seed)
    run = dir / run_id
    run.mkdir(parents=True)
    intervals, latency, summaries = [], [], {}
    for name, spec in workloads.items():
        i, lat, summaries[name] = _workload(rng, run_id, name, spec, slow_ns)
        intervals += i
        latency += lat
    table = pa.Table.from_pylist(intervals, INTERVALS_SCHEMA)
    if slow_ns is None:
        table = table.drop_columns(["slow_ns", "slow_ops"])
    pq.write_table(table, run / "intervals.parquet")
    pq.write_table(pa.Table.from_pylist(latency, LATENCY_SCHEMA), run / "latency.parquet")
    summary = {
        "run_id": run_id,
        "status": status,
        "workloads": summaries,
        "fio": {
            "fio version": "iowatt-0.1.0",
            "jobs": [_fio_job(n, s) for n, s in summaries.items()],
        },
    }
    (run / "summary.json").write_text(json.dumps(summary, indent=2))
    manifest = _manifest(run_id, workloads, seed, status, reason, started_ns, labels or {})
    (run / "manifest.json").write_text(json.dumps(manifest, indent=2))
    return run


# --- sweep runs (docs/sweep.md) ---------------------------------------------------------------

_SWEEP_EXTRA = [
    pa.field("pass_no", pa.int32()),
    pa.field("step", pa.int32()),
    pa.field("value", pa.float64()),
]
SWEEP_LATENCY_SCHEMA = pa.schema([*LATENCY_SCHEMA, *_SWEEP_EXTRA])
SWEEP_INTERVAL_SCHEMA = pa.schema([*INTERVALS_SCHEMA, *_SWEEP_EXTRA])
_T0_NS = 7_000_000_000  # CLOCK_MONOTONIC when the synthetic sweep began


@dataclass(frozen=True)
class SweepDisk:
    """A synthetic disk under test: ``mib_s`` until the stimulus passes ``knee``, then falling
    linearly to ``floor`` (a fraction of ``mib_s``) at the largest value; ``floor=1``: flat."""

    mib_s: float
    knee: float = 50.0
    floor: float = 1.0
    median_us: float = 2_000
    model: str = "FixtureDisk"
    rotational: bool = True
    profile: str | None = None


def _sweep_throughput(disk: SweepDisk, value: float, top: float) -> float:
    if value <= disk.knee or top <= disk.knee:
        return disk.mib_s
    return disk.mib_s * (1 - (1 - disk.floor) * (value - disk.knee) / (top - disk.knee))


def _sweep_manifest(
    run_id: str,
    disks: dict[str, SweepDisk],
    stimulus: dict[str, Any],
    values: list[list[float]],
    timing: tuple[float, float],
    ended_ns: int,
    status: str,
    reason: str | None,
) -> dict[str, Any]:
    settle_s, hold_s = timing
    return {
        "run_id": run_id, "kind": "sweep", "status": status, "reason": reason,
        "iowatt_version": "0.1.0", "started_ns": _STARTED_NS, "ended_ns": ended_ns, "seed": 0,
        "labels": {"fixture": "sweep"},
        "config": {
            "stimulus": stimulus,
            "disks": [
                {"name": n, "path": f"/dev/sd{chr(98 + i)}", "device": True,
                 "profile": d.profile, "size": 300 * 10**9}
                for i, (n, d) in enumerate(disks.items())
            ],
            "settle_s": settle_s, "hold_s": hold_s, "passes": len(values), "order": "alternate",
            "values": values,
            "generator": {"iosize": 2**20, "iodepth": 32, "engine": "libaio", "nthreads": 1},
        },
        "host": {
            "hostname": "fixture-host", "kernel": "6.1.0-test-amd64",
            "cpu_model": "Synthetic CPU @ 3.00GHz", "ncpus": 8, "mem_bytes": 16 * 2**30,
            "disks": {
                n: {"device_model": d.model, "rotational": d.rotational, "scheduler": "none"}
                for n, d in disks.items()
            },
        },
    }  # fmt: skip


def _sweep_sensors(run_id: str, end_ns: int, value_at: Any) -> tuple[list[Any], list[Any]]:
    """Sensor and power rows every 0.5 s: fans follow the duty, the CPU cools as they spin."""
    sensors, power = [], []
    for mono in range(_T0_NS, end_ns, 500_000_000):
        v = value_at(mono)
        t = (mono - _T0_NS) / 1e9
        for source, channel, unit, reading in (
            ("ipmi", "FAN1", "RPM", 800 + 60 * v),
            ("ipmi", "FAN2", "RPM", 750 + 58 * v),
            ("ipmi", "CPU Temp", "C", 80 - 0.3 * v),
            ("ipmi", "12V", "V", 12.1),
        ):
            sensors.append({"run_id": run_id, "source": source, "channel": channel,
                            "unit": unit, "mono_ns": mono, "t_s": t, "value": reading})  # fmt: skip
        power.append({"run_id": run_id, "source": "ipmi", "channel": "psu", "scope": "wall",
                      "mono_ns": mono, "t_s": t, "watts": 180 + 0.4 * v,
                      "joules": None})  # fmt: skip
    return sensors, power


def make_sweep_run(
    dir: Path,
    run_id: str,
    disks: dict[str, SweepDisk],
    values: list[float],
    passes: int = 2,
    seed: int = 0,
    status: str = "complete",
    reason: str | None = None,
    steps_done: int | None = None,
    sensors: bool = True,
    watchdog: str | None = None,
) -> Path:
    """Write a fan-sweep run directory ``dir/run_id`` (passes alternate up and down) and return
    its path. ``steps_done`` stops the sweep after that many steps (an interrupted run)."""
    stim = Stimulus("fan")
    rng = np.random.default_rng(seed)
    settle_s, hold_s = 1.0, 2.0
    plan = [values if p % 2 == 0 else values[::-1] for p in range(passes)]
    schedule = [(p + 1, s, v) for p, vs in enumerate(plan) for s, v in enumerate(vs)]
    schedule = schedule[:steps_done] if steps_done is not None else schedule
    top = max(values)
    steps, latency, intervals, events = [], [], [], []
    starts = []
    for k, (pass_no, step, value) in enumerate(schedule):
        begin = _T0_NS + int(k * (settle_s + hold_s) * 1e9)
        starts.append((begin, value))
        events.append({"run_id": run_id, "mono_ns": begin, "t_s": (begin - _T0_NS) / 1e9,
                       "source": "sweep", "kind": "stimulus",
                       "message": stim.describe(value)})  # fmt: skip
        for i, (name, disk) in enumerate(disks.items()):
            # Disks start and stop a few ms apart, all within the step.
            start = begin + int(settle_s * 1e9) + i * 1_000_000
            end = start + int(hold_s * 1e9) - 10_000_000
            mib = _sweep_throughput(disk, value, top) * (1 + rng.normal(0, 0.02))
            ops = max(round(mib * hold_s), 0)  # 1 MiB writes
            slowdown = max(disk.mib_s / max(mib, 1e-3), 0.5)
            ns = rng.lognormal(math.log(disk.median_us * 1e3 * slowdown), 0.5, ops)
            s = np.sort(bucket(ns.astype(np.int64)))
            lat = {p: brute_percentile(s, p) if s.size else 0 for p in (50.0, 99.0, 99.9)}
            extra = {"pass_no": pass_no, "step": step, "value": value}
            steps.append({
                "run_id": run_id, "disk": name, "stimulus": "fan", "unit": "%", **extra,
                "start_mono_ns": start, "end_mono_ns": end,
                "t_s": (start - _T0_NS) / 1e9, "hold_s": hold_s, "ops": ops,
                "bytes": ops * 2**20, "errors": 0, "mib_s": ops / hold_s, "iops": ops / hold_s,
                "p50_ns": lat[50.0], "p99_ns": lat[99.0], "p999_ns": lat[99.9],
                "max_ns": int(s[-1]) if s.size else 0,
            })  # fmt: skip
            latency += [row | extra for row in _histogram_rows(run_id, name, None, s)]
            intervals.append({
                "run_id": run_id, "workload": name, "t_s": 0.0, "duration_s": hold_s,
                "mono_ns": start, "ops": ops, "bytes": ops * 2**20, "errors": 0,
                "ops_s": ops / hold_s, "mib_s": ops / hold_s,
                "p50_ns": lat[50.0], "p99_ns": lat[99.0], "p999_ns": lat[99.9],
                "max_ns": int(s[-1]) if s.size else 0, **extra,
            })  # fmt: skip
    end_ns = _T0_NS + int(len(schedule) * (settle_s + hold_s) * 1e9)
    if watchdog:
        events.append({"run_id": run_id, "mono_ns": end_ns, "t_s": (end_ns - _T0_NS) / 1e9,
                       "source": "watchdog", "kind": "watchdog", "message": watchdog})  # fmt: skip

    def value_at(mono: int) -> float:
        return next((v for b, v in reversed(starts) if b <= mono), values[0])

    run = dir / run_id
    run.mkdir(parents=True)
    write = pq.write_table
    step_table = pa.Table.from_pylist(steps, STEP_SCHEMA)
    latency_table = pa.Table.from_pylist(latency, SWEEP_LATENCY_SCHEMA)
    write(step_table, run / "steps.parquet")
    write(latency_table, run / "latency.parquet")
    write(pa.Table.from_pylist(intervals, SWEEP_INTERVAL_SCHEMA), run / "intervals.parquet")
    write(pa.Table.from_pylist(events, EVENT_SCHEMA), run / "events.parquet")
    if sensors:
        sensor_rows, power_rows = _sweep_sensors(run_id, end_ns, value_at)
        write(pa.Table.from_pylist(sensor_rows, SENSOR_SCHEMA), run / "sensors.parquet")
        write(pa.Table.from_pylist(power_rows, POWER_SCHEMA), run / "power.parquet")
    curve = curve_table(run_id, step_table, latency_table)
    write(curve, run / "sweep.parquet")
    manifest = _sweep_manifest(
        run_id, disks, stim.as_dict(), plan, (settle_s, hold_s),
        _STARTED_NS + end_ns - _T0_NS, status, reason,
    )  # fmt: skip
    docs = curve_documents(curve, curve_meta(manifest))
    summary = {
        "run_id": run_id, "status": status, "stimulus": stim.as_dict(),
        "disks": {n: {"max_mib_s": d["max_mib_s"], "points": d["points"]} for n, d in docs.items()},
    }  # fmt: skip
    (run / "summary.json").write_text(json.dumps(summary, indent=2))
    (run / "manifest.json").write_text(json.dumps(manifest, indent=2))
    return run
