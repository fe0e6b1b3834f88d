"""The latency heatmap of a long run: operations per latency band (1-2-5 per decade) in each
second, as a storage array's analytics drew them — a band lighting up above the others shows
a degradation while it happens, where a per-second percentile hides how many it hit.

Bands and colours are ``iowatt.histogram``'s, which the live view and Grafana share, so a
picture taken live and one here can be compared.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from matplotlib.colors import LinearSegmentedColormap, LogNorm
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator

from iowatt.histogram import HEAT_EDGES_NS, HEAT_PALETTE
from iowatt.report.load import Run
from iowatt.report.plots import _FIGSIZE, Plot, _to_svg
from iowatt.units import format_ns

# A run needs this many intervals for a heatmap to say more than its timeline does.
HEAT_AFTER = 30
# Heatmaps drawn in one report (the first (run, workload) pairs that qualify).
MAX_HEATMAPS = 4

HEAT_CMAP = LinearSegmentedColormap.from_list("iowatt-heat", HEAT_PALETTE).with_extremes(
    bad="white"
)


@dataclass(frozen=True)
class HeatView:
    run_id: str
    workload: str
    plot: Plot


def heat_norm(busiest: float) -> LogNorm:
    """The colour scale of ``iowatt.histogram.heat_level``: log, from 1 operation to the
    busiest cell."""
    return LogNorm(vmin=1.0, vmax=max(busiest, 1.0 + 1e-9))


def heatmaps(runs: Sequence[Run], short: dict[str, str]) -> list[HeatView]:
    views: list[HeatView] = []
    for run in runs:
        for w in run.workloads:
            if w not in run.heat or len(run.heat[w][0]) < HEAT_AFTER:
                continue
            if len(views) == MAX_HEATMAPS:
                return views
            t_s, counts = run.heat[w]
            name = short.get(run.run_id) or run.run_id
            caption = (
                f"Operations per latency band (1-2-5 per decade) in each second of {w} "
                f"({name}); colour: operations, log scale; white: none."
            )
            key = f"heat-{len(views)}"
            views.append(HeatView(run.run_id, w, Plot(key, caption, heat_plot(t_s, counts, key))))
    return views


def heat_plot(t_s: npt.NDArray[np.float64], counts: npt.NDArray[np.int64], name: str) -> str | None:
    """Seconds across, latency bands up (only those holding operations, one either side)."""
    used = np.flatnonzero(counts.sum(axis=0))
    if not used.size:
        return None
    lo, hi = max(int(used[0]) - 1, 0), min(int(used[-1]) + 1, counts.shape[1] - 1)
    cells = np.ma.masked_less_equal(counts[:, lo : hi + 1].T.astype(np.float64), 0)
    fig = Figure(figsize=_FIGSIZE, layout="constrained")
    ax = fig.subplots()
    end = float(t_s[-1]) + 1.0 if t_s.size else 1.0
    image = ax.imshow(
        cells,
        aspect="auto",
        origin="lower",
        interpolation="nearest",
        cmap=HEAT_CMAP,
        norm=heat_norm(float(cells.max())),
        extent=(float(t_s[0]), end, lo, hi + 1),
    )
    # Band i spans [i, i + 1); the edge between bands i - 1 and i is HEAT_EDGES_NS[i - 1].
    ticks = [i for i in range(lo + 1, hi + 1) if str(HEAT_EDGES_NS[i - 1]).startswith("1")]
    ax.yaxis.set_major_locator(FixedLocator(ticks))
    ax.set_yticklabels([format_ns(HEAT_EDGES_NS[i - 1]) for i in ticks])
    ax.set_xlabel("time since the measured phase began (s)")
    ax.set_ylabel("latency")
    fig.colorbar(image, ax=ax, label="operations", pad=0.01)
    return _to_svg(fig, name)
