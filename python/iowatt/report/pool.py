"""Many runs as one per environment, for reports past :data:`SUMMARY_AFTER` runs: a table row
and a bar per run stop being read at hundreds of runs (the vibration study ran more than 600),
and a report that draws them all takes minutes and tens of megabytes.

An environment's pooled run has its runs' latency histograms added bucket by bucket (so its
percentiles and slow shares are exact for all its operations together), the median of their
ops/s, MiB/s and runtime, and the sum of their operations and errors.
"""

from __future__ import annotations

from collections.abc import Sequence
from statistics import median
from typing import Any

import numpy as np

from iowatt.report.load import Histogram, Run

# Past this many runs a report shows environments, not runs (the series chart and the
# comparison still show every run).
SUMMARY_AFTER = 20


def pooled_runs(runs: Sequence[Run]) -> list[Run]:
    """One run per ``env`` label (``all runs`` for runs without one), in order of appearance."""
    groups: dict[str, list[Run]] = {}
    for run in runs:
        env = (run.manifest.get("labels") or {}).get("env")
        groups.setdefault("all runs" if env is None else str(env), []).append(run)
    return [_pool(env, group) for env, group in groups.items()]


def _pool(env: str, runs: list[Run]) -> Run:
    workloads = list(dict.fromkeys(w for r in runs for w in r.workloads))
    summaries = {
        w: _summary([r.summary.get("workloads", {}).get(w) or {} for r in runs]) for w in workloads
    }
    latency = {}
    for w in workloads:
        hists = [h for r in runs if (h := r.latency.get(w)) is not None]
        if hists:
            latency[w] = _added(hists)
    complete = all(r.manifest.get("status") == "complete" for r in runs)
    manifest = {
        "run_id": f"{env} ({len(runs)} runs)",
        "kind": runs[0].kind,
        "status": "complete" if complete else "incomplete",
        "labels": {"env": env},
    }
    return Run(runs[0].path, manifest, {"workloads": summaries}, {}, latency, {})


def _summary(parts: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in ("ops_s", "mib_s", "runtime_s"):
        values = [p[key] for p in parts if isinstance(p.get(key), int | float)]
        if values:
            out[key] = median(values)
    for key in ("ops", "errors"):
        values = [p[key] for p in parts if isinstance(p.get(key), int)]
        if values:
            out[key] = sum(values)
    return out


def _added(hists: list[Histogram]) -> Histogram:
    values = np.concatenate([h.values_ns for h in hists])
    counts = np.concatenate([h.counts for h in hists])
    uniq, at = np.unique(values, return_inverse=True)
    return Histogram(uniq, np.bincount(at, weights=counts).astype(np.int64))
