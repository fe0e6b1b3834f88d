"""The report's "Characterization sweep" section: per sweep run, each disk's curve against the
stimulus (normalised and in MiB/s, with the spread across passes), the sensors per step, a
table of every point and the run's stimulus and watchdog events.

The curve is recomputed here from ``steps.parquet`` and ``latency.parquet`` with
:func:`iowatt.curve.curve_table`, the same function that writes the run's curve files,
so the report and the files always agree.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from iowatt.curve import curve_table, step_sensor_means
from iowatt.report.load import Run
from iowatt.report.plots import _FIGSIZE, Plot, _legend, _to_svg, series_style
from iowatt.units import format_bytes, format_duration, format_ns, format_rate

# Events worth listing beside the curves, and how many of them (a 1 Hz frequency sweep has
# thousands of stimulus events; they are all in events.parquet).
EVENT_KINDS = ("stimulus", "watchdog", "restore")
MAX_EVENTS = 60
# Sensor units in the order their panels are stacked; others follow by name.
_UNIT_ORDER = ("RPM", "C", "W", "V", "A")
_UNIT_LABELS = {"C": "°C"}
# Beyond this many points per line, markers would hide the curve.
_MARKERS_UP_TO = 60


def stimulus_label(stimulus: Mapping[str, Any]) -> str:
    """The x axis of a sweep: ``fan duty (% PWM)``, ``vibration amplitude (g RMS, 20-800 Hz)``,
    ``sine frequency (Hz, at 0.17 g)``."""
    kind, unit = stimulus.get("kind"), stimulus.get("unit")
    if kind == "fan":
        return "fan duty (% PWM)"
    if kind == "amplitude":
        band = stimulus.get("band")
        return f"vibration amplitude (g RMS, {band} Hz)" if band else "vibration amplitude (g RMS)"
    if kind == "frequency":
        g = stimulus.get("amplitude_g")
        return f"sine frequency (Hz, at {g:g} g)" if g is not None else "sine frequency (Hz)"
    return f"{kind or 'stimulus'} ({unit or '?'})"


def _disk_names(manifest: Mapping[str, Any]) -> list[str]:
    disks = (manifest.get("config") or {}).get("disks") or []
    return [str(d["name"]) for d in disks if isinstance(d, Mapping) and "name" in d]


def _generator(gen: Mapping[str, Any]) -> str:
    parts = ["random writes"]
    if isinstance(gen.get("iosize"), int):
        parts.append(f"{format_bytes(gen['iosize'])} blocks")
    if gen.get("iodepth") is not None:
        parts.append(f"iodepth {gen['iodepth']}")
    if gen.get("engine"):
        parts.append(str(gen["engine"]))
    if gen.get("nthreads") is not None:
        n = gen["nthreads"]
        parts.append(f"{n} thread{'s' if n != 1 else ''}")
    return ", ".join(parts)


def _seconds(value: Any) -> str:
    return format_duration(value) if isinstance(value, int | float) else "unknown"


def sweep_facts(manifest: Mapping[str, Any]) -> list[tuple[str, str]]:
    """What a sweep run's header shows in place of a bench run's target facts."""
    config = manifest.get("config") or {}
    values = config.get("values") or []
    count = len(values[0]) if values and isinstance(values[0], list) else 0
    passes = config.get("passes", len(values))
    steps = f"{count} values × {passes} pass{'es' if passes != 1 else ''}"
    if config.get("order"):
        steps += f" (order {config['order']})"
    windows = f"settle {_seconds(config.get('settle_s'))}, hold {_seconds(config.get('hold_s'))}"
    return [
        ("stimulus", stimulus_label(config.get("stimulus") or {})),
        ("steps", steps),
        ("windows", windows),
        ("generator", _generator(config.get("generator") or {})),
        ("disks", ", ".join(_disk_names(manifest)) or "unknown"),
    ]


# --- what the section shows -------------------------------------------------------------------


@dataclass(frozen=True)
class DiskRow:
    """A disk under test: where it is, what it is, and the largest mean it reached."""

    name: str
    color: str
    path: str
    model: str
    rotational: str
    profile: str
    max_mib_s: str


@dataclass(frozen=True)
class PointRow:
    """One (disk, value) of the curve; exact numbers ride along for the HTML's data- attributes."""

    disk: str
    color: str
    value: float
    value_text: str
    mib_s: float
    mib_s_text: str
    mib_s_spread: str
    norm: float | None
    norm_text: str
    norm_spread: str
    passes: int
    p99_ns: int | None
    p99_text: str


@dataclass(frozen=True)
class EventRow:
    """A stimulus change or a watchdog action."""

    t: str
    kind: str
    message: str


@dataclass(frozen=True)
class SweepView:
    """One sweep run's part of the section."""

    run_id: str
    axis: str
    note: str
    plots: list[Plot]
    disks: list[DiskRow]
    points: list[PointRow]
    events: list[EventRow]
    more_events: int
    # Why a sweep has no sensor panel: its driver reads none and none was added.
    no_sensors: str | None = None


def _range(lo: float | None, hi: float | None, fmt: Any, passes: int) -> str:
    if passes < 2 or lo is None or hi is None:
        return "—"
    return f"{fmt(lo)}–{fmt(hi)}"


def _norm(x: float) -> str:
    return f"{x:.3f}"


def _point_rows(curve: pa.Table, colors: Mapping[str, str], order: Sequence[str]) -> list[PointRow]:
    rows = sorted(curve.to_pylist(), key=lambda r: (order.index(r["disk"]), r["value"]))
    return [
        PointRow(
            disk=r["disk"],
            color=colors[r["disk"]],
            value=r["value"],
            value_text=f"{r['value']:g}",
            mib_s=r["mib_s"],
            mib_s_text=format_rate(r["mib_s"]),
            mib_s_spread=_range(r["mib_s_min"], r["mib_s_max"], format_rate, r["passes"]),
            norm=r["norm"],
            norm_text=_norm(r["norm"]) if r["norm"] is not None else "—",
            norm_spread=_range(r["norm_min"], r["norm_max"], _norm, r["passes"]),
            passes=r["passes"],
            p99_ns=r["p99_ns"],
            p99_text=format_ns(r["p99_ns"]) if r["p99_ns"] is not None else "—",
        )
        for r in rows
    ]


def _fact(value: Any) -> str:
    return "unknown" if value is None else str(value)


def _disk_rows(
    manifest: Mapping[str, Any], curve: pa.Table | None, colors: Mapping[str, str]
) -> list[DiskRow]:
    config = {
        d["name"]: d for d in (manifest.get("config") or {}).get("disks") or [] if "name" in d
    }
    host = (manifest.get("host") or {}).get("disks") or {}
    peak: dict[str, float] = {}
    for r in curve.to_pylist() if curve is not None else []:
        peak[r["disk"]] = max(peak.get(r["disk"], 0.0), r["mib_s"])
    rows = []
    for name, color in colors.items():
        cfg, facts = config.get(name) or {}, host.get(name) or {}
        spins = facts.get("rotational")
        rows.append(
            DiskRow(
                name=name,
                color=color,
                path=_fact(cfg.get("path")),
                model=_fact(facts.get("device_model")),
                rotational="unknown" if spins is None else "yes (HDD)" if spins else "no",
                profile=cfg.get("profile") or "—",
                max_mib_s=format_rate(peak[name]) if name in peak else "—",
            )
        )
    return rows


def _events(table: pa.Table | None) -> tuple[list[EventRow], int]:
    if table is None or table.num_rows == 0:
        return [], 0
    rows = [r for r in table.to_pylist() if r.get("kind") in EVENT_KINDS]
    rows.sort(key=lambda r: r.get("t_s") if r.get("t_s") is not None else float("inf"))
    shown = [
        EventRow(
            t=f"{r['t_s']:.1f} s" if r.get("t_s") is not None else "—",
            kind=str(r["kind"]),
            message=str(r.get("message") or ""),
        )
        for r in rows[:MAX_EVENTS]
    ]
    return shown, max(len(rows) - MAX_EVENTS, 0)


def sweep_view(run: Run, index: int) -> SweepView:
    """The section of one sweep run; ``index`` (its place in the report) names its plots."""
    data = run.sweep
    if data is None:
        raise ValueError(f"run {run.run_id} is not a sweep")
    config = run.manifest.get("config") or {}
    stimulus = config.get("stimulus") or {}
    axis = stimulus_label(stimulus)
    steps = data.steps
    curve = curve_table(run.run_id, steps, data.latency) if steps is not None else None
    measured = curve["disk"].to_pylist() if curve is not None else []
    order = list(dict.fromkeys([*_disk_names(run.manifest), *sorted(set(measured))]))
    styles = {d: series_style(d, i, 0) for i, d in enumerate(order)}
    colors = {d: s.hex for d, s in styles.items()}
    lines = _curve_lines(curve, styles) if curve is not None else []
    sensors = step_sensor_means(steps, data.readings) if steps is not None else None
    n = f"sweep-{index}"
    plots = [
        Plot(
            f"{n}-norm",
            "Throughput of each disk divided by the largest mean it reached in the sweep; "
            "the band spans the lowest to the highest pass.",
            curve_plot(lines, axis, "throughput ÷ disk maximum", f"sweep{index}norm", True),
        ),
        Plot(
            f"{n}-mib",
            "Mean throughput of each disk's hold windows; the band spans the lowest to the "
            "highest pass.",
            curve_plot(lines, axis, "MiB/s", f"sweep{index}mib", False),
        ),
    ]
    no_sensors = _no_sensors(config)
    if no_sensors is None:
        plots.append(
            Plot(
                f"{n}-sensors",
                "Each sensor channel's mean over every step's hold window, averaged over the "
                "passes (band: lowest to highest pass); one panel per unit.",
                sensor_plot(_sensor_panels(sensors), axis, f"sweep{index}sensors"),
            )
        )
    events, more = _events(data.events)
    passes = config.get("passes")
    return SweepView(
        run_id=run.run_id,
        axis=axis,
        note=(
            f"Each point is the mean throughput of a disk's hold window "
            f"({_seconds(config.get('hold_s'))}, after a settle of "
            f"{_seconds(config.get('settle_s'))}) over {_fact(passes)} pass"
            f"{'es' if passes != 1 else ''}; {_generator(config.get('generator') or {})}."
        ),
        plots=plots,
        disks=_disk_rows(run.manifest, curve, colors),
        points=_point_rows(curve, colors, order) if curve is not None else [],
        events=events,
        more_events=more,
        no_sensors=no_sensors,
    )


def _no_sensors(config: Mapping[str, Any]) -> str | None:
    """A sentence when the sweep read no sensor at all (rather than lost their data)."""
    driver = config.get("driver")
    if not isinstance(driver, Mapping) or "sensors" not in driver:
        return None  # written before runs recorded their driver's sensors
    if driver["sensors"] or config.get("sensors"):
        return None
    return (
        f"No sensor was read: the {driver.get('driver')} driver reads none, and none was added "
        "with --sensor (e.g. --sensor hwmon)."
    )


def sweep_views(runs: Sequence[Run]) -> list[SweepView]:
    """The section of every sweep run, in report order."""
    return [sweep_view(run, i) for i, run in enumerate(runs) if run.sweep is not None]


# --- plots ------------------------------------------------------------------------------------


Array = npt.NDArray[np.float64]
# A curve's mean and the lowest and highest pass at each value (NaN where unknown).
Band = tuple[Array, Array, Array]


@dataclass(frozen=True)
class CurveLine:
    """One disk's curve: value → mean, with the pass-to-pass band, absolute and normalised."""

    label: str
    color: str
    x: Array
    mib: Band
    norm: Band


def _column(rows: Sequence[Mapping[str, Any]], key: str) -> Array:
    return np.array([np.nan if r[key] is None else r[key] for r in rows], dtype=np.float64)


def _band(rows: Sequence[Mapping[str, Any]], mean: str, lo: str, hi: str) -> Band:
    return _column(rows, mean), _column(rows, lo), _column(rows, hi)


def _curve_lines(curve: pa.Table, styles: Mapping[str, Any]) -> list[CurveLine]:
    by_disk: dict[str, list[dict[str, Any]]] = {}
    for r in curve.to_pylist():
        by_disk.setdefault(r["disk"], []).append(r)
    out = []
    for disk, style in styles.items():
        rows = sorted(by_disk.get(disk, []), key=lambda r: r["value"])
        if not rows:
            continue
        out.append(
            CurveLine(
                label=disk,
                color=style.color,
                x=_column(rows, "value"),
                mib=_band(rows, "mib_s", "mib_s_min", "mib_s_max"),
                norm=_band(rows, "norm", "norm_min", "norm_max"),
            )
        )
    return out


def _draw_band(ax: Axes, x: Array, ys: Band, color: str, label: str) -> None:
    mean, lo, hi = ys
    if np.any(hi > lo):
        ax.fill_between(x, lo, hi, color=color, alpha=0.18, lw=0)
    # Not clipped: a disk that stalled at 0 MiB/s must show on the axis, not under it.
    ax.plot(
        x,
        mean,
        color=color,
        lw=1.6,
        label=label,
        marker="o" if x.size <= _MARKERS_UP_TO else None,
        ms=4,
        clip_on=False,
        zorder=3,
    )


def curve_plot(
    lines: Sequence[CurveLine], xlabel: str, ylabel: str, name: str, normalised: bool
) -> str | None:
    """Every disk's curve against the stimulus value; ``None`` when no point has a number."""
    lines = [
        line for line in lines if np.isfinite(line.norm[0] if normalised else line.mib[0]).any()
    ]
    if not lines:
        return None
    fig = Figure(figsize=_FIGSIZE, layout="constrained")
    ax = fig.subplots()
    for line in lines:
        _draw_band(ax, line.x, line.norm if normalised else line.mib, line.color, line.label)
    if normalised:
        top = max(float(np.nanmax(line.norm[2])) for line in lines)
        ax.set_ylim(0, max(1.05, top + 0.05))
    else:
        ax.set_ylim(bottom=0)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: format_rate(v)))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    _legend(fig, [line.label for line in lines])
    return _to_svg(fig, name)


@dataclass(frozen=True)
class SensorPanel:
    """One unit's channels: per channel, value → mean over passes and the pass band."""

    unit: str
    channels: list[tuple[str, Array, Band]]


def _sensor_panels(means: pa.Table | None) -> list[SensorPanel]:
    if means is None or means.num_rows == 0:
        return []
    by_unit: dict[str, dict[str, dict[float, list[float]]]] = {}
    for r in means.to_pylist():
        unit = r["unit"] or "?"
        channel = f"{r['source']}/{r['channel']}"
        by_unit.setdefault(unit, {}).setdefault(channel, {}).setdefault(r["value"], []).append(
            r["mean"]
        )
    rank = {u: i for i, u in enumerate(_UNIT_ORDER)}
    panels = []
    for unit in sorted(by_unit, key=lambda u: (rank.get(u, len(rank)), u)):
        channels = []
        for channel, per_value in by_unit[unit].items():
            x = np.array(sorted(per_value), dtype=np.float64)
            step_means = [per_value[v] for v in sorted(per_value)]
            ys = (
                np.array([np.mean(m) for m in step_means], dtype=np.float64),
                np.array([min(m) for m in step_means], dtype=np.float64),
                np.array([max(m) for m in step_means], dtype=np.float64),
            )
            channels.append((channel, x, ys))
        panels.append(SensorPanel(_UNIT_LABELS.get(unit, unit), channels))
    return panels


def sensor_plot(panels: Sequence[SensorPanel], xlabel: str, name: str) -> str | None:
    """One panel per unit, a line per channel against the stimulus value, shared x axis."""
    if not panels:
        return None
    fig = Figure(figsize=(_FIGSIZE[0], 2.3 * len(panels) + 0.7), layout="constrained")
    axes = fig.subplots(len(panels), 1, sharex=True, squeeze=False)[:, 0]
    for ax, panel in zip(axes, panels, strict=True):
        for i, (label, x, ys) in enumerate(panel.channels):
            _draw_band(ax, x, ys, f"C{i % 10}", label)
        ax.set_ylabel(panel.unit)
        ax.set_title(panel.unit, fontsize="medium", loc="left")
        ax.grid(alpha=0.3)
        ax.legend(fontsize="x-small", frameon=False, loc="center left", bbox_to_anchor=(1.01, 0.5))
    axes[-1].set_xlabel(xlabel)
    return _to_svg(fig, name)
