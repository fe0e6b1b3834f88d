"""The study's table from a session's runs: per set, location and k, the mean over repetitions
of jobs/h, Wh/job and average watts, with a 95 % t-interval on jobs/h, how many of the runs
had failed tasks and how many other load past 5 % of the node's CPU (with the largest share),
and each against the baseline — 1 task per core on the location named
``hdd`` (else the first location)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from iowatt.sim.tables import mean_ci
from iowatt.tasks.figures import OTHER_LOAD_WARN

METRICS = ("jobs_per_h", "wh_per_job", "avg_w")


def baseline_disk(locations: Sequence[str]) -> str | None:
    """The location the others are set against: ``hdd`` if there is one, else the first."""
    return "hdd" if "hdd" in locations else (locations[0] if locations else None)


def study_table(rows: Sequence[dict[str, Any]], locations: Sequence[str]) -> list[dict[str, Any]]:
    """One entry per (set, location, k) with runs to average, in the order they ran."""
    groups: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
    for r in rows:
        if r.get("jobs_per_h") is not None:
            groups.setdefault((r["set"], r["disk"], r["per_core"]), []).append(r)
    base_disk = baseline_disk(locations)
    out = []
    for (name, disk, k), rs in groups.items():
        entry: dict[str, Any] = {
            "set": name,
            "disk": disk,
            "per_core": k,
            "runs": len(rs),
            "runs_with_failed_tasks": sum(1 for r in rs if r.get("failed")),
            "runs_with_other_load": sum(
                1 for r in rs if (r.get("other_cpu_share") or 0.0) > OTHER_LOAD_WARN
            ),
            "other_cpu_share": max(
                (r["other_cpu_share"] for r in rs if r.get("other_cpu_share") is not None),
                default=None,
            ),
        }
        for m in METRICS:
            entry[m], ci = mean_ci([r.get(m) for r in rs])
            if m == "jobs_per_h":
                entry["jobs_per_h_ci"] = (ci[1] - ci[0]) / 2 if ci else None
        out.append(entry)
    first_k: dict[str, int] = {}
    for e in out:
        first_k[e["set"]] = min(first_k.get(e["set"], e["per_core"]), e["per_core"])
    bases = {
        e["set"]: e for e in out if e["disk"] == base_disk and e["per_core"] == first_k[e["set"]]
    }
    for e in out:
        base = bases.get(e["set"])
        for m in METRICS:
            ok = base is not None and base[m] and e[m] is not None
            e[f"{m}_vs_base"] = (e[m] / base[m] - 1) * 100 if ok else None  # type: ignore[index]
    return out
