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
are released without running, and the error names the worker and why. One that fails or
disappears after the start is named in its own entry, and the others' results are kept: a task
pinned to a dead worker would otherwise wait for it for ever, so the driver watches the
scheduler's member list.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from iowatt.errors import SourceUnavailableError, one_line

ROUNDS = 8
# How far ahead of "all ready" the start is set, beyond the slowest worker's round trip.
LEAD_S = 0.05
SPIN_S = 0.0002
# How often the driver looks at the workers' tasks and the scheduler's member list, and how
# often progress is published and read.
POLL_S = 0.05
PUBLISH_S = 0.5
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


class Gate:
    """What the function run on each worker gets: ``ready()`` says this worker is prepared and
    blocks until every worker is, then returns the common start in this worker's clock (None
    when the start is called off); ``stopped()`` says whether the command was stopped since
    (Ctrl-C), so the work can end early and still return what it measured; ``publish()`` shows
    the driver how far it is."""

    def __init__(
        self, names: tuple[str, str, str], offset_ns: int, progress_key: list[str]
    ) -> None:
        self._names = names
        self._progress_key = progress_key
        self._published = 0.0
        self._offset_ns = offset_ns
        self.target_ns: int | None = None
        # When the work really started, in this worker's clock (``ready`` sets it when it
        # waits; work that waits on its own, as a held engine does, sets it itself).
        self.start_ns: int | None = None

    def ready(self, wait: bool = True) -> int | None:
        """Blocks until the start; ``wait=False`` returns as soon as the instant is known, for
        work that waits for it itself (a held engine's ``release``)."""
        from distributed import Event, Variable

        Event(self._names[0]).set()
        start = Variable(self._names[1]).get(timeout=READY_TIMEOUT_S)
        if start == ABORT:
            return None
        self.target_ns = int(start) + self._offset_ns
        if wait:
            self.start_ns = _until(self.target_ns)
        return self.target_ns

    __call__ = ready

    def stopped(self) -> bool:
        from distributed import Event

        return bool(Event(self._names[2]).is_set())

    def publish(self, progress: Mapping[str, Any]) -> None:
        """Shows how far this worker is (the driver reads every worker's in one call), at most
        every :data:`PUBLISH_S`."""
        now = time.monotonic()
        if now - self._published < PUBLISH_S:
            return
        self._published = now
        from distributed import get_client

        get_client().set_metadata(self._progress_key, dict(progress))


def _pinned(fn: Callable[..., Any], args: Any, gate: Gate) -> dict[str, Any]:
    from distributed import get_worker

    worker = get_worker().name
    try:
        result, error = fn(args, gate), None
    except Exception as e:  # returned, not raised: Dask would log it with its traceback
        result, error = None, one_line(e)
    return {
        "worker": worker,
        "result": result,
        "error": error,
        "target_ns": gate.target_ns,
        "start_ns": gate.start_ns,
    }


# Worker address → what it last published.
OnProgress = Callable[[dict[str, Any]], None]


@dataclass
class Start:
    """What :func:`start_together` returns: per worker address its outcome (below), and
    whether the command was stopped (Ctrl-C) while the workers ran."""

    hosts: dict[str, dict[str, Any]]
    interrupted: bool = False


def _wait_ready(tasks: _Tasks, events: Mapping[str, Any], names: Mapping[str, str]) -> None:
    ready: set[str] = set()
    while len(ready) < len(events):
        tasks.look()
        if (w := tasks.failed()) is not None:
            why = tasks.done[w]["error"] or "it ended without saying it was ready"
            raise SourceUnavailableError(
                f"worker {names[w]} ({w}) failed before the start: {why}",
                "the other workers were released without running",
            )
        # Each look is a round trip to the scheduler: stop at the first worker not ready yet,
        # so a thousand workers cost one look per poll, not a thousand.
        for w, ev in events.items():
            if w not in ready:
                if not ev.is_set():
                    break
                ready.add(w)
        time.sleep(POLL_S)


class _Tasks:
    """The pinned tasks, each looked at until it has an outcome: returned, failed, or lost
    with its worker (a task pinned to a worker that died would wait for it for ever, so the
    scheduler's member list is read on every look)."""

    def __init__(
        self,
        client: Any,
        futures: dict[str, Any],
        names: Mapping[str, str],
        progress: tuple[list[str], OnProgress | None],
    ) -> None:
        self._client = client
        self._futures = futures
        self._names = names
        self._progress_key, self._on_progress = progress
        self._read = 0.0
        self.done: dict[str, dict[str, Any]] = {}

    def look(self) -> None:
        if self._on_progress is not None and time.monotonic() - self._read >= PUBLISH_S:
            self._read = time.monotonic()
            self._on_progress(self._client.get_metadata(self._progress_key, default={}))
        members = set(self._client.run_on_scheduler(_scheduler_workers))
        for w, f in self._futures.items():
            if w in self.done:
                continue
            why = None
            if f.status == "finished":
                self.done[w] = f.result()
                continue
            if f.status == "error":  # the task could not even run (unpicklable arguments, …)
                e = f.exception()
                why = one_line(e)
            elif f.status in ("cancelled", "lost"):
                why = f"its task was {f.status}"
            elif w not in members:
                f.cancel()
                why = "the worker left the cluster (it died or was stopped)"
            if why is not None:
                self.done[w] = {
                    "worker": self._names[w],
                    "result": None,
                    "error": why,
                    "target_ns": None,
                    "start_ns": None,
                }

    def failed(self) -> str | None:
        """A worker that failed (or ended without saying ready), when one has."""
        return next((w for w, o in self.done.items() if o["error"] or o["target_ns"] is None), None)

    def all_done(self) -> bool:
        return len(self.done) == len(self._futures)


def _scheduler_workers(dask_scheduler: Any) -> list[str]:
    return list(dask_scheduler.workers)


def start_together(
    client: Any,
    fn: Callable[..., Any],
    args: Mapping[str, Any],
    note: Callable[[str], None] = lambda _: None,
    on_progress: OnProgress | None = None,
    stop: Callable[[], bool] | None = None,
) -> Start:
    """Runs ``fn(args[w], gate)`` (a :class:`Gate`) on every worker address ``w`` of ``args``
    at once. Per worker: ``result`` (fn's return, None when it failed) or ``error`` (why:
    its exception, or the worker gone), its clock ``offset_ns`` and ``delay_ns``, the common
    ``instant_ns`` (this host's clock), ``target_ns`` and ``start_ns`` (its clock),
    ``start_here_ns`` (its start in this host's clock) and ``late_ns``.

    A worker that fails before it is ready calls the start off: the others are released
    without running and :class:`SourceUnavailableError` names the worker. One that fails
    after the start is named in its entry; the others' results are kept. Ctrl-C while they
    run asks every worker to stop and still gathers what they measured. ``on_progress`` gets,
    about every :data:`PUBLISH_S`, what each worker last published (``Gate.publish``); when
    ``stop()`` says so (a sweep's watchdog tripped), the workers are asked to stop, as by
    Ctrl-C."""
    from distributed import Event, Variable

    workers = list(args)
    known = client.scheduler_info()["workers"]
    names = {w: str(known.get(w, {}).get("name", w)) for w in workers}
    clocks = clock_offsets(client, workers)
    tag = uuid.uuid4().hex[:12]
    progress_key = ["iowatt-progress", tag]
    start = Variable(f"iowatt-start-{tag}", client=client)
    stopping = Event(f"iowatt-stop-{tag}", client=client)
    ready_events = {
        w: Event(f"iowatt-ready-{tag}-{i}", client=client) for i, w in enumerate(workers)
    }
    futures = {
        w: client.submit(
            _pinned,
            fn,
            args[w],
            Gate(
                (ready_events[w].name, start.name, stopping.name),
                clocks[w].offset_ns,
                [*progress_key, w],
            ),
            workers=[w],
            allow_other_workers=False,
            pure=False,
            key=f"iowatt-pinned-{tag}-{i}",
        )
        for i, w in enumerate(workers)
    }
    tasks = _Tasks(client, futures, names, (progress_key, on_progress))
    try:
        _wait_ready(tasks, ready_events, names)
    except BaseException:
        start.set(ABORT)  # the workers still preparing stop, and clean up before we go on
        with contextlib.suppress(KeyboardInterrupt):
            while not tasks.all_done():
                time.sleep(POLL_S)
                tasks.look()
        raise
    lead_ns = int(LEAD_S * 1e9) + max(c.delay_ns for c in clocks.values())
    instant = time.time_ns() + lead_ns
    start.set(instant)
    note(f"{len(workers)} workers ready; starting together in {lead_ns / 1e6:.0f} ms")
    interrupted = False
    while not tasks.all_done():
        try:
            time.sleep(POLL_S)
            tasks.look()
            if stop is not None and stop():
                stopping.set()
        except KeyboardInterrupt:
            if interrupted:
                raise
            interrupted = True
            note("stopping every worker (Ctrl-C again to give up on their results)")
            stopping.set()
    hosts = {}
    for w, r in tasks.done.items():
        c = clocks[w]
        begun = r.get("start_ns")
        # In this host's clock, so that workers' starts can be set against each other.
        hosts[w] = {
            **r,
            "offset_ns": c.offset_ns,
            "delay_ns": c.delay_ns,
            "instant_ns": instant,
            "start_here_ns": begun - c.offset_ns if begun is not None else None,
            "late_ns": begun - r["target_ns"] if begun is not None else None,
        }
    if on_progress is not None:
        client.set_metadata(progress_key, {})  # the scheduler keeps metadata until told
    return Start(hosts, interrupted)
