"""The report's "Consecutive runs" section: a workload's runs in the order they ran.

A single run, or a mean over runs, hides what the study found mattered most: consecutive
runs oscillate, and after a move the system keeps the previous environment's behaviour for a
while (the latent performance effect). So, like the study's consecutive-runs figure, each
workload run more than once is plotted run by run, coloured by environment, with what
:func:`iowatt.compare.latent.analyse_series` detects written below it.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from markupsafe import Markup, escape
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, MaxNLocator

from iowatt.compare.latent import Finding, analyse_series
from iowatt.report.load import Run
from iowatt.report.plots import _FIGSIZE, Plot, _legend, _to_svg, with_titles
from iowatt.units import format_rate

# The environment of a run without an ``env`` label.
NO_ENV = "(none)"
# analyse_series tests an environment only with at least this many runs in it.
MIN_RUNS = 5
# The family-wise false-alarm level of the report's latent-effect findings.
ALPHA = 0.05


@dataclass(frozen=True)
class SeriesPoint:
    """One run of a workload in a series."""

    run_id: str
    started_ns: int
    env: str  # the run's environment label ("(none)" when absent)
    value: float  # e.g. ops/s of the workload in that run


def _svg_name(workload: str) -> str:
    """A prefix for the plot's SVG ids, unique per workload name whatever it contains."""
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", workload)[:40]
    return f"series-{slug}-{hashlib.sha1(workload.encode()).hexdigest()[:6]}"


# A dotted line marks each change of environment, up to this many.
MAX_CHANGE_LINES = 60


def env_changes(points: Sequence[SeriesPoint]) -> list[int]:
    """Where the environment changes: each n whose run's env differs from run n − 1's."""
    return [n for n in range(1, len(points)) if points[n].env != points[n - 1].env]


def series_plot(workload: str, points: Sequence[SeriesPoint], ylabel: str = "ops/s") -> str | None:
    """The runs of ``workload`` in time order: run number against value, coloured by env.

    Points are joined by a grey line so oscillation between consecutive runs shows; a dotted
    vertical line marks each change of environment, where carry-over would start. ``None``
    with fewer than two points: one run is not a series.
    """
    if len(points) < 2:
        return None
    points = sorted(points, key=lambda p: p.started_ns)  # stable: ties keep the given order
    x = list(range(1, len(points) + 1))
    envs = list(dict.fromkeys(p.env for p in points))
    fig = Figure(figsize=_FIGSIZE, layout="constrained")
    ax = fig.subplots()
    ax.plot(x, [p.value for p in points], color="0.65", lw=1.2, zorder=1)
    for i, env in enumerate(envs):
        xs = [n for n, p in zip(x, points, strict=True) if p.env == env]
        ys = [p.value for p in points if p.env == env]
        ax.scatter(
            xs,
            ys,
            s=36 if len(points) <= 100 else 10,
            color=f"C{i % 10}",
            zorder=2,
            label=env,
            gid=f"env{i}",
        )
    changes = env_changes(points)
    if len(changes) <= MAX_CHANGE_LINES:  # past that, an interleaved series would be all lines
        for n in changes:
            ax.axvline(n + 0.5, color="0.35", ls=":", lw=1.2, zorder=0)
    ax.set_title(workload, fontsize="medium", loc="left")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: format_rate(v)))
    ax.set_xlabel("run, in the order the runs started")
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    handles = [
        Line2D([], [], ls="", marker="o", color=f"C{i % 10}", label=env)
        for i, env in enumerate(envs)
    ]
    _legend(fig, envs, handles)
    name = _svg_name(workload)
    svg = _to_svg(fig, name)
    for i, env in enumerate(envs):
        titles = [
            f"run {n}: {p.run_id}, {format_rate(p.value)} {ylabel}"
            for n, p in zip(x, points, strict=True)
            if p.env == env
        ]
        svg = with_titles(svg, f"{name}-env{i}", titles)
    return svg


def code_spans(text: str) -> Markup:
    """``text`` escaped for HTML, with its `backticked` values (the messages' convention for
    names and values, as on a terminal) set in ``<code>``."""
    return Markup(re.sub(r"`([^`]+)`", r"<code>\1</code>", str(escape(text))))


@dataclass(frozen=True)
class FindingView:
    """One detection of the latent-effect analysis, as the page lists it."""

    kind: str
    env: str
    p_value: float
    message: str


@dataclass(frozen=True)
class SeriesView:
    """One workload's series: the plot, the environments in it and what was detected."""

    workload: str
    plot: Plot
    runs: int
    envs: dict[str, int]  # runs per environment, in order of first appearance
    findings: list[FindingView]
    # what to say when nothing was found: nothing detected, or too few runs to test
    note: str | None


def series_points(runs: Sequence[Run], workload: str) -> list[SeriesPoint]:
    """The runs that measured ``workload``'s ops/s, in the order they started.

    Runs without a start time keep their place in the report after those with one; runs
    that completed no operation of the workload (stopped before it) are not points.
    """
    out = []
    for run in runs:
        summary = run.summary.get("workloads", {}).get(workload, {})
        value = summary.get("ops_s")
        if not summary.get("ops") or not isinstance(value, int | float):
            continue
        started = run.manifest.get("started_ns")
        env = (run.manifest.get("labels") or {}).get("env")
        out.append(
            SeriesPoint(
                run_id=run.run_id,
                started_ns=started if isinstance(started, int) else 2**63 - 1,
                env=str(env) if env not in (None, "") else NO_ENV,
                value=float(value),
            )
        )
    return sorted(out, key=lambda p: p.started_ns)  # stable: ties keep the report's order


def _series_view(
    index: int,
    workload: str,
    points: list[SeriesPoint],
    alpha: float,
    known: Sequence[Finding] | None,
) -> SeriesView:
    envs: dict[str, int] = {}
    for p in points:
        envs[p.env] = envs.get(p.env, 0) + 1
    findings = known
    if findings is None:
        findings = analyse_series(
            [p.value for p in points], [p.env for p in points], alpha=alpha, min_runs=MIN_RUNS
        )
    note = None
    if not findings:
        if all(n < MIN_RUNS for n in envs.values()):
            note = "too few runs per environment to test"
        else:
            note = f"no trend, oscillation or carry-over detected ({len(points)} runs)"
    changes = len(env_changes(points))
    dotted = (
        "dotted lines: the environment changed"
        if changes <= MAX_CHANGE_LINES
        else f"the environment changed {changes} times (not drawn)"
    )
    plot = Plot(
        f"series-{index}",
        f"ops/s of {workload} in each run, in the order the runs started; colour: the run's "
        f'"env" label; {dotted}.',
        series_plot(workload, points),
    )
    return SeriesView(
        workload=workload,
        plot=plot,
        runs=len(points),
        envs=envs,
        findings=[FindingView(f.kind, f.env, f.p_value, f.message) for f in findings],
        note=note,
    )


def consecutive_runs(
    runs: Sequence[Run], known: Mapping[str, Sequence[Finding]] | None = None
) -> list[SeriesView]:
    """A series per workload measured by at least two runs of the report, with the ``known``
    findings of a workload the report's comparison analysed already (the same analysis)."""
    known = known or {}
    names = list(dict.fromkeys(w for run in runs for w in run.workloads))
    series = [(name, points) for name in names if len(points := series_points(runs, name)) >= 2]
    # One family for the report, as for a comparison: each series gets its share of alpha.
    alpha = ALPHA / max(len(series), 1)
    return [
        _series_view(i, name, points, alpha, known.get(name))
        for i, (name, points) in enumerate(series)
    ]
