"""The report of an emulated disk (kind ``emulate``), answer first: what it served, how fast,
what each request was charged and what it cost, per power state; then latency over the run,
the power states over the run and the latency CDF. A run the guardian committed after the
mount process was killed has only the journaled counters: the page says so and shows them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.compute as pc
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from iowatt.report.plots import Line, _legend, _to_svg, latency_cdf, series_style
from iowatt.store.runs import read_manifest, read_summary, read_table
from iowatt.units import format_bytes, format_duration, format_joules, format_ns, format_watts

# The states in the order they stack, each with the colour it keeps in every figure.
STATES = {
    "busy": "#c0392b",
    "idle": "#2a9d8f",
    "spinning_up": "#e69f00",
    "spinning_down": "#6a3d9a",
    "standby": "#1f78b4",
}
_BINS = 200  # of the state timeline
_CDF_POINTS = 2000  # quantiles drawn of a long request list


@dataclass(frozen=True)
class StateRow:
    state: str
    color: str
    time: str
    share: str
    energy: str
    watts: str


@dataclass(frozen=True)
class DiskRow:
    """One disk's energy (or the array's, summed), by power state."""

    disk: str
    energy: str
    share: str
    states: list[str]  # J in each of the view's ``disk_states``
    standby: str
    cycles: str
    most_a_day: str


@dataclass(frozen=True)
class EmulateView:
    run_id: str
    status: str
    reason: str | None
    incomplete: str | None  # what an incomplete run still has, said above its table
    answer: list[tuple[str, str]]
    states: list[StateRow]
    figures: list[tuple[str, str, str]]  # (name, caption, svg)
    notes: list[str]
    facts: list[tuple[str, str]]
    title: str = "Emulated disk"
    # An array's: the states of its table's columns, and a row per disk and for the array.
    disk_states: list[str] = field(default_factory=list)
    disks: list[DiskRow] = field(default_factory=list)


def _ns(v: float | None) -> str:
    return "–" if v is None else format_ns(v)


def _answer(disk: Mapping[str, Any], label: str) -> list[tuple[str, str]]:
    """The table's rows from the summary's ``disk`` section (or what counters hold of it)."""
    seconds = float(disk["seconds"])
    lat, charge = disk.get("latency_ns") or {}, disk.get("mean_charge_s") or {}
    requests = f"{disk['requests']:,} ({disk['read_ops']:,} reads, {disk['write_ops']:,} writes"
    requests += f"; {disk['drained']:,} answered unserved at unmount)"
    rows = [
        ("disk model", label),
        ("requests", requests),
        ("time", format_duration(seconds)),
        ("ops/s", f"{disk['ops_s']:,.1f}"),
        ("MiB/s", f"{disk['mib_s']:,.2f} ({format_bytes(disk['bytes'])})"),
        ("latency p50", _ns(lat.get("p50"))),
        ("latency p99", _ns(lat.get("p99"))),
        ("latency max", _ns(lat.get("max"))),
        ("latency mean", _ns(lat.get("mean"))),
    ]
    for part in ("seek", "rotation", "transfer", "overhead"):
        v = charge.get(part)
        rows.append((f"mean {part}", "–" if v is None else format_ns(v * 1e9)))
    if charge.get("slowdown"):
        rows.append(("mean slowdown (curve)", format_ns(charge["slowdown"] * 1e9)))
    rows.append(("mean queueing", _ns(disk.get("mean_queued_ns"))))
    energy = float(disk["energy_j"])
    rows += [
        ("energy", format_joules(energy)),
        ("mean power", format_watts(energy / seconds) if seconds > 0 else "–"),
        ("spin cycles", f"{disk['spin_cycles']:,}"),
    ]
    return rows


def _from_counters(c: Mapping[str, Any]) -> dict[str, Any]:
    """The ``disk`` section's fields the journaled counters hold."""
    seconds, nbytes = float(c["t_s"]), c["read_bytes"] + c["write_bytes"]
    ops = c["read_ops"] + c["write_ops"]
    state_s, state_j = c.get("state_s"), c.get("state_j")
    if state_s is None:
        # An array's journal: its disks' times (disk-seconds) and energy per state added up.
        disks = c.get("disks") or []

        def added(key: str) -> dict[str, float]:
            return {s: sum(d[key][s] for d in disks) for s in (disks[0][key] if disks else {})}

        state_s, state_j = added("state_s"), added("state_j")
    return {
        "seconds": seconds,
        "requests": ops,
        "read_ops": c["read_ops"],
        "write_ops": c["write_ops"],
        "drained": c["drained"],
        "bytes": nbytes,
        "ops_s": ops / seconds if seconds > 0 else 0.0,
        "mib_s": nbytes / 2**20 / seconds if seconds > 0 else 0.0,
        "energy_j": c["energy_j"],
        "spin_cycles": c["cycles"],
        "state_s": state_s,
        "state_j": state_j,
    }


def _states(disk: Mapping[str, Any]) -> list[StateRow]:
    seconds, state_s, state_j = float(disk["seconds"]), disk["state_s"], disk["state_j"]
    return [
        StateRow(
            state=s.replace("_", " "),
            color=STATES.get(s, "#888"),
            time=format_duration(t),
            share=f"{t / seconds:.1%}" if seconds > 0 else "–",
            energy=format_joules(state_j.get(s, 0.0)),
            watts=format_watts(state_j.get(s, 0.0) / t) if t > 0 else "–",
        )
        for s, t in sorted(state_s.items(), key=lambda kv: list(STATES).index(kv[0]))
    ]


def latency_figure(run_dir: Path, name: str) -> str | None:
    """p50 and p99 of the requests completed in each one-second interval."""
    table = read_table(run_dir, "intervals.parquet")
    if table is None:
        return None
    table = table.filter(pc.greater(table["ops"], 0))
    if table.num_rows == 0:
        return None
    t = table["t_s"].to_numpy() + table["duration_s"].to_numpy() / 2
    fig = Figure(figsize=(9.0, 3.4), layout="constrained")
    ax = fig.subplots()
    marker = "." if table.num_rows < 60 else None
    for i, (col, label) in enumerate((("p50_ns", "p50"), ("p99_ns", "p99"))):
        ax.plot(t, table[col].to_numpy(), color=f"C{i}", lw=1.4, marker=marker, label=label)
    ax.set_yscale("log")
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: format_ns(v)))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("time since the mount (s)")
    ax.set_ylabel("latency")
    ax.grid(alpha=0.3, which="major")
    _legend(fig, ["p50", "p99"])
    return _to_svg(fig, name)


def state_shares(
    times: np.ndarray, states: list[str], end: float, bins: int = _BINS
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The bins' edges over [0, ``end``] and each state's share of every bin, from the state
    entered at each of ``times``: per state, its time so far is piecewise linear between the
    changes, so differences at the edges give each bin's share exactly."""
    points = np.append(times, max(end, times[-1]))
    spans = np.diff(points)
    edges = np.linspace(0.0, points[-1], bins + 1)
    width = edges[1] - edges[0] if points[-1] > 0 else 1.0
    shares = {}
    for s in dict.fromkeys(states):
        mine = np.array([x == s for x in states])
        so_far = np.concatenate([[0.0], np.cumsum(np.where(mine, spans, 0.0))])
        shares[s] = np.diff(np.interp(edges, points, so_far)) / width
    return edges, shares


def state_figure(run_dir: Path, disk: Mapping[str, Any], name: str) -> str | None:
    """The share of each bin in each power state (stacked bands) and the power it draws."""
    table = read_table(run_dir, "events.parquet")
    if table is None:
        return None
    table = table.filter(
        pc.and_(pc.equal(table["source"], "disk"), pc.equal(table["kind"], "state"))
    )
    if table.num_rows == 0:
        return None
    edges, shares = state_shares(
        table["t_s"].to_numpy(), table["message"].to_pylist(), float(disk["seconds"])
    )
    state_s, state_j = disk["state_s"], disk["state_j"]
    fig = Figure(figsize=(9.0, 3.4), layout="constrained")
    ax = fig.subplots()
    order = [s for s in STATES if s in shares] + [s for s in shares if s not in STATES]
    below = np.zeros(len(edges) - 1)
    watts = np.zeros(len(edges) - 1)
    for s in order:
        top = below + shares[s]
        ax.stairs(top, edges, baseline=below, fill=True, color=STATES.get(s, "#888"), lw=0)
        if state_s.get(s, 0) > 0:
            watts += shares[s] * state_j[s] / state_s[s]
        below = top
    ax.set_ylim(0, 1)
    ax.set_xlim(edges[0], edges[-1])
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:.0%}"))
    ax.set_ylabel("share of the bin")
    ax.set_xlabel("time since the mount (s)")
    twin = ax.twinx()
    twin.stairs(watts, edges, color="#222", lw=1.2)
    twin.set_ylim(bottom=0, top=max(float(watts.max()), 1.0) * 1.1)
    twin.set_ylabel("power")
    twin.yaxis.set_major_formatter(FuncFormatter(lambda v, _: format_watts(v)))
    labels = [s.replace("_", " ") for s in order] + ["power"]
    handles: list[Any] = [
        Patch(color=STATES.get(s, "#888"), label=lab) for s, lab in zip(order, labels, strict=False)
    ]
    handles.append(Line2D([], [], color="#222", lw=1.2, label="power"))
    _legend(fig, labels, handles)
    return _to_svg(fig, name)


def cdf_figure(run_dir: Path, name: str) -> str | None:
    """Each request's latency (arrival to answer) and the model's service time of it."""
    table = read_table(run_dir, "disk_requests.parquet")
    if table is None or table.num_rows == 0:
        return None
    lines = []
    for i, (col, label) in enumerate(
        (("latency_ns", "latency (arrival to answer)"), ("service_ns", "service (model charge)"))
    ):
        x = np.sort(table[col].to_numpy().astype(np.float64))
        y = np.arange(1, x.size + 1) / x.size
        if x.size > _CDF_POINTS:
            y = np.linspace(0, 1, _CDF_POINTS + 1)[1:]
            x = np.quantile(x, y)
        lines.append(Line(series_style(label, i, i), x, y))  # the second dashed
    return latency_cdf(lines, name)


def _vibration_facts(v: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    """What a curve did to the disk: its source, where its stimulus came from, the stalls."""
    if not v:
        return []
    unit = v.get("unit") or ""
    if v.get("source") == "schedule":
        source = f"schedule {v.get('schedule')} at ×{v.get('speedup'):g}"
    else:
        source = f"fixed at {v.get('at'):g} {unit}"
    final = v.get("final")
    return [
        ("curve", f"{v.get('stimulus')} curve of {v.get('curve')}"),
        ("stimulus", f"{source}; {v.get('changes', 0)} changes"),
        ("last stimulus", "–" if not final else f"{final[0]:g} {unit}, r = {final[1]:.3g}"),
        ("stall cap", format_duration(float(v.get("stall_cap_s") or 0))),
        ("failed by stalls", f"{v.get('failed', 0):,}"),
    ]


def emulate_view(run_dir: Path) -> EmulateView:
    manifest, summary = read_manifest(run_dir), read_summary(run_dir)
    config = manifest.get("config") or {}
    model = summary.get("model") or {}
    name = config.get("disk_model", "?")
    label = f"{model['label']} (--disk-model {name})" if model.get("label") else name
    disk, incomplete, notes = summary.get("disk"), None, []
    if disk is None and (counters := summary.get("counters")):
        disk = _from_counters(counters)
        incomplete = (
            "The emulator's process died before it unmounted: the guardian committed the"
            f" counters it journaled (once a second), up to {format_duration(disk['seconds'])}"
            " into the mount. No request list, intervals or state changes were kept, so"
            " latency, charges and plots are missing."
        )
    elif disk is None:
        incomplete = "Nothing was counted: the run has no counters, requests or intervals."
    figures = []
    if disk is not None:
        prefix = manifest["run_id"][-6:]
        for fig, caption, svg in (
            (
                "latency",
                "Latency p50 and p99 of the requests completed in each second.",
                latency_figure(run_dir, f"{prefix}-latency"),
            ),
            (
                "states",
                f"The disk's power states: the share of each of {_BINS} bins of"
                f" {format_duration(disk['seconds'] / _BINS)} spent in each (bands), and"
                " the power drawn (line).",
                state_figure(run_dir, disk, f"{prefix}-states"),
            ),
            (
                "cdf",
                "Request latency, from arrival at the mount to the answer (queueing"
                " included), and the service time the model charged.",
                cdf_figure(run_dir, f"{prefix}-cdf"),
            ),
        ):
            if svg is not None:
                figures.append((fig, caption, svg))
        if not figures and incomplete is None:
            notes.append("No request was served: there is nothing to plot.")
    spin_down = config.get("spin_down_s")
    facts = [
        ("backing", str(config.get("backing", "?"))),
        ("mount", str(config.get("mount", "?"))),
        ("spin-down", "never" if spin_down is None else f"after {format_duration(spin_down)}"),
        ("page cache", "on" if config.get("page_cache") else "off (direct I/O)"),
        ("seed", str(manifest.get("seed"))),
    ]
    facts += _vibration_facts(summary.get("vibration"))
    return EmulateView(
        run_id=manifest["run_id"],
        status=manifest["status"],
        reason=manifest.get("reason"),
        incomplete=incomplete,
        answer=[] if disk is None else _answer(disk, label),
        states=[] if disk is None else _states(disk),
        figures=figures,
        notes=notes,
        facts=facts,
    )
