"""The answer a report over several environments leads with: the comparison ``iowatt compare``
prints (each environment's median against the control, with its confidence interval and test),
and a forest plot of those differences against the noise band.

The environments are the runs' ``env`` label, as a campaign sets it; the control is the
environment whose first run started first, as ``iowatt compare`` chooses by default.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from matplotlib.figure import Figure

from iowatt.compare.data import METRICS, Rows
from iowatt.compare.latent import KINDS, Finding
from iowatt.compare.render import legend, render, table_rows
from iowatt.compare.table import Comparison, Settings, compare
from iowatt.report.load import Run
from iowatt.report.plots import Plot, _to_svg, with_titles

BY = "env"


@dataclass(frozen=True)
class Verdict:
    by: str
    control: str
    header: list[str]
    rows: list[list[str]]
    legend: str
    warnings: list[str]
    csv: str
    forest: Plot
    # Each workload's latent effects, as the comparison found them, for the series charts.
    findings: dict[str, list[Finding]]


def verdict(runs: Sequence[Run], thresholds_ns: Sequence[int]) -> Verdict | None:
    """The comparison of the runs' environments; None unless there are two or more."""
    rows = _rows(runs, thresholds_ns)
    if rows is None:
        return None
    cmp = compare(rows, Settings(by=BY))
    assert cmp.control is not None  # two groups or more
    header, body = table_rows(cmp, "study")
    return Verdict(
        by=BY,
        control=cmp.control,
        header=header,
        rows=body,
        legend=legend(cmp, "study"),
        warnings=cmp.warnings(),
        csv=render(cmp, rows, "csv", "long"),
        forest=Plot("forest", _caption(cmp), forest_plot(cmp)),
        findings={w: _findings(cmp, w) for w in cmp.workloads},
    )


def _findings(cmp: Comparison, workload: str) -> list[Finding]:
    """The workload's findings, which the comparison files under each environment's cell, in
    the order ``analyse_series`` gives them."""
    found = [f for g in cmp.groups if (c := cmp.cell(workload, g)) for f in c.findings]
    return sorted(found, key=lambda f: (f.runs[0], KINDS.index(f.kind)))


def _rows(runs: Sequence[Run], thresholds_ns: Sequence[int]) -> Rows | None:
    """One row per (run, workload) of the runs with an ``env`` label, as the catalog gives them
    to ``iowatt compare``."""
    picked = []
    for run in runs:
        group = (run.manifest.get("labels") or {}).get(BY)
        if group is None or run.manifest.get("status") != "complete":
            continue  # as `iowatt compare` without --include-incomplete
        for w in run.workloads:
            if s := run.summary.get("workloads", {}).get(w):
                picked.append((run, w, str(group), s))
    if len({g for _, _, g, _ in picked}) < 2:
        return None
    picked.sort(key=lambda p: (p[1], p[0].manifest.get("started_ns") or 0, p[0].run_id))
    above = np.zeros((len(picked), len(thresholds_ns)), dtype=np.int64)
    total = np.zeros(len(picked), dtype=np.int64)
    for i, (run, w, _, _) in enumerate(picked):
        hist = run.latency.get(w)
        if hist is not None:
            total[i] = hist.total
            above[i] = [int(hist.counts[hist.values_ns > t].sum()) for t in thresholds_ns]
    metrics = {m: np.full(len(picked), np.nan) for m in METRICS}
    for m in ("ops_s", "mib_s"):
        metrics[m] = np.array([float(s.get(m) or np.nan) for _, _, _, s in picked])
    labelled = {p[0].run_id for p in picked}
    return Rows(
        run_id=np.array([r.run_id for r, _, _, _ in picked], dtype=object),
        started_ns=np.array([r.manifest.get("started_ns") or 0 for r, _, _, _ in picked]),
        group=np.array([g for _, _, g, _ in picked], dtype=object),
        workload=np.array([w for _, w, _, _ in picked], dtype=object),
        metrics=metrics,
        ops_total=total,
        ops_above=above,
        thresholds_ns=tuple(thresholds_ns),
        unlabelled=sum(r.run_id not in labelled for r in runs),
    )


def _caption(cmp: Comparison) -> str:
    s = cmp.settings
    return (
        f"Each {s.by}'s median {METRICS[s.metric][0]} against {s.by}={cmp.control}, with its "
        f"{s.confidence:.0%} confidence interval; filled: significant ({s.test}, alpha "
        f"{s.alpha:g}) and beyond the ±{s.noise_pct:g} % noise band, shaded."
    )


def forest_plot(cmp: Comparison) -> str | None:
    """One line per (workload, environment) other than the control: the % difference and its
    confidence interval, the noise band shaded around 0."""
    cells = [
        c
        for w in cmp.workloads
        for g in cmp.groups
        if (c := cmp.cell(w, g)) is not None and c.diff is not None and np.isfinite(c.diff.pct)
    ]
    if not cells:
        return None
    noise = cmp.settings.noise_pct
    fig = Figure(figsize=(9.0, 0.9 + 0.32 * len(cells)), layout="constrained")
    ax = fig.subplots()
    ax.axvspan(-noise, noise, color="0.9", zorder=0)
    ax.axvline(0, color="0.4", linewidth=0.8)
    for y, c in enumerate(cells):
        d = c.diff
        assert d is not None
        # The colour the series charts give the environment (in order of first run).
        color = f"C{cmp.groups.index(c.group) % 10}"
        filled = c.significant(cmp.settings)
        if np.isfinite(d.ci_low) and np.isfinite(d.ci_high):
            ax.plot([d.ci_low, d.ci_high], [y, y], color=color, linewidth=2)
        ax.plot(
            [d.pct],
            [y],
            "o",
            color=color,
            markerfacecolor=color if filled else "white",
            gid=f"cell{y}",
        )
    ax.set_yticks(range(len(cells)), [f"{c.workload} · {c.group}" for c in cells])
    ax.invert_yaxis()
    ax.set_xlabel(f"% difference from {cmp.settings.by}={cmp.control}")
    ends = [v for c in cells if c.diff for v in (c.diff.pct, c.diff.ci_low, c.diff.ci_high)]
    lows = highs = [v for v in ends if np.isfinite(v)]
    span = max(max(highs), noise) - min(min(lows), -noise)
    ax.set_xlim(min(min(lows), -noise) - 0.05 * span, max(max(highs), noise) + 0.05 * span)
    ax.grid(axis="x", alpha=0.3)
    svg = _to_svg(fig, "forest")
    for y, c in enumerate(cells):
        d = c.diff
        assert d is not None
        svg = with_titles(
            svg,
            f"forest-cell{y}",
            [
                f"{c.workload} · {c.group}: {d.pct:+.1f}% (CI {d.ci_low:+.1f}%"
                f" … {d.ci_high:+.1f}%), p = {d.p_value:.3g}, n = {c.summary.n}"
            ],
        )
    return svg
