"""``iowatt sim server``: plan a batch of server simulations, run it on the engine and write
the run (kind ``sim-server``; its files are in docs/run-store.md).

A plan resolves every input once — the model and its overrides, the jobs and sets, the curve,
the policies, the seeds — and the engine checks the whole before anything runs, so a bad input
costs one error line and writes nothing. A simulation stopped by Ctrl-C or SIGTERM writes the
runs it finished, marked incomplete.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from iowatt.errors import ConfigError, IowattError, RunInterrupted
from iowatt.sim import curves, record
from iowatt.sim.model import load_model, load_workloads
from iowatt.units import check_int, parse_duration, parse_list, parse_seeds

POLICIES = ("DLB", "JETC", "App-Oracle", "FSTM", "FSTM-NoSSD")
DEFAULT_WORKLOADS = "W1..W10"


@dataclass
class ServerPlan:
    """Everything a server simulation needs, resolved and ready for the engine."""

    model: dict[str, Any]
    jobs: dict[str, Any]
    workloads: list[dict[str, Any]]
    policies: list[str]
    curve: dict[str, Any]
    seeds: list[int]
    resolution_s: float
    threads: int
    results: Path
    labels: dict[str, str] = field(default_factory=dict)
    report: bool = True
    focus: str | None = None
    notes: list[str] = field(default_factory=list)

    def engine_config(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "jobs": self.jobs,
            "workloads": self.workloads,
            "policies": self.policies,
            "curve": self.curve,
            "seeds": self.seeds,
            "resolution_s": self.resolution_s,
            "threads": self.threads,
        }

    def recorded(self) -> dict[str, Any]:
        """The manifest's ``config``: the engine's whole input, and the report's focus."""
        return {**self.engine_config(), "focus": self.focus}


def parse_policies(text: str) -> list[str]:
    """``all`` or a list of policy names (any case); DLB is always run: every figure is
    against it."""
    names = parse_list(text, "--policies")
    if [n.lower() for n in names] == ["all"]:
        return list(POLICIES)
    by_lower = {p.lower(): p for p in POLICIES}
    chosen = []
    for n in names:
        if n.lower() not in by_lower:
            raise ConfigError(
                f"--policies `{n}` is not a policy", f"policies are all, {', '.join(POLICIES)}"
            )
        chosen.append(by_lower[n.lower()])
    return [p for p in POLICIES if p in chosen or p == "DLB"]


def plan(
    *,
    policies: str = "all",
    workloads: str = DEFAULT_WORKLOADS,
    curve: Sequence[str] = (),
    model: Path | None = None,
    jobs: Path | None = None,
    seed: str = "1",
    seeds: int | None = None,
    resolution: str = "1s",
    threads: int | None = None,
    results: Path,
    labels: dict[str, str] | None = None,
    report: bool = True,
    focus: str | None = None,
) -> ServerPlan:
    """Resolves and checks the options of ``iowatt sim server`` (as the CLI spells them)."""
    import os

    chosen = parse_policies(policies)
    job_defs, sets = load_workloads(jobs)
    names = parse_list(workloads, "--workloads")
    for name in names:
        if name not in sets:
            raise ConfigError(
                f"--workloads `{name}` is not a workload set",
                f"sets are {', '.join(sets)}; --jobs FILE adds yours",
            )
    seed_list = parse_seeds(seed, seeds)
    resolution_s = parse_duration(resolution, "--resolution")
    if resolution_s <= 0:
        raise ConfigError(f"--resolution `{resolution}` must be above zero", "e.g. 1s")
    if focus is not None and focus not in names:
        raise ConfigError(f"--focus `{focus}` is not among --workloads", f"e.g. --focus {names[0]}")
    n_threads = check_int(
        os.cpu_count() or 1 if threads is None else threads, "--threads", 1, 1024, "--threads 2"
    )
    out = ServerPlan(
        model=load_model(model),
        jobs=job_defs,
        workloads=[{"name": n, "jobs": sets[n]} for n in names],
        policies=chosen,
        curve=curves.combine(curves.resolve(curve, results)),
        seeds=seed_list,
        resolution_s=resolution_s,
        threads=n_threads,
        results=results,
        labels=labels or {},
        report=report,
        focus=focus or names[0],
    )
    if policies.lower() != "all" and "dlb" not in policies.lower():
        out.notes.append("DLB is simulated too: every figure is against it")
    return out


OnProgress = Callable[[dict[str, Any]], None]


def run(
    config: ServerPlan, on_progress: OnProgress | None = None, note: Callable[[str], None] = print
) -> Path:
    """Simulates the plan and commits the run; returns its directory."""
    from iowatt._engine import ServerSim, drive
    from iowatt.store.writer import RunWriter, new_run_id

    for n in config.notes:
        note(n)
    engine = ServerSim(config.engine_config())  # the whole input checked here
    writer = RunWriter(config.results, new_run_id("sim-server"))
    started_ns = time.time_ns()
    failure: IowattError | None = None
    results: list[dict[str, Any]] | None = None
    try:

        def tick() -> None:
            if on_progress is not None:
                on_progress(dict(engine.progress()))

        with contextlib.suppress(KeyboardInterrupt):  # the engine stopped: its result says so
            drive([engine], tick)
        results = engine.result()
        if any(r["status"] == "cancelled" for r in results) or len(results) < len(
            config.workloads
        ) * len(config.policies) * len(config.seeds):
            failure = RunInterrupted("interrupted")
    except KeyboardInterrupt:
        failure = RunInterrupted("interrupted")
    except BaseException:
        writer.abandon()
        raise
    return record.commit(
        writer,
        results is not None,
        failure,
        lambda: _write(writer, config, results or [], failure, started_ns),
    )


def _write(
    writer: Any,
    config: ServerPlan,
    results: list[dict[str, Any]],
    failure: IowattError | None,
    started_ns: int,
) -> Path:
    from iowatt.sim import tables
    from iowatt.store.catalog import publish

    timed_out = [f"{r['workload']}/{r['policy']}" for r in results if r["status"] == "timed_out"]
    reason = None if failure is None else failure.message
    if timed_out and reason is None:
        reason = f"not done within control.max_sim_s: {', '.join(timed_out)}"
    rows = tables.per_run_rows(writer.run_id, results)
    writer.finish(
        "sim-server",
        reason,
        started_ns=started_ns,
        seed=config.seeds[0],
        labels=config.labels,
        config=config.recorded(),
        summary={
            "curve": config.curve["source"],
            "policies": tables.policy_table(rows),
            "simulated_s": sum(r["service_s"] for r in results),
            "events_total": sum(r["events_total"] for r in results),
        },
    )
    import pyarrow as pa

    from iowatt.store.schemas import POLICY_SCHEMA

    writer.write_table("policies.parquet", pa.Table.from_pylist(rows, POLICY_SCHEMA))
    writer.write_table("sim_series.parquet", tables.series_table(writer.run_id, results))
    writer.write_table("sim_events.parquet", tables.event_table(writer.run_id, results))
    run_dir: Path = publish(writer)
    if config.report:
        from iowatt.report import write_report

        write_report([run_dir], run_dir / "report.html")
    return run_dir


def grid_rows(config: ServerPlan, model: dict[str, Any]) -> list[dict[str, Any]]:
    """One grid point (``iowatt.sim.grid``): the plan under ``model``, its policy table."""
    from iowatt._engine import ServerSim, drive
    from iowatt.sim import tables

    # One thread each: the grid's points are what run in parallel.
    engine = ServerSim({**config.engine_config(), "model": model, "threads": 1})
    drive([engine])
    return tables.policy_table(tables.per_run_rows("", engine.result()))
