"""The latency bands every verb shares — the slow thresholds, the heatmap's bands and its colour
scale — without numpy, so that planning a run (and ``iowatt bench --check``) needs none;
:mod:`iowatt.histogram` computes with them.
"""

from __future__ import annotations

import math

# The study's slow thresholds: 100 ms, and 200 ms (every disk I/O past it stalled the network).
DEFAULT_SLOW_NS: tuple[int, ...] = (100_000_000, 200_000_000)
# The latency heatmap's bands, one scale for the report, the live view and Grafana: 1-2-5 per
# decade from 1 µs to 100 s. Band 0 holds operations of at most 1 µs, band i those above
# HEAT_EDGES_NS[i - 1] up to HEAT_EDGES_NS[i], the last those above 100 s (the engine's
# ``LatencyHistogram::counts_by_edges``, the rule of the slow thresholds).
HEAT_EDGES_NS: tuple[int, ...] = (
    *(m * 10**e for e in range(3, 11) for m in (1, 2, 5)),
    10**11,
)
# Its colour scale: an empty cell is white; otherwise log10(operations) over log10 of the
# busiest cell (``heat_level``) picks a colour along these, evenly spaced (viridis, light for
# few, dark for many).
HEAT_PALETTE: tuple[str, ...] = (
    "#fde725",
    "#b5de2b",
    "#6ece58",
    "#35b779",
    "#1f9e89",
    "#26828e",
    "#31688e",
    "#3e4989",
    "#482878",
    "#440154",
)


def heat_level(ops: float, busiest: float) -> float | None:
    """Where ``ops`` sits on the heatmap's colour scale, 0 to 1 (log), against the busiest
    cell; None for an empty cell (white)."""
    if ops <= 0:
        return None
    return math.log10(ops) / math.log10(busiest) if busiest > 1 else 1.0


def heat_colour(ops: float, busiest: float) -> str | None:
    """A cell's colour (``#rrggbb``): its :func:`heat_level` along the palette, blended
    linearly between neighbouring colours as the report's colour map does; None when empty."""
    level = heat_level(ops, busiest)
    if level is None:
        return None
    x = min(max(level, 0.0), 1.0) * (len(HEAT_PALETTE) - 1)
    i = min(int(x), len(HEAT_PALETTE) - 2)
    a, b = (bytes.fromhex(HEAT_PALETTE[j][1:]) for j in (i, i + 1))
    mixed = (round(p + (q - p) * (x - i)) for p, q in zip(a, b, strict=True))
    return "#" + "".join(f"{c:02x}" for c in mixed)
