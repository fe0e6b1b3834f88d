"""What an emulated array leaves, in the tables ``iowatt sim raid`` writes so the two load
side by side: one row for the array (``raid_runs.parquet``), its disks' and its own power per
bin (``raid_power.parquet``), every request it answered (``raid_requests.parquet``: a lookup has
0 bytes), one-second intervals (``intervals.parquet``, workload ``disk``) and each disk's state
changes and PARAID's gear shifts (``events.parquet``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa

from iowatt.emulate.record import interval_table
from iowatt.sim import raid_tables
from iowatt.store.schemas import RAID_REQUEST_SCHEMA, event_table

_U64 = ("arrived_ns", "first_ns", "done_ns", "offset", "bytes", "write", "drained", "stream")
# What the engine's closing account gives as the simulator's runs give it.
_ENGINE = (
    "energy_j", "spin_cycles", "most_cycles_a_day", "gears", "synced_bytes", "fs_reads",
    "fs_writes", "end_ns", "bin_energy_j", "bin_standby_s",
)  # fmt: skip


def columns(result: Mapping[str, Any]) -> dict[str, np.ndarray]:
    c = result["columns"]
    return {k: np.frombuffer(c[k], dtype="<u8") for k in _U64}


def as_simulated(
    result: Mapping[str, Any], cols: Mapping[str, np.ndarray], personality: str, seed: int
) -> dict[str, Any]:
    """The array's account shaped as one of ``iowatt sim raid``'s runs: its data requests'
    latency and completion (exact, as one-count histograms), the engine's energy, cycles,
    gears and bins."""
    data = (cols["bytes"] > 0) & (cols["drained"] == 0)
    latency = (cols["first_ns"] - cols["arrived_ns"])[data]
    completion = (cols["done_ns"] - cols["arrived_ns"])[data]
    ones = np.ones(latency.size, dtype="<u8").tobytes()
    return {
        **{k: result[k] for k in _ENGINE},
        "personality": personality,
        "seed": seed,
        "requests": int(latency.size),
        "cache_hits": 0,
        "timeouts": 0,
        "latency_hist": (latency.astype("<u8").tobytes(), ones),
        "completion_hist": (completion.astype("<u8").tobytes(), ones),
        "latency_max_ns": int(latency.max()) if latency.size else None,
        "completion_max_ns": int(completion.max()) if completion.size else None,
    }


def request_table(
    run_id: str, cols: Mapping[str, np.ndarray], personality: str, seed: int
) -> pa.Table:
    n = cols["done_ns"].size
    arrived = cols["arrived_ns"].astype(np.int64)
    return pa.table(
        {
            "run_id": pa.array([run_id] * n, pa.string()),
            "personality": pa.array([personality] * n, pa.string()),
            "seed": pa.array([seed] * n, pa.int64()),
            "seq": np.arange(n, dtype=np.int64),
            "t_s": arrived / 1e9,
            "offset": cols["offset"].astype(np.int64),
            "bytes": cols["bytes"].astype(np.int64),
            "latency_ns": cols["first_ns"].astype(np.int64) - arrived,
            "completion_ns": cols["done_ns"].astype(np.int64) - arrived,
            "ok": cols["drained"] == 0,
        },
        schema=RAID_REQUEST_SCHEMA,
    )


def events(run_id: str, t0_ns: int, result: Mapping[str, Any]) -> pa.Table:
    """Each disk's states entered (source ``disk<N>``, from ``idle`` at the mount) and each
    gear shift (``array``)."""
    disks = len(result["energy_j"])
    changes = [(0, d, "idle") for d in range(disks)] + list(result["disk_changes"])
    rows = [
        {"mono_ns": t0_ns + t, "source": f"disk{d}", "kind": "state", "message": state}
        for t, d, state in changes
    ]
    rows += [
        {"mono_ns": t0_ns + t, "source": "array", "kind": "gear", "message": f"{g} disks"}
        for t, g in result["gears"]
    ]
    rows.sort(key=lambda r: r["mono_ns"])
    return event_table(run_id, t0_ns, rows)


def write(
    writer: Any,
    result: Mapping[str, Any],
    personality: str,
    seed: int,
    bin_s: float,
    rated_per_day: float,
) -> dict[str, Any]:
    """The array's tables into the run; returns the summary's ``array`` section."""
    cols = columns(result)
    run_id = writer.run_id
    simulated = as_simulated(result, cols, personality, seed)
    rows = raid_tables.run_rows(run_id, [simulated], rated_per_day)
    writer.write_table("raid_runs.parquet", raid_tables.run_table(rows))
    writer.write_table("raid_power.parquet", raid_tables.power_table(run_id, [simulated], bin_s))
    writer.write_table("raid_requests.parquet", request_table(run_id, cols, personality, seed))
    t0, end_ns = result["t0_ns"], result["end_ns"]
    data = {k: v[cols["bytes"] > 0] for k, v in cols.items()}
    writer.write_table("intervals.parquet", interval_table(run_id, t0, end_ns, data))
    writer.write_table("events.parquet", events(run_id, t0, result))
    c = result["counters"]
    table = raid_tables.personality_table([simulated], rows)[0]
    return {
        **table,
        "disks": len(result["energy_j"]),
        "requests": simulated["requests"],
        "seconds": end_ns / 1e9,
        "read_ops": c["read_ops"],
        "write_ops": c["write_ops"],
        "lookups": c["lookups"],
        "bytes": c["read_bytes"] + c["write_bytes"],
        "drained": c["drained"],
        "energy_by_disk_j": [float(e) for e in result["energy_j"]],
        "state_s": [d["state_s"] for d in c["disks"]],
        "state_j": [d["state_j"] for d in c["disks"]],
        "gear_shifts": max(len(result["gears"]) - 1, 0),
        "synced_bytes": result["synced_bytes"],
        "fs_reads": result["fs_reads"],
        "fs_writes": result["fs_writes"],
        "lazy_unmount": bool(result.get("lazy_unmount", False)),
    }
