"""Engines on a fleet's host that lay out, wait at the barrier and start at its instant: what a
fleet bench's host and a fleet sweep's host both run (``iowatt.fleet.barrier``'s gate)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from iowatt._engine import WorkloadResult, WorkloadRun, result_failure
from iowatt.bands import HEAT_EDGES_NS
from iowatt.live.board import Counts

# How often a host looks whether the command was stopped.
STOP_POLL_S = 0.5
# The counts of an engine's progress that add up across engines (and hosts).
PROGRESS_COUNTS = ("prepared_bytes", "prepare_total", "ops", "bytes", "errors")


@dataclass
class Held:
    """What the engines measured: each result with when it began measuring on this host's wall
    clock, and how long laying out took."""

    results: list[tuple[WorkloadResult, int]]
    layout_s: float


def run_held(runs: Sequence[WorkloadRun], gate: Any, publish: bool = False) -> Held | None:
    """Lays out every engine held, says ready, starts them all at the common instant and waits
    for them, stopping them when the command is stopped; with ``publish``, shows the driver
    their progress. None when the start was called off (another host failed); the failure of
    an engine that ended while laying out (no space, …) is raised."""
    laying_out = time.monotonic()
    for r in runs:
        r.hold()
        r.start()
    for r in runs:
        while r.progress()["phase"] != "ready":
            if publish:
                gate.publish(_progress(runs))
            if r.wait(0.01):
                raise result_failure(r.result())
    layout_s = time.monotonic() - laying_out
    instant = gate.ready(wait=False)
    if instant is None:
        for r in runs:
            r.cancel()
        for r in runs:
            r.wait(60.0)
        return None
    for r in runs:
        r.release(instant)
    while not all(r.wait(STOP_POLL_S / len(runs)) for r in runs):
        if publish:
            gate.publish(_progress(runs))
        if gate.stopped():
            for r in runs:
                r.cancel()
    out = []
    for r in runs:
        result = r.result()
        # When measuring began, on the wall clock the start instant is on.
        out.append((result, time.time_ns() - (time.monotonic_ns() - result["measure_start_ns"])))
    gate.start_ns = min(s for _, s in out)
    return Held(out, layout_s)


def _progress(runs: Sequence[WorkloadRun]) -> dict[str, Any]:
    """The engines' progress as one, with this host's monotonic time (the driver takes how long
    ago measuring began from it) and their measured latencies by heatmap band (the driver
    serves them)."""
    parts = [r.progress() for r in runs]
    out: dict[str, Any] = {**parts[0], "now_ns": time.monotonic_ns()}
    for k in PROGRESS_COUNTS:
        out[k] = sum(p[k] for p in parts)  # type: ignore[literal-required]
    live = sum((Counts.of(r.live(HEAT_EDGES_NS)) for r in runs), Counts())
    out["live"] = asdict(live)
    return out
