"""The report of server simulations (kind ``sim-server``), answer first: the policy table, the
study's two figures — service-job speed-up and batch-job penalty per workload and policy, and
energy savings by component — then the time series of one workload under every policy."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.compute as pc
from matplotlib.figure import Figure

from iowatt.report.plots import _legend, _to_svg
from iowatt.store.runs import read_manifest, read_summary, read_table
from iowatt.units import format_duration, format_joules

COMPONENTS = ("socket", "memory", "fans", "total")


@dataclass(frozen=True)
class PolicyRow:
    workload: str
    policy: str
    service: str
    speedup: str
    batch: str
    savings: list[str]
    peak: str
    gating: str
    energy: str


@dataclass(frozen=True)
class SimView:
    run_id: str
    status: str
    reason: str | None
    curve: str
    facts: list[tuple[str, str]]
    rows: list[PolicyRow]
    figures: list[tuple[str, str, str]]  # (name, caption, svg)


def _pct(v: float | None) -> str:
    return "–" if v is None else f"{v:+.1%}"


def _policies(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    return list(dict.fromkeys(r["policy"] for r in rows))


def _workloads(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    return list(dict.fromkeys(r["workload"] for r in rows))


def _grouped_bars(
    ax: Any, groups: list[str], series: dict[str, list[float]], labelled: bool = True
) -> None:
    width = 0.8 / max(len(series), 1)
    x = np.arange(len(groups))
    for i, (name, values) in enumerate(series.items()):
        ax.bar(
            x + (i - (len(series) - 1) / 2) * width,
            values,
            width,
            label=name if labelled else None,
            color=f"C{i}",
        )
    ax.set_xticks(x, groups)
    ax.axhline(0, color="#444", linewidth=0.8)
    ax.yaxis.set_major_formatter(lambda v, _: f"{v:.0%}")
    ax.grid(axis="y", alpha=0.3)


def _value(v: float | None) -> float:
    return float("nan") if v is None else float(v)


def speedup_figure(rows: Sequence[Mapping[str, Any]]) -> str:
    """Service-job speed-up and batch-job slowdown against DLB, per workload and policy."""
    workloads, policies = _workloads(rows), [p for p in _policies(rows) if p != "DLB"]
    by = {(r["workload"], r["policy"]): r for r in rows}
    fig = Figure(figsize=(9.0, 5.2), layout="constrained")
    top, bottom = fig.subplots(2, 1, sharex=True)
    _grouped_bars(
        top,
        workloads,
        {
            p: [_value(by[w, p]["speedup_vs_dlb"]) if (w, p) in by else np.nan for w in workloads]
            for p in policies
        },
    )
    top.set_ylabel("service speed-up")
    _grouped_bars(
        bottom,
        workloads,
        {
            p: [_value(by[w, p]["batch_slowdown"]) if (w, p) in by else np.nan for w in workloads]
            for p in policies
        },
        labelled=False,
    )
    bottom.set_ylabel("batch slowdown")
    _legend(fig, policies)
    return _to_svg(fig, "sim-speedup")


def energy_figure(rows: Sequence[Mapping[str, Any]]) -> str:
    """Energy saved against DLB by component, each policy's mean over the workloads."""
    policies = [p for p in _policies(rows) if p != "DLB"]
    fig = Figure(figsize=(9.0, 3.4), layout="constrained")
    ax = fig.subplots()
    series = {}
    for c in COMPONENTS:
        means = []
        for p in policies:
            savings = [_value(r["energy_saving_vs_dlb"][c]) for r in rows if r["policy"] == p]
            means.append(float(np.nanmean(savings)))
        series[c] = means
    _grouped_bars(ax, policies, series)
    ax.set_ylabel("energy saved vs DLB")
    _legend(fig, list(COMPONENTS))
    return _to_svg(fig, "sim-energy")


_PANELS = (
    ("core_max_c", "hottest core, °C"),
    ("pwm", "fan PWM, %"),
    ("disk_mb_s", "disk MB/s"),
    ("cache_gb", "SSD cache, GB"),
    ("socket_w", "socket W"),
    ("gating", "gating share"),
)


def series_figure(run_dir: Path, workload: str) -> str | None:
    """One workload's time series under every policy (the first seed)."""
    table = read_table(run_dir, "sim_series.parquet")
    if table is None or table.num_rows == 0:
        return None
    table = table.filter(pc.equal(table["workload"], workload))
    if table.num_rows == 0:
        return None
    seed = pc.min(table["seed"]).as_py()
    table = table.filter(pc.equal(table["seed"], seed))
    fig = Figure(figsize=(9.0, 7.0), layout="constrained")
    axes = fig.subplots(3, 2, sharex=True).ravel()
    policies = list(dict.fromkeys(table["policy"].to_pylist()))
    for i, policy in enumerate(policies):
        part = table.filter(pc.equal(table["policy"], policy))
        t = part["t_s"].to_numpy()
        for ax, (column, _) in zip(axes, _PANELS, strict=True):
            label = policy if ax is axes[0] else None
            ax.plot(t, part[column].to_numpy(), color=f"C{i}", linewidth=1.0, label=label)
    for ax, (_, title) in zip(axes, _PANELS, strict=True):
        ax.set_title(title, fontsize=9)
        ax.grid(alpha=0.3)
    for ax in axes[-2:]:
        ax.set_xlabel("simulated time, s")
    _legend(fig, policies)
    return _to_svg(fig, "sim-series")


def sim_view(run_dir: Path) -> SimView:
    manifest, summary = read_manifest(run_dir), read_summary(run_dir)
    rows = summary.get("policies") or []
    config = manifest.get("config") or {}
    out = []
    for r in rows:
        ci = r.get("speedup_ci95")
        baseline = r["policy"] == "DLB"
        speedup = "baseline" if baseline else _pct(r["speedup_vs_dlb"])
        if ci and not baseline:
            speedup += f" [{ci[0]:+.1%}, {ci[1]:+.1%}]"
        out.append(
            PolicyRow(
                workload=r["workload"],
                policy=r["policy"],
                service=format_duration(r["service_time_s"]),
                speedup=speedup,
                batch=_pct(r["batch_slowdown"]),
                savings=[_pct(r["energy_saving_vs_dlb"][c]) for c in COMPONENTS],
                peak=f"{r['peak_temp_c']:.1f} °C",
                gating=format_duration(r["gating_s"]),
                energy=format_joules(r["energy_j"]["total"]),
            )
        )
    figures = []
    if rows:
        figures.append(
            (
                "speedup",
                "Service-job speed-up (T_DLB / T − 1) and batch-job slowdown,"
                " per workload and policy.",
                speedup_figure(rows),
            )
        )
        figures.append(
            (
                "energy",
                "Energy saved against DLB by component (socket: cores, L3 and"
                " crossbar), mean over the workloads.",
                energy_figure(rows),
            )
        )
    focus = config.get("focus") or (rows[0]["workload"] if rows else None)
    if focus is not None and (svg := series_figure(run_dir, focus)) is not None:
        figures.append(("series", f"{focus} under each policy over simulated time.", svg))
    seeds = config.get("seeds") or []
    facts = [
        ("workloads", ", ".join(w["name"] for w in config.get("workloads") or [])),
        ("policies", ", ".join(config.get("policies") or [])),
        ("seeds", ", ".join(str(s) for s in seeds)),
        ("curve", summary.get("curve", "–")),
        ("simulated", format_duration(float(summary.get("simulated_s", 0.0)))),
    ]
    return SimView(
        run_id=manifest["run_id"],
        status=manifest["status"],
        reason=manifest.get("reason"),
        curve=summary.get("curve", "–"),
        facts=facts,
        rows=out,
        figures=figures,
    )
