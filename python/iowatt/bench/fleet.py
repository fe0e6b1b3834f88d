"""``iowatt bench --cluster``: each workload on every chosen host at one instant, one run.

Per workload, every host runs one task pinned to it (``iowatt.fleet.barrier``): it checks its
target, lays out its files in a held engine, says ready, and its engine starts at the common
instant with no Python in the path. The hosts' results come back whole — HDR histograms and
per-second intervals — and are merged (``iowatt.bench.merge``) into the run's workloads, while
every host keeps its own rows (``hosts.parquet``, ``host_intervals.parquet``,
``host_latency.parquet``) with its clock offset and start skew. A host that fails makes the run
incomplete and is named; the others' data is kept.
"""

from __future__ import annotations

import contextlib
import functools
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from iowatt._engine import WorkloadRun
from iowatt.bench import filemacro
from iowatt.bench.config import BenchConfig, Outcome, Reporter, SilentReporter, WorkloadConfig
from iowatt.bench.execute import check_target
from iowatt.bench.held import PROGRESS_COUNTS, run_held
from iowatt.bench.hosts import Fleet, HostRun
from iowatt.bench.merge import as_arrays, done_rates, merge_results
from iowatt.bench.power import BenchPower
from iowatt.bench.summary import rate_warning, workload_summary
from iowatt.bench.write import write_run
from iowatt.errors import (
    ConfigError,
    IowattError,
    RunInterrupted,
    SourceUnavailableError,
    TargetError,
)
from iowatt.fleet.hosts import Targets, file_safe, pick
from iowatt.fleet.spec import ClusterSpec
from iowatt.hostinfo import host_facts
from iowatt.live.board import Counts, board
from iowatt.store.writer import RunWriter, make_marked, new_run_id
from iowatt.warnings import Kind, RunWarning, WarningSink


@dataclass(frozen=True)
class HostJob:
    """What one host runs for one workload."""

    wl: WorkloadConfig
    host: str
    target: str | None
    run_id: str
    destroy_data: bool


def on_host(job: HostJob, gate: Any) -> dict[str, Any] | None:
    """The task each host runs: check the target, lay out, wait for the start, measure."""
    scratch = None
    target = Path(job.target) if job.target else None
    if target is None:
        name = f"iowatt-bench-{job.run_id}-{file_safe(job.host)}"
        scratch = target = Path(tempfile.gettempdir()) / name
        make_marked(scratch, job.run_id)
    workdir = None
    try:
        device = check_target([job.wl], target, job.destroy_data)
        facts = host_facts(target)
        if not device:
            # Per host: hosts that share a file system (NFS) must not share files.
            workdir = target / f"iowatt-{job.run_id}-{file_safe(job.host)}"
            make_marked(workdir, job.run_id)
        where = workdir or target
        wl = job.wl
        if wl.wml:
            engine = WorkloadRun.model(filemacro.model(wl, where))
        else:
            engine = WorkloadRun.fileio(wl.engine_spec(where, device))
        held = run_held([engine], gate, publish=True)
        if held is None:  # the start was called off: another host failed
            return None
        ((result, _),) = held.results
        return {
            "result": result,
            "facts": facts,
            "layout_s": held.layout_s,
            "model": engine.model_dict(),
        }
    finally:
        for path in (workdir, scratch):
            if path is not None:
                shutil.rmtree(path, ignore_errors=True)


def run_fleet(
    config: BenchConfig,
    cluster: ClusterSpec,
    hosts: list[str] | None,
    targets: Targets,
    reporter: Reporter | None = None,
    sink: WarningSink | None = None,
    *,
    client: Any = None,
    stop: Callable[[], bool] | None = None,
) -> Path:
    """Runs every workload on the chosen hosts of ``cluster`` and commits one run; like
    :func:`iowatt.bench.execute.run`, the run is written whatever happens, then an error that
    stopped it is raised again. ``client``: one already connected to the cluster (several
    runs share it, a campaign's at once); ``stop()``, when it says so, stops the hosts as
    Ctrl-C would (for a run in a thread of its own, where Ctrl-C does not arrive)."""
    from iowatt.fleet.barrier import start_together
    from iowatt.fleet.cluster import connect

    reporter = reporter or SilentReporter()
    sink = sink or WarningSink()
    note = reporter.note
    for wl in config.workloads:
        program = wl.program
        commands = [s for s in program.steps if s.kind != "echo"] if program else []
        if program is not None and commands:
            step = commands[0]
            raise ConfigError(
                f"{program.source}:{step.line}: a workload file's commands (`{step.kind}`) "
                "do not run in a fleet yet",
                "run the file on one host, or move its commands to a script around iowatt",
            )
    with contextlib.nullcontext(client) if client else connect(cluster, 1, note) as client:
        chosen = pick(client.scheduler_info()["workers"], hosts, targets)
        fleet = Fleet(cluster, chosen, {h: _text(targets.of(h)) for h in chosen.values()})
        run_id = new_run_id("bench")
        board().begin(run_id, "bench", config.labels)
        writer = RunWriter(config.results, run_id)
        started_ns = time.time_ns()
        config.clock_anchor = (started_ns, time.monotonic_ns())
        outcomes: list[Outcome] = []
        failure: IowattError | None = None
        try:
            for wl in config.workloads:
                reporter.workload_started(wl)
                note(f"{wl.name}: laying out on {len(chosen)} hosts")
                jobs = {
                    a: HostJob(wl, h, fleet.targets[h], run_id, config.destroy_data)
                    for a, h in chosen.items()
                }
                start = start_together(
                    client, on_host, jobs, note, _progress(wl, chosen, reporter), stop=stop
                )
                outcome, failure = _outcome(wl, fleet, start, sink)
                outcomes.append(outcome)
                reporter.workload_finished(wl, outcome.summary)
                if start.interrupted or (stop is not None and stop()):
                    failure = RunInterrupted("interrupted")
                if failure is not None:
                    break
        except KeyboardInterrupt:
            failure = RunInterrupted("interrupted")
        except IowattError as e:
            failure = e
        except BaseException:
            writer.abandon()
            raise
    power = BenchPower(config)
    host = fleet.facts[next(iter(fleet.facts))] if fleet.facts else host_facts(None)
    run_dir = write_run(
        writer, config, outcomes, failure, host, started_ns, False, power, sink, fleet
    )
    if failure is not None:
        raise failure
    return run_dir


def _progress(
    wl: WorkloadConfig, names: dict[str, str], reporter: Reporter
) -> Callable[[dict[str, Any]], None]:
    """The hosts' progress as one, for the reporter: laying out until every host is ready,
    then their operations summed, timed from when the first host began measuring. Each host's
    counts are also served (``--serve``), labelled with its name."""
    latest: dict[str, Counts] = {}

    def show(hosts: dict[str, Any]) -> None:
        if not hosts:
            return
        for address, p in hosts.items():
            host = names.get(address, address)
            first = host not in latest
            latest[host] = Counts(**p["live"])
            if first:
                board().watch(
                    functools.partial(latest.__getitem__, host), workload=wl.name, host=host
                )
        parts = list(hosts.values())
        laying_out = [p for p in parts if p["phase"] in ("preparing", "ready")]
        merged: dict[str, Any] = {k: sum(p[k] for p in parts) for k in PROGRESS_COUNTS}
        if laying_out and len(laying_out) == len(parts):
            merged["phase"] = "preparing"
        else:
            merged["phase"] = "ramp" if any(p["phase"] == "ramp" for p in parts) else "measuring"
        # Each host's monotonic clock is its own: the reporter times from its own clock.
        merged["measure_start_ns"] = _first_measuring(parts)
        merged["measure_end_ns"] = 0
        reporter.update(wl, merged)  # type: ignore[arg-type]

    return show


def _first_measuring(parts: list[dict[str, Any]]) -> int:
    """When measuring began, on this host's monotonic clock: each host says how long ago it
    began by its own clock, which is as good as the clocks' rates agree (well, over minutes)."""
    ago = [p["now_ns"] - p["measure_start_ns"] for p in parts if p.get("measure_start_ns")]
    return time.monotonic_ns() - max(ago, default=0)


def _outcome(
    wl: WorkloadConfig, fleet: Fleet, start: Any, sink: WarningSink
) -> tuple[Outcome, IowattError | None]:
    """The workload's merged outcome from its hosts, and the error naming a host that failed."""
    runs: list[HostRun] = []
    starts = [o["start_here_ns"] for o in start.hosts.values() if o["start_here_ns"] is not None]
    first_start = min(starts, default=None)
    for addr, o in start.hosts.items():
        name = fleet.hosts[addr]
        got = o["result"] or {}
        result = as_arrays(got["result"]) if got.get("result") else None
        began = o["start_here_ns"]
        skew = began - first_start if began is not None and first_start is not None else None
        r = HostRun(
            name,
            addr,
            fleet.targets[name],
            result,
            o["error"],
            o["offset_ns"],
            o["delay_ns"],
            skew,
            o["late_ns"],
            got.get("layout_s"),
            got.get("facts"),
        )
        if r.result is not None:
            r.summary = workload_summary(r.result)
        if r.facts is not None and name not in fleet.facts:
            fleet.facts[name] = r.facts
            _warn_about(name, r.facts, sink)
        runs.append(r)
    fleet.runs[wl.name] = runs
    measured = [r.result for r in runs if r.result is not None]
    failed = [r for r in runs if r.error or (r.result and r.result["status"] != "complete")]
    failure: IowattError | None = None
    if failed:
        f = failed[0]
        why = f.error or (f.result["reason"] if f.result else None) or "it did not complete"
        more = f" (and {len(failed) - 1} more)" if len(failed) > 1 else ""
        failure = SourceUnavailableError(
            f"host {f.host} ({f.worker}) failed in `{wl.name}`: {why}{more}",
            "the other hosts' results are kept in the run; `iowatt report` shows each host",
        )
        if all(r.result is not None and r.result["status"] == "cancelled" for r in failed):
            failure = RunInterrupted("interrupted")
    if not measured:
        raise failure or TargetError(f"`{wl.name}`: no host returned a result", None)
    # The common start on this host's monotonic clock, where the merged seconds begin.
    anchor = first_start if first_start is not None else time.time_ns()
    mono = time.monotonic_ns() - (time.time_ns() - anchor)
    merged = merge_results(measured, mono)
    summary = workload_summary(merged)
    if (short := rate_warning(wl.name, summary)) is not None:
        sink.warn(short)
    summary["fleet"] = {
        "hosts": len(runs),
        "measured_hosts": len(measured),
        "failed_hosts": [r.host for r in failed],
        "start_skew_ns": max((r.start_skew_ns or 0 for r in runs), default=0),
        **done_rates(measured),
    }
    model: dict[str, Any] = next(
        (got["model"] for o in start.hosts.values() if (got := o["result"])), {}
    )
    return Outcome(wl, merged, summary, model), failure


def _warn_about(host: str, facts: dict[str, Any], sink: WarningSink) -> None:
    fs = (facts.get("target") or {}).get("fs_type")
    if fs in ("tmpfs", "ramfs"):
        sink.warn(
            RunWarning(
                Kind.TMPFS_TARGET,
                f"host {host}: the target is on {fs}: results measure memory, not a storage device",
            )
        )


def _text(path: Path | None) -> str | None:
    return str(path) if path is not None else None
