"""A sweep's curves: each disk's throughput against the stimulus, over every pass.

Pure functions on the sweep's tables (docs/sweep.md): :func:`curve_table` folds the step rows
(``steps.parquet``) into one row per disk and stimulus value (``sweep.parquet``),
:func:`curve_documents` turns that into one JSON curve file per disk (the server simulator's
input), :func:`read_curve` checks such a file, and :func:`step_sensor_means` averages the sensor
readings over each step's hold window.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from iowatt.errors import ConfigError
from iowatt.histogram import percentile
from iowatt.store.schemas import CURVE_SCHEMA

CURVE_FORMAT = "iowatt-curve/1"
# The keys of a curve file and of each of its points, in the order they are written.
CURVE_KEYS = (
    "format",
    "run_id",
    "status",
    "disk",
    "stimulus",
    "settle_s",
    "hold_s",
    "passes",
    "generator",
    "max_mib_s",
    "points",
)
POINT_KEYS = ("value", "mib_s", "mib_s_min", "mib_s_max", "norm", "norm_min", "norm_max", "passes")
# Sensor readings averaged over one step's hold window (both ends included).
SENSOR_MEANS_SCHEMA = pa.schema(
    [
        ("pass_no", pa.int32()),
        ("step", pa.int32()),
        ("value", pa.float64()),
        ("start_mono_ns", pa.int64()),
        ("end_mono_ns", pa.int64()),
        ("source", pa.string()),
        ("channel", pa.string()),
        ("unit", pa.string()),
        ("mean", pa.float64()),
        ("min", pa.float64()),
        ("max", pa.float64()),
        ("count", pa.int64()),
    ]
)
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
_HINT = "curve files are written by `iowatt sweep`; their format is in docs/sweep.md"

Window = tuple[str, int, int]  # (disk, pass_no, step)
Ints = npt.NDArray[np.int64]
Floats = npt.NDArray[np.float64]
Buckets = tuple[Ints, Ints]


# --- the curve table --------------------------------------------------------------------------


def _finite(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def _measured_steps(steps: pa.Table) -> dict[tuple[str, float], list[dict[str, Any]]]:
    """Step rows that measured a throughput, by (disk, value)."""
    groups: dict[tuple[str, float], list[dict[str, Any]]] = {}
    for row in steps.to_pylist():
        if row["disk"] is None or not _finite(row["value"]) or not _finite(row["mib_s"]):
            continue
        groups.setdefault((row["disk"], float(row["value"])), []).append(row)
    return groups


def _merged_buckets(latency: pa.Table, windows: Mapping[Window, int]) -> dict[int, Buckets]:
    """The whole-window histogram buckets of ``latency``, gathered per group of windows.

    ``windows`` maps each (disk, pass_no, step) to the curve row it belongs to; rows of windows
    not in it (and per-flowop rows, which repeat the same operations) are ignored.
    """
    if not {"workload", "pass_no", "step", "value_ns", "count"} <= set(latency.column_names):
        return {}  # not a sweep's latency table: no percentiles rather than wrong ones
    if "flowop" in latency.column_names:
        latency = latency.filter(pc.is_null(latency["flowop"]))
    latency = latency.combine_chunks()
    if latency.num_rows == 0:
        return {}
    encoded = pc.dictionary_encode(latency["workload"].chunk(0))
    disks = encoded.dictionary.to_pylist()
    # (disk, pass, step) as one integer, +1 so that null (-1) stays non-negative.
    parts = [
        pc.fill_null(column, -1).to_numpy().astype(np.int64) + 1
        for column in (encoded.indices, latency["pass_no"], latency["step"])
    ]
    sizes = [int(part.max()) + 1 for part in parts]
    unique, inverse = np.unique(np.ravel_multi_index(parts, sizes), return_inverse=True)
    group_of = np.array(
        [
            windows.get((disks[d - 1], p - 1, s - 1), -1) if d > 0 else -1
            for d, p, s in zip(*np.unravel_index(unique, sizes), strict=True)
        ],
        dtype=np.int64,
    )
    group = group_of[inverse.reshape(-1)]
    values = pc.fill_null(latency["value_ns"], 0).to_numpy().astype(np.int64)
    counts = pc.fill_null(latency["count"], 0).to_numpy().astype(np.int64)
    order = np.argsort(group, kind="stable")
    group, values, counts = group[order], values[order], counts[order]
    ids, starts = np.unique(group, return_index=True)
    ends = [*starts[1:].tolist(), group.size]
    return {
        int(g): (values[a:b], counts[a:b])
        for g, a, b in zip(ids.tolist(), starts.tolist(), ends, strict=True)
        if g >= 0
    }


def _latency_columns(buckets: Buckets | None) -> tuple[int | None, int | None, int | None]:
    """(p50, p99, max) of merged buckets; nulls when nothing completed."""
    if buckets is None:
        return None, None, None
    values, counts = buckets
    used = values[counts > 0]
    if not used.size:
        return None, None, None
    return percentile(values, counts, 50.0), percentile(values, counts, 99.0), int(used.max())


def curve_table(run_id: str, steps: pa.Table, latency: pa.Table | None) -> pa.Table:
    """One row per (disk, value) over every pass that measured it (``CURVE_SCHEMA``).

    ``steps`` has ``STEP_SCHEMA`` (rows without a finite ``mib_s`` did not measure and are left
    out); ``latency`` has the sweep's ``latency.parquet`` columns (``workload`` = disk,
    ``pass_no``, ``step``). ``mib_s`` is the mean over the passes, ``mib_s_std`` the population
    standard deviation; ``norm`` divides by the largest ``mib_s`` of the disk (so it peaks at
    exactly 1) and ``norm_min``/``norm_max`` divide the per-pass extremes by the same maximum
    (``norm_max`` may exceed 1). A disk whose maximum is 0 has null norms. Latency percentiles
    come from the merged buckets of the windows that measured the point; null without
    ``latency``. Sorted by disk, then value.
    """
    groups = _measured_steps(steps)
    keys = sorted(groups)
    windows: dict[Window, int] = {}
    for i, key in enumerate(keys):
        for row in groups[key]:
            if row["pass_no"] is not None and row["step"] is not None:
                windows[key[0], int(row["pass_no"]), int(row["step"])] = i
    buckets = _merged_buckets(latency, windows) if latency is not None else {}
    rows = []
    for i, (disk, value) in enumerate(keys):
        measured = groups[disk, value]
        mib = np.array([r["mib_s"] for r in measured], dtype=np.float64)
        iops = [float(r["iops"]) for r in measured if _finite(r["iops"])]
        p50, p99, top = _latency_columns(buckets.get(i))
        rows.append(
            {
                "run_id": run_id,
                "disk": disk,
                "stimulus": measured[0]["stimulus"],
                "unit": measured[0]["unit"],
                "value": value,
                "passes": len(measured),
                "mib_s": float(mib.mean()),
                "mib_s_min": float(mib.min()),
                "mib_s_max": float(mib.max()),
                "mib_s_std": float(mib.std()),
                "iops": float(np.mean(iops)) if iops else None,
                "p50_ns": p50,
                "p99_ns": p99,
                "max_ns": top,
            }
        )
    peak: dict[str, float] = {}
    for row in rows:
        peak[row["disk"]] = max(peak.get(row["disk"], 0.0), row["mib_s"])
    for row in rows:
        top_mib = peak[row["disk"]]
        for column in ("norm", "norm_min", "norm_max"):
            source = column.replace("norm", "mib_s")
            row[column] = row[source] / top_mib if top_mib > 0 else None
    return pa.Table.from_pylist(rows, CURVE_SCHEMA)


# --- curve files ------------------------------------------------------------------------------


def curve_meta(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """The ``meta`` of :func:`curve_documents` from a sweep's manifest.json."""
    config = manifest.get("config") or {}
    facts = (manifest.get("host") or {}).get("disks") or {}
    disks = {}
    for disk in config.get("disks") or []:
        host = facts.get(disk.get("name")) or {}
        disks[disk["name"]] = {
            "path": disk.get("path"),
            "model": host.get("device_model"),
            "rotational": host.get("rotational"),
            "profile": disk.get("profile"),
        }
    return {
        "run_id": manifest.get("run_id"),
        "status": manifest.get("status"),
        "stimulus": dict(config.get("stimulus") or {}),
        "disks": disks,
        "settle_s": config.get("settle_s"),
        "hold_s": config.get("hold_s"),
        "passes": config.get("passes"),
        "generator": dict(config.get("generator") or {}),
    }


def curve_documents(curve: pa.Table, meta: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """One ``iowatt-curve/1`` document per disk with at least one point (docs/sweep.md).

    ``curve`` is a :func:`curve_table`; ``meta`` carries ``run_id``, ``status``, ``stimulus``
    (``Stimulus.as_dict()``), ``disks`` (name → path, model, rotational, profile),
    ``settle_s``, ``hold_s``, ``passes`` and ``generator`` (see :func:`curve_meta`). Disks come
    in the order of ``meta["disks"]``, then any others by name.
    """
    by_disk: dict[str, list[dict[str, Any]]] = {}
    for row in curve.to_pylist():
        by_disk.setdefault(row["disk"], []).append(row)
    known = meta.get("disks") or {}
    order = [d for d in known if d in by_disk] + sorted(d for d in by_disk if d not in known)
    stimulus = meta.get("stimulus") or {}
    docs = {}
    for name in order:
        points = sorted(by_disk[name], key=lambda r: r["value"])
        disk = known.get(name) or {}
        docs[name] = {
            "format": CURVE_FORMAT,
            "run_id": meta.get("run_id", points[0]["run_id"]),
            "status": meta.get("status"),
            "disk": {
                "name": name,
                **{k: disk.get(k) for k in ("path", "model", "rotational", "profile")},
            },
            "stimulus": {
                "kind": stimulus.get("kind", points[0]["stimulus"]),
                "unit": stimulus.get("unit", points[0]["unit"]),
                "band": stimulus.get("band"),
                "amplitude_g": stimulus.get("amplitude_g"),
            },
            "settle_s": meta.get("settle_s"),
            "hold_s": meta.get("hold_s"),
            "passes": meta.get("passes"),
            "generator": dict(meta.get("generator") or {}),
            "max_mib_s": max(p["mib_s"] for p in points),
            "points": [{k: p[k] for k in POINT_KEYS} for p in points],
        }
    return docs


def curve_filename(disk: str) -> str:
    """``curve-<disk>.json``, the disk name reduced to ``[A-Za-z0-9._-]`` (others become ``_``)."""
    return f"curve-{_UNSAFE.sub('_', disk) or '_'}.json"


def _problem(path: Path, what: str) -> ConfigError:
    return ConfigError(f"curve file `{path}` {what}", _HINT)


def _check_number(path: Path, where: str, value: Any, minimum: float | None = None) -> None:
    if not _finite(value):
        raise _problem(path, f"has {where} = {json.dumps(value)}, not a number")
    if minimum is not None and value < minimum:
        raise _problem(path, f"has {where} = {value:g}, below {minimum:g}")


def _check_point(path: Path, i: int, point: Any, stalled: bool) -> None:
    if not isinstance(point, dict):
        raise _problem(path, f"has points[{i}] that is not an object")
    missing = [k for k in POINT_KEYS if k not in point]
    if missing:
        raise _problem(path, f"has points[{i}] without {', '.join(f'`{k}`' for k in missing)}")
    _check_number(path, f"points[{i}].value", point["value"])
    for key in ("mib_s", "mib_s_min", "mib_s_max"):
        _check_number(path, f"points[{i}].{key}", point[key], minimum=0)
    passes = point["passes"]
    if not isinstance(passes, int) or isinstance(passes, bool) or passes < 1:
        raise _problem(path, f"has points[{i}].passes = {json.dumps(passes)}, not a count >= 1")
    if stalled and point["norm"] is None:
        return  # a disk that never moved has no maximum to normalise by
    norm = point["norm"]
    _check_number(path, f"points[{i}].norm", norm)
    if not 0 <= norm <= 1:
        raise _problem(path, f"has points[{i}].norm = {norm:g}, outside 0..1")
    for key in ("norm_min", "norm_max"):
        _check_number(path, f"points[{i}].{key}", point[key], minimum=0)


def read_curve(path: Path) -> dict[str, Any]:
    """Read and check one curve file; a :class:`ConfigError` naming the file and the problem.

    Checked: the format tag, every key of docs/sweep.md, a non-empty list of points with
    numbers where numbers belong, values strictly ascending, ``norm`` within 0..1 (null only
    for a disk whose ``max_mib_s`` is 0).
    """
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as e:
        raise _problem(path, f"cannot be read ({e.strerror or e})") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise _problem(path, f"is not JSON ({e})") from None
    if not isinstance(doc, dict):
        raise _problem(path, "is not a JSON object")
    if doc.get("format") != CURVE_FORMAT:
        raise _problem(path, f"has format {json.dumps(doc.get('format'))}, not `{CURVE_FORMAT}`")
    missing = [k for k in CURVE_KEYS if k not in doc]
    if missing:
        raise _problem(path, f"lacks {', '.join(f'`{k}`' for k in missing)}")
    disk, stimulus = doc["disk"], doc["stimulus"]
    if not isinstance(disk, dict) or not isinstance(disk.get("name"), str):
        raise _problem(path, "has no `disk.name`")
    if not isinstance(stimulus, dict) or not all(
        isinstance(stimulus.get(k), str) for k in ("kind", "unit")
    ):
        raise _problem(path, "has no `stimulus.kind` and `stimulus.unit`")
    _check_number(path, "max_mib_s", doc["max_mib_s"], minimum=0)
    points = doc["points"]
    if not isinstance(points, list) or not points:
        raise _problem(path, "has no points")
    for i, point in enumerate(points):
        _check_point(path, i, point, stalled=doc["max_mib_s"] == 0)
    _check_sorted(path, [p["value"] for p in points])
    return doc


def _check_sorted(path: Path, values: Sequence[float]) -> None:
    for i in range(1, len(values)):
        if not values[i] > values[i - 1]:
            raise _problem(
                path,
                f"has points out of order: value {values[i]:g} (points[{i}]) after "
                f"{values[i - 1]:g}; values must be strictly ascending",
            )


# --- sensors per step -------------------------------------------------------------------------


def _step_windows(steps: pa.Table) -> dict[tuple[int, int, float], tuple[int, int]]:
    """(pass_no, step, value) → (earliest start, latest end) over the disks of that step."""
    windows: dict[tuple[int, int, float], tuple[int, int]] = {}
    columns = ("pass_no", "step", "value", "start_mono_ns", "end_mono_ns")
    for row in steps.select(list(columns)).to_pylist():
        if any(row[c] is None for c in columns):
            continue
        key = (int(row["pass_no"]), int(row["step"]), float(row["value"]))
        lo, hi = windows.get(key, (row["start_mono_ns"], row["end_mono_ns"]))
        windows[key] = (min(lo, row["start_mono_ns"]), max(hi, row["end_mono_ns"]))
    return dict(sorted(windows.items()))


def step_sensor_means(steps: pa.Table, sensors: pa.Table | None) -> pa.Table:
    """Each sensor channel's mean, min, max and count over each step's hold window.

    A step's window runs from the earliest ``start_mono_ns`` to the latest ``end_mono_ns`` of
    its disks, both ends included; ``sensors`` has ``SENSOR_SCHEMA`` (only ``source``,
    ``channel``, ``unit``, ``mono_ns`` and ``value`` are used). A channel with no reading in a
    window has no row for it. Sorted by source, channel, unit, pass and step
    (``SENSOR_MEANS_SCHEMA``); an empty table without sensors.
    """
    if sensors is None or sensors.num_rows == 0 or steps.num_rows == 0:
        return SENSOR_MEANS_SCHEMA.empty_table()
    windows = _step_windows(steps)
    keys = list(windows)
    starts = np.array([windows[k][0] for k in keys], dtype=np.int64)
    ends = np.array([windows[k][1] for k in keys], dtype=np.int64)
    keep = pc.and_(pc.is_valid(sensors["mono_ns"]), pc.is_finite(sensors["value"]))
    sensors = sensors.filter(pc.fill_null(keep, False)).sort_by("mono_ns")
    mono = sensors["mono_ns"].to_numpy().astype(np.int64)
    reading = sensors["value"].to_numpy().astype(np.float64)
    channels = list(
        zip(
            sensors["source"].to_pylist(),
            sensors["channel"].to_pylist(),
            sensors["unit"].to_pylist(),
            strict=True,
        )
    )
    codes: dict[tuple[Any, Any, Any], int] = {}
    code = np.array([codes.setdefault(c, len(codes)) for c in channels], dtype=np.int64)
    parts = []
    for (source, channel, unit), i in sorted(
        codes.items(), key=lambda kv: tuple("" if x is None else str(x) for x in kv[0])
    ):
        mask = code == i
        found = _window_stats(mono[mask], reading[mask], starts, ends)
        if found is None:
            continue
        which, mean, low, high, count = found
        n = which.size
        parts.append(
            pa.table(
                {
                    "pass_no": [keys[w][0] for w in which],
                    "step": [keys[w][1] for w in which],
                    "value": [keys[w][2] for w in which],
                    "start_mono_ns": starts[which],
                    "end_mono_ns": ends[which],
                    "source": pa.array([source] * n, pa.string()),
                    "channel": pa.array([channel] * n, pa.string()),
                    "unit": pa.array([unit] * n, pa.string()),
                    "mean": mean,
                    "min": low,
                    "max": high,
                    "count": count,
                }
            ).cast(SENSOR_MEANS_SCHEMA)
        )
    return pa.concat_tables(parts) if parts else SENSOR_MEANS_SCHEMA.empty_table()


def _window_stats(
    t: Ints, v: Floats, starts: Ints, ends: Ints
) -> tuple[Ints, Floats, Floats, Floats, Ints] | None:
    """For readings ``v`` at sorted times ``t``: the windows with a reading, and the mean,
    min, max and count of the readings inside each (both ends included)."""
    lo = np.searchsorted(t, starts, "left")
    n = np.searchsorted(t, ends, "right") - lo
    which = np.flatnonzero(n > 0)
    if not which.size:
        return None
    lo, n = lo[which], n[which]
    offsets = np.concatenate([[0], np.cumsum(n)[:-1]])
    # The readings of every window one after the other (a reading may sit in two windows).
    inside = v[np.repeat(lo - offsets, n) + np.arange(int(n.sum()))]
    return (
        which,
        np.add.reduceat(inside, offsets) / n,
        np.minimum.reduceat(inside, offsets),
        np.maximum.reduceat(inside, offsets),
        n.astype(np.int64),
    )
