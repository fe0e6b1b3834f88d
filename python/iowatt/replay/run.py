"""Running a planned replay: power around it, the engine driven to its end, the run written.

The run is written whatever happens after the first request could have gone out — finished,
stopped by Ctrl-C or SIGTERM, or failed — with every completed request; only then is the error
that stopped it raised again. A target that refuses the probe connection is refused before the
schedule starts, and nothing is written.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from pathlib import Path

from iowatt._engine import Replay, ReplayProgress, ReplayResult, drive
from iowatt.errors import IowattError, RunInterrupted, TargetError
from iowatt.live.board import board
from iowatt.power.record import write_power_files
from iowatt.power.session import PowerSession
from iowatt.power.summary import Window, summarize
from iowatt.power.summary import warnings as power_warnings
from iowatt.replay.plan import ReplayConfig, buffers, window
from iowatt.replay.results import Records, interval_table, latency_table, requests_table, summary
from iowatt.store.catalog import publish
from iowatt.store.schemas import event_table
from iowatt.store.writer import RunWriter, new_run_id
from iowatt.warnings import WarningSink

OnProgress = Callable[[ReplayProgress], None]


def run(
    config: ReplayConfig,
    on_progress: OnProgress | None = None,
    sink: WarningSink | None = None,
    note: Callable[[str], None] = lambda _: None,
) -> Path:
    """Replays the trace and commits the run; returns its directory."""
    sink = sink or WarningSink()
    n, columns, methods, hosts = buffers(config)
    measured = window(config)
    engine = Replay(
        n,
        columns,
        methods,
        hosts,
        target=config.target,
        host=config.host_header,
        max_conns=config.conn_limit,
        keep_alive=config.keep_alive,
        timeout_s=config.timeout_s,
        threads=config.threads,
        window=measured,
        ca_pem=config.ca_pem,
        insecure=config.insecure,
    )
    writer = RunWriter(config.results, new_run_id("replay"))
    board().begin(writer.run_id, "replay", config.labels)
    board().watch_engine(engine, workload="requests")
    started_ns = time.time_ns()
    config.clock_anchor = (started_ns, time.monotonic_ns())
    power = PowerSession(config.power, config.power_hz, config.idle_s, config.clock_anchor)
    failure: IowattError | None = None
    result: ReplayResult | None = None
    try:
        power.start(note)

        def tick() -> None:
            if on_progress is not None:
                on_progress(engine.progress())
            power.drain()

        with contextlib.suppress(KeyboardInterrupt):  # the engine stopped: its result says so
            drive([engine], tick)
        result = engine.result()
        if result["status"] == "cancelled":
            failure = RunInterrupted("interrupted")
    except TargetError as e:
        writer.abandon()
        if e.kind == "unreachable":
            raise TargetError(f"--target {config.target}: {e.message}", e.hint) from None
        raise
    except KeyboardInterrupt:
        failure = RunInterrupted("interrupted")
    except IowattError as e:
        failure = e
    except BaseException:
        writer.abandon()
        raise
    finally:
        power.stop()
    if result is None:
        writer.abandon()
        raise failure or RunInterrupted("interrupted")
    run_dir = _write(writer, config, result, measured, failure, started_ns, power, sink)
    if failure is not None:
        raise failure
    return run_dir


def _write(
    writer: RunWriter,
    config: ReplayConfig,
    result: ReplayResult,
    measured: tuple[int, int],
    failure: IowattError | None,
    started_ns: int,
    power: PowerSession,
    sink: WarningSink,
) -> Path:
    status = "complete" if failure is None else "incomplete"
    records = Records.of(result, measured)
    t0 = result["t0_ns"]
    head = summary(config, records, result, status)
    if power.data is not None:
        start, end = records.span()
        replayed = head["workloads"]["replay"]
        work = Window(t0 + start, t0 + end, replayed["ops"], replayed["bytes"])
        head["power"] = summarize(power.data, t0, work, power.idle, {"replay": work})
        sink.extend(power_warnings(head["power"]))
    writer.finish(
        "replay",
        None if failure is None else failure.message,
        started_ns=started_ns,
        seed=None,
        labels=config.labels,
        config=config.recorded(),
        summary=head,
        clock_anchor=config.clock_anchor,
    )
    writer.write_table("requests.parquet", requests_table(writer.run_id, config, records))
    writer.write_table("intervals.parquet", interval_table(writer.run_id, config, records, t0))
    writer.write_table("latency.parquet", latency_table(writer.run_id, result["histograms"]))
    if power.data is not None:
        write_power_files(writer, power.data, t0, sink.events())
    elif sink.recorded:
        writer.write_table("events.parquet", event_table(writer.run_id, t0, sink.events()))
    run_dir = publish(writer, sink)
    if config.report:
        from iowatt.report import write_report  # matplotlib is slow to import; only when needed

        write_report([run_dir], run_dir / "report.html")
    return run_dir
