"""A RAID simulation's results as tables (docs/run-store.md) and the per-personality table
``--json`` prints and the report draws: pooled over the seeds, savings against RAID-0 of the
same seed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from iowatt.store.schemas import RAID_POWER_SCHEMA, RAID_REQUEST_SCHEMA, RAID_RUN_SCHEMA

BASELINE = "raid0"


def _u64(buf: bytes) -> np.ndarray:
    return np.frombuffer(buf, dtype="<u8")


def _quantiles(ns: np.ndarray) -> dict[str, float | None]:
    if ns.size == 0:
        return {"p50": None, "p90": None, "p99": None, "max": None}
    q = np.quantile(ns, [0.5, 0.9, 0.99], method="inverted_cdf") / 1e9
    return {
        "p50": float(q[0]),
        "p90": float(q[1]),
        "p99": float(q[2]),
        "max": float(ns.max()) / 1e9,
    }


def run_rows(
    run_id: str, results: Sequence[Mapping[str, Any]], timeout_s: float
) -> list[dict[str, Any]]:
    """One row per personality × seed (``RAID_RUN_SCHEMA``)."""
    base = {r["seed"]: sum(r["energy_j"]) for r in results if r["personality"] == BASELINE}
    rows = []
    for r in results:
        lat, comp = _u64(r["latency_ns"]), _u64(r["completion_ns"])
        energy = float(sum(r["energy_j"]))
        duration = r["end_ns"] / 1e9
        b = base.get(r["seed"])
        ql, qc = _quantiles(lat), _quantiles(comp)
        timeouts = int((comp > timeout_s * 1e9).sum())
        rows.append(
            {
                "run_id": run_id,
                "personality": r["personality"],
                "seed": r["seed"],
                "requests": int(comp.size),
                "cache_hits": r["cache_hits"],
                "duration_s": duration,
                "energy_j": energy,
                "mean_w": energy / duration if duration > 0 else None,
                "saving_vs_raid0": 1 - energy / b if b else None,
                "latency_p50_s": ql["p50"],
                "latency_p99_s": ql["p99"],
                "latency_max_s": ql["max"],
                "completion_p50_s": qc["p50"],
                "completion_p99_s": qc["p99"],
                "completion_max_s": qc["max"],
                "success_rate": 1 - timeouts / comp.size if comp.size else None,
                "timeouts": timeouts,
                "spin_cycles": [int(c) for c in r["spin_cycles"]],
                "gear_shifts": max(len(r["gears"]) - 1, 0),
                "synced_bytes": r["synced_bytes"],
            }
        )
    return rows


def personality_table(
    results: Sequence[Mapping[str, Any]], rows: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """One object per personality: seeds pooled for the percentiles, averaged for the rest."""
    out = []
    for p in dict.fromkeys(r["personality"] for r in rows):
        mine = [r for r in rows if r["personality"] == p]
        runs = [r for r in results if r["personality"] == p]
        lat = np.concatenate([_u64(r["latency_ns"]) for r in runs])
        comp = np.concatenate([_u64(r["completion_ns"]) for r in runs])
        savings = [r["saving_vs_raid0"] for r in mine if r["saving_vs_raid0"] is not None]
        cycles = np.mean([r["spin_cycles"] for r in mine], axis=0)
        out.append(
            {
                "personality": p,
                "seeds": len(mine),
                "energy_j": float(np.mean([r["energy_j"] for r in mine])),
                "energy_saving_vs_raid0": float(np.mean(savings)) if savings else None,
                "mean_w": float(np.mean([r["mean_w"] or 0.0 for r in mine])),
                "latency_s": _quantiles(lat),
                "completion_s": _quantiles(comp),
                "success_rate": float(np.mean([r["success_rate"] for r in mine])),
                "timeouts": float(np.mean([r["timeouts"] for r in mine])),
                "spin_cycles": [float(c) for c in cycles],
                "cache_hits": float(np.mean([r["cache_hits"] for r in mine])),
            }
        )
    return out


def power_table(run_id: str, results: Sequence[Mapping[str, Any]], bin_s: float) -> pa.Table:
    """Per bin: each disk's energy, mean W and seconds spun down, and the array's (disk null)
    with the disks spinning on average."""
    parts = []
    for r in results:
        energy = [np.frombuffer(b, dtype="<f8") for b in r["bin_energy_j"]]
        standby = [np.frombuffer(b, dtype="<f8") for b in r["bin_standby_s"]]
        bins = max((e.size for e in energy), default=0)
        pad = [np.pad(e, (0, bins - e.size)) for e in energy]
        pads = [np.pad(s, (0, bins - s.size)) for s in standby]
        disks = len(energy)
        t = np.arange(bins) * bin_s
        for d in [*range(disks), None]:
            e = pad[d] if d is not None else np.sum(pad, axis=0)
            s = pads[d] if d is not None else np.sum(pads, axis=0)
            spinning = (1 if d is not None else disks) - s / bin_s
            parts.append(
                pa.table(
                    {
                        "run_id": pa.array([run_id] * bins, pa.string()),
                        "personality": pa.array([r["personality"]] * bins, pa.string()),
                        "seed": pa.array([r["seed"]] * bins, pa.int64()),
                        "disk": pa.array([d] * bins, pa.int64()),
                        "t_s": t,
                        "energy_j": e,
                        "mean_w": e / bin_s,
                        "standby_s": s,
                        "spinning": spinning,
                    },
                    schema=RAID_POWER_SCHEMA,
                )
            )
    return pa.concat_tables(parts) if parts else RAID_POWER_SCHEMA.empty_table()


def request_table(
    run_id: str, results: Sequence[Mapping[str, Any]], requests: Any, timeout_s: float
) -> pa.Table:
    parts = []
    t_s = requests.t_ns.astype(np.float64) / 1e9
    for r in results:
        comp = _u64(r["completion_ns"])
        n = comp.size
        parts.append(
            pa.table(
                {
                    "run_id": pa.array([run_id] * n, pa.string()),
                    "personality": pa.array([r["personality"]] * n, pa.string()),
                    "seed": pa.array([r["seed"]] * n, pa.int64()),
                    "seq": np.arange(n, dtype=np.int64),
                    "t_s": t_s,
                    "offset": requests.offset.astype(np.int64),
                    "bytes": requests.size.astype(np.int64),
                    "latency_ns": _u64(r["latency_ns"]).astype(np.int64),
                    "completion_ns": comp.astype(np.int64),
                    "ok": comp <= timeout_s * 1e9,
                },
                schema=RAID_REQUEST_SCHEMA,
            )
        )
    return pa.concat_tables(parts) if parts else RAID_REQUEST_SCHEMA.empty_table()


def run_table(rows: Sequence[Mapping[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(list(rows), RAID_RUN_SCHEMA)
