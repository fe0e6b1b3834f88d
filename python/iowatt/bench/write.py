"""Committing a bench run: its manifest, summary (with a fio-shaped section), Parquet tables
and, when asked, its report."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from iowatt import __version__
from iowatt.bench.config import BenchConfig, Outcome
from iowatt.bench.power import BenchPower
from iowatt.bench.summary import fio_job, interval_table, latency_table
from iowatt.errors import IowattError
from iowatt.store.catalog import publish
from iowatt.store.schemas import event_table
from iowatt.store.writer import RunWriter
from iowatt.warnings import WarningSink

if TYPE_CHECKING:
    from iowatt.bench.hosts import Fleet


def write_run(
    writer: RunWriter,
    config: BenchConfig,
    outcomes: list[Outcome],
    failure: IowattError | None,
    host: dict[str, Any],
    started_ns: int,
    device: bool,
    power: BenchPower,
    sink: WarningSink,
    fleet: Fleet | None = None,
) -> Path:
    if fleet is not None:
        from iowatt.bench import hosts  # a fleet's tables and sections: only a fleet run's

    results = [o.result for o in outcomes]
    models = {o.wl.name: o.model for o in outcomes}
    summaries = {o.wl.name: o.summary for o in outcomes}
    recorded = {
        "target": str(config.target) if config.target else None,
        "device": device,
        "suite": config.suite,
        "campaign": config.campaign,
        # Each workload's parameters and, once it ran, the model the engine built from them.
        "workloads": [{**wl.recorded(), "model": models.get(wl.name)} for wl in config.workloads],
        "power": {
            "sources": [s.describe() for s in config.power],
            "hz": config.power_hz,
            "idle_s": config.idle_s,
        }
        if config.power
        else None,
        **({"fleet": hosts.manifest_section(fleet)} if fleet else {}),
    }
    fio = {
        "fio version": f"iowatt-{__version__}",
        "timestamp": started_ns // 1_000_000_000,
        "jobs": [fio_job(o.wl.name, o.summary, o.result) for o in outcomes],
    }
    summary: dict[str, Any] = {"workloads": summaries, "fio": fio}
    if fleet is not None:
        summary["hosts"] = hosts.summary_section(fleet)
        hosts.write_tables(writer, fleet)
    power_summary = power.summary(outcomes)
    if power_summary is not None:
        # The power modules load only for a run that recorded power.
        from iowatt.power.summary import warnings as power_warnings

        summary["power"] = power_summary
        sink.extend(power_warnings(power_summary))
    writer.finish(
        "bench",
        None if failure is None else failure.message,
        started_ns=started_ns,
        seed=config.seed,
        labels=config.labels,
        config=recorded,
        summary=summary,
        clock_anchor=config.clock_anchor,
        host=host,
    )
    writer.write_table("intervals.parquet", interval_table(writer.run_id, results))
    writer.write_table("latency.parquet", latency_table(writer.run_id, results))
    if power.data is not None:
        from iowatt.power.record import write_power_files

        write_power_files(writer, power.data, power.t0, sink.events())
    elif events := sink.events():
        writer.write_table("events.parquet", event_table(writer.run_id, power.t0, events))
    run_dir = publish(writer, sink)
    if config.report and outcomes:
        from iowatt.report import write_report  # matplotlib is slow to import; only when needed

        write_report([run_dir], run_dir / "report.html")
    return run_dir
