"""A run's manifest.json and summary.json (docs/run-store.md): one builder for each, so every
kind's common keys are the same keys, with the same meaning, in the same order. A verb adds
only its own: its ``config``, its summary's sections and, rarely, a manifest key of its kind."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from iowatt import __version__

MANIFEST = "manifest.json"
SUMMARY = "summary.json"


def run_status(reason: str | None) -> str:
    """``complete`` for a run that has no reason to be incomplete."""
    return "complete" if reason is None else "incomplete"


def run_manifest(
    run_id: str,
    kind: str,
    reason: str | None,
    started_ns: int,
    seed: int | None,
    labels: Mapping[str, str],
    config: Mapping[str, Any],
    *,
    clock_anchor: Sequence[int] | None = None,
    host: Mapping[str, Any] | None = None,
    ended_ns: int | None = None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """``reason`` None for a complete run; ``host`` defaults to this host's facts without a
    target (a replay or a simulation has none); ``ended_ns`` to now (an import's run ended
    when the file says). ``extra`` keys follow the common ones and cannot replace them."""
    if host is None:
        from iowatt.hostinfo import host_facts

        host = host_facts(None)
    common = {
        "run_id": run_id,
        "kind": kind,
        "status": run_status(reason),
        "reason": reason,
        "iowatt_version": __version__,
        "started_ns": started_ns,
        "ended_ns": time.time_ns() if ended_ns is None else ended_ns,
        "clock_anchor": None if clock_anchor is None else list(clock_anchor),
        "seed": seed,
        "labels": dict(labels),
        "config": config,
        "host": host,
    }
    return {**common, **{k: v for k, v in (extra or {}).items() if k not in common}}


def run_summary(
    run_id: str, kind: str, reason: str | None, sections: Mapping[str, Any]
) -> dict[str, Any]:
    """The summary's common keys, then the verb's ``sections``. Only what says which run this is
    and how it ended: a reader of ``--json`` needs no second file for that, and everything
    else common is the manifest's."""
    common = {"run_id": run_id, "kind": kind, "status": run_status(reason), "reason": reason}
    return {**common, **{k: v for k, v in sections.items() if k not in common}}
