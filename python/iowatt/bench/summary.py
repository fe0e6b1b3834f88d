"""From the engine's output to the figures a run stores: the per-workload summary, a section
shaped like fio's JSON output (so fio tooling can read iowatt results), and the Parquet tables.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from iowatt.histogram import latency_summary, percentiles
from iowatt.store.schemas import INTERVAL_SCHEMA, LATENCY_SCHEMA
from iowatt.units import format_rate
from iowatt.warnings import Kind, RunWarning

MIB = 1 << 20
FIO_PERCENTILES = (
    1.0,
    5.0,
    10.0,
    20.0,
    30.0,
    40.0,
    50.0,
    60.0,
    70.0,
    80.0,
    90.0,
    95.0,
    99.0,
    99.5,
    99.9,
    99.95,
    99.99,
)


# A run that achieved less of its schedule than this did not hold it.
RATE_HELD_SHARE = 0.99


def workload_summary(result: Mapping[str, Any]) -> dict[str, Any]:
    """Headline figures of one workload from the engine's result; a run with a schedule adds
    how it kept it (:func:`open_loop_summary`)."""
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
        p50, p99 = percentiles(f["value_ns"], f["count"], (50, 99))
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
            "p50_ns": p50,
            "p99_ns": p99,
        }
    summary = {
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
    open_loop = result.get("open_loop")
    if open_loop is not None:
        summary.update(open_loop_summary(open_loop, ops, secs))
    return summary


def open_loop_summary(open_loop: Mapping[str, Any], ops: int, secs: float) -> dict[str, Any]:
    """The requested rate against the achieved one, and what became of the operations due
    before the deadline that did not complete before it. A rate counts completed I/O
    operations (drained ones included); an event generator counts the events taken."""
    events = open_loop.get("events")
    done = ops if events is None else events
    achieved = done / secs if secs > 0 else 0.0
    requested = open_loop["rate"]
    return {
        "requested_rate": requested,
        "achieved_rate": achieved,
        "rate_unit": "ops/s" if events is None else "events/s",
        "rate_held": achieved >= RATE_HELD_SHARE * requested,
        "drained": open_loop["drained"],
        "not_issued": open_loop["not_issued"],
        "outstanding": open_loop["outstanding"],
    }


def rate_warning(name: str, summary: Mapping[str, Any]) -> RunWarning | None:
    """The warning a workload that fell short of its schedule gets; None if it held it."""
    if summary.get("rate_held", True):
        return None
    unit = summary["rate_unit"]
    missed = "events were never taken" if unit == "events/s" else "operations due were never issued"
    return RunWarning(
        Kind.RATE_NOT_HELD,
        f"workload `{name}` achieved {format_rate(summary['achieved_rate'])} of the "
        f"{format_rate(summary['requested_rate'])} {unit} requested: {summary['not_issued']:,} "
        f"{missed} and {summary['outstanding']:,} were still outstanding after the drain "
        "(their lateness is in the latencies)",
    )


def _fio_lat(hist: Mapping[str, Any]) -> dict[str, Any]:
    n = int(np.sum(hist["count"]))
    return {
        "min": hist["min_ns"],
        "max": hist["max_ns"],
        "mean": hist["mean_ns"],
        "stddev": hist["stdev_ns"],
        "N": n,
        "percentile": {
            f"{p:.6f}": v
            for p, v in zip(
                FIO_PERCENTILES,
                percentiles(hist["value_ns"], hist["count"], FIO_PERCENTILES),
                strict=True,
            )
        },
    }


# fio's two data directions, by the engine's flowop kinds (FileBench's names). Metadata
# operations (open, create, stat, fsync, directories, …) have no place in fio's document.
READS = ("read", "readwholefile")
WRITES = ("write", "writewholefile", "appendfile", "appendfilerand", "aiowrite")


def merged_histogram(flowops: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One histogram of several flowops' (their buckets share the engine's bucket values)."""
    values, summed = _bucket_sums(flowops)
    sizes = [int(np.sum(f["count"])) for f in flowops]
    used = [(f, size) for f, size in zip(flowops, sizes, strict=True) if size]
    n = sum(sizes)
    mean = sum(f["mean_ns"] * size for f, size in used) / n if n else 0.0
    # Pooled: each part's own spread plus how far its mean is from the whole mean.
    var = (
        sum(size * (f["stdev_ns"] ** 2 + (f["mean_ns"] - mean) ** 2) for f, size in used) / n
        if n
        else 0.0
    )
    return {
        "value_ns": values,
        "count": summed,
        "min_ns": min((f["min_ns"] for f, _ in used), default=0),
        "max_ns": max((f["max_ns"] for f, _ in used), default=0),
        "mean_ns": mean,
        "stdev_ns": var**0.5,
    }


def _bucket_sums(hists: Sequence[Mapping[str, Any]]) -> tuple[list[int], list[int]]:
    """Every bucket value of the histograms, sorted, and its count summed over them. Each
    histogram comes sorted, so a stable sort (Timsort) of them end to end only merges runs: a
    thousand hosts' histograms merge in a fraction of a second."""
    if not hists:
        return [], []
    values = np.concatenate([np.asarray(h["value_ns"], dtype=np.int64) for h in hists])
    counts = np.concatenate([np.asarray(h["count"], dtype=np.int64) for h in hists])
    order = np.argsort(values, kind="stable")
    values, counts = values[order], counts[order]
    if not values.size:
        return [], []
    starts = np.flatnonzero(np.concatenate(([True], values[1:] != values[:-1])))
    return values[starts].tolist(), np.add.reduceat(counts, starts).tolist()


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
            cols["heat_ops"].append(iv["heat_ops"][i] if "heat_ops" in iv else [])
            cols["ops_s"].append(iv["ops"][i] / dur if dur else 0.0)
            cols["mib_s"].append(iv["bytes"][i] / MIB / dur if dur else 0.0)
    return pa.table(cols, schema=INTERVAL_SCHEMA)


def latency_table(run_id: str, results: Sequence[Mapping[str, Any]]) -> pa.Table:
    """Each workload's histogram (flowop null) and each flowop's, one row per bucket."""
    return histogram_rows(run_id, histogram_parts(results), LATENCY_SCHEMA)


def histogram_parts(
    results: Sequence[Mapping[str, Any]],
) -> list[tuple[str, str | None, Mapping[str, Any]]]:
    """(workload, flowop or None, histogram) of every histogram of the results."""
    parts: list[tuple[str, str | None, Mapping[str, Any]]] = []
    for r in results:
        parts.append((r["name"], None, r["histogram"]))
        parts += [(r["name"], f["name"], f) for f in r["flowops"]]
    return parts


def histogram_rows(
    run_id: str,
    parts: Sequence[tuple[str, str | None, Mapping[str, Any]]],
    schema: pa.Schema,
    **labels: Sequence[str],
) -> pa.Table:
    """latency.parquet's rows of these histograms; ``labels`` adds a column per keyword, one
    value per part (a fleet run's ``host``)."""
    lengths = [len(h["value_ns"]) for _, _, h in parts]
    columns = {
        "run_id": repeated([run_id], [sum(lengths)]),
        "workload": repeated([w for w, _, _ in parts], lengths),
        "flowop": repeated([f for _, f, _ in parts], lengths),
        "value_ns": _ints([h["value_ns"] for _, _, h in parts]),
        "count": _ints([h["count"] for _, _, h in parts]),
        **{k: repeated(v, lengths) for k, v in labels.items()},
    }
    return pa.table({name: columns[name] for name in schema.names}, schema=schema)


def repeated(labels: Sequence[str | None], lengths: Sequence[int]) -> pa.Array:
    """A text column holding each label ``lengths[i]`` times (None: null), its buffers built
    with numpy (a thousand hosts' histograms are millions of rows).

    Arrow's own way, a dictionary array cast to text, imports pyarrow.compute and numpy.ma,
    ~80 ms of every bench's exit for a few hundred rows.
    """
    encoded = [b"" if label is None else label.encode() for label in labels]
    rows = int(sum(lengths))
    sizes = np.repeat(np.array([len(b) for b in encoded], dtype=np.int64), lengths)
    offsets = np.zeros(rows + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    if offsets[-1] > np.iinfo(np.int32).max:
        raise ValueError(f"{offsets[-1]} bytes of labels do not fit an Arrow string column")
    data = b"".join(b * n for b, n in zip(encoded, lengths, strict=True))
    nulls = sum(n for label, n in zip(labels, lengths, strict=True) if label is None)
    valid = None
    if nulls:
        present = np.repeat(np.array([label is not None for label in labels]), lengths)
        valid = pa.py_buffer(np.packbits(present, bitorder="little"))
    buffers = [valid, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data)]
    return pa.Array.from_buffers(pa.string(), rows, buffers, null_count=int(nulls))


def _ints(columns: Sequence[Sequence[int]]) -> pa.Array:
    if not columns:
        return pa.array([], pa.int64())
    values = np.concatenate([np.asarray(c, dtype=np.int64) for c in columns])
    # pa.array(ndarray) would import numpy.ma to check for a masked array.
    return pa.Array.from_buffers(pa.int64(), len(values), [None, pa.py_buffer(values)])
