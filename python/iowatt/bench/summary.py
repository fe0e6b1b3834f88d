"""From the engine's output to the figures a run stores: the per-workload summary, a section
shaped like fio's JSON output (so fio tooling can read iowatt results), and the Parquet tables.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from iowatt.histogram import latency_summary, percentile
from iowatt.store.schemas import INTERVAL_SCHEMA, LATENCY_SCHEMA

MIB = 1 << 20
FIO_PERCENTILES = (1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0,
                   99.5, 99.9, 99.95, 99.99)  # fmt: skip


def workload_summary(result: Mapping[str, Any]) -> dict[str, Any]:
    """Headline figures of one workload from the engine's result."""
    secs = result["measured_ns"] / 1e9
    # Waits, limits and CPU work have statistics of their own but, as in FileBench's IO
    # Summary, no share of the workload's ops and bytes.
    io = [f for f in result["flowops"] if f.get("io", True)]
    ops = sum(f["ops"] for f in io)
    nbytes = sum(f["bytes"] for f in io)
    usr, sys_ = result["cpu_usr_ns"] / 1e9, result["cpu_sys_ns"] / 1e9

    def rate(n: float) -> float:
        return n / secs if secs > 0 else 0.0

    flowops = {}
    for f in result["flowops"]:
        flowops[f["name"]] = {
            "kind": f.get("kind"),
            "io": f.get("io", True),
            "ops": f["ops"],
            "bytes": f["bytes"],
            "errors": f["errors"],
            "ops_s": rate(f["ops"]),
            "mib_s": rate(f["bytes"]) / MIB,
            "mean_ns": f["mean_ns"],
            "min_ns": f["min_ns"],
            "max_ns": f["max_ns"],
            "p50_ns": percentile(f["value_ns"], f["count"], 50),
            "p99_ns": percentile(f["value_ns"], f["count"], 99),
        }
    return {
        "status": result["status"],
        "reason": result["reason"],
        "ops": ops,
        "bytes": nbytes,
        "errors": sum(f["errors"] for f in result["flowops"]),
        "errors_by_kind": result["errors_by_kind"],
        "runtime_s": secs,
        "ops_s": rate(ops),
        "mib_s": rate(nbytes) / MIB,
        "latency_ns": latency_summary(result["histogram"]),
        "latency_saturated": result["histogram"]["saturated"],
        "cpu": {"usr_s": usr, "sys_s": sys_, "us_per_op": (usr + sys_) * 1e6 / ops if ops else 0.0},
        "flowops": flowops,
    }


def _fio_lat(hist: Mapping[str, Any]) -> dict[str, Any]:
    n = sum(hist["count"])
    return {
        "min": hist["min_ns"],
        "max": hist["max_ns"],
        "mean": hist["mean_ns"],
        "stddev": hist["stdev_ns"],
        "N": n,
        "percentile": {
            f"{p:.6f}": percentile(hist["value_ns"], hist["count"], p) for p in FIO_PERCENTILES
        },
    }


# fio's two data directions, by the engine's flowop kinds (FileBench's names). Metadata
# operations (open, create, stat, fsync, directories, …) have no place in fio's document.
READS = ("read", "readwholefile")
WRITES = ("write", "writewholefile", "appendfile", "appendfilerand", "aiowrite")


def merged_histogram(flowops: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One histogram of several flowops' (their buckets share the engine's bucket values)."""
    counts: dict[int, int] = {}
    for f in flowops:
        for v, c in zip(f["value_ns"], f["count"], strict=True):
            counts[v] = counts.get(v, 0) + c
    used = [f for f in flowops if sum(f["count"])]
    n = sum(sum(f["count"]) for f in used)
    mean = sum(f["mean_ns"] * sum(f["count"]) for f in used) / n if n else 0.0
    # Pooled: each part's own spread plus how far its mean is from the whole mean.
    var = (
        sum(sum(f["count"]) * (f["stdev_ns"] ** 2 + (f["mean_ns"] - mean) ** 2) for f in used) / n
        if n
        else 0.0
    )
    return {
        "value_ns": sorted(counts),
        "count": [counts[v] for v in sorted(counts)],
        "min_ns": min((f["min_ns"] for f in used), default=0),
        "max_ns": max((f["max_ns"] for f in used), default=0),
        "mean_ns": mean,
        "stdev_ns": var**0.5,
    }


def _fio_dir(flowops: Sequence[Mapping[str, Any]], secs: float) -> dict[str, Any]:
    """fio's ``read`` or ``write`` object from the flowops of that direction; a direction the
    job did not use is all zeros."""
    ops = sum(f["ops"] for f in flowops)
    nbytes = sum(f["bytes"] for f in flowops)
    bw_bytes = nbytes / secs if secs else 0
    lat = _fio_lat(merged_histogram(flowops))
    return {
        "io_bytes": nbytes,
        "bw_bytes": round(bw_bytes),
        "bw": round(bw_bytes / 1024),
        "iops": ops / secs if secs else 0.0,
        "runtime": round(secs * 1000),
        "total_ios": ops,
        "short_ios": 0,
        "drop_ios": 0,
        "clat_ns": lat,
        "lat_ns": lat,
    }


def fio_job(name: str, summary: Mapping[str, Any], result: Mapping[str, Any]) -> dict[str, Any]:
    """One entry of fio's ``jobs[]`` for a workload: its reads under ``read`` and its writes
    under ``write``, by flowop kind."""
    secs = summary["runtime_s"]
    flowops = result["flowops"]
    return {
        "jobname": name,
        "groupid": 0,
        "error": 0 if summary["status"] == "complete" else 1,
        "job_runtime": round(secs * 1000),
        "usr_cpu": 100 * summary["cpu"]["usr_s"] / secs if secs else 0.0,
        "sys_cpu": 100 * summary["cpu"]["sys_s"] / secs if secs else 0.0,
        "read": _fio_dir([f for f in flowops if f["kind"] in READS], secs),
        "write": _fio_dir([f for f in flowops if f["kind"] in WRITES], secs),
    }


def interval_table(run_id: str, results: Sequence[Mapping[str, Any]]) -> pa.Table:
    cols: dict[str, list[Any]] = {name: [] for name in INTERVAL_SCHEMA.names}
    for r in results:
        iv = r["intervals"]
        for i, t_ns in enumerate(iv["t_ns"]):
            dur = iv["duration_ns"][i] / 1e9
            cols["run_id"].append(run_id)
            cols["workload"].append(r["name"])
            cols["t_s"].append(t_ns / 1e9)
            cols["duration_s"].append(dur)
            cols["mono_ns"].append(r["measure_start_ns"] + t_ns)
            for key in ("ops", "bytes", "errors", "p50_ns", "p99_ns", "p999_ns", "max_ns"):
                cols[key].append(iv[key][i])
            cols["slow_ns"].append(iv.get("slow_ns", []))
            cols["slow_ops"].append(iv["slow_ops"][i] if "slow_ops" in iv else [])
            cols["ops_s"].append(iv["ops"][i] / dur if dur else 0.0)
            cols["mib_s"].append(iv["bytes"][i] / MIB / dur if dur else 0.0)
    return pa.table(cols, schema=INTERVAL_SCHEMA)


def latency_table(run_id: str, results: Sequence[Mapping[str, Any]]) -> pa.Table:
    cols: dict[str, list[Any]] = {name: [] for name in LATENCY_SCHEMA.names}

    def add(workload: str, flowop: str | None, hist: Mapping[str, Any]) -> None:
        n = len(hist["value_ns"])
        cols["run_id"] += [run_id] * n
        cols["workload"] += [workload] * n
        cols["flowop"] += [flowop] * n
        cols["value_ns"] += hist["value_ns"]
        cols["count"] += hist["count"]

    for r in results:
        add(r["name"], None, r["histogram"])
        for f in r["flowops"]:
            add(r["name"], f["name"], f)
    return pa.table(cols, schema=LATENCY_SCHEMA)
