"""Percentiles and CDFs recomputed exactly from stored HDR histograms (``latency.parquet``).

The rule is the engine's own (``iowatt-metrics`` ``LatencyHistogram::percentile``): sort the
buckets by value, and percentile p is the first ``value_ns`` whose cumulative count reaches
``ceil(p / 100 · total)`` (at least 1). The rank is computed with the same float operations as
the Rust code, so a recomputed percentile equals the reported one bit for bit.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

# The bands are defined without numpy, for the verbs that plan with them; the modules that
# compute with them find them here too.
from iowatt.bands import DEFAULT_SLOW_NS as DEFAULT_SLOW_NS
from iowatt.bands import HEAT_EDGES_NS as HEAT_EDGES_NS
from iowatt.bands import HEAT_PALETTE as HEAT_PALETTE
from iowatt.bands import heat_colour as heat_colour
from iowatt.bands import heat_level as heat_level


def heat_bands(values_ns: npt.ArrayLike, counts: npt.ArrayLike) -> list[int]:
    """Operations per heatmap band of a bucketed histogram (or of single latencies, with
    counts of 1), by the engine's rule."""
    values = np.asarray(values_ns, dtype=np.int64)
    edges = np.asarray(HEAT_EDGES_NS, dtype=np.int64)
    band = np.searchsorted(edges, values, side="left")
    weights = np.asarray(counts, dtype=np.int64)
    return np.bincount(band, weights=weights, minlength=len(edges) + 1).astype(np.int64).tolist()


# The percentiles every summary carries.
STANDARD_PERCENTILES: tuple[float, ...] = (50.0, 90.0, 95.0, 99.0, 99.9, 99.99)


def _sorted_buckets(
    values_ns: Sequence[int] | npt.NDArray[np.int64],
    counts: Sequence[int] | npt.NDArray[np.int64],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    values = np.asarray(values_ns, dtype=np.int64)
    weights = np.asarray(counts, dtype=np.int64)
    if values.shape != weights.shape:
        raise ValueError(f"{values.size} values but {weights.size} counts")
    if values.size < 2 or bool(np.all(values[1:] >= values[:-1])):
        return values, weights  # as the engine and the store hand them over
    order = np.argsort(values, kind="stable")
    return values[order], weights[order]


def percentile(
    values_ns: Sequence[int] | npt.NDArray[np.int64],
    counts: Sequence[int] | npt.NDArray[np.int64],
    p: float,
) -> int:
    """Percentile ``p`` (0 to 100) of a bucketed histogram, in ns; 0 for an empty histogram."""
    return percentiles(values_ns, counts, (p,))[0]


def percentiles(
    values_ns: Sequence[int] | npt.NDArray[np.int64],
    counts: Sequence[int] | npt.NDArray[np.int64],
    ps: Sequence[float],
) -> list[int]:
    """:func:`percentile` for each of ``ps``, the histogram sorted once."""
    values, weights = _sorted_buckets(values_ns, counts)
    total = int(weights.sum())
    if total == 0:
        return [0] * len(ps)
    cumulative = np.cumsum(weights)
    out = []
    for p in ps:
        rank = max(math.ceil((p / 100.0) * float(total)), 1)
        index = int(np.searchsorted(cumulative, rank, side="left"))
        # A rank beyond the total (p > 100) clamps to the largest bucket, as the engine does.
        out.append(int(values[min(index, values.size - 1)]))
    return out


def cdf(
    values_ns: Sequence[int] | npt.NDArray[np.int64],
    counts: Sequence[int] | npt.NDArray[np.int64],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """The empirical CDF: bucket values and the fraction of operations at or below each."""
    values, weights = _sorted_buckets(values_ns, counts)
    keep = weights > 0
    values, weights = values[keep], weights[keep]
    cumulative = np.cumsum(weights)
    if cumulative.size == 0:
        return values, cumulative.astype(np.float64)
    return values, cumulative / cumulative[-1]


def latency_summary(hist: Mapping[str, Any]) -> dict[str, Any]:
    """summary.json's ``latency_ns`` of an engine histogram (``value_ns``, ``count``, and the
    exact ``min_ns``, ``mean_ns``, ``stdev_ns``, ``max_ns`` the engine keeps beside them)."""
    out: dict[str, Any] = {
        "min": hist["min_ns"],
        "mean": hist["mean_ns"],
        "stdev": hist["stdev_ns"],
    }
    found = percentiles(hist["value_ns"], hist["count"], STANDARD_PERCENTILES)
    out.update({f"p{p:g}": v for p, v in zip(STANDARD_PERCENTILES, found, strict=True)})
    out["max"] = hist["max_ns"]
    return out
