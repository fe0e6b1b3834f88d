"""Runs a plan: one run-store run per (repetition, set, data location, k), each with exactly
k × cores tasks in flight on Dask, fresh input data, the node and its power watched.

Dask is a LocalCluster of worker threads in this process by default (the tasks are processes
of their own, so threads are all a worker needs, and Ctrl-C reaches only iowatt) or the
scheduler ``--cluster`` names. iowatt feeds tasks one by one as slots free up — the batch
queue's rule — so the concurrency is the same on any cluster. A set of sets runs its batches
back to back: the next batch starts when the last task of the previous one has ended.

Resuming: every run carries a key made of what it runs (set, types, location, k, repetition,
cores, labels). Running the same command again skips the runs already complete and finishes an
interrupted one, rerunning only its unfinished tasks; the figures then add the segments up.
"""

from __future__ import annotations

import json
import os
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from iowatt import pagecache
from iowatt.errors import ConfigError, IowattError, RunInterrupted
from iowatt.live.board import board
from iowatt.tasks import data
from iowatt.tasks.execute import run_task
from iowatt.tasks.figures import (
    interval_energy,
    makespan_s,
    modelled_watts,
    other_load,
    spread_busy,
)
from iowatt.tasks.monitor import Monitor, Samples
from iowatt.tasks.plan import CHUNK, RunSpec, TasksPlan
from iowatt.tasks.record import prior_state, row_base, write_run
from iowatt.warnings import Kind, RunWarning, WarningSink

# The disk probe: MB each reader reads, fresh, before a run whose set reads input.
PROBE_MB = 32


@dataclass
class Outcome:
    """What became of one run of the matrix."""

    spec: RunSpec
    status: str  # complete, incomplete, skipped (done before), refused (out of memory)
    row: dict[str, Any]
    run_dir: Path | None = None
    reason: str | None = None


@dataclass
class Progress:
    """What the command line shows; the runner calls these."""

    note: Callable[[str], None] = lambda _: None
    started: Callable[[RunSpec, int], None] = lambda s, n: None
    task_done: Callable[[dict[str, Any]], None] = lambda r: None
    ended: Callable[[Outcome], None] = lambda o: None
    warn: Callable[[RunWarning], None] = field(default_factory=lambda: WarningSink().warn)


@dataclass
class _Live:
    """A run in progress: its tasks' records and the segment being measured."""

    records: list[dict[str, Any]] = field(default_factory=list)
    segments: list[dict[str, Any]] = field(default_factory=list)
    probe: dict[str, Any] | None = None


def execute(plan: TasksPlan, progress: Progress | None = None) -> list[Outcome]:
    progress = progress or Progress()
    probes: dict[tuple[str, int], dict[str, Any]] = {}
    outcomes: list[Outcome] = []
    with ExitStack() as stack:
        from iowatt.tasks.cgroup import task_groups

        here = plan.cluster is None or plan.cluster.kind == "local"
        memory = plan.memory_gb if plan.memory_cgroup else None
        cgroup = stack.enter_context(task_groups(memory, here))
        cpu_group = cgroup.pop("cpu_group")
        client = stack.enter_context(_connect(plan, progress.note))
        for spec in plan.runs():
            refused = plan.refusal(spec.taskset, spec.per_core)
            if refused:
                outcomes.append(Outcome(spec, "refused", row_base(spec, plan), reason=refused))
                progress.ended(outcomes[-1])
                continue
            prior = _prior(plan, spec) if plan.resume else None
            if prior is not None and prior["status"] == "complete":
                from iowatt.store.runs import read_summary

                row = read_summary(Path(prior["path"]))["tasks"]
                outcomes.append(Outcome(spec, "skipped", row, Path(prior["path"])))
                progress.ended(outcomes[-1])
                continue
            outcome = _run(client, plan, spec, prior, probes, cgroup, cpu_group, progress)
            outcomes.append(outcome)
            progress.ended(outcome)
            for w in outcome.row["warnings"]:
                name = outcome.run_dir.name if outcome.run_dir else "?"
                progress.warn(RunWarning(Kind.OTHER_LOAD, f"run {name}: {w}"))
    return outcomes


@contextmanager
def _connect(plan: TasksPlan, note: Callable[[str], None]) -> Iterator[Any]:
    """A Dask client: of a LocalCluster of threads made here, or of the --cluster spec's,
    which must have k × cores worker threads in all."""
    import logging

    from distributed import Client, LocalCluster

    from iowatt.fleet.cluster import connect

    # Dask's own INFO lines would bury iowatt's; its warnings and errors still show.
    logging.getLogger("distributed").setLevel(logging.WARNING)
    slots = max(plan.slots(k) for k in plan.per_core)
    if plan.cluster is None:
        cluster = LocalCluster(
            n_workers=1,
            threads_per_worker=slots + 1,
            processes=False,
            dashboard_address=":0",
            silence_logs=logging.WARNING,
        )
        with cluster, Client(cluster) as client:
            yield client
        return
    per_worker = -(-slots // (plan.cluster.workers or 1))
    with connect(plan.cluster, per_worker, note) as client:
        threads = sum(w["nthreads"] for w in client.scheduler_info()["workers"].values())
        if threads < slots:
            raise ConfigError(
                f"--cluster `{plan.cluster.text}` has {threads} worker threads, the plan "
                f"needs {slots}",
                f"start workers with --nthreads so that they add up to k × cores = {slots}",
            )
        yield client


def _prior(plan: TasksPlan, spec: RunSpec) -> dict[str, Any] | None:
    """The latest run with this run's key: to skip (complete) or to finish (incomplete)."""
    from iowatt.store.catalog import catalog

    if not plan.results.is_dir():
        return None
    with catalog(plan.results) as con:
        row = con.execute(
            """SELECT r.status, r.path FROM runs r JOIN task_runs t USING (run_id)
               WHERE t.key = ? ORDER BY r.started DESC LIMIT 1""",
            [spec.key],
        ).fetchone()
    return {"status": row[0], "path": row[1]} if row else None


def _run(
    client: Any,
    plan: TasksPlan,
    spec: RunSpec,
    prior: dict[str, Any] | None,
    probes: dict[tuple[str, int], dict[str, Any]],
    cgroup: dict[str, Any],
    cpu_group: dict[str, Any],
    progress: Progress,
) -> Outcome:
    from iowatt.store.writer import RunWriter, new_run_id

    live = _Live()
    if prior is not None:
        live.records, live.segments, live.probe = prior_state(Path(prior["path"]))
        progress.note(f"resuming run {Path(prior['path']).name}: {len(live.records)} tasks done")
    done = {r["index"] for r in live.records}
    todo = [i for i in range(len(spec.taskset.tasks)) if i not in done]
    writer = RunWriter(plan.results, new_run_id("tasks"))
    board().begin(writer.run_id, "tasks", plan.labels)
    started_ns = time.time_ns()
    failure: IowattError | None = None
    try:
        work = data.make_workdir(spec.location, writer.run_id)
    except OSError as e:
        writer.abandon()
        raise ConfigError(
            f"--data {spec.location.name}: cannot create a directory in `{spec.location.path}` "
            f"({e.strerror})",
            "give a writable directory",
        ) from None
    try:
        if plan.drop_caches:
            pagecache.drop()
        slots = plan.slots(spec.per_core)
        if live.probe is None and any(t.input_bytes for t in spec.taskset.types.values()):
            cache = (spec.location.name, slots)
            if cache not in probes:
                progress.note(f"probing {spec.location.name}: 1 and {slots} readers")
                probes[cache] = _probe(client, work, slots, cgroup)
            live.probe = probes[cache]
        specs = _prepare(plan, spec, work, todo, cgroup)
        progress.started(spec, len(todo))
        _measure(client, plan, spec, specs, live, progress, cpu_group["usage"])
    except KeyboardInterrupt:
        failure = RunInterrupted("interrupted before any task of this run finished")
    except IowattError as e:
        failure = e
    except BaseException:
        writer.abandon()
        raise
    finally:
        data.remove_workdir(work)
    reason = None if failure is None else failure.message
    if not live.records and failure is not None:
        writer.abandon()
        raise failure
    run_dir, row = write_run(writer, plan, spec, live, started_ns, reason, prior, cpu_group)
    if isinstance(failure, RunInterrupted):
        raise RunInterrupted(
            f"interrupted: run {run_dir.name} is written as incomplete ({row['done']} of "
            f"{row['tasks']} tasks done)",
            "run the same command again to finish it (finished tasks are not rerun)",
        )
    status = "complete" if reason is None else "incomplete"
    return Outcome(spec, status, row, run_dir, reason)


def _spec(work: Path, name: str, **fields: Any) -> dict[str, Any]:
    """A task as a worker takes it; ``name`` names its summary and stderr files."""
    return {
        "chunk": CHUNK,
        "output": str(work / "out" / f"{name}.json"),
        "stderr": str(work / "err" / f"{name}.txt"),
        **fields,
    }


def _prepare(
    plan: TasksPlan, spec: RunSpec, work: Path, todo: list[int], cgroup: dict[str, Any]
) -> list[dict[str, Any]]:
    """Each task's spec for the worker, its input written fresh."""
    block = os.urandom(data.BLOCK)
    out = []
    for i in todo:
        t = spec.taskset.types[spec.taskset.tasks[i]]
        path = work / "in" / f"{i}.dat"
        if t.input_bytes:
            data.write_input(path, t.input_bytes, block, t.input)
        out.append(
            _spec(
                work,
                str(i),
                index=i,
                type=t.name,
                batch=spec.taskset.batch[i],
                command=t.command,
                cpu_s=t.cpu_s,
                memory=t.memory_bytes,
                input=str(path) if t.input_bytes else "",
                timeout_s=plan.timeout_s,
                **cgroup,
            )
        )
    return out


def _probe(client: Any, work: Path, slots: int, cgroup: dict[str, Any]) -> dict[str, Any]:
    """The location's read rate with one reader and with ``slots`` at once (MB/s), each
    reading a fresh file with the synthetic task (no CPU), through the same workers."""
    block = os.urandom(data.BLOCK)
    rates = {}
    for n in sorted({1, slots}):
        specs = []
        for j in range(n):
            path = work / "in" / f"probe-{n}-{j}.dat"
            data.write_input(path, PROBE_MB * 1_000_000, block)
            specs.append(
                _spec(
                    work,
                    f"probe-{n}-{j}",
                    index=j,
                    type="probe",
                    batch=0,
                    command=None,
                    cpu_s=0.0,
                    memory=0,
                    input=str(path),
                    timeout_s=None,
                    **cgroup,
                )
            )
        records = client.gather([client.submit(run_task, s, pure=False) for s in specs])
        walls = [json.loads(r["summary"])["wall_s"] for r in records if r["status"] == "ok"]
        if len(walls) != n:
            raise IowattError(f"the disk probe failed: {records[0]['error']}", None)
        rates[n] = n * PROBE_MB / max(walls)
        for p in (work / "in").glob("probe-*"):
            p.unlink()
    return {"streams": slots, "one_mb_s": rates[1], "all_mb_s": rates[slots]}


def _measure(
    client: Any,
    plan: TasksPlan,
    spec: RunSpec,
    specs: list[dict[str, Any]],
    live: _Live,
    progress: Progress,
    usage: str | None,
) -> None:
    """Feeds the tasks, k × cores in flight, batch by batch; on Ctrl-C stops the ones
    running (they come back as ``interrupted``) and re-raises once they have. ``usage``: the
    file of the tasks' CPU group's time, if they have one."""
    from distributed import Event, as_completed

    from iowatt.power.session import PowerSession

    slots = plan.slots(spec.per_core)
    stop_name = f"iowatt-stop-{os.getpid()}-{time.monotonic_ns()}"
    stop = Event(stop_name, client=client)
    monitor = Monitor(spec.location.devnum, usage)
    power = PowerSession(plan.power, plan.power_hz, 0.0, None)
    power.start(progress.note)
    counters = data.disk_counters(spec.location)
    mono0, real0 = time.monotonic_ns(), time.time_ns()
    monitor.start()
    queue = deque(specs)
    running: Any = as_completed([])
    in_flight = 0
    records: list[dict[str, Any]] = []
    interrupted = False

    batch = queue[0]["batch"] if queue else None  # the batch in flight

    def feed() -> None:
        nonlocal in_flight, batch
        if queue and queue[0]["batch"] != batch:
            if in_flight:  # the next batch waits for the last task of this one
                return
            batch = queue[0]["batch"]
        while queue and in_flight < slots and queue[0]["batch"] == batch:
            s = queue.popleft()
            key = f"task-{stop_name}-{s['index']}"
            running.add(client.submit(run_task, s, stop_name, pure=False, key=key))
            in_flight += 1

    try:
        feed()
        for fut in running:
            rec = fut.result()
            in_flight -= 1
            records.append(rec)
            progress.task_done(rec)
            took_s = (rec["end_ns"] - rec["start_ns"]) / 1e9
            failed = None if rec["status"] == "ok" else rec["status"]
            board().count(took_s, rec["bytes_read"], failed, workload=rec["type"])
            feed()
    except KeyboardInterrupt:
        interrupted = True
        stop.set()
        for fut in running:  # the running tasks end within a check interval
            records.append(fut.result())
    finally:
        samples = monitor.stop()
        power.stop()
    after = data.disk_counters(spec.location) if counters is not None else None
    live.records += [r for r in records if r["status"] != "interrupted"]
    live.segments.append(_segment(plan, spec, records, samples, power, mono0, real0))
    if counters is not None and after is not None:
        live.segments[-1]["disk_counters"] = {"before": counters, "after": after}
    if interrupted:
        raise KeyboardInterrupt


def _segment(
    plan: TasksPlan,
    spec: RunSpec,
    records: list[dict[str, Any]],
    samples: Samples,
    power: Any,
    mono0: int,
    real0: int,
) -> dict[str, Any]:
    """This invocation's part of the run: its window, energy and other load, with the node's
    samples and the power series behind them (``tables``, written to the run's Parquet
    files)."""
    offset = real0 - mono0  # the tasks' wall-clock times onto this host's monotonic clock
    ended = [r for r in records if r["status"] != "interrupted"] or records
    start = min((r["start_ns"] for r in ended), default=real0) - offset
    end = max((r["end_ns"] for r in ended), default=real0) - offset
    ends = np.asarray(samples.mono_ns, dtype=np.int64)
    if not samples.tasks_busy or None in samples.tasks_busy:
        # No CPU group to read: the CPU time of the tasks on this host (their rusage, every
        # task of the segment ended in it) spread evenly over each one's wall time.
        here = os.uname().nodename
        spent = [
            (r["start_ns"] - offset, r["end_ns"] - offset, r["cpu_s"])
            for r in records
            if r.get("host") in (here, None)
        ]
        samples.tasks_busy = list(spread_busy(ends, mono0, spent))
    tasks_busy = np.asarray(samples.tasks_busy, dtype=np.float64)
    node_busy = np.asarray(samples.cpu_busy, dtype=np.float64)
    load = other_load(ends, node_busy, tasks_busy, samples.cpus, mono0, start, end)
    if power.data is not None:
        from iowatt.power.summary import Window, headline, summarize

        summary = summarize(power.data, mono0, Window(start, end))
        head = headline(summary["channels"])
        channel = next(c for c in power.data.power_channels() if c.key == head)
        ends, watts = channel.series.mono_ns, channel.series.watts
        work = summary["work"].get(head) or {}
        energy = work.get("energy_j")
        if work.get("gap_s") and work.get("avg_w") is not None:
            # The meter missed part of the run (a reading late on a busy node): its mean power
            # over what it covered stands for the gap, not zero watts.
            energy = work["avg_w"] * (end - start) / 1e9
        _, peak = interval_energy(ends, watts, mono0, start, end)
        source = f"measured: {head}"
    else:
        from iowatt.sim.disks import load_disks
        from iowatt.sim.tasks import disk_watts

        disks = plan.power_model["disks"]
        disk = disk_watts(disks.get(spec.location.name, disks["hdd"]), load_disks())
        watts = modelled_watts(samples, plan.power_model["node"], disk)
        energy, peak = interval_energy(ends, watts, mono0, start, end)
        source = "modelled"
    return {
        "tasks": len(ended),
        "makespan_s": makespan_s(ended),
        "energy_j": energy,
        "peak_w": peak,
        "power": source,
        **load,
        "tables": {
            "mono0": mono0,
            "samples": samples,
            "watts": (ends, watts),
            "power_data": power.data,
        },
    }
