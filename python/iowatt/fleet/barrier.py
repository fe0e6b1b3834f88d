"""Start together, measure apart: one function run on several Dask workers from one instant.

Dask has no barrier, so iowatt builds one (shared/reference/scale-live-emulate.md, A.7):

1. each worker's clock offset is measured from here — several round trips straight to the
   worker (``Client.run``, no scheduler in the path), keeping the one with the smallest delay,
   whose midpoint is the best estimate (NTP's rule);
2. one task pinned to each worker (``workers=[addr]``, ``allow_other_workers=False``) prepares
   its work, then says ready by setting a Dask ``Event`` of its own and waits on a Dask
   ``Variable``;
3. once every worker is ready, iowatt sets the variable to a start instant a little ahead, in
   its own clock; each worker converts it to its clock with its offset, sleeps until just
   before it, spins to it, and runs. Each records when it really started, so the run keeps
   every host's start skew and clock offset.

A worker whose task fails before it is ready (or that disappears) stops the start: the others
are released without running, and the error names the worker and why.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from iowatt.errors import SourceUnavailableError

ROUNDS = 8
# How far ahead of "all ready" the start is set, beyond the slowest worker's round trip.
LEAD_S = 0.05
SPIN_S = 0.0002
READY_TIMEOUT_S = 600.0
ABORT = -1


@dataclass(frozen=True)
class Clock:
    """A worker's clock against this host's: worker time − local time, and the round trip
    that estimate came from (its uncertainty is half of it)."""

    offset_ns: int
    delay_ns: int


def clock_offsets(client: Any, workers: list[str], rounds: int = ROUNDS) -> dict[str, Clock]:
    """Each worker's :class:`Clock`, the best of ``rounds`` round trips."""
    best: dict[str, Clock] = {}
    for _ in range(rounds):
        for w in workers:
            t0 = time.time_ns()
            t1 = client.run(time.time_ns, workers=[w])[w]
            t2 = time.time_ns()
            c = Clock(t1 - (t0 + t2) // 2, t2 - t0)
            if w not in best or c.delay_ns < best[w].delay_ns:
                best[w] = c
    return best


def _until(instant_ns: int) -> int:
    """Sleeps, then spins, until the wall clock reaches ``instant_ns``; returns when it did."""
    while (left := instant_ns - time.time_ns()) > SPIN_S * 1e9:
        time.sleep((left - SPIN_S * 1e9) / 1e9)
    while (now := time.time_ns()) < instant_ns:
        pass
    return now


def _pinned(
    fn: Callable[..., Any], args: Any, names: tuple[str, str], offset_ns: int
) -> dict[str, Any]:
    """The task on each worker: ``fn(args, ready)``; ``ready()`` blocks until the common
    start and returns the worker-clock instant it started at (None when the start is off)."""
    from distributed import Event, Variable, get_worker

    worker = get_worker().name
    started: dict[str, int] = {}

    def ready() -> int | None:
        Event(names[0]).set()
        start = Variable(names[1]).get(timeout=READY_TIMEOUT_S)
        if start == ABORT:
            return None
        target = int(start) + offset_ns
        started["target_ns"] = target
        started["start_ns"] = _until(target)
        return started["start_ns"]

    result = fn(args, ready)
    return {"worker": worker, "result": result, **started}


def start_together(
    client: Any,
    fn: Callable[..., Any],
    args: Mapping[str, Any],
    note: Callable[[str], None] = lambda _: None,
) -> dict[str, dict[str, Any]]:
    """Runs ``fn(args[w], ready)`` on every worker address ``w`` of ``args`` at once; returns
    per worker its result, clock offset and delay, the common instant, when it started (its
    clock, and this host's: ``start_here_ns``) and how late (``late_ns``, its own clock)."""
    from distributed import Event, Variable, wait

    workers = list(args)
    clocks = clock_offsets(client, workers)
    tag = uuid.uuid4().hex[:12]
    names = (f"iowatt-ready-{tag}", f"iowatt-start-{tag}")
    start = Variable(names[1], client=client)
    ready_events = {w: Event(f"{names[0]}-{i}", client=client) for i, w in enumerate(workers)}
    futures = {
        w: client.submit(
            _pinned,
            fn,
            args[w],
            (ready_events[w].name, names[1]),
            clocks[w].offset_ns,
            workers=[w],
            allow_other_workers=False,
            pure=False,
            key=f"iowatt-pinned-{tag}-{i}",
        )
        for i, w in enumerate(workers)
    }
    ready: set[str] = set()
    while len(ready) < len(workers):
        failed = [w for w, f in futures.items() if f.status in ("error", "cancelled", "lost")]
        if failed:
            start.set(ABORT)
            wait(list(futures.values()), timeout=READY_TIMEOUT_S)
            w = failed[0]
            reason = futures[w].exception() if futures[w].status == "error" else futures[w].status
            name = client.scheduler_info()["workers"].get(w, {}).get("name", w)
            raise SourceUnavailableError(
                f"worker {name} ({w}) failed before the start: {reason}",
                "the other workers were released without running",
            )
        # An event's wait returns False at its timeout (a queue's get would log an error).
        ready |= {w for w, ev in ready_events.items() if w not in ready and ev.wait(0.05)}
    lead_ns = int(LEAD_S * 1e9) + max(c.delay_ns for c in clocks.values())
    instant = time.time_ns() + lead_ns
    start.set(instant)
    note(f"{len(workers)} workers ready; starting together in {lead_ns / 1e6:.0f} ms")
    out = {}
    for w, f in futures.items():
        r = f.result()
        c = clocks[w]
        begun = r.get("start_ns")
        # In this host's clock, so that workers' starts can be set against each other.
        out[w] = {**r, "offset_ns": c.offset_ns, "delay_ns": c.delay_ns, "instant_ns": instant,
                  "start_here_ns": begun - c.offset_ns if begun is not None else None,
                  "late_ns": begun - r["target_ns"] if begun is not None else None}  # fmt: skip
    return out
