"""The report's tail-latency figures: shares above the slow thresholds, and what they cost.

A small share of very slow I/Os can cost a large share of throughput (the study's 4-6 % above
200 ms cost 40 %+), so the report shows the share above each threshold beside the percentiles,
and, where the intervals carry slow counts, relates each second's slow operations to its
ops/s. Shares come from the whole-run histogram and are exact; the cells keep the exact
fraction and count in attributes, like the latency cells keep their ns.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from iowatt.compare.tails import (
    DEFAULT_THRESHOLDS_NS,
    SlowRelation,
    interval_relation,
    share_above,
)
from iowatt.report import plots
from iowatt.report.load import Run, SlowCounts
from iowatt.report.plots import Plot, SlowShares, Style
from iowatt.units import format_ns, format_rate

# Scatter plots drawn at most: past that, a report of a long campaign keeps only the tables.
MAX_SLOW_PLOTS = 12
# Run × workload pairs named at most in the "nothing slow" sentence.
MAX_NAMED = 12


def run_thresholds(run: Run) -> tuple[int, ...]:
    """The thresholds a run counted slow operations at, else the defaults."""
    own = {t for counts in run.slow.values() for t in counts.thresholds_ns}
    return tuple(sorted(own)) if own else DEFAULT_THRESHOLDS_NS


def report_thresholds(runs: Sequence[Run]) -> tuple[int, ...]:
    """Every run's thresholds: the histogram gives any run's exact share at each of them."""
    bench = [run for run in runs if run.sweep is None] or list(runs)
    return tuple(sorted({t for run in bench for t in run_thresholds(run)}))


def threshold_label(ns: int) -> str:
    """``> 100 ms``: the column header and legend entry of a threshold."""
    return f"> {format_ns(ns)}"


def format_share(share: float) -> str:
    """A share as a percentage with three significant digits, so 0.05 % stays visible."""
    if math.isnan(share):
        return "—"
    if share == 0:
        return "0 %"
    pct = 100 * share
    return "< 0.001 %" if pct < 0.001 else f"{pct:.3g} %"


@dataclass(frozen=True)
class TailCell:
    """The share of a workload's operations above one threshold: text, exact share, count."""

    text: str
    share: float
    count: int
    title: str


def tail_cells(run: Run, workload: str, thresholds: Sequence[int]) -> list[TailCell]:
    """One cell per threshold from the whole-run histogram; none without a histogram."""
    hist = run.latency.get(workload)
    if hist is None or not hist.total:
        return []
    cells = []
    shares = share_above(hist.values_ns, hist.counts, thresholds)
    for t, share in zip(thresholds, shares, strict=True):
        count = int(hist.counts[hist.values_ns > t].sum())
        title = f"{count:,} of {hist.total:,} operations above {t:,} ns ({share!r})"
        cells.append(TailCell(format_share(share), share, count, title))
    return cells


@dataclass(frozen=True)
class SlowRow:
    """One threshold of one (run, workload): seconds, shares and the throughput they cost."""

    threshold: str
    threshold_ns: int
    seconds: int
    seconds_slow: int
    share: str
    share_exact: float
    clean: str
    slow: str
    loss: str
    loss_exact: float
    rho: str
    rho_exact: float


@dataclass(frozen=True)
class SlowEntry:
    """A (run, workload) whose intervals had slow operations: its scatter plot and table."""

    run_id: str
    workload: str
    style: Style
    plot: Plot | None
    rows: list[SlowRow]


@dataclass(frozen=True)
class SlowSection:
    """Everything the "Slow operations and throughput" section shows."""

    entries: list[SlowEntry]
    plots_left_out: int
    # (run id, workload) pairs whose intervals have slow counts but never a slow operation
    clean: list[tuple[str, str]]
    clean_threshold: str
    # pairs with intervals but no slow counts (older or imported runs)
    without_counts: int

    @property
    def clean_named(self) -> list[tuple[str, str]]:
        """The clean pairs named in the page; the rest are counted."""
        return self.clean[:MAX_NAMED]


def _rate(value: float) -> str:
    return "—" if math.isnan(value) else format_rate(value)


def _slow_row(r: SlowRelation) -> SlowRow:
    return SlowRow(
        threshold=threshold_label(r.threshold_ns),
        threshold_ns=r.threshold_ns,
        seconds=r.seconds,
        seconds_slow=r.seconds_slow,
        share=format_share(r.slow_share),
        share_exact=r.slow_share,
        clean=_rate(r.ops_s_clean),
        slow=_rate(r.ops_s_slow),
        loss="—" if math.isnan(r.loss_pct) else f"{r.loss_pct:.1f} %",
        loss_exact=r.loss_pct,
        rho="—" if math.isnan(r.rho) else f"{r.rho:+.2f}".replace("-", "−"),
        rho_exact=r.rho,
    )


def slow_section(runs: Sequence[Run], style: dict[tuple[str, str], Style]) -> SlowSection:
    """Relate slow operations to throughput for every (run, workload) that had any."""
    entries: list[SlowEntry] = []
    clean: list[tuple[str, str]] = []
    # The clean pairs had nothing above their lowest threshold, so nothing above the highest
    # of those: the one threshold the sentence about them can truthfully name.
    clean_threshold = 0
    without = 0
    for run in runs:
        for w in run.workloads:
            counts = run.slow.get(w)
            if counts is None:
                if w in run.intervals:
                    without += 1
                continue
            if not counts.any_slow:
                clean.append((run.run_id, w))
                clean_threshold = max(clean_threshold, min(counts.thresholds_ns))
                continue
            relations = interval_relation(
                counts.ops_s, counts.ops, counts.thresholds_ns, counts.slow_ops
            )
            plot = None
            if len(entries) < MAX_SLOW_PLOTS:
                plot = _scatter(len(entries), run.run_id, w, counts)
            rows = [_slow_row(r) for r in relations]
            entries.append(SlowEntry(run.run_id, w, style[run.run_id, w], plot, rows))
    return SlowSection(
        entries=entries,
        plots_left_out=max(len(entries) - MAX_SLOW_PLOTS, 0),
        clean=clean,
        clean_threshold=format_ns(clean_threshold),
        without_counts=without,
    )


def _scatter(index: int, run_id: str, workload: str, counts: SlowCounts) -> Plot:
    """The scatter plot of one (run, workload), over the intervals the relation counts."""
    keep = (counts.ops > 0) | (counts.slow_ops > 0).any(axis=1)
    slow = counts.slow_ops[keep]
    # The relation's rule: a slow count without completed operations is a fully slow second.
    ops = np.maximum(counts.ops[keep], np.maximum(slow.max(axis=1, initial=0), 1))
    shares = [
        SlowShares(
            threshold_label(t),
            plots.THRESHOLD_COLORS[k % len(plots.THRESHOLD_COLORS)],
            slow[:, k] / ops,
        )
        for k, t in enumerate(counts.thresholds_ns)
    ]
    return Plot(
        f"slow-{index}",
        f"ops/s of {workload} in run {run_id} in each interval, against the share of that "
        "interval's operations above each threshold.",
        plots.slow_scatter(counts.ops_s[keep], shares, f"slow{index}"),
    )
