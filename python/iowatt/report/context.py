"""What the template shows: runs, their host facts, and one row per (run, workload).

Everything here is plain data already formatted for people; exact values ride along (``ns``,
``count``) so the HTML can carry them next to the rounded text.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import numpy as np
import numpy.typing as npt

from iowatt.histogram import cdf, percentile
from iowatt.report import plots
from iowatt.report.load import Run
from iowatt.report.plots import Bar, Line, Plot, PowerPanel, Style
from iowatt.report.replay import replay_facts
from iowatt.report.sweep import sweep_facts
from iowatt.report.tails import TailCell, tail_cells
from iowatt.units import (
    format_bytes,
    format_duration,
    format_joules,
    format_ns,
    format_rate,
    format_watts,
)

# The percentiles the report tabulates; 100 is the maximum.
PERCENTILES: tuple[float, ...] = (50.0, 90.0, 99.0, 99.9, 99.99, 100.0)


@dataclass(frozen=True)
class RunView:
    """A run's header: identity, status and where it ran."""

    run_id: str
    # `quiet #2`: the run's name in tables ("" for the only run of a report)
    short: str
    kind: str
    status: str
    reason: str | None
    started: str
    duration: str
    labels: dict[str, str]
    facts: list[tuple[str, str]]

    @property
    def incomplete(self) -> bool:
        """Whether the run stopped before finishing what it was asked to do."""
        return self.status != "complete"


@dataclass(frozen=True)
class Cell:
    """A latency cell: human text, with the exact ns kept for the HTML."""

    text: str
    ns: int


@dataclass(frozen=True)
class WorkloadRow:
    """One (run, workload): its throughput and, when it has a histogram, its percentiles."""

    run_id: str
    short: str
    workload: str
    style: Style
    ops: str
    ops_s: str
    mib_s: str
    errors: str
    runtime: str
    samples: int
    percentiles: list[Cell]
    # the share of operations above each of the report's slow thresholds
    tails: list[TailCell]
    # a run with a schedule: its achieved rate against the requested one ("" without one)
    schedule: str = ""
    rate_held: bool = True


def _timestamp(ns: Any) -> str:
    if not isinstance(ns, int):
        return "unknown"
    return datetime.fromtimestamp(ns / 1e9, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _fact(value: Any) -> str:
    return "unknown" if value is None else str(value)


def _machine_facts(host: dict[str, Any]) -> list[tuple[str, str]]:
    mem = host.get("mem_bytes")
    cpu = _fact(host.get("cpu_model"))
    if host.get("ncpus"):
        cpu += f" ({host['ncpus']} CPUs)"
    return [
        ("host", _fact(host.get("hostname"))),
        ("kernel", _fact(host.get("kernel"))),
        ("cpu", cpu),
        ("memory", format_bytes(mem) if isinstance(mem, int) else "unknown"),
    ]


def _host_facts(host: dict[str, Any]) -> list[tuple[str, str]]:
    target = host.get("target") or {}
    spins = target.get("rotational")
    rotational = None if spins is None else "yes (HDD)" if spins else "no (SSD/NVMe)"
    return [
        *_machine_facts(host),
        ("target", _fact(target.get("path"))),
        ("file system", f"{_fact(target.get('fs_type'))} on {_fact(target.get('mount_point'))}"),
        ("device", f"{_fact(target.get('device'))} ({_fact(target.get('device_model'))})"),
        ("rotational", _fact(rotational)),
        ("scheduler", _fact(target.get("scheduler"))),
        ("logical block", _fact(target.get("logical_block_size"))),
    ]


def short_labels(runs: Sequence[Run]) -> dict[str, str]:
    """A short name per run for tables and charts, the id kept for hover: ``quiet #2`` (the
    second run of env=quiet, in start order), ``run 3``, or nothing for a single run."""
    if len(runs) == 1:
        return {runs[0].run_id: ""}
    order = sorted(runs, key=lambda r: (r.manifest.get("started_ns") or 0, r.run_id))
    seen: dict[str, int] = {}
    out = {}
    for i, run in enumerate(order, 1):
        env = (run.manifest.get("labels") or {}).get("env")
        if env is None:
            out[run.run_id] = f"run {i}"
        else:
            seen[env] = seen.get(env, 0) + 1
            out[run.run_id] = f"{env} #{seen[env]}"
    return out


def run_view(run: Run, short: str = "") -> RunView:
    """The header of one run; a sweep shows its stimulus and disks, a replay its server and
    trace, instead of one target."""
    m = run.manifest
    host = m.get("host") or {}
    if run.kind == "sweep":
        facts = _machine_facts(host) + sweep_facts(m)
    elif run.kind == "replay":
        facts = _machine_facts(host) + replay_facts(m)
    else:
        facts = _host_facts(host)
    started, ended = m.get("started_ns"), m.get("ended_ns")
    duration = "unknown"
    if isinstance(started, int) and isinstance(ended, int):
        duration = format_duration((ended - started) / 1e9)
    return RunView(
        run_id=run.run_id,
        short=short,
        kind=_fact(m.get("kind")),
        status=_fact(m.get("status")),
        reason=m.get("reason"),
        started=_timestamp(started),
        duration=duration,
        labels={str(k): str(v) for k, v in (m.get("labels") or {}).items()},
        facts=facts,
    )


def _number(summary: dict[str, Any], key: str, fmt: Callable[[Any], str]) -> str:
    value = summary.get(key)
    return fmt(value) if isinstance(value, int | float) else "—"


def workload_row(
    run: Run, workload: str, style: Style, thresholds: Sequence[int] = (), short: str = ""
) -> WorkloadRow:
    """Throughput from summary.json; exact percentiles and shares above each of
    ``thresholds`` (ns) from latency.parquet."""
    summary = run.summary.get("workloads", {}).get(workload, {})
    hist = run.latency.get(workload)
    cells = []
    if hist is not None and hist.total:
        for p in PERCENTILES:
            ns = percentile(hist.values_ns, hist.counts, p)
            cells.append(Cell(format_ns(ns), ns))
    return WorkloadRow(
        run_id=run.run_id,
        short=short,
        workload=workload,
        style=style,
        ops=_number(summary, "ops", lambda v: f"{v:,}"),
        ops_s=_number(summary, "ops_s", format_rate),
        mib_s=_number(summary, "mib_s", format_rate),
        errors=_number(summary, "errors", lambda v: f"{v:,}"),
        runtime=_number(summary, "runtime_s", format_duration),
        samples=hist.total if hist is not None else 0,
        percentiles=cells,
        tails=tail_cells(run, workload, thresholds),
        schedule=_schedule(summary),
        rate_held=summary.get("rate_held", True) is not False,
    )


def _schedule(summary: dict[str, Any]) -> str:
    """``101 of 200 ops/s, not held``: an open-loop run's rate against its schedule."""
    requested, achieved = summary.get("requested_rate"), summary.get("achieved_rate")
    if not isinstance(requested, int | float) or not isinstance(achieved, int | float):
        return ""
    text = f"{format_rate(achieved)} of {format_rate(requested)} {summary.get('rate_unit', '')}"
    return text if summary.get("rate_held", True) else f"{text}, not held"


def styles(runs: Sequence[Run]) -> dict[tuple[str, str], Style]:
    """A style per (run id, workload): one colour per workload name across all runs."""
    names = list(dict.fromkeys(w for run in runs for w in run.workloads))
    several = len(runs) > 1
    return {
        (run.run_id, w): plots.series_style(
            f"{w} · {run.run_id}" if several else w, names.index(w), i
        )
        for i, run in enumerate(runs)
        for w in run.workloads
    }


def build_plots(
    runs: Sequence[Run],
    style: dict[tuple[str, str], Style],
    short: dict[str, str],
    shown: Sequence[Run],
) -> list[Plot]:
    """The three figures, in page order: bars of the ``shown`` runs (the runs, or each
    environment's pooled), named by their ``short`` labels. Past :data:`BAND_AFTER` runs, the
    latency and over-time figures draw each workload (in each environment) as a band: the runs'
    median and their min–max."""
    bars, cdfs, timelines = [], [], []
    for run in shown:
        for w in run.workloads:
            summary = run.summary.get("workloads", {}).get(w)
            if summary and summary.get("ops"):
                name = short.get(run.run_id) or run.run_id
                color = style[run.run_id, w].color
                bars.append(Bar(name, w, color, summary["ops_s"], summary["mib_s"]))
    banded = len(runs) > BAND_AFTER
    banded_note = (
        "; each workload (in each environment): the runs' median, shaded to their min and max."
    )
    for run in [] if banded else runs:
        for w in run.workloads:
            s = style[run.run_id, w]
            if w in run.latency:
                cdfs.append(Line(s, *cdf(run.latency[w].values_ns, run.latency[w].counts)))
            if w in run.intervals:
                series = run.intervals[w]
                # Each rate describes its whole interval, so it is drawn at the middle.
                middle = series["t_s"] + series["duration_s"] / 2
                timelines.append(Line(s, middle, series["ops_s"]))
    return [
        Plot(
            "throughput",
            "Operations and MiB per second over each workload's measured phase.",
            plots.throughput_bars(bars),
        ),
        Plot(
            "latency-cdf",
            "Fraction of operations completed within a latency (log scale), all flowops merged"
            + (banded_note if banded else "."),
            plots.latency_cdf(cdfs, bands=_cdf_bands(runs) if banded else ()),
        ),
        Plot(
            "throughput-over-time",
            "Operations per second in each 1 s interval, drawn at the interval's middle"
            + (banded_note if banded else "."),
            plots.throughput_over_time(timelines, bands=_timeline_bands(runs) if banded else ()),
        ),
    ]


# More runs than this and the latency and over-time figures draw bands instead of lines.
BAND_AFTER = 4
_GRID = 120


def _groups(runs: Sequence[Run]) -> dict[tuple[str, str], list[Run]]:
    """The runs of each (workload, env label), in order of appearance."""
    out: dict[tuple[str, str], list[Run]] = {}
    for run in runs:
        env = str((run.manifest.get("labels") or {}).get("env", ""))
        for w in run.workloads:
            out.setdefault((w, env), []).append(run)
    return out


def _band(
    key: tuple[str, str],
    k: int,
    n: int,
    x: npt.NDArray[np.float64],
    ys: list[npt.NDArray[np.float64]],
) -> plots.Band:
    w, env = key
    stack = np.vstack(ys)
    some = ~np.isnan(stack).all(axis=0)  # a point no run reaches is left out
    x, stack = x[some], stack[:, some]
    return plots.Band(
        f"{w}{' · ' + env if env else ''} ({n} runs)",
        f"C{k % 10}",
        x,
        np.nanmin(stack, axis=0),
        np.nanmedian(stack, axis=0),
        np.nanmax(stack, axis=0),
    )


def _cdf_bands(runs: Sequence[Run]) -> list[plots.Band]:
    """Each group's CDFs on one log-spaced latency grid."""
    bands = []
    for k, (key, group) in enumerate(_groups(runs).items()):
        hists = [h for r in group if (h := r.latency.get(key[0])) is not None and h.total]
        if not hists:
            continue
        curves = [cdf(h.values_ns, h.counts) for h in hists]
        lo = max(min(float(x.min()) for x, _ in curves), 1.0)
        hi = max(max(float(x.max()) for x, _ in curves), lo * 1.01)
        grid = np.geomspace(lo, hi, _GRID)
        ys = [
            np.interp(np.log(grid), np.log(np.maximum(x, 1.0)), y, left=0.0, right=1.0)
            for x, y in curves
        ]
        bands.append(_band(key, k, len(hists), grid, ys))
    return bands


def _timeline_bands(runs: Sequence[Run]) -> list[plots.Band]:
    """Each group's ops/s per interval on one time grid; past a run's end it has no value."""
    bands = []
    for k, (key, group) in enumerate(_groups(runs).items()):
        series = [s for r in group if (s := r.intervals.get(key[0])) is not None and s["t_s"].size]
        if not series:
            continue
        middles = [s["t_s"] + s["duration_s"] / 2 for s in series]
        grid = np.linspace(
            min(float(m.min()) for m in middles), max(float(m.max()) for m in middles), _GRID
        )
        ys = [
            np.interp(grid, m, s["ops_s"], left=np.nan, right=np.nan)
            for m, s in zip(middles, series, strict=True)
        ]
        bands.append(_band(key, k, len(series), grid, ys))
    return bands


@dataclass(frozen=True)
class EnergyRow:
    """One channel of one run over its work window."""

    run_id: str
    channel: str
    headline: bool
    energy: str
    avg: str
    peak: str
    above_idle: str
    per_op: str
    gaps: str


def energy_rows(runs: Sequence[Run]) -> list[EnergyRow]:
    rows = []
    for run in runs:
        power = run.summary.get("power") or {}
        for key, e in (power.get("work") or {}).items():
            per_op = e.get("j_per_op")
            rows.append(
                EnergyRow(
                    run_id=run.run_id,
                    channel=key,
                    headline=key == power.get("headline"),
                    energy=format_joules(e.get("energy_j")),
                    avg=format_watts(e.get("avg_w")),
                    peak=format_watts(e.get("peak_w")),
                    above_idle=format_joules(e.get("dynamic_j")),
                    per_op=format_joules(per_op) if per_op is not None else "—",
                    gaps=format_duration(e["gap_s"]) if e.get("gap_s") else "",
                )
            )
    return rows


def power_plots(runs: Sequence[Run]) -> list[Plot]:
    """Per run, one panel per power source with the run's throughput on the same time axis."""
    out = []
    for i, run in enumerate(runs):
        if not run.power:
            continue
        t0 = (run.summary.get("power") or {}).get("t0_ns")
        throughput = _throughput_since(run, t0) if isinstance(t0, int) else None
        sources: dict[str, list[tuple[str, Any, Any]]] = {}
        for key, (t, watts) in run.power.items():
            source, _, channel = key.partition("/")
            sources.setdefault(source, []).append((channel, t, watts))
        panels = [PowerPanel(src, chans, throughput) for src, chans in sources.items()]
        out.append(
            Plot(
                f"power-{i}",
                f"Power of each channel of run {run.run_id}; dashed: operations per second.",
                plots.power_over_time(panels, f"power{i}"),
            )
        )
    return out


def _throughput_since(run: Run, t0_ns: int) -> tuple[Any, Any] | None:
    """All workloads' ops/s at each interval's middle, in seconds since ``t0_ns``."""
    xs, ys = [], []
    for series in run.intervals.values():
        if "mono_ns" not in series or not series["mono_ns"].size:
            continue
        xs.append((series["mono_ns"] - t0_ns) / 1e9 + series["duration_s"] / 2)
        ys.append(series["ops_s"])
    if not xs:
        return None
    x, y = np.concatenate(xs), np.concatenate(ys)
    order = np.argsort(x)
    return x[order], y[order]
