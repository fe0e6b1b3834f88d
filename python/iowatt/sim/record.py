"""What every simulator's run records the same way: its manifest (docs/run-store.md)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from iowatt import __version__


def manifest(
    run_id: str,
    kind: str,
    reason: str | None,
    started_ns: int,
    seed: int,
    labels: Mapping[str, str],
    config: Mapping[str, Any],
) -> dict[str, Any]:
    """A simulation's manifest.json: ``reason`` None for a complete run. No target, no clock
    anchor: a simulation measures nothing on this host (its facts are kept all the same)."""
    from iowatt.hostinfo import host_facts

    return {
        "run_id": run_id,
        "kind": kind,
        "status": "complete" if reason is None else "incomplete",
        "reason": reason,
        "iowatt_version": __version__,
        "started_ns": started_ns,
        "ended_ns": time.time_ns(),
        "clock_anchor": None,
        "seed": seed,
        "labels": dict(labels),
        "config": dict(config),
        "host": host_facts(None),
    }
