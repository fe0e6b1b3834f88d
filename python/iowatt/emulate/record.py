"""What an emulated disk leaves: every request with its charged seek, rotation, transfer and
queueing (``disk_requests.parquet``), one-second intervals of what completed
(``intervals.parquet``, workload ``disk``), the power states entered and the stimuli set
(``events.parquet``) and the summary: throughput, latency, time and energy per state, and what
a vibration curve did."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa

from iowatt.emulate.vibration import StimulusCurve
from iowatt.histogram import STANDARD_PERCENTILES, heat_bands, percentiles
from iowatt.store.schemas import EMULATE_REQUEST_SCHEMA, INTERVAL_SCHEMA, event_table

INTERVAL_NS = 1_000_000_000
WORKLOAD = "disk"
_U64 = (
    "arrived_ns", "started_ns", "done_ns", "offset", "bytes", "write", "drained", "failed", "stream"
)  # fmt: skip
_F64 = ("overhead_s", "seek_s", "rotation_s", "transfer_s", "slowdown_s")


def columns(result: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """The engine's column buffers as arrays (times in ns from the mount)."""
    c = result["columns"]
    out: dict[str, np.ndarray] = {k: np.frombuffer(c[k], dtype="<u8") for k in _U64}
    out.update({k: np.frombuffer(c[k], dtype="<f8") for k in _F64})
    return out


def request_table(run_id: str, cols: Mapping[str, np.ndarray]) -> pa.Table:
    n = len(cols["done_ns"])
    arrived, started, done = (cols[k].astype(np.int64) for k in _U64[:3])
    return pa.table(
        {
            "run_id": [run_id] * n,
            "t_s": arrived / 1e9,
            "offset": cols["offset"].astype(np.int64),
            "bytes": cols["bytes"].astype(np.int64),
            "write": cols["write"].astype(bool),
            "latency_ns": done - arrived,
            "queued_ns": started - arrived,
            "service_ns": done - started,
            "overhead_s": cols["overhead_s"],
            "seek_s": cols["seek_s"],
            "rotation_s": cols["rotation_s"],
            "transfer_s": cols["transfer_s"],
            "slowdown_s": cols["slowdown_s"],
            "drained": cols["drained"].astype(bool),
            "failed": cols["failed"].astype(bool),
            "stream": cols["stream"].astype(np.int64),
        },
        schema=EMULATE_REQUEST_SCHEMA,
    )


def interval_table(
    run_id: str, t0_ns: int, end_ns: int, cols: Mapping[str, np.ndarray]
) -> pa.Table:
    """Requests by the second they completed in, from the mount to ``end_ns``."""
    # In completion order, so each second's requests are one slice (searchsorted), not a
    # scan of every request per second.
    order = np.argsort(cols["done_ns"], kind="stable")
    done = cols["done_ns"].astype(np.int64)[order]
    latency = done - cols["arrived_ns"].astype(np.int64)[order]
    nbytes = cols["bytes"].astype(np.int64)[order]
    rows: dict[str, list[Any]] = {f.name: [] for f in INTERVAL_SCHEMA}
    for start in range(0, max(end_ns, 1), INTERVAL_NS):
        stop = min(start + INTERVAL_NS, end_ns) if end_ns > start else start + INTERVAL_NS
        inside = slice(*np.searchsorted(done, [start, stop]))
        lat = latency[inside]
        secs = (stop - start) / 1e9
        p50, p99, p999 = (
            percentiles(lat, np.ones_like(lat), (50.0, 99.0, 99.9)) if lat.size else [0, 0, 0]
        )
        for name, value in (
            ("run_id", run_id),
            ("workload", WORKLOAD),
            ("t_s", start / 1e9),
            ("duration_s", secs),
            ("mono_ns", t0_ns + start),
            ("ops", int(lat.size)),
            ("bytes", int(nbytes[inside].sum())),
            ("errors", 0),
            ("ops_s", lat.size / secs),
            ("mib_s", nbytes[inside].sum() / 2**20 / secs),
            ("p50_ns", p50),
            ("p99_ns", p99),
            ("p999_ns", p999),
            ("max_ns", int(lat.max()) if lat.size else 0),
            ("slow_ns", []),
            ("slow_ops", []),
            ("heat_ops", heat_bands(lat, np.ones_like(lat))),
        ):
            rows[name].append(value)
    return pa.table(rows, schema=INTERVAL_SCHEMA)


def events(
    run_id: str,
    t0_ns: int,
    changes: list[tuple[int, str]],
    stimuli: list[tuple[int, float, float]],
    curve: StimulusCurve | None,
) -> pa.Table:
    """The power states entered (``disk``/``state``) and every stimulus set, the first at the
    mount (``stimulus``/``stimulus``, as a sweep names its own), in time order."""
    rows: list[dict[str, Any]] = [
        {"mono_ns": t0_ns + t, "source": "disk", "kind": "state", "message": state}
        for t, state in changes
    ]
    if curve is not None:
        rows += [
            {
                "mono_ns": t0_ns + t,
                "source": "stimulus",
                "kind": "stimulus",
                "message": f"{curve.kind} {value:g} {curve.unit}: r = {speed:.4g}",
            }
            for t, value, speed in stimuli
        ]
    rows.sort(key=lambda r: r["mono_ns"])
    return event_table(run_id, t0_ns, rows)


def state_events(run_id: str, t0_ns: int, changes: list[tuple[int, str]]) -> pa.Table:
    return events(run_id, t0_ns, changes, [], None)


def vibration_summary(
    result: Mapping[str, Any], cols: Mapping[str, np.ndarray], settings: Mapping[str, Any]
) -> dict[str, Any] | None:
    """What a curve did: its source and kind, the stall cap, the stimuli set, the requests
    failed by a stall and the mean time the curve added; None without a curve."""
    curve = settings.get("curve")
    if curve is None:
        return None
    failed = cols["failed"].astype(bool)
    slowdown = cols["slowdown_s"][~failed]
    stimuli = result.get("stimuli") or []
    return {
        "curve": curve["source"],
        "stimulus": curve["kind"],
        "unit": curve["unit"],
        "band": curve["band"],
        "source": "schedule" if settings.get("schedule") else "fixed",
        "schedule": (settings.get("schedule") or {}).get("source"),
        "speedup": settings.get("speedup"),
        "at": settings.get("at"),
        "stall_cap_s": settings.get("stall_cap_s"),
        "changes": max(len(stimuli) - 1, 0),
        "final": list(stimuli[-1][1:]) if stimuli else None,
        "failed": int(failed.sum()),
        "mean_slowdown_s": float(slowdown.mean()) if slowdown.size else 0.0,
        "slowdown_s": float(slowdown.sum()),
    }


def summary(
    result: Mapping[str, Any], cols: Mapping[str, np.ndarray], model: Mapping[str, Any]
) -> dict[str, Any]:
    """The run's ``disk`` section: what was served, how fast, and what it cost."""
    c = result["counters"]
    latency = (cols["done_ns"] - cols["arrived_ns"]).astype(np.int64)
    queued = (cols["started_ns"] - cols["arrived_ns"]).astype(np.int64)
    served = ~cols["drained"].astype(bool)
    seconds = c["t_s"]
    n = int(latency.size)
    found = percentiles(latency, np.ones_like(latency), STANDARD_PERCENTILES)
    lat: dict[str, Any] = {f"p{p:g}": v for p, v in zip(STANDARD_PERCENTILES, found, strict=True)}
    lat.update({"mean": float(latency.mean()) if n else 0.0, "max": int(latency.max()) if n else 0})

    def mean_s(name: str) -> float:
        return float(cols[name][served].mean()) if served.any() else 0.0

    return {
        "model": model["label"],
        "seconds": seconds,
        "requests": n,
        "read_ops": c["read_ops"],
        "write_ops": c["write_ops"],
        "bytes": c["read_bytes"] + c["write_bytes"],
        "drained": c["drained"],
        "ops_s": n / seconds if seconds > 0 else 0.0,
        "mib_s": (c["read_bytes"] + c["write_bytes"]) / 2**20 / seconds if seconds > 0 else 0.0,
        "latency_ns": lat,
        "mean_queued_ns": float(queued.mean()) if n else 0.0,
        "mean_charge_s": {k[:-2]: mean_s(k) for k in _F64},
        "state_s": c["state_s"],
        "state_j": c["state_j"],
        "energy_j": c["energy_j"],
        "spin_cycles": c["cycles"],
        "lazy_unmount": bool(result.get("lazy_unmount", False)),
    }
