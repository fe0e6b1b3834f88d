"""Host by host: which hosts of a fleet run were slower (or faster) than the fleet.

Each host's sample is its per-second rates (its full seconds: a last, short one is left out);
its level is their median, with the distribution-free interval of the median between two order
statistics (:func:`iowatt.compare.stats.describe`).
The fleet's level is the median of its hosts' medians — a host that is slow cannot drag the
reference it is judged against much, as it could a mean. A host is *slower* when its whole
interval lies below the fleet by more than the noise band, *faster* when above it — given at
least five full seconds: an interval of fewer says little.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from iowatt.compare.stats import describe

# Differences within ±2 % are noise on a quiet machine (the campaign's default band).
NOISE_PCT = 2.0
MIN_SECONDS = 5


@dataclass(frozen=True)
class HostLevel:
    host: str
    seconds: int
    median: float
    pct: float  # against the fleet's level
    ci_low: float  # the interval of pct
    ci_high: float
    verdict: str  # "slower", "faster" or "" (within the noise band or not significant)


def host_levels(
    per_second: Mapping[str, Sequence[float]], *, noise_pct: float = NOISE_PCT
) -> list[HostLevel]:
    """Each host against the fleet, in the order given; hosts without a full second are left
    out (they have no level)."""
    described = {h: describe(v) for h, v in per_second.items() if len(v)}
    if not described:
        return []
    fleet = float(np.median([d.median for d in described.values()]))
    out = []
    for host, d in described.items():

        def pct(x: float) -> float:
            return 100.0 * (x / fleet - 1.0) if fleet else math.nan

        low, high = pct(d.ci_low), pct(d.ci_high)
        verdict = ""
        if d.n < MIN_SECONDS:
            pass
        elif high < -noise_pct:
            verdict = "slower"
        elif low > noise_pct:
            verdict = "faster"
        out.append(HostLevel(host, d.n, d.median, pct(d.median), low, high, verdict))
    return out


def host_table(run_dir: Path) -> dict[str, list[dict[str, Any]]]:
    """A fleet run's hosts per workload: ``hosts.parquet``'s row of each, with its level
    against the fleet (``pct``, ``ci_low``, ``ci_high``, ``verdict``); empty for a run on one
    host."""
    import pyarrow.parquet as pq

    if not (run_dir / "hosts.parquet").exists():
        return {}
    rows = pq.read_table(run_dir / "hosts.parquet").to_pylist()
    seconds = pq.read_table(
        run_dir / "host_intervals.parquet", columns=["host", "workload", "duration_s", "ops_s"]
    ).to_pylist()
    out: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        out.setdefault(row["workload"], []).append(row)
    # Each host's seconds of each workload, grouped once (a thousand hosts × minutes of them).
    by_host: dict[tuple[str, str], list[tuple[float, float]]] = {}
    longest: dict[str, float] = {}
    for sec in seconds:
        wl = sec["workload"]
        by_host.setdefault((wl, sec["host"]), []).append((sec["duration_s"], sec["ops_s"]))
        longest[wl] = max(longest.get(wl, 0.0), sec["duration_s"])
    for wl, hosts in out.items():
        full = longest.get(wl, 0.0) * 0.999
        per_second = {
            h["host"]: [ops for d, ops in by_host.get((wl, h["host"]), []) if d >= full]
            for h in hosts
        }
        levels = {lv.host: lv for lv in host_levels(per_second)}
        for h in hosts:
            lv = levels.get(h["host"])
            h.update(
                {
                    "pct": lv.pct if lv else None,
                    "ci_low": lv.ci_low if lv else None,
                    "ci_high": lv.ci_high if lv else None,
                    "verdict": lv.verdict if lv else "",
                }
            )
    return out
