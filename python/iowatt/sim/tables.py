"""A server simulation's results as tables: one row per workload × policy × seed
(``policies.parquet``), the time series (``sim_series.parquet``) and the policies' decisions
(``sim_events.parquet``); and the policy table that ``--json`` prints and the report draws,
averaged over the seeds with a 95 % confidence interval (Student's t) where there are several.

Every figure is against DLB on the same workload and seed (the same jobs, the same disk noise):
``speedup_vs_dlb`` = T_DLB / T − 1 (0.5: 1.5 times as fast), ``batch_slowdown`` = 1 − the batch
jobs' progress rate / DLB's, ``energy_saving_vs_dlb`` = 1 − E / E_DLB per component.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from iowatt.store.schemas import (
    SIM_EVENT_SCHEMA,
    SIM_SERIES_COLUMNS,
    SIM_SERIES_SCHEMA,
)

BASELINE = "DLB"
COMPONENTS = ("socket", "memory", "fans")


def _total(r: Mapping[str, Any]) -> float:
    return float(sum(r["energy_j"][c] for c in COMPONENTS))


def _ratio(a: float, b: float) -> float | None:
    return None if b == 0 or not (math.isfinite(a) and math.isfinite(b)) else a / b


def per_run_rows(run_id: str, results: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per engine run (``POLICY_SCHEMA``), each against DLB's run of its workload and
    seed (null figures when that run is missing or did not finish)."""
    base = {
        (r["workload"], r["seed"]): r
        for r in results
        if r["policy"] == BASELINE and r["status"] == "complete"
    }
    rows = []
    for r in results:
        b = base.get((r["workload"], r["seed"]))
        done = r["status"] == "complete" and b is not None
        energy = {**{c: r["energy_j"][c] for c in COMPONENTS}, "total": _total(r)}
        b_energy = {**{c: b["energy_j"][c] for c in COMPONENTS}, "total": _total(b)} if b else {}
        speed = _ratio(b["service_s"], r["service_s"]) if done and b else None
        batch = _ratio(r["batch_speed"], b["batch_speed"]) if done and b else None
        row = {
            "run_id": run_id,
            "workload": r["workload"],
            "policy": r["policy"],
            "seed": r["seed"],
            "status": r["status"],
            "service_s": r["service_s"],
            "speedup_vs_dlb": None if speed is None else speed - 1,
            "batch_speed": r["batch_speed"],
            "batch_slowdown": None if batch is None else 1 - batch,
            **{f"{c}_j": energy[c] for c in (*COMPONENTS, "total")},
            "disks_j": r["energy_j"]["disks"],
        }
        for c in (*COMPONENTS, "total"):
            share = _ratio(energy[c], b_energy[c]) if done and b else None
            row[f"saving_{c}"] = None if share is None else 1 - share
        for k in (
            "peak_core_c",
            "peak_dimm_c",
            "gating_s",
            "mean_pwm",
            "hdd_mb",
            "ssd_mb",
            "migrations",
            "events_total",
        ):
            row[k] = r[k]
        rows.append(row)
    return rows


def mean_ci(values: Sequence[float | None]) -> tuple[float | None, list[float] | None]:
    """The mean of the values given (None left out) and its 95 % Student-t interval (None
    with fewer than two)."""
    xs = np.array([v for v in values if v is not None], dtype=np.float64)
    if xs.size == 0:
        return None, None
    mean = float(xs.mean())
    if xs.size < 2:
        return mean, None
    from scipy import stats

    half = float(stats.t.ppf(0.975, xs.size - 1) * xs.std(ddof=1) / math.sqrt(xs.size))
    return mean, [mean - half, mean + half]


def policy_table(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One object per workload × policy, averaged over the seeds: what ``--json`` prints."""
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["workload"], r["policy"]), []).append(r)
    out = []
    for (workload, policy), rs in groups.items():
        speedup, ci = mean_ci([r["speedup_vs_dlb"] for r in rs])
        if policy == BASELINE:
            ci = None  # DLB against itself: no interval to give
        slowdown, _ = mean_ci([r["batch_slowdown"] for r in rs])
        out.append(
            {
                "workload": workload,
                "policy": policy,
                "seeds": len(rs),
                "complete": all(r["status"] == "complete" for r in rs),
                "service_time_s": float(np.mean([r["service_s"] for r in rs])),
                "speedup_vs_dlb": speedup,
                "speedup_ci95": ci,
                "batch_slowdown": slowdown,
                "energy_j": {
                    c: float(np.mean([r[f"{c}_j"] for r in rs])) for c in (*COMPONENTS, "total")
                },
                "energy_saving_vs_dlb": {
                    c: mean_ci([r[f"saving_{c}"] for r in rs])[0] for c in (*COMPONENTS, "total")
                },
                "peak_temp_c": max(r["peak_core_c"] for r in rs),
                "peak_dimm_c": max(r["peak_dimm_c"] for r in rs),
                "gating_s": float(np.mean([r["gating_s"] for r in rs])),
                "mean_pwm": float(np.mean([r["mean_pwm"] for r in rs])),
            }
        )
    return out


def _keys(run_id: str, r: Mapping[str, Any], n: int) -> dict[str, pa.Array]:
    return {
        "run_id": pa.array([run_id] * n, pa.string()),
        "workload": pa.array([r["workload"]] * n, pa.string()),
        "policy": pa.array([r["policy"]] * n, pa.string()),
        "seed": pa.array([r["seed"]] * n, pa.int64()),
    }


def series_table(run_id: str, results: Sequence[Mapping[str, Any]]) -> pa.Table:
    parts = []
    for r in results:
        s = r["series"]
        t = np.frombuffer(s["t_s"], dtype="<f8")
        cols = {**_keys(run_id, r, t.size), "t_s": t}
        cols.update({c: np.frombuffer(s[c], dtype="<f8") for c in SIM_SERIES_COLUMNS})
        parts.append(pa.table(cols, schema=SIM_SERIES_SCHEMA))
    return pa.concat_tables(parts) if parts else SIM_SERIES_SCHEMA.empty_table()


def event_table(run_id: str, results: Sequence[Mapping[str, Any]]) -> pa.Table:
    parts = []
    for r in results:
        e = r["events"]
        t = np.frombuffer(e["t_ns"], dtype="<u8")
        kinds = np.array(e["kinds"], dtype=object)[np.frombuffer(e["kind"], dtype=np.uint8)]
        cols = {
            **_keys(run_id, r, t.size),
            "t_s": t / 1e9,
            "kind": pa.array(kinds.tolist(), pa.string()),
            "subject": np.frombuffer(e["subject"], dtype="<u4").astype(np.int64),
            "value": np.frombuffer(e["value"], dtype="<f8"),
        }
        parts.append(pa.table(cols, schema=SIM_EVENT_SCHEMA))
    return pa.concat_tables(parts) if parts else SIM_EVENT_SCHEMA.empty_table()
