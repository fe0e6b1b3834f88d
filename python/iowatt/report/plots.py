"""The report's plots, drawn with matplotlib and returned as inline SVG markup.

Figures are built with :class:`matplotlib.figure.Figure` rather than pyplot: nothing is
registered globally, so no figure needs closing, no backend has to be chosen (``savefig`` to
SVG needs none) and a notebook user's own backend is left alone. Each plot function returns
``None`` when there is nothing to draw, and the template shows "no data" in its place.
"""

from __future__ import annotations

import html
import io
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.colors import to_hex
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from iowatt.units import format_ns, format_rate, format_watts

# Width fits the page's content column; height leaves room for the table below each plot.
_FIGSIZE = (9.0, 3.4)
# Without a date or creator the SVG is reproducible and carries no URL.
_SVG_METADATA = {"Date": None, "Creator": None, "Format": None, "Type": None}
# Runs are told apart by line style; workloads by colour.
_LINESTYLES = ("solid", "dashed", "dotted", "dashdot")


@dataclass(frozen=True)
class Style:
    """How one (run, workload) series looks in every plot, so the plots read together."""

    label: str
    color: str
    linestyle: str

    @property
    def hex(self) -> str:
        """The colour as ``#rrggbb``, for swatches in the HTML tables."""
        return to_hex(self.color)


def series_style(label: str, workload_index: int, run_index: int) -> Style:
    """The style of a series: colour by workload (C0, C1, …), line style by run."""
    return Style(label, f"C{workload_index % 10}", _LINESTYLES[run_index % len(_LINESTYLES)])


@dataclass(frozen=True)
class Line:
    """One series to draw: its style and its points."""

    style: Style
    x: npt.NDArray[np.float64] | npt.NDArray[np.int64]
    y: npt.NDArray[np.float64]


@dataclass(frozen=True)
class Band:
    """Several runs of one workload (in one environment) as their median and min–max: past a
    few runs, one line each is a tangle no one can read."""

    label: str
    color: str
    x: npt.NDArray[np.float64]
    low: npt.NDArray[np.float64]
    mid: npt.NDArray[np.float64]
    high: npt.NDArray[np.float64]


@dataclass(frozen=True)
class Plot:
    """One figure: the ``data-plot`` name, a caption, and the SVG (``None``: no data)."""

    name: str
    caption: str
    svg: str | None


@dataclass(frozen=True)
class Bar:
    """One workload's throughput in one run, for the bar chart."""

    group: str
    workload: str
    color: str
    ops_s: float
    mib_s: float


def _to_svg(fig: Figure, name: str) -> str:
    """The figure as an ``<svg>`` element, its ids prefixed so several can share a page."""
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", metadata=_SVG_METADATA)
    svg = buffer.getvalue()
    svg = svg[svg.index("<svg") :]  # drop the XML prologue and DOCTYPE: invalid inside HTML
    # matplotlib numbers ids per figure (figure_1, axes_1 …): make them unique on the page.
    svg = re.sub(r'\bid="([^"]+)"', rf'id="{name}-\1"', svg)
    svg = re.sub(r'href="#([^"]+)"', rf'href="#{name}-\1"', svg)
    return re.sub(r"url\(#([^)]+)\)", rf"url(#{name}-\1)", svg)


def with_titles(svg: str, gid: str, titles: Sequence[str]) -> str:
    """The SVG with hover text on each marker of the artist drawn with ``gid`` (already
    prefixed, as :func:`_to_svg` leaves ids): matplotlib writes one ``<use>`` per point, in the
    order of the data, inside the artist's group."""
    start = svg.find(f'id="{gid}"')
    if start < 0:
        return svg
    out, at = [svg[:start]], start
    for title, use in zip(titles, re.finditer(r"<use\b[^>]*?/>", svg[start:]), strict=False):
        out.append(svg[at : start + use.start()])
        out.append(use.group()[:-2] + f"><title>{html.escape(title)}</title></use>")
        at = start + use.end()
    out.append(svg[at:])
    return "".join(out)


def _legend_columns(labels: Sequence[str]) -> int:
    # Labels naming a run ("workload · run id") only fit two to a row.
    return 3 if max(len(label) for label in labels) <= 24 else 2


def _figure(labels: Sequence[str]) -> Figure:
    """A figure tall enough for its legend below it: past two rows of entries, each row would
    otherwise be taken from the axes until none is left."""
    rows = math.ceil(len(labels) / _legend_columns(labels)) if labels else 0
    return Figure(
        figsize=(_FIGSIZE[0], _FIGSIZE[1] + 0.22 * max(rows - 2, 0)), layout="constrained"
    )


def _legend(fig: Figure, labels: Sequence[str], handles: Sequence[Artist] | None = None) -> None:
    columns = _legend_columns(labels)
    fig.legend(
        handles=handles,
        loc="outside lower center",
        ncols=min(len(labels), columns),
        fontsize="small",
        frameon=False,
    )


def _wrap_run_id(run_id: str) -> str:
    """``20261121-143000-bench-1a2b3c`` on two lines, so several fit under a bar chart."""
    return re.sub(r"^(\d{8}-\d{6})-", "\\1\n", run_id)


def throughput_bars(bars: Sequence[Bar]) -> str | None:
    """ops/s and MiB/s side by side: one group of bars per run, one colour per workload."""
    if not bars:
        return None
    groups = list(dict.fromkeys(b.group for b in bars))
    colors = {b.workload: b.color for b in bars}
    slots = list(colors)  # a workload keeps its slot in every group
    width = 0.8 / len(slots)
    fig = Figure(figsize=_FIGSIZE, layout="constrained")
    for ax, metric, title in zip(
        fig.subplots(1, 2), ("ops_s", "mib_s"), ("ops/s", "MiB/s"), strict=True
    ):
        for k, bar in enumerate(bars):
            x = groups.index(bar.group) - 0.4 + (slots.index(bar.workload) + 0.5) * width
            ax.bar(x, getattr(bar, metric), width, color=bar.color, gid=f"{metric}-{k}")
        ax.set_title(title, fontsize="medium")
        # Past a handful of runs their names are turned, or they run into each other.
        turned = {"rotation": 90} if len(groups) > 5 else {}
        ax.set_xticks(
            range(len(groups)), [_wrap_run_id(g) for g in groups], fontsize="small", **turned
        )
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: format_rate(v)))
        ax.grid(axis="y", alpha=0.3)
    _legend(fig, slots, [Patch(color=c, label=w) for w, c in colors.items()])
    svg = _to_svg(fig, "bars")
    for k, bar in enumerate(bars):
        said = (
            f"{bar.group}, {bar.workload}: {format_rate(bar.ops_s)} ops/s, "
            f"{format_rate(bar.mib_s)} MiB/s"
        )
        for metric in ("ops_s", "mib_s"):
            svg = _titled(svg, f"bars-{metric}-{k}", said)
    return svg


def _titled(svg: str, gid: str, title: str) -> str:
    """Hover text on the group matplotlib drew for the artist with ``gid`` (a bar, a patch)."""
    return re.sub(
        rf'(<g id="{re.escape(gid)}">)', rf"\1<title>{html.escape(title)}</title>", svg, count=1
    )


def _latency_axis(ax: Axes, decades: float) -> None:
    """A log axis labelled in ns/µs/ms/s, with 1-2-5 ticks when the data spans few decades."""
    ax.set_xscale("log")
    if decades < 2:
        ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: format_ns(v)))
    ax.xaxis.set_minor_formatter(NullFormatter())


def latency_cdf(lines: Sequence[Line], name: str = "cdf", bands: Sequence[Band] = ()) -> str | None:
    """The latency CDF of every series (or band) on a log latency axis (``name``: its ids'
    prefix, unique on the page)."""
    lines = [line for line in lines if line.x.size]
    if not lines and not bands:
        return None
    labels = [line.style.label for line in lines] + [b.label for b in bands]
    fig = _figure(labels)
    ax = fig.subplots()
    for i, line in enumerate(lines):
        # Buckets are 0.1% wide, so joining their tops looks like the step function it is,
        # and lets matplotlib simplify the path (steps would triple the SVG's size).
        _draw(ax, line, gid=f"series{i}")
    _draw_bands(ax, bands, first=len(lines))
    xs = [line.x for line in lines] + [b.x for b in bands]
    lo = max(float(min(x.min() for x in xs)), 1.0)
    hi = max(float(max(x.max() for x in xs)), lo)
    _latency_axis(ax, math.log10(hi / lo))
    ax.set_xlim(lo, hi)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("latency")
    ax.set_ylabel("fraction of operations")
    ax.grid(alpha=0.3, which="major")
    _legend(fig, labels)
    return _series_titled(_to_svg(fig, name), name, labels)


def throughput_over_time(
    lines: Sequence[Line], name: str = "timeline", bands: Sequence[Band] = ()
) -> str | None:
    """ops/s of every series (or band) per interval of the measured phase."""
    lines = [line for line in lines if line.x.size]
    if not lines and not bands:
        return None
    labels = [line.style.label for line in lines] + [b.label for b in bands]
    fig = _figure(labels)
    ax = fig.subplots()
    for i, line in enumerate(lines):
        _draw(ax, line, marker="." if line.x.size < 30 else None, gid=f"series{i}")
    _draw_bands(ax, bands, first=len(lines))
    ax.set_ylim(bottom=0)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: format_rate(v)))
    ax.set_xlabel("time since the measured phase began (s)")
    ax.set_ylabel("ops/s")
    ax.grid(alpha=0.3)
    _legend(fig, labels)
    return _series_titled(_to_svg(fig, name), name, labels)


def _series_titled(svg: str, name: str, labels: Sequence[str]) -> str:
    """Each series line (``series{i}``) says which it is on hover."""
    for i, label in enumerate(labels):
        svg = _titled(svg, f"{name}-series{i}", label)
    return svg


def _draw_bands(ax: Axes, bands: Sequence[Band], first: int) -> None:
    for j, b in enumerate(bands):
        ax.fill_between(b.x, b.low, b.high, color=b.color, alpha=0.25, linewidth=0)
        ax.plot(b.x, b.mid, color=b.color, lw=1.6, label=b.label, gid=f"series{first + j}")


def _draw(ax: Axes, line: Line, marker: str | None = None, gid: str | None = None) -> None:
    style = line.style
    ax.plot(
        line.x,
        line.y,
        label=style.label,
        color=style.color,
        linestyle=style.linestyle,
        lw=1.6,
        marker=marker,
        gid=gid,
    )


@dataclass(frozen=True)
class PowerPanel:
    """One source of one run: its channels in watts, and the run's throughput beside them."""

    title: str
    channels: Sequence[tuple[str, npt.NDArray[np.float64], npt.NDArray[np.float64]]]
    throughput: tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]] | None


def power_over_time(panels: Sequence[PowerPanel], name: str) -> str | None:
    """Watts per channel (left axis) with ops/s (right axis, grey) on one time axis."""
    panels = [p for p in panels if p.channels]
    if not panels:
        return None
    fig = Figure(figsize=(_FIGSIZE[0], 2.4 * len(panels) + 0.8), layout="constrained")
    axes = fig.subplots(len(panels), 1, sharex=True, squeeze=False)[:, 0]
    for ax, panel in zip(axes, panels, strict=True):
        for i, (label, t, watts) in enumerate(panel.channels):
            ax.plot(t, watts, color=f"C{i % 10}", lw=1.4, label=label)
        ax.set_title(panel.title, fontsize="medium", loc="left")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: format_watts(v)))
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small", frameon=False, loc="upper left")
        if panel.throughput is not None:
            twin = ax.twinx()
            twin.plot(*panel.throughput, color="0.55", lw=1.0, ls="--", label="ops/s")
            twin.set_ylim(bottom=0)
            twin.set_ylabel("ops/s", color="0.45")
            twin.yaxis.set_major_formatter(FuncFormatter(lambda v, _: format_rate(v)))
    axes[-1].set_xlabel("time since the power recording began (s)")
    return _to_svg(fig, name)


# Thresholds are told apart by colour in the slow-operation plots: amber, red, purple, blue.
THRESHOLD_COLORS = ("#e69f00", "#c0392b", "#6a3d9a", "#1f78b4")


@dataclass(frozen=True)
class SlowShares:
    """One threshold's per-interval share of slow operations, for :func:`slow_scatter`."""

    label: str
    color: str
    share: npt.NDArray[np.float64]


def slow_scatter(
    ops_s: npt.NDArray[np.float64], shares: Sequence[SlowShares], name: str
) -> str | None:
    """Each interval's ops/s against its share of operations above each threshold.

    Seconds without a slow operation sit at x = 0; if slow operations stall the workload,
    the points to their right sit lower. Higher thresholds are drawn last, on top.
    """
    if not ops_s.size or not shares:
        return None
    fig = Figure(figsize=_FIGSIZE, layout="constrained")
    ax = fig.subplots()
    for s in shares:
        ax.scatter(100 * s.share, ops_s, s=14, color=s.color, alpha=0.6, lw=0, label=s.label)
    # A margin on every side: the clean seconds (x = 0) and the busiest are points, not marks
    # on the frame.
    widest = max((float(np.nanmax(100 * s.share)) for s in shares if s.share.size), default=0.0)
    widest = widest if widest > 0 else 1.0
    ax.set_xlim(-0.04 * widest, 1.08 * widest)
    ax.set_ylim(0, 1.1 * float(ops_s.max()) if ops_s.max() > 0 else 1.0)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g} %" if v >= 0 else ""))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: format_rate(v)))
    ax.set_xlabel("share of the interval's operations above the threshold")
    ax.set_ylabel("ops/s")
    ax.grid(alpha=0.3)
    _legend(fig, [s.label for s in shares])
    return _to_svg(fig, name)
