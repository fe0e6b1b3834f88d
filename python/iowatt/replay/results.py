"""A replay's records as the run store holds them: every request, one row per second, the
window's histograms, and the headline figures.

A request *succeeds* as the study counted it: it got a response whose status is below 400 —
not a server error or a missing page, a timeout, a reset or a cancel."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from iowatt.histogram import DEFAULT_SLOW_NS, heat_bands, latency_summary
from iowatt.replay.plan import ReplayConfig

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import pyarrow as pa

    from iowatt._engine import Histogram, ReplayResult

MIB = 1 << 20
NS = 1_000_000_000
_DTYPES = {
    "due_ns": "<i8",
    "sent_ns": "<i8",
    "connected_ns": "<i8",
    "first_byte_ns": "<i8",
    "done_ns": "<i8",
    "bytes": "<u8",
    "status": "<u2",
    "error": "u1",
}
# The histograms the engine keeps: the headline (from the due time) and the service time.
HISTOGRAMS = ("ttfb", "completion", "ttfb_sent", "completion_sent")


@dataclass
class Records:
    """Every request's record, columns as numpy arrays (times in ns after t0, -1: never)."""

    columns: dict[str, npt.NDArray[Any]]
    errors: list[str]  # error code → name ("" for none)
    window: tuple[int, int]

    @classmethod
    def of(cls, result: ReplayResult, window: tuple[int, int]) -> Records:
        import numpy as np

        cols = {k: np.frombuffer(result["columns"][k], _DTYPES[k]) for k in _DTYPES}
        return cls(cols, list(result["errors"]), window)

    def answered(self) -> npt.NDArray[np.bool_]:
        return self.columns["error"] == 0

    def succeeded(self) -> npt.NDArray[np.bool_]:
        return self.answered() & (self.columns["status"] < 400)

    def in_window(self) -> npt.NDArray[np.bool_]:
        import numpy as np

        mask = np.zeros(len(self.columns["due_ns"]), bool)
        mask[self.window[0] : self.window[1]] = True
        return mask

    def span(self) -> tuple[int, int]:
        """The measured window's time (ns after t0): from its first request's due time to its
        last request's end; (0, 0) when none ended."""
        w = self.in_window()
        done = self.columns["done_ns"][w]
        ended = done[done >= 0]
        if not len(ended):
            return 0, 0
        return int(self.columns["due_ns"][w].min()), int(ended.max())


def requests_table(run_id: str, config: ReplayConfig, r: Records) -> pa.Table:
    """requests.parquet: the trace's request beside what the replay saw of it."""
    import numpy as np
    import pyarrow as pa

    from iowatt.store.schemas import REQUEST_SCHEMA

    c = r.columns
    trace = config.trace.requests
    n = len(c["due_ns"])
    phase = np.full(n, "measured", object)
    phase[: r.window[0]] = "warmup"
    phase[r.window[1] :] = "cooldown"

    def since(a: str, b: str) -> pa.Array:
        """``b − a`` where both happened."""
        both = (c[a] >= 0) & (c[b] >= 0)
        return pa.array(c[b] - c[a], pa.int64(), mask=~both)

    def when(name: str) -> pa.Array:
        return pa.array(c[name], pa.int64(), mask=c[name] < 0)

    answered = r.answered()
    return pa.table(
        {
            "run_id": pa.array([run_id] * n, pa.string()),
            "seq": pa.array(np.arange(n), pa.int64()),
            "line": trace["line"].cast(pa.int64()),
            "log_time_s": trace["time_s"],
            "offset_ns": trace["offset_ns"],
            "method": trace["method"].cast(pa.string()),
            "target": trace["target"].cast(pa.string()),
            "log_status": trace["status"].cast(pa.int32()),
            "log_bytes": trace["bytes"],
            "phase": pa.array(phase, pa.string()),
            "due_ns": pa.array(c["due_ns"], pa.int64()),
            "sent_ns": when("sent_ns"),
            "connected_ns": when("connected_ns"),
            "first_byte_ns": when("first_byte_ns"),
            "done_ns": when("done_ns"),
            "lateness_ns": since("due_ns", "sent_ns"),
            "ttfb_ns": since("due_ns", "first_byte_ns"),
            "completion_ns": pa.array(c["done_ns"] - c["due_ns"], pa.int64(), mask=~answered),
            "ttfb_sent_ns": since("sent_ns", "first_byte_ns"),
            "completion_sent_ns": pa.array(c["done_ns"] - c["sent_ns"], pa.int64(), mask=~answered),
            "status": pa.array(c["status"].astype(np.int32), pa.int32(), mask=c["status"] == 0),
            "bytes": pa.array(c["bytes"].astype(np.int64), pa.int64()),
            "error": pa.array([e or None for e in r.errors], pa.string()).take(c["error"]),
            "success": pa.array(r.succeeded()),
        },
        schema=REQUEST_SCHEMA,
    )


def interval_table(run_id: str, config: ReplayConfig, r: Records, t0_ns: int) -> pa.Table:
    """intervals.parquet: one row per second of the replay (from t0), with the bench columns
    (``ops`` are responses, latency is the time to first byte from the due time) and the
    replay's own: requests due and sent, failures, successes, connections open on average,
    and the trace time the second started at."""
    import numpy as np
    import pyarrow as pa

    from iowatt.store.schemas import INTERVAL_SCHEMA, REPLAY_INTERVAL_COLUMNS

    c = r.columns
    ended = c["done_ns"] >= 0
    last = max(int(c["done_ns"].max(initial=0)), int(c["due_ns"].max(initial=0)))
    seconds = last // NS + 1

    def per_second(times: npt.NDArray[np.int64], mask: npt.NDArray[np.bool_]) -> Any:
        return np.bincount(times[mask] // NS, minlength=seconds)[:seconds]

    answered = r.answered() & ended
    ttfb = c["first_byte_ns"] - c["due_ns"]
    done_second = np.where(answered, c["done_ns"] // NS, -1)
    order = np.argsort(done_second, kind="stable")
    bounds = np.searchsorted(done_second[order], np.arange(seconds + 1))
    quantiles = {"p50_ns": 50.0, "p99_ns": 99.0, "p999_ns": 99.9, "max_ns": 100.0}
    lat: dict[str, list[int | None]] = {k: [] for k in quantiles}
    slow: list[list[int]] = []
    heat: list[list[int]] = []
    for s in range(seconds):
        values = ttfb[order[bounds[s] : bounds[s + 1]]]
        for k, p in quantiles.items():
            lat[k].append(
                int(np.percentile(values, p, method="inverted_cdf")) if len(values) else None
            )
        slow.append([int((values > t).sum()) for t in DEFAULT_SLOW_NS])
        heat.append(heat_bands(values, np.ones(len(values), dtype=np.int64)))
    sent = c["sent_ns"] >= 0
    ops = per_second(c["done_ns"], answered)
    nbytes = np.bincount(c["done_ns"][ended] // NS, weights=c["bytes"][ended], minlength=seconds)
    success = per_second(c["done_ns"], r.succeeded() & ended)
    failed = per_second(c["done_ns"], ~r.answered() & ended)
    t_s = np.arange(seconds, dtype=np.float64)
    cols: dict[str, Any] = {
        "run_id": [run_id] * seconds,
        "workload": ["replay"] * seconds,
        "t_s": t_s,
        "duration_s": np.ones(seconds),
        "mono_ns": t0_ns + np.arange(seconds, dtype=np.int64) * NS,
        "ops": ops,
        "bytes": nbytes.astype(np.int64),
        "errors": failed,
        "ops_s": ops.astype(np.float64),
        "mib_s": nbytes / MIB,
        **lat,
        "slow_ns": [list(DEFAULT_SLOW_NS)] * seconds,
        "slow_ops": slow,
        "heat_ops": heat,
        "trace_s": t_s * config.speedup,
        "intended": per_second(c["due_ns"], np.ones(len(c["due_ns"]), bool)),
        "sent": per_second(c["sent_ns"], sent),
        "failed": failed,
        "success": success,
        "success_rate": np.divide(
            success, ops + failed, out=np.full(seconds, np.nan), where=(ops + failed) > 0
        ),
        "open": mean_open(c["sent_ns"], c["done_ns"], seconds),
    }
    schema = pa.schema([*INTERVAL_SCHEMA, *REPLAY_INTERVAL_COLUMNS])
    return pa.table(cols, schema=schema)


def latency_table(run_id: str, histograms: Mapping[str, Histogram]) -> pa.Table:
    """latency.parquet: each histogram as a flowop of the workload ``replay``; the headline
    (time to first byte from the due time) also as the workload's own (flowop null)."""
    import pyarrow as pa

    from iowatt.store.schemas import LATENCY_SCHEMA

    cols: dict[str, list[Any]] = {name: [] for name in LATENCY_SCHEMA.names}
    for flowop, name in [(None, "ttfb"), *((h, h) for h in HISTOGRAMS)]:
        hist = histograms[name]
        n = len(hist["value_ns"])
        cols["run_id"] += [run_id] * n
        cols["workload"] += ["replay"] * n
        cols["flowop"] += [flowop] * n
        cols["value_ns"] += hist["value_ns"]
        cols["count"] += hist["count"]
    return pa.table(cols, schema=LATENCY_SCHEMA)


def summary(config: ReplayConfig, r: Records, result: ReplayResult, status: str) -> dict[str, Any]:
    """summary.json's ``workloads.replay`` (the catalog's row) and ``replay`` sections."""
    import numpy as np

    c = r.columns
    w = r.in_window()
    due, sent, done = c["due_ns"], c["sent_ns"], c["done_ns"]
    start, end = r.span()
    secs = (end - start) / NS
    answered, succeeded = r.answered() & w, r.succeeded() & w
    failed = int((w & (c["error"] > 0) & (sent >= 0)).sum())
    ended = w & (done >= 0)
    nbytes = int(c["bytes"][w].sum())
    ops = int(answered.sum())
    rates = {"ops_s": ops / secs if secs else 0.0, "mib_s": nbytes / MIB / secs if secs else 0.0}
    latency = {name: latency_summary(result["histograms"][name]) for name in HISTOGRAMS}
    flowops = {
        name: {
            "kind": "http",
            "io": True,
            "ops": ops,
            "bytes": nbytes,
            "errors": failed,
            **rates,
            "mean_ns": s["mean"],
            "min_ns": s["min"],
            "max_ns": s["max"],
            "p50_ns": s["p50"],
            "p99_ns": s["p99"],
        }
        for name, s in latency.items()
    }
    log_status = config.trace.requests["status"].to_numpy()[w]
    lateness = (sent - due)[w & (sent >= 0)]
    by_kind = np.bincount(c["error"][w], minlength=len(r.errors))
    by_class = np.bincount(c["status"][answered] // 100, minlength=6)[:6]  # 1xx … 5xx
    return {
        "workloads": {
            "replay": {
                "status": status,
                "ops": ops,
                "bytes": nbytes,
                "errors": failed,
                "runtime_s": secs,
                **rates,
                "latency_ns": latency["ttfb"],
                "flowops": flowops,
            }
        },
        "replay": {
            "requests": len(due),
            "window": list(r.window),
            "measured": int(w.sum()),
            "sent": int((w & (sent >= 0)).sum()),
            "answered": ops,
            "failed": failed,
            "success": int(succeeded.sum()),
            "success_rate": float(succeeded.sum() / ended.sum()) if ended.any() else None,
            "log_success_rate": float((log_status < 400).mean()) if len(log_status) else None,
            "conns_s": float(ended.sum() / secs) if secs else 0.0,
            "max_open": max_open(sent[w], done[w]),
            "errors_by_kind": {r.errors[k]: int(n) for k, n in enumerate(by_kind) if k and n},
            "status_classes": {f"{k}xx": int(n) for k, n in enumerate(by_class) if k and n},
            "lateness_ns": {
                "p50": _exact_percentile(lateness, 50),
                "p99": _exact_percentile(lateness, 99),
                "max": int(lateness.max()) if len(lateness) else 0,
            },
            **{f"{name}_ns": latency[name] for name in HISTOGRAMS},
            "speedup": config.speedup,
            "t0_ns": result["t0_ns"],
            "elapsed_s": result["elapsed_ns"] / NS,
        },
    }


def _exact_percentile(values: npt.NDArray[np.int64], p: float) -> int:
    """The first value whose rank reaches p % (the store's rule, on exact values); 0 if none."""
    import numpy as np

    return int(np.percentile(values, p, method="inverted_cdf")) if len(values) else 0


def mean_open(
    sent: npt.NDArray[np.int64], done: npt.NDArray[np.int64], seconds: int
) -> npt.NDArray[np.float64]:
    """Requests in flight on average over each second (the integral of the number open, over
    1 s): at a second's edge most requests are already over, so a count there says little."""
    import numpy as np

    was_sent = sent >= 0
    starts = sent[was_sent]
    ends = np.where(done[was_sent] >= 0, done[was_sent], seconds * NS)
    times = np.concatenate([starts, ends])
    steps = np.concatenate([np.ones_like(starts), -np.ones_like(ends)])
    order = np.argsort(times, kind="stable")
    times, level = times[order], np.cumsum(steps[order])
    if not len(times):
        return np.zeros(seconds)
    area = np.concatenate([[0.0], np.cumsum(level[:-1] * np.diff(times).astype(np.float64))])
    edges = np.interp(np.arange(seconds + 1, dtype=np.float64) * NS, times, area)
    return np.diff(edges) / NS


def max_open(sent: npt.NDArray[np.int64], done: npt.NDArray[np.int64]) -> int:
    """The most requests in flight at once (a request never ended counts to the end)."""
    import numpy as np

    starts = sent[sent >= 0]
    if not len(starts):
        return 0
    ends = np.where(done[sent >= 0] >= 0, done[sent >= 0], np.iinfo(np.int64).max)
    events = np.concatenate(
        [np.stack([starts, np.ones_like(starts)], 1), np.stack([ends, -np.ones_like(ends)], 1)]
    )
    # At equal times, ends before starts: a connection closed as another opens is not overlap.
    order = np.lexsort((events[:, 1], events[:, 0]))
    return int(np.cumsum(events[order, 1]).max())
