"""Reading run directories (docs/run-store.md) into what the report draws.

Only ``manifest.json`` is required: a run stopped early may lack the rest or have empty
Parquet files, and the report shows "no data" for it instead of failing. Runs recorded before
``intervals.parquet`` had its ``slow_ns``/``slow_ops`` columns (or imported ones) simply have
no per-interval slow counts.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from iowatt.errors import RunNotFoundError
from iowatt.store.manifest import MANIFEST, SUMMARY
from iowatt.store.runs import DamagedRun, read_manifest, read_summary, read_table

_INTERVAL_COLUMNS = ("t_s", "duration_s", "ops_s", "mib_s", "mono_ns")
PowerSeries = tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]


@dataclass(frozen=True)
class Histogram:
    """The whole-workload latency buckets (rows of ``latency.parquet`` with a null flowop)."""

    values_ns: npt.NDArray[np.int64]
    counts: npt.NDArray[np.int64]

    @property
    def total(self) -> int:
        """Operations recorded in the histogram."""
        return int(self.counts.sum())


@dataclass(frozen=True)
class SlowCounts:
    """One workload's per-interval counts of operations above each slow threshold.

    Read from the ``slow_ns``/``slow_ops`` list columns of ``intervals.parquet``, in interval
    order, with the interval's ``ops`` and ``ops_s`` beside them so they can be related.
    """

    thresholds_ns: tuple[int, ...]
    ops: npt.NDArray[np.int64]
    ops_s: npt.NDArray[np.float64]
    # intervals × thresholds
    slow_ops: npt.NDArray[np.int64]

    @property
    def any_slow(self) -> bool:
        """Whether any interval had an operation above the lowest threshold."""
        return bool(self.slow_ops.size and self.slow_ops.max() > 0)


@dataclass(frozen=True)
class SweepData:
    """A sweep run's own tables (docs/sweep.md); each is ``None`` when its file is missing."""

    # steps.parquet: one row per pass, step and disk
    steps: pa.Table | None
    # latency.parquet with its pass_no, step and value columns (workload = disk)
    latency: pa.Table | None
    # sensors.parquet and power.parquet (as unit "W") in one table of READING_SCHEMA
    readings: pa.Table | None
    # events.parquet
    events: pa.Table | None


@dataclass(frozen=True)
class Run:
    """One run directory: its JSON documents and per-workload series, keyed by workload.

    A sweep run has no workloads: its disks' data is in ``sweep`` (``None`` for other kinds),
    and ``intervals`` and ``latency`` are empty.
    """

    path: Path
    manifest: dict[str, Any]
    summary: dict[str, Any]
    intervals: dict[str, dict[str, npt.NDArray[np.float64]]]
    latency: dict[str, Histogram]
    # "source/channel" → (seconds since the power recording began, watts)
    power: dict[str, PowerSeries]
    sweep: SweepData | None = None
    # per-interval slow-operation counts, for the workloads whose intervals carry them
    slow: dict[str, SlowCounts] = field(default_factory=dict)
    # per-interval operations per heatmap band (intervals × bands), where recorded
    heat: dict[str, tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]]] = field(
        default_factory=dict
    )

    @property
    def kind(self) -> str | None:
        """The manifest's ``kind`` (bench, power, sweep …)."""
        kind = self.manifest.get("kind")
        return kind if isinstance(kind, str) else None

    @property
    def run_id(self) -> str:
        """The run id, falling back to the directory name for a manifest without one."""
        return str(self.manifest.get("run_id") or self.path.name)

    @property
    def workloads(self) -> list[str]:
        """Workload names in the order the run declared them, then any only found in data."""
        names = [*self.summary.get("workloads", {}), *sorted(self.intervals), *sorted(self.latency)]
        return list(dict.fromkeys(names))


def _read_parquet(path: Path) -> pa.Table | None:
    # A run interrupted before its first interval may have written no file at all.
    return read_table(path.parent, path.name)


def _by_workload(table: pa.Table | None) -> Iterator[tuple[str, pa.Table]]:
    """The rows of each workload, in order of first appearance; nothing for a missing table."""
    if table is None:
        return
    # One stable sort by workload, then slices: a filter per workload reads the whole table
    # each time, which dominated reports of hundreds of runs.
    names = pc.unique(table["workload"])
    codes = pc.index_in(table["workload"], names).to_numpy()
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(names) + 1))
    grouped = table.take(order)
    for i, name in enumerate(names.to_pylist()):
        yield name, grouped.slice(bounds[i], bounds[i + 1] - bounds[i])


def _intervals(table: pa.Table | None) -> dict[str, dict[str, npt.NDArray[np.float64]]]:
    if table is not None:
        table = table.sort_by("t_s")  # filtering keeps this order
    return {
        name: {c: rows[c].to_numpy().astype(np.float64) for c in _INTERVAL_COLUMNS}
        for name, rows in _by_workload(table)
    }


def _slow_counts(rows: pa.Table) -> SlowCounts | None:
    """The slow counts of one workload's intervals, or ``None`` when they have none.

    Every interval must carry the same thresholds and one count per threshold; anything else
    (an old run, an import, an interval written without them) is treated as no data rather
    than guessed at, since a missing count would read as a fast second.
    """
    if "slow_ns" not in rows.column_names or "slow_ops" not in rows.column_names:
        return None
    thresholds = _list_matrix(rows["slow_ns"])
    counts = _list_matrix(rows["slow_ops"])
    if thresholds is None or counts is None or counts.shape != thresholds.shape:
        return None
    if (thresholds != thresholds[0]).any():
        return None
    return SlowCounts(
        thresholds_ns=tuple(int(t) for t in thresholds[0]),
        ops=rows["ops"].to_numpy().astype(np.int64),
        ops_s=rows["ops_s"].to_numpy().astype(np.float64),
        slow_ops=counts,
    )


def _list_matrix(column: pa.ChunkedArray) -> npt.NDArray[np.int64] | None:
    """A list<int64> column as rows × k, or ``None`` unless every row holds the same
    non-zero number of values (none null): what an older run or an import lacks is no data,
    never zeros."""
    lists = column.combine_chunks()
    if not len(lists) or lists.null_count:
        return None
    k = pc.list_value_length(lists).to_numpy()
    values = lists.flatten()
    if not k[0] or (k != k[0]).any() or values.null_count:
        return None
    return values.to_numpy().astype(np.int64).reshape(len(lists), k[0])


def _heat(
    table: pa.Table | None,
) -> dict[str, tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]]]:
    """Each workload's interval starts and its operations per heatmap band, for the workloads
    whose every interval has the bands (runs before them have none)."""
    if table is None or "heat_ops" not in table.column_names:
        return {}
    out = {}
    for name, rows in _by_workload(table.sort_by("t_s")):
        counts = _list_matrix(rows["heat_ops"])
        if counts is not None:
            out[name] = (rows["t_s"].to_numpy().astype(np.float64), counts)
    return out


def _slow(table: pa.Table | None) -> dict[str, SlowCounts]:
    if table is not None:
        table = table.sort_by("t_s")
    out = {}
    for name, rows in _by_workload(table):
        counts = _slow_counts(rows)
        if counts is not None:
            out[name] = counts
    return out


def _latency(table: pa.Table | None) -> dict[str, Histogram]:
    if table is not None:
        # Per-flowop rows repeat the same operations; only the merged rows describe the workload.
        table = table.filter(pc.is_null(table["flowop"]))
    return {
        name: Histogram(
            values_ns=rows["value_ns"].to_numpy().astype(np.int64),
            counts=rows["count"].to_numpy().astype(np.int64),
        )
        for name, rows in _by_workload(table)
    }


def _power(table: pa.Table | None) -> dict[str, PowerSeries]:
    if table is None or table.num_rows == 0:
        return {}
    table = table.sort_by("mono_ns")
    keys = pc.binary_join_element_wise(table["source"], table["channel"], "/")
    out: dict[str, PowerSeries] = {}
    for key in pc.unique(keys).to_pylist():
        rows = table.filter(pc.equal(keys, key))
        watts = rows["watts"].to_numpy(zero_copy_only=False).astype(np.float64)
        out[key] = (rows["t_s"].to_numpy().astype(np.float64), watts)
    return out


# Sensor and power readings side by side, for the sweep's per-step sensor plot.
READING_SCHEMA = pa.schema(
    [
        ("source", pa.string()),
        ("channel", pa.string()),
        ("unit", pa.string()),
        ("mono_ns", pa.int64()),
        ("value", pa.float64()),
    ]
)


def _readings(sensors: pa.Table | None, power: pa.Table | None) -> pa.Table | None:
    parts = []
    if sensors is not None:
        parts.append(sensors.select(READING_SCHEMA.names).cast(READING_SCHEMA))
    if power is not None:
        watts = pa.table(
            {
                "source": power["source"],
                "channel": power["channel"],
                "unit": pa.array(["W"] * power.num_rows, pa.string()),
                "mono_ns": power["mono_ns"],
                "value": power["watts"],
            }
        )
        parts.append(watts.cast(READING_SCHEMA))
    return pa.concat_tables(parts) if parts else None


def _sweep(path: Path) -> SweepData:
    return SweepData(
        steps=_read_parquet(path / "steps.parquet"),
        latency=_read_parquet(path / "latency.parquet"),
        readings=_readings(
            _read_parquet(path / "sensors.parquet"), _read_parquet(path / "power.parquet")
        ),
        events=_read_parquet(path / "events.parquet"),
    )


def load_run(path: Path, detail: bool = True) -> Run:
    """Read one run directory (without the per-interval detail — slow counts, heatmap bands —
    unless ``detail``); raises
    :class:`RunNotFoundError` when it has no manifest, and a StoreError naming the file when
    one is damaged."""
    manifest_path = path / MANIFEST
    if not manifest_path.is_file():
        raise RunNotFoundError(
            f"`{path}` is not a run directory (no manifest.json)",
            hint="pass a directory under the results directory, e.g. `iowatt-results/<run id>`",
        )
    try:
        return _load(path, detail)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as e:
        raise DamagedRun(
            path, "manifest.json, summary.json or Parquet files", f"odd ({e!r})"
        ) from None


def load_runs(paths: Sequence[Path], detail: bool = True) -> list[Run]:
    """:func:`load_run` of each, a few at a time: Parquet decoding releases the GIL."""
    if len(paths) < 8:
        return [load_run(p, detail) for p in paths]
    with ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1)) as pool:
        return list(pool.map(lambda p: load_run(p, detail), paths))


def _load(path: Path, detail: bool) -> Run:
    manifest = read_manifest(path)
    summary = read_summary(path) if (path / SUMMARY).is_file() else {}
    power = _power(_read_parquet(path / "power.parquet"))
    if manifest.get("kind") == "sweep":
        # A sweep's intervals and histograms are per disk *and step*: merged per disk they
        # would mix every stimulus level, so the sweep section reads them itself.
        return Run(path, manifest, summary, {}, {}, power, sweep=_sweep(path))
    intervals = _read_parquet(path / "intervals.parquet")
    return Run(
        path=path,
        manifest=manifest,
        summary=summary,
        intervals=_intervals(intervals),
        latency=_latency(_read_parquet(path / "latency.parquet")),
        power=power,
        slow=_slow(intervals) if detail else {},
        heat=_heat(intervals) if detail else {},
    )
