"""The report's "Web trace replay" section: per replay run, the headline (success rate beside
the log's own, connections per second, the most open at once, lateness), the CDFs of time to
first byte and completion time from the due time — with the min–max envelope across runs when
several are compared, as the study's figures show them — and load, open connections and power
over trace time."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow.compute as pc
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from iowatt.histogram import cdf
from iowatt.report.load import Run
from iowatt.report.plots import _FIGSIZE, Plot, _latency_axis, _legend, _to_svg
from iowatt.store.runs import read_table
from iowatt.units import format_ns, format_rate, format_watts

# Points of the common latency grid the envelope is drawn on.
_GRID = 400


@dataclass(frozen=True)
class ReplayRow:
    run_id: str
    measured: str
    success: str
    log_success: str
    conns_s: str
    max_open: str
    ttfb: str
    completion: str
    lateness: str
    failures: str


@dataclass(frozen=True)
class ReplayView:
    rows: list[ReplayRow]
    plots: list[Plot]


def replay_facts(manifest: Mapping[str, Any]) -> list[tuple[str, str]]:
    """What a replay run's header shows in place of a bench run's target facts."""
    config = manifest.get("config") or {}
    trace = config.get("trace") or {}
    cap = config.get("max_conns") or f"{config.get('conn_limit', '?')} (the open-files limit)"
    return [
        ("server", str(config.get("target"))),
        ("trace", str(trace.get("source"))),
        (
            "speed-up",
            f"{config.get('speedup'):g}×, "
            + (
                "a log second's requests spread evenly"
                if config.get("spread") == "even"
                else "a log second's requests together at its start"
            ),
        ),
        (
            "connections",
            ("kept alive per client" if config.get("keep_alive") else "one per request")
            + f", at most {cap}",
        ),
        (
            "warm-up, cool-down",
            f"{config.get('warmup_s', 0):g} s, {config.get('cooldown_s', 0):g} s of log time",
        ),
        ("timeout", f"{config.get('timeout_s')} s"),
    ]


def _percent(x: Any) -> str:
    return "–" if x is None else f"{x:.1%}"


def _row(run: Run) -> ReplayRow:
    r = run.summary["replay"]
    failures = ", ".join(f"{k} {v:,}" for k, v in r["errors_by_kind"].items()) or "none"
    return ReplayRow(
        run_id=run.run_id,
        measured=f"{r['measured']:,}",
        success=_percent(r["success_rate"]),
        log_success=_percent(r["log_success_rate"]),
        conns_s=format_rate(r["conns_s"]),
        max_open=f"{r['max_open']:,}",
        ttfb=f"{format_ns(r['ttfb_ns']['p50'])} / {format_ns(r['ttfb_ns']['p99'])}",
        completion=(
            f"{format_ns(r['completion_ns']['p50'])} / {format_ns(r['completion_ns']['p99'])}"
        ),
        lateness=f"{format_ns(r['lateness_ns']['p99'])} / {format_ns(r['lateness_ns']['max'])}",
        failures=failures,
    )


def _cdfs(runs: Sequence[Run], flowop: str) -> list[tuple[str, npt.NDArray[Any], npt.NDArray[Any]]]:
    out = []
    for run in runs:
        table = read_table(run.path, "latency.parquet")
        if table is None:
            continue
        rows = table.filter(pc.equal(table["flowop"], flowop))
        if rows.num_rows:
            x, y = cdf(rows["value_ns"].to_numpy(), rows["count"].to_numpy())
            out.append((run.run_id, np.asarray(x, np.float64), np.asarray(y, np.float64)))
    return out


def cdf_plot(runs: Sequence[Run], flowop: str, what: str) -> str | None:
    """Each run's CDF; with several runs, the band between their lowest and highest."""
    lines = _cdfs(runs, flowop)
    if not lines:
        return None
    fig = Figure(figsize=_FIGSIZE, layout="constrained")
    ax = fig.subplots()
    lo = max(min(float(x.min()) for _, x, _ in lines), 1.0)
    hi = max(max(float(x.max()) for _, x, _ in lines), lo * 10)
    if len(lines) > 1:
        grid = np.geomspace(lo, hi, _GRID)
        # A CDF is a step function: at x, the fraction of requests at or below x.
        ys = np.array(
            [
                np.concatenate([[0.0], y])[np.searchsorted(x, grid, side="right")]
                for _, x, y in lines
            ]
        )
        ax.fill_between(grid, ys.min(0), ys.max(0), color="0.8", label="min–max of the runs")
    for i, (run_id, x, y) in enumerate(lines):
        ax.plot(x, y, color=f"C{i % 10}", lw=1.4, label=run_id)
    _latency_axis(ax, float(np.log10(hi / lo)))
    ax.set_ylim(0, 1.02)
    ax.set_xlabel(f"{what}, from the request's due time")
    ax.set_ylabel("fraction of requests")
    ax.grid(alpha=0.3, which="major")
    labels = [run_id for run_id, _, _ in lines]
    _legend(fig, ["min–max of the runs", *labels] if len(lines) > 1 else labels)
    return _to_svg(fig, f"replay-{flowop}")


def load_plot(run: Run) -> str | None:
    """Requests due and answered per second, connections open, and power, over trace time."""
    table = read_table(run.path, "intervals.parquet")
    if table is None or table.num_rows == 0 or "trace_s" not in table.column_names:
        return None
    table = table.sort_by("t_s")
    speedup = float(run.summary["replay"]["speedup"])
    hours = table["trace_s"].to_numpy() / 3600
    panels = 3 if run.power else 2
    fig = Figure(figsize=(_FIGSIZE[0], 2.0 * panels + 0.8), layout="constrained")
    axes = fig.subplots(panels, 1, sharex=True, squeeze=False)[:, 0]
    # Per second of replay; divided by the speed-up it is per second of the log.
    axes[0].plot(
        hours,
        table["intended"].to_numpy() / speedup,
        color="0.5",
        lw=1.0,
        label="due (per log second)",
    )
    axes[0].plot(
        hours,
        table["ops"].to_numpy() / speedup,
        color="C0",
        lw=1.2,
        label="answered (per log second)",
    )
    axes[0].set_ylabel("requests/s")
    axes[0].yaxis.set_major_formatter(FuncFormatter(lambda v, _: format_rate(v)))
    axes[1].plot(
        hours,
        table["open"].to_numpy(),
        color="C1",
        lw=1.2,
        label="connections open (mean over each second)",
    )
    axes[1].set_ylabel("open")
    if run.power:
        for i, (key, (t, watts)) in enumerate(sorted(run.power.items())):
            axes[2].plot(t * speedup / 3600, watts, color=f"C{(i + 2) % 10}", lw=1.2, label=key)
        axes[2].set_ylabel("power")
        axes[2].yaxis.set_major_formatter(FuncFormatter(lambda v, _: format_watts(v)))
    for ax in axes:
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small", frameon=False, loc="upper left")
    axes[-1].set_xlabel("trace time (h)")
    return _to_svg(fig, f"replay-load-{run.run_id}")


def replay_view(runs: Sequence[Run]) -> ReplayView | None:
    replays = [r for r in runs if r.kind == "replay" and "replay" in r.summary]
    if not replays:
        return None
    plots = [
        Plot(
            "replay-ttfb",
            "Time to first byte from each request's due time (CDF).",
            cdf_plot(replays, "ttfb", "time to first byte"),
        ),
        Plot(
            "replay-completion",
            "Completion time (last byte) from each request's due time.",
            cdf_plot(replays, "completion", "completion time"),
        ),
    ]
    for run in replays:
        plots.append(
            Plot(
                f"replay-load-{run.run_id}",
                f"{run.run_id}: load, open connections and power over the log's own time.",
                load_plot(run),
            )
        )
    return ReplayView([_row(r) for r in replays], plots)
