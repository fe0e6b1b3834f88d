"""The report's hosts section of a fleet run: per workload, each host against the fleet (its
rate's interval and verdict), its latency, start skew and clock offset; the fleet's first-done
and last-done rates; each host's latency CDF and throughput over time."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from iowatt.compare.hosts import host_table
from iowatt.histogram import cdf
from iowatt.report import plots
from iowatt.report.load import Run
from iowatt.report.plots import Line, Plot, series_style
from iowatt.units import format_ns, format_offset, format_rate


@dataclass(frozen=True)
class HostRow:
    host: str
    target: str
    ops_s: str
    mib_s: str
    p50: str
    p99: str
    vs_fleet: str
    interval: str
    verdict: str
    skew: str
    offset: str
    status: str


@dataclass(frozen=True)
class HostsView:
    run_id: str
    workload: str
    rows: list[HostRow]
    fleet: str
    plots: list[Plot]


def host_views(runs: Sequence[Run]) -> list[HostsView]:
    """One view per workload of every fleet run among ``runs`` (none for one-host runs)."""
    views: list[HostsView] = []
    for run in runs:
        table = host_table(run.path)
        if not table:
            continue
        # Read once per run: each workload's plots take their rows of them.
        latency = _columns(run, "host_latency.parquet")
        seconds = _columns(run, "host_intervals.parquet")
        for wl, rows in table.items():
            merged = run.summary.get("workloads", {}).get(wl) or {}
            hosts = [r["host"] for r in rows]
            plot = _plots(
                wl, _rows_of(latency, wl), _rows_of(seconds, wl), hosts, f"hosts{len(views)}"
            )
            views.append(
                HostsView(run.run_id, wl, [_row(r) for r in rows], _fleet_line(merged), plot)
            )
    return views


def _row(r: dict[str, Any]) -> HostRow:
    def ns(v: int | None) -> str:
        return format_ns(v) if v is not None else "–"

    def pct(v: float | None) -> str:
        return f"{v:+.1f} %" if v is not None and v == v else "–"

    ok = r["status"] == "complete"
    return HostRow(
        r["host"],
        r["target"] or "(a temporary directory)",
        format_rate(r["ops_s"]) if r["ops_s"] is not None else "–",
        f"{r['mib_s']:.1f}" if r["mib_s"] is not None else "–",
        ns(r["p50_ns"]),
        ns(r["p99_ns"]),
        pct(r["pct"]),
        f"{pct(r['ci_low'])} … {pct(r['ci_high'])}" if r["ci_low"] is not None else "–",
        r["verdict"],
        ns(r["start_skew_ns"]),
        format_offset(r["offset_ns"], r["delay_ns"]),
        "complete" if ok else f"{r['status']}: {r['reason']}",
    )


def _fleet_line(merged: dict[str, Any]) -> str:
    f = merged.get("fleet")
    if not f:
        return ""
    return (
        f"{f['measured_hosts']} of {f['hosts']} hosts measured. Until the last host was done "
        f"({f['last_done_s']:.2f} s): {format_rate(f['last_done_ops_s'])} ops/s, "
        f"{f['last_done_mib_s']:.1f} MiB/s; until the first ({f['first_done_s']:.2f} s): "
        f"{format_rate(f['first_done_ops_s'])} ops/s, {f['first_done_mib_s']:.1f} MiB/s. "
        f"Start skew {format_ns(f['start_skew_ns'])}."
    )


def _plots(
    wl: str, latency: _Columns, seconds: _Columns, hosts: list[str], name: str
) -> list[Plot]:
    merged = latency["flowop"] == None  # noqa: E711 - the workload's own histogram
    cdfs, timelines = [], []
    for i, host in enumerate(hosts):
        style = series_style(host, i, 0)
        mine = merged & (latency["host"] == host)
        if mine.any():
            cdfs.append(Line(style, *cdf(latency["value_ns"][mine], latency["count"][mine])))
        mine = seconds["host"] == host
        if mine.any():
            middle = seconds["t_s"][mine] + seconds["duration_s"][mine] / 2
            timelines.append(Line(style, middle, seconds["ops_s"][mine]))
    return [
        Plot(
            "host-latency-cdf",
            f"{wl}: each host's latency CDF (log scale).",
            plots.latency_cdf(cdfs, f"{name}-cdf"),
        ),
        Plot(
            "host-throughput",
            f"{wl}: each host's operations per second, from the common start.",
            plots.throughput_over_time(timelines, f"{name}-timeline"),
        ),
    ]


_Columns = dict[str, np.ndarray[Any, Any]]


def _columns(run: Run, file: str) -> _Columns:
    """A per-host file as NumPy columns (the report loads no pandas)."""
    table = pq.read_table(run.path / file).to_pydict()
    return {
        k: np.array(v, dtype=object if k in ("host", "flowop", "workload") else None)
        for k, v in table.items()
        if k not in ("slow_ns", "slow_ops")
    }


def _rows_of(columns: _Columns, wl: str) -> _Columns:
    keep = columns["workload"] == wl
    return {k: v[keep] for k, v in columns.items()}
