"""A run's manifest.json as the verbs that run a workload, a replay or a simulation write it
(docs/run-store.md): one builder, so its keys and their order are the same for every kind."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from iowatt import __version__


def run_manifest(
    run_id: str,
    kind: str,
    reason: str | None,
    started_ns: int,
    seed: int | None,
    labels: Mapping[str, str],
    config: Mapping[str, Any],
    *,
    clock_anchor: Any = None,
    host: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """``reason`` None for a complete run; ``host`` defaults to this host's facts without a
    target (a replay or a simulation has none)."""
    if host is None:
        from iowatt.hostinfo import host_facts

        host = host_facts(None)
    return {
        "run_id": run_id,
        "kind": kind,
        "status": "complete" if reason is None else "incomplete",
        "reason": reason,
        "iowatt_version": __version__,
        "started_ns": started_ns,
        "ended_ns": time.time_ns(),
        "clock_anchor": clock_anchor,
        "seed": seed,
        "labels": labels,
        "config": config,
        "host": host,
    }
