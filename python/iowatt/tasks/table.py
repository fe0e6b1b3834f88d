"""The study's table from a session's runs: per set, location and k, the mean over repetitions
of jobs/h, Wh/job and average watts, with a 95 % t-interval on jobs/h, and each against the
baseline — 1 task per core on the location named ``hdd`` (else the first location)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

METRICS = ("jobs_per_h", "wh_per_job", "avg_w")


def _mean_ci(values: list[float]) -> tuple[float, float | None]:
    mean = sum(values) / len(values)
    if len(values) < 2:
        return mean, None
    from scipy.stats import t

    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))
    return mean, float(t.ppf(0.975, len(values) - 1)) * sd / math.sqrt(len(values))


def study_table(rows: Sequence[dict[str, Any]], locations: Sequence[str]) -> list[dict[str, Any]]:
    """One entry per (set, location, k) with runs to average, in the order they ran."""
    groups: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
    for r in rows:
        if r.get("jobs_per_h") is not None:
            groups.setdefault((r["set"], r["disk"], r["per_core"]), []).append(r)
    base_disk = "hdd" if "hdd" in locations else (locations[0] if locations else None)
    out = []
    for (name, disk, k), rs in groups.items():
        entry: dict[str, Any] = {"set": name, "disk": disk, "per_core": k, "runs": len(rs)}
        for m in METRICS:
            values = [r[m] for r in rs if r.get(m) is not None]
            entry[m], ci = _mean_ci(values) if values else (None, None)
            if m == "jobs_per_h":
                entry["jobs_per_h_ci"] = ci
        out.append(entry)
    mins: dict[str, int] = {}
    for e in out:
        mins[e["set"]] = min(mins.get(e["set"], e["per_core"]), e["per_core"])
    for e in out:
        base = next(
            (
                b
                for b in out
                if b["set"] == e["set"]
                and b["disk"] == base_disk
                and b["per_core"] == mins[e["set"]]
            ),
            None,
        )
        for m in METRICS:
            ok = base is not None and base[m] and e[m] is not None
            e[f"{m}_vs_base"] = (e[m] / base[m] - 1) * 100 if ok else None  # type: ignore[index]
    return out
