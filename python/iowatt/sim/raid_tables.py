"""A RAID simulation's results as tables (docs/run-store.md) and the per-personality table
``--json`` prints and the report draws: pooled over the seeds, savings against RAID-0 of the
same seed. Percentiles come from each run's latency histograms (HDR, 0.1 %), pooled by adding
them; maxima and timeouts are exact."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np
import pyarrow as pa

from iowatt.histogram import percentiles
from iowatt.store.schemas import RAID_POWER_SCHEMA, RAID_REQUEST_SCHEMA, RAID_RUN_SCHEMA

BASELINE = "raid0"
REQUESTS = "raid_requests.parquet"


def _u64(buf: bytes) -> np.ndarray:
    return np.frombuffer(buf, dtype="<u8")


def summarise(r: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    """A run without its per-request times: their histograms, exact maxima and timeouts."""
    comp = _u64(r["completion_ns"])
    out = {k: v for k, v in r.items() if k not in ("latency_ns", "completion_ns", "t_ns")}
    out["requests"] = int(comp.size)
    out["timeouts"] = int((comp > timeout_s * 1e9).sum())
    out["latency_max_ns"] = int(_u64(r["latency_ns"]).max()) if comp.size else None
    out["completion_max_ns"] = int(comp.max()) if comp.size else None
    return out


def _quantiles(hists: Sequence[tuple[bytes, bytes]], most: int | None) -> dict[str, float | None]:
    values = np.concatenate([_u64(v) for v, _ in hists]) if hists else np.zeros(0, "<u8")
    counts = np.concatenate([_u64(c) for _, c in hists]) if hists else np.zeros(0, "<u8")
    if most is None or counts.sum() == 0:
        return {"p50": None, "p90": None, "p99": None, "max": None}
    q = percentiles(values.astype(np.int64), counts.astype(np.int64), (50.0, 90.0, 99.0))
    return {"p50": q[0] / 1e9, "p90": q[1] / 1e9, "p99": q[2] / 1e9, "max": most / 1e9}


def _most(runs: Sequence[Mapping[str, Any]], key: str) -> int | None:
    values = [r[key] for r in runs if r[key] is not None]
    return max(values) if values else None


def run_rows(
    run_id: str, results: Sequence[Mapping[str, Any]], rated_per_day: float
) -> list[dict[str, Any]]:
    """One row per personality × seed (``RAID_RUN_SCHEMA``)."""
    base = {r["seed"]: sum(r["energy_j"]) for r in results if r["personality"] == BASELINE}
    rows = []
    for r in results:
        energy = float(sum(r["energy_j"]))
        duration = r["end_ns"] / 1e9
        b = base.get(r["seed"])
        ql = _quantiles([r["latency_hist"]], r["latency_max_ns"])
        qc = _quantiles([r["completion_hist"]], r["completion_max_ns"])
        n = r["requests"]
        rows.append(
            {
                "run_id": run_id,
                "personality": r["personality"],
                "seed": r["seed"],
                "requests": n,
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
                "success_rate": 1 - r["timeouts"] / n if n else None,
                "timeouts": r["timeouts"],
                "spin_cycles": [int(c) for c in r["spin_cycles"]],
                "most_cycles_a_day": [int(c) for c in r["most_cycles_a_day"]],
                "rated_cycles_per_day": rated_per_day,
                "gear_shifts": max(len(r["gears"]) - 1, 0),
                "synced_bytes": r["synced_bytes"],
                "fs_reads": r["fs_reads"],
                "fs_writes": r["fs_writes"],
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
        savings = [r["saving_vs_raid0"] for r in mine if r["saving_vs_raid0"] is not None]
        cycles = np.mean([r["spin_cycles"] for r in mine], axis=0)
        out.append(
            {
                "personality": p,
                "seeds": len(mine),
                "energy_j": float(np.mean([r["energy_j"] for r in mine])),
                "energy_saving_vs_raid0": float(np.mean(savings)) if savings else None,
                "mean_w": float(np.mean([r["mean_w"] or 0.0 for r in mine])),
                "latency_s": _quantiles(
                    [r["latency_hist"] for r in runs], _most(runs, "latency_max_ns")
                ),
                "completion_s": _quantiles(
                    [r["completion_hist"] for r in runs], _most(runs, "completion_max_ns")
                ),
                "success_rate": float(np.mean([r["success_rate"] for r in mine])),
                "timeouts": float(np.mean([r["timeouts"] for r in mine])),
                "spin_cycles": [float(c) for c in cycles],
                "most_cycles_a_day": [
                    int(c) for c in np.max([r["most_cycles_a_day"] for r in mine], axis=0)
                ],
                "rated_cycles_per_day": mine[0]["rated_cycles_per_day"],
                "cache_hits": float(np.mean([r["cache_hits"] for r in mine])),
            }
        )
    return out


def power_table(run_id: str, results: Sequence[Mapping[str, Any]], bin_s: float) -> pa.Table:
    """Per bin: each disk's energy, mean W and seconds spun down, and the array's (disk null)
    with the disks spinning on average; the last bin as wide as the run lasted into it."""
    parts = []
    for r in results:
        energy = [np.frombuffer(b, dtype="<f8") for b in r["bin_energy_j"]]
        standby = [np.frombuffer(b, dtype="<f8") for b in r["bin_standby_s"]]
        bins = max((e.size for e in energy), default=0)
        pad = [np.pad(e, (0, bins - e.size)) for e in energy]
        pads = [np.pad(s, (0, bins - s.size)) for s in standby]
        disks = len(energy)
        t = np.arange(bins) * bin_s
        width = np.minimum(bin_s, r["end_ns"] / 1e9 - t)
        # A run ending on a bin's edge has no time in the next.
        width = np.where(width > 0, width, bin_s)
        for d in [*range(disks), None]:
            e = pad[d] if d is not None else np.sum(pad, axis=0)
            s = pads[d] if d is not None else np.sum(pads, axis=0)
            spinning = (1 if d is not None else disks) - s / width
            parts.append(
                pa.table(
                    {
                        "run_id": pa.array([run_id] * bins, pa.string()),
                        "personality": pa.array([r["personality"]] * bins, pa.string()),
                        "seed": pa.array([r["seed"]] * bins, pa.int64()),
                        "disk": pa.array([d] * bins, pa.int64()),
                        "t_s": t,
                        "width_s": width,
                        "energy_j": e,
                        "mean_w": e / width,
                        "standby_s": s,
                        "spinning": spinning,
                    },
                    schema=RAID_POWER_SCHEMA,
                )
            )
    return pa.concat_tables(parts) if parts else RAID_POWER_SCHEMA.empty_table()


class RequestWriter:
    """``raid_requests.parquet`` written a run at a time, straight into the run's directory
    (the writer syncs it at commit), so no run's requests are held after it is simulated."""

    def __init__(self, writer: Any, config: Any) -> None:
        self.path = Path(writer.tmp) / REQUESTS
        self.run_id = writer.run_id
        self.requests = config.requests
        self.timeout_ns = config.timeout_s * 1e9
        self._sink: Any = None

    def __enter__(self) -> RequestWriter:
        import pyarrow.parquet as pq

        self._sink = pq.ParquetWriter(self.path, RAID_REQUEST_SCHEMA)
        return self

    def write(self, r: Mapping[str, Any]) -> None:
        comp = _u64(r["completion_ns"])
        n = comp.size
        table = pa.table(
            {
                "run_id": pa.array([self.run_id] * n, pa.string()),
                "personality": pa.array([r["personality"]] * n, pa.string()),
                "seed": pa.array([r["seed"]] * n, pa.int64()),
                "seq": np.arange(n, dtype=np.int64),
                "t_s": _u64(r["t_ns"]).astype(np.float64) / 1e9,
                "offset": self.requests.offset.astype(np.int64),
                "bytes": self.requests.size.astype(np.int64),
                "latency_ns": _u64(r["latency_ns"]).astype(np.int64),
                "completion_ns": comp.astype(np.int64),
                "ok": comp <= self.timeout_ns,
            },
            schema=RAID_REQUEST_SCHEMA,
        )
        self._sink.write_table(table)

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._sink.close()


def run_table(rows: Sequence[Mapping[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(list(rows), RAID_RUN_SCHEMA)
