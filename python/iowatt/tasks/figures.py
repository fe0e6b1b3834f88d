"""The study's figures from what a run recorded: makespan and jobs per hour from the tasks'
timestamps, energy, average and peak watts from a power series, Wh per job.

Modelled power — used when the machine has no power source (no RAPL, no meter) — follows the
simulator's node model (``python/iowatt/sim/node.toml``, or ``--power-model``): idle watts, plus
watts per core the tasks kept busy (their CPU group's, not other processes'), plus the disk's
active watts times its busy fraction. A run says which it used (``power``: ``modelled``, or the
measured channel), and a modelled figure is never presented as measured.

Other load: the node's busy CPU time (``/proc/stat``) less the tasks' over the run, as a share
of the node's CPU (cores × makespan); past :data:`OTHER_LOAD_WARN` the run warns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from iowatt.tasks.monitor import Samples

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

# The share of the node's CPU that other processes may take before a run says so.
OTHER_LOAD_WARN = 0.05


def modelled_watts(
    samples: Samples, node: Mapping[str, Any], disk: tuple[float, float]
) -> FloatArray:
    """Watts over each sample's interval: the node's idle + per core the tasks kept busy, the
    disk's idle and what it draws more while busy (``disk``: :func:`iowatt.sim.tasks.disk_watts`).
    A sample without the tasks' cores counts the node's."""
    busy = np.asarray(
        [n if t is None else t for t, n in zip(samples.tasks_busy, samples.cpu_busy, strict=True)],
        dtype=np.float64,
    )
    util = np.asarray([u or 0.0 for u in samples.disk_util], dtype=np.float64)
    idle, active = disk
    return np.asarray(node["idle_w"] + idle + node["core_w"] * busy + active * util)


def interval_energy(
    ends_ns: IntArray, watts: FloatArray, first_ns: int, start_ns: int, end_ns: int
) -> tuple[float, float | None]:
    """(joules, peak W) in [start, end] of a series whose i-th value is the mean power over
    (ends[i-1], ends[i]] (the first from ``first_ns``): each interval counts for its overlap."""
    if len(ends_ns) == 0 or end_ns <= start_ns:
        return 0.0, None
    begins = np.concatenate([[first_ns], ends_ns[:-1]])
    overlap = np.clip(np.minimum(ends_ns, end_ns) - np.maximum(begins, start_ns), 0, None)
    inside = overlap > 0
    peak = float(watts[inside].max()) if inside.any() else None
    return float(np.sum(watts * overlap) / 1e9), peak


def spread_busy(
    ends_ns: IntArray, first_ns: int, tasks: Sequence[tuple[int, int, float]]
) -> FloatArray:
    """Cores busy over each sample's interval (as :func:`interval_energy`'s series) from tasks'
    (start ns, end ns, CPU seconds), each task's CPU spread evenly over its wall time."""
    ends = np.asarray(ends_ns, dtype=np.int64)
    begins = np.concatenate([[first_ns], ends[:-1]]).astype(np.int64)
    cpu_s = np.zeros(len(ends), dtype=np.float64)
    for start, end, spent in tasks:
        wall = max(end - start, 1)
        overlap = np.clip(np.minimum(ends, end) - np.maximum(begins, start), 0, None)
        cpu_s += spent * overlap / wall
    return np.asarray(cpu_s / (np.maximum(ends - begins, 1) / 1e9))


def other_load(
    ends_ns: IntArray,
    node_busy: FloatArray,
    tasks_busy: FloatArray,
    cpus: int,
    first_ns: int,
    start_ns: int,
    end_ns: int,
) -> dict[str, float]:
    """The node's CPU in [start, end] (``node_cpu_s``: cores × seconds), the tasks' share of
    it (``tasks_cpu_s``) and the busy time that was not theirs (``other_cpu_s``)."""
    busy, _ = interval_energy(ends_ns, node_busy, first_ns, start_ns, end_ns)
    tasks, _ = interval_energy(ends_ns, tasks_busy, first_ns, start_ns, end_ns)
    return {
        "node_cpu_s": cpus * max(end_ns - start_ns, 0) / 1e9,
        "tasks_cpu_s": tasks,
        "other_cpu_s": max(busy - tasks, 0.0),
    }


def other_load_warning(share: float | None) -> str | None:
    """The warning for a run whose other load passed :data:`OTHER_LOAD_WARN`, if it did."""
    if share is None or share <= OTHER_LOAD_WARN:
        return None
    return (
        f"other load: {share * 100:.0f} % of the node's CPU during the run (processes outside "
        "the tasks' group); modelled power leaves it out, measured power and the makespan do not"
    )


def makespan_s(records: Sequence[Mapping[str, Any]]) -> float:
    """From the first task's start to the last one's end."""
    if not records:
        return 0.0
    return (max(r["end_ns"] for r in records) - min(r["start_ns"] for r in records)) / 1e9


def totals(
    records: Sequence[Mapping[str, Any]], segments: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """A run's headline: segments (one per invocation that worked on it) add up."""
    ok = sum(1 for r in records if r["status"] == "ok")
    failed = failed_tasks(records)
    rchar = [r["rchar"] for r in records if r.get("rchar") is not None]
    syscr = [r["syscr"] for r in records if r.get("syscr") is not None]
    span = sum(s["makespan_s"] for s in segments)
    energies = [s["energy_j"] for s in segments]
    energy = sum(energies) if energies and all(e is not None for e in energies) else None
    peaks = [s["peak_w"] for s in segments if s["peak_w"] is not None]
    # Segments written before other load was measured have none.
    measured = [s for s in segments if s.get("other_cpu_s") is not None]
    node_cpu = sum(s["node_cpu_s"] for s in measured)
    share = sum(s["other_cpu_s"] for s in measured) / node_cpu if node_cpu > 0 else None
    warning = other_load_warning(share)
    return {
        "done": ok,
        "failed": failed["count"] if failed else 0,
        "failed_tasks": failed,
        "makespan_s": span,
        "jobs_per_h": ok * 3600 / span if span > 0 else None,
        "energy_j": energy,
        "avg_w": energy / span if energy is not None and span > 0 else None,
        "peak_w": max(peaks) if peaks else None,
        "wh_per_job": energy / 3600 / ok if energy is not None and ok else None,
        "power": segments[-1]["power"] if segments else None,
        # What the tasks read on any file system (/proc/PID/io) and the mean size of a read.
        "rchar": sum(rchar) if rchar else None,
        "syscr": sum(syscr) if syscr else None,
        "mean_read_b": sum(rchar) / sum(syscr) if rchar and sum(syscr) else None,
        "other_cpu_share": share,
        "warnings": [warning] if warning else [],
    }


def failed_tasks(records: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """How many tasks did not end ``ok`` and how each ended (``failed``, ``killed``,
    ``timeout``, ``out-of-memory``); None when every one did."""
    kinds: dict[str, int] = {}
    for r in records:
        if r["status"] != "ok":
            kinds[r["status"]] = kinds.get(r["status"], 0) + 1
    return {"count": sum(kinds.values()), "kinds": dict(sorted(kinds.items()))} if kinds else None
