"""One workload's results from many hosts merged into one, shaped as the engine's own result, so
the summary, fio section and Parquet tables of a one-host run are computed from it unchanged.

What merges exactly: histograms bucket by bucket (every host's engine uses the same bucket
values), operations, bytes, errors and CPU time summed. What cannot: a second's percentiles —
the engine keeps no per-second histogram — so a merged interval carries the largest host's p50,
p99, p99.9 and maximum (the fleet's quantile of a second lies between its hosts' smallest and
largest). Hosts' seconds are lined up by their index from the common start, which the barrier
keeps within milliseconds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from iowatt._engine import WorkloadResult
from iowatt.bench.summary import merged_histogram

_SUMMED = ("ops", "bytes", "errors")
_LARGEST = ("p50_ns", "p99_ns", "p999_ns", "max_ns")


def merge_results(results: Sequence[Mapping[str, Any]], measure_start_ns: int) -> WorkloadResult:
    """The fleet's result of one workload from its hosts' ``results`` (engine results);
    ``measure_start_ns`` is the common start on this host's monotonic clock. It failed if a
    host failed, else was cancelled if one was."""
    first = results[0]
    statuses = [r["status"] for r in results]
    status = next((s for s in ("failed", "cancelled") if s in statuses), "complete")
    reason = next((r["reason"] for r in results if r["status"] == status), None)
    merged = {
        "name": first["name"],
        "status": status,
        "reason": reason,
        "measure_start_ns": measure_start_ns,
        # The fleet is done when its last host is: "last done".
        "measured_ns": max(r["measured_ns"] for r in results),
        "cpu_usr_ns": sum(r["cpu_usr_ns"] for r in results),
        "cpu_sys_ns": sum(r["cpu_sys_ns"] for r in results),
        "errors_by_kind": _summed_counts([r["errors_by_kind"] for r in results]),
        "histogram": _histogram([r["histogram"] for r in results]),
        "flowops": _flowops([r["flowops"] for r in results]),
        "intervals": _intervals([r["intervals"] for r in results]),
        "open_loop": _open_loop([r.get("open_loop") for r in results]),
    }
    return cast(WorkloadResult, merged)


def _open_loop(parts: Sequence[Mapping[str, Any] | None]) -> dict[str, Any] | None:
    """The fleet's schedule: every host's rate and counts added up."""
    kept = [p for p in parts if p is not None]
    if not kept:
        return None
    events = [p.get("events") for p in kept]
    return {
        "rate": sum(p["rate"] for p in kept),
        "events": None if None in events else sum(e for e in events if e is not None),
        **{k: sum(p[k] for p in kept) for k in ("drained", "not_issued", "outstanding")},
    }


def as_arrays(result: WorkloadResult) -> WorkloadResult:
    """The result with its histograms' buckets as NumPy arrays, converted once: merging, the
    summaries and the tables then read them without converting a host's lists again and again
    (a thousand hosts' histograms are millions of buckets)."""
    import numpy as np

    def arrays(h: Mapping[str, Any]) -> dict[str, Any]:
        return {
            **h,
            "value_ns": np.asarray(h["value_ns"], dtype=np.int64),
            "count": np.asarray(h["count"], dtype=np.int64),
        }

    converted = {
        **result,
        "histogram": arrays(result["histogram"]),
        "flowops": [arrays(f) for f in result["flowops"]],
    }
    return cast(WorkloadResult, converted)


def _histogram(hists: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    return {**merged_histogram(hists), "saturated": sum(h["saturated"] for h in hists)}


def _summed_counts(counts: Sequence[Mapping[str, int]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for c in counts:
        for k, v in c.items():
            out[k] = out.get(k, 0) + v
    return out


def _flowops(per_host: Sequence[Sequence[Mapping[str, Any]]]) -> list[dict[str, Any]]:
    """Flowops by name, in the first host's order (every host ran the same workload)."""
    by_name: dict[str, list[Mapping[str, Any]]] = {}
    for flowops in per_host:
        for f in flowops:
            by_name.setdefault(f["name"], []).append(f)
    out = []
    for name, parts in by_name.items():
        merged = {**parts[0], **_histogram(parts)}
        merged.update({k: sum(p[k] for p in parts) for k in _SUMMED})
        merged["name"] = name
        out.append(merged)
    return out


def _intervals(per_host: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    longest = max(per_host, key=lambda iv: len(iv["t_ns"]))
    n = len(longest["t_ns"])

    def column(key: str, combine: Any) -> list[Any]:
        return [combine(iv[key][i] for iv in per_host if i < len(iv[key])) for i in range(n)]

    out: dict[str, Any] = {"t_ns": list(longest["t_ns"]), "duration_ns": column("duration_ns", max)}
    for key in _SUMMED:
        out[key] = column(key, sum)
    for key in _LARGEST:
        out[key] = column(key, max)
    if "slow_ops" in longest:
        out["slow_ns"] = longest["slow_ns"]
        out["slow_ops"] = column("slow_ops", lambda rows: [sum(c) for c in zip(*rows, strict=True)])
    if "heat_ops" in longest:
        out["heat_ops"] = column("heat_ops", lambda rows: [sum(c) for c in zip(*rows, strict=True)])
    return out


def done_rates(results: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """elbencho's "first done" and "last done": the fleet's rate until its first host finished
    (every host still running, so a straggler cannot hide in it) and until its last (every
    operation, over the longest host's time). Operations done before the first host finished
    are counted from the hosts' seconds, the second it ended in prorated, and scaled to I/O
    operations as the workload's ops/s counts them (a workload file's seconds count every
    flowop)."""
    first_ns = min(r["measured_ns"] for r in results)
    last_ns = max(r["measured_ns"] for r in results)
    early_ops = early_bytes = 0.0
    all_ops = all_bytes = 0
    for r in results:
        iv = r["intervals"]
        for t, d, ops, nbytes in zip(
            iv["t_ns"], iv["duration_ns"], iv["ops"], iv["bytes"], strict=True
        ):
            share = min(max((first_ns - t) / d, 0.0), 1.0) if d else 0.0
            early_ops += ops * share
            early_bytes += nbytes * share
            all_ops += ops
            all_bytes += nbytes
    io_ops, io_bytes = _io_totals(results)
    early_ops *= io_ops / all_ops if all_ops else 0.0
    early_bytes *= io_bytes / all_bytes if all_bytes else 0.0
    return {
        "first_done_s": first_ns / 1e9,
        "last_done_s": last_ns / 1e9,
        "first_done_ops_s": early_ops / (first_ns / 1e9) if first_ns else 0.0,
        "first_done_mib_s": early_bytes / (first_ns / 1e9) / (1 << 20) if first_ns else 0.0,
        "last_done_ops_s": io_ops / (last_ns / 1e9) if last_ns else 0.0,
        "last_done_mib_s": io_bytes / (last_ns / 1e9) / (1 << 20) if last_ns else 0.0,
    }


def _io_totals(results: Sequence[Mapping[str, Any]]) -> tuple[int, int]:
    """Operations and bytes of I/O flowops (what a workload's ops/s counts)."""
    io = [f for r in results for f in r["flowops"] if f.get("io", True)]
    return sum(f["ops"] for f in io), sum(f["bytes"] for f in io)
