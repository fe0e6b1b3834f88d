"""A sweep's curve: means, spread and norms per (disk, value), exact merged percentiles, curve
files and their checks, and sensor readings averaged over each step's hold window."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from iowatt.curve import (
    CURVE_FORMAT,
    SENSOR_MEANS_SCHEMA,
    curve_documents,
    curve_filename,
    curve_meta,
    curve_table,
    read_curve,
    step_sensor_means,
)
from iowatt.errors import ConfigError
from iowatt.store.schemas import CURVE_SCHEMA, LATENCY_SCHEMA, SENSOR_SCHEMA, STEP_SCHEMA

RUN = "20261121-143000-sweep-abcdef"
LATENCY_SWEEP_SCHEMA = (
    LATENCY_SCHEMA.append(pa.field("pass_no", pa.int32()))
    .append(pa.field("step", pa.int32()))
    .append(pa.field("value", pa.float64()))
)

# Two disks, fan duty 0, 50 and 100 %, two passes ("up"); pass 2 stopped after 50 %, so 100 %
# was measured by pass 1 only.
#
#   disk a   value   pass 1   pass 2   mean   min   max   std   norm (÷ 95)
#              0      100       90      95     90   100    5    1      (0.947…1.053)
#             50       80       80      80     80    80    0    0.842  (0.842…0.842)
#            100       40        –      40     40    40    0    0.421  (one pass)
#   disk b   stalled: 0 MiB/s everywhere, so its maximum is 0 and its norms are null.
MIB_S = {
    ("a", 1): {0.0: 100.0, 50.0: 80.0, 100.0: 40.0},
    ("a", 2): {0.0: 90.0, 50.0: 80.0},
    ("b", 1): {0.0: 0.0, 50.0: 0.0, 100.0: 0.0},
    ("b", 2): {0.0: 0.0, 50.0: 0.0},
}
# iops follow MiB/s at 10 per MiB/s, plus the pass number (so the mean is not trivial).


def step_row(disk: str, pass_no: int, step: int, value: float, mib_s: float) -> dict[str, Any]:
    start = 1_000_000_000 * (100 * pass_no + 10 * step)
    return {
        "run_id": RUN, "disk": disk, "stimulus": "fan", "unit": "%", "pass_no": pass_no,
        "step": step, "value": value, "start_mono_ns": start,
        "end_mono_ns": start + 5_000_000_000, "t_s": start / 1e9, "hold_s": 5.0,
        "ops": int(mib_s * 50), "bytes": int(mib_s * 5 * 2**20), "errors": 0, "mib_s": mib_s,
        "iops": mib_s * 10 + pass_no, "p50_ns": 1, "p99_ns": 1, "p999_ns": 1, "max_ns": 1,
    }  # fmt: skip


def steps_table() -> pa.Table:
    rows = [
        step_row(disk, pass_no, step, value, mib)
        for (disk, pass_no), curve in MIB_S.items()
        for step, (value, mib) in enumerate(curve.items())
    ]
    return pa.Table.from_pylist(rows, STEP_SCHEMA)


def lat(
    disk: str, pass_no: int, step: int, buckets: dict[int, int], flowop: str | None = None
) -> list[dict[str, Any]]:
    value = list(MIB_S[disk, pass_no])[step]
    return [
        {"run_id": RUN, "workload": disk, "flowop": flowop, "value_ns": v, "count": c,
         "pass_no": pass_no, "step": step, "value": value}
        for v, c in buckets.items()
    ]  # fmt: skip


def latency_table() -> pa.Table:
    rows = (
        # disk a, 0 %: pass 1 has p99 = 1000 (rank 99 of 100), pass 2 has p99 = 100. Merged:
        # 200 operations, rank ceil(0.99·200) = 198, and 198 of them took 100 ns → p99 = 100
        # (neither the larger per-pass p99 nor their mean). The empty 5000 bucket is not the
        # maximum; the maximum is 1000.
        lat("a", 1, 0, {100: 98, 1000: 2, 5000: 0})
        + lat("a", 2, 0, {100: 100})
        # A per-flowop row repeats operations already counted: ignored.
        + lat("a", 2, 0, {9000: 1000}, flowop="write1")
        # disk a, 50 %: 10 ops at 200 and 10 at 400. p50 = rank 10 → 200, p99 = rank 20 → 400.
        + lat("a", 1, 1, {200: 10})
        + lat("a", 2, 1, {400: 10})
        # disk a, 100 %: no buckets → null percentiles. disk b, 0 %: only empty buckets → null.
        + lat("b", 1, 0, {100: 0})
        + lat("b", 2, 0, {100: 0})
    )
    return pa.Table.from_pylist(rows, LATENCY_SWEEP_SCHEMA)


@pytest.fixture(scope="module")
def curve() -> pa.Table:
    return curve_table(RUN, steps_table(), latency_table())


def rows_by_point(table: pa.Table) -> dict[tuple[str, float], dict[str, Any]]:
    return {(r["disk"], r["value"]): r for r in table.to_pylist()}


def test_curve_rows_are_sorted_and_typed(curve: pa.Table) -> None:
    assert curve.schema == CURVE_SCHEMA
    assert [(r["disk"], r["value"]) for r in curve.to_pylist()] == [
        ("a", 0.0), ("a", 50.0), ("a", 100.0), ("b", 0.0), ("b", 50.0), ("b", 100.0),
    ]  # fmt: skip
    assert set(curve["run_id"].to_pylist()) == {RUN}
    assert set(curve["stimulus"].to_pylist()) == {"fan"}
    assert set(curve["unit"].to_pylist()) == {"%"}


def test_curve_mean_spread_and_norm(curve: pa.Table) -> None:
    rows = rows_by_point(curve)
    a0, a50, a100 = rows["a", 0.0], rows["a", 50.0], rows["a", 100.0]
    assert (a0["passes"], a0["mib_s"], a0["mib_s_min"], a0["mib_s_max"]) == (2, 95.0, 90.0, 100.0)
    assert a0["mib_s_std"] == 5.0  # population: sqrt(((100-95)² + (90-95)²) / 2)
    assert a0["norm"] == 1.0
    assert a0["norm_min"] == pytest.approx(90 / 95)
    assert a0["norm_max"] == pytest.approx(100 / 95)  # one pass beat the mean maximum
    assert (a50["mib_s"], a50["mib_s_std"], a50["norm"]) == (80.0, 0.0, pytest.approx(80 / 95))
    assert a50["norm_min"] == a50["norm_max"] == pytest.approx(80 / 95)
    # Measured by pass 1 only: its one reading, no spread.
    assert (a100["passes"], a100["mib_s"], a100["mib_s_std"]) == (1, 40.0, 0.0)
    assert a100["norm"] == a100["norm_min"] == a100["norm_max"] == pytest.approx(40 / 95)
    # iops: mean of (1000 + 1) and (900 + 2).
    assert a0["iops"] == pytest.approx(951.5)


def test_stalled_disk_has_null_norms(curve: pa.Table) -> None:
    for value in (0.0, 50.0, 100.0):
        row = rows_by_point(curve)["b", value]
        assert row["mib_s"] == 0.0
        assert row["norm"] is None and row["norm_min"] is None and row["norm_max"] is None


def test_latency_is_recomputed_from_merged_buckets(curve: pa.Table) -> None:
    rows = rows_by_point(curve)
    assert (rows["a", 0.0]["p50_ns"], rows["a", 0.0]["p99_ns"], rows["a", 0.0]["max_ns"]) == (
        100, 100, 1000,
    )  # fmt: skip
    assert (rows["a", 50.0]["p50_ns"], rows["a", 50.0]["p99_ns"], rows["a", 50.0]["max_ns"]) == (
        200, 400, 400,
    )  # fmt: skip
    for point in (("a", 100.0), ("b", 0.0), ("b", 50.0)):
        assert rows[point]["p99_ns"] is None and rows[point]["max_ns"] is None, point


def test_curve_without_latency_has_null_percentiles() -> None:
    table = curve_table(RUN, steps_table(), None)
    assert table.num_rows == 6
    for column in ("p50_ns", "p99_ns", "max_ns"):
        assert table[column].null_count == 6


def test_rows_without_throughput_are_not_measurements() -> None:
    rows = steps_table().to_pylist()
    rows[0]["mib_s"] = None  # disk a, pass 1, 0 %
    rows[1]["mib_s"] = math.nan  # disk a, pass 1, 50 %
    table = curve_table(RUN, pa.Table.from_pylist(rows, STEP_SCHEMA), latency_table())
    a0 = rows_by_point(table)["a", 0.0]
    assert (a0["passes"], a0["mib_s"], a0["p99_ns"], a0["max_ns"]) == (1, 90.0, 100, 100)
    # The maximum is now 90 (pass 2 at 0 %).
    assert rows_by_point(table)["a", 50.0]["norm"] == pytest.approx(80 / 90)


def test_empty_steps_give_an_empty_curve() -> None:
    table = curve_table(RUN, STEP_SCHEMA.empty_table(), None)
    assert table.num_rows == 0 and table.schema == CURVE_SCHEMA


# --- curve files ------------------------------------------------------------------------------

MANIFEST = {
    "run_id": RUN,
    "kind": "sweep",
    "status": "complete",
    "config": {
        "stimulus": {"kind": "fan", "unit": "%", "band": None, "amplitude_g": None},
        "disks": [
            {"name": "b", "path": "/dev/sdc", "device": True, "profile": None, "size": 2**30},
            {"name": "a", "path": "/dev/sdb", "device": True, "profile": "hit-sata", "size": 2**30},
        ],
        "settle_s": 20.0,
        "hold_s": 30.0,
        "passes": 2,
        "order": "up",
        "values": [[0.0, 50.0, 100.0], [0.0, 50.0, 100.0]],
        "generator": {"iosize": 1048576, "iodepth": 32, "engine": "libaio", "nthreads": 1},
    },
    "host": {
        "disks": {
            "a": {"device_model": "HTE545050B9A300", "rotational": True},
            "b": {"device_model": "INTEL SSDSA2BW300G3", "rotational": False},
        }
    },
}


@pytest.fixture(scope="module")
def docs(curve: pa.Table) -> dict[str, dict[str, Any]]:
    return curve_documents(curve, curve_meta(MANIFEST))


def test_curve_documents(docs: dict[str, dict[str, Any]]) -> None:
    assert list(docs) == ["b", "a"]  # the manifest's order
    a = docs["a"]
    assert a["format"] == CURVE_FORMAT and a["run_id"] == RUN and a["status"] == "complete"
    assert a["disk"] == {
        "name": "a", "path": "/dev/sdb", "model": "HTE545050B9A300", "rotational": True,
        "profile": "hit-sata",
    }  # fmt: skip
    assert a["stimulus"] == {"kind": "fan", "unit": "%", "band": None, "amplitude_g": None}
    assert (a["settle_s"], a["hold_s"], a["passes"]) == (20.0, 30.0, 2)
    assert a["generator"]["iodepth"] == 32
    assert a["max_mib_s"] == 95.0
    assert [p["value"] for p in a["points"]] == [0.0, 50.0, 100.0]
    assert a["points"][0] == {
        "value": 0.0, "mib_s": 95.0, "mib_s_min": 90.0, "mib_s_max": 100.0, "norm": 1.0,
        "norm_min": pytest.approx(90 / 95), "norm_max": pytest.approx(100 / 95), "passes": 2,
    }  # fmt: skip
    assert a["points"][2]["passes"] == 1
    assert docs["b"]["max_mib_s"] == 0.0
    assert all(p["norm"] is None for p in docs["b"]["points"])


def test_curve_files_round_trip(docs: dict[str, dict[str, Any]], tmp_path: Path) -> None:
    for name, doc in docs.items():
        path = tmp_path / curve_filename(name)
        path.write_text(json.dumps(doc, indent=2))
        assert read_curve(path) == json.loads(json.dumps(doc))


@pytest.mark.parametrize(
    ("disk", "name"),
    [
        ("sdb", "curve-sdb.json"),
        ("HIT SATA", "curve-HIT_SATA.json"),
        ("../etc/passwd", "curve-.._etc_passwd.json"),
        ("nvme0n1.p1-x_y", "curve-nvme0n1.p1-x_y.json"),
        ("", "curve-_.json"),
    ],
)
def test_curve_filename(disk: str, name: str) -> None:
    assert curve_filename(disk) == name


def _edit(doc: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    doc = json.loads(json.dumps(doc))
    target = doc
    for key in path[:-1]:
        target = target[key]
    if value is _DELETE:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return doc


_DELETE = object()


@pytest.mark.parametrize(
    ("path", "value", "problem"),
    [
        (("format",), "iowatt-curve/2", r'has format "iowatt-curve/2", not `iowatt-curve/1`'),
        (("format",), _DELETE, r"has format null"),
        (("hold_s",), _DELETE, r"lacks `hold_s`"),
        (("generator",), _DELETE, r"lacks `generator`"),
        (("disk",), {"path": "/dev/sdb"}, r"no `disk.name`"),
        (("stimulus", "unit"), _DELETE, r"no `stimulus.kind` and `stimulus.unit`"),
        (("max_mib_s",), "fast", r'max_mib_s = "fast", not a number'),
        (("points",), [], r"has no points"),
        (("points", 1), 50.0, r"points\[1\] that is not an object"),
        (("points", 1, "norm_max"), _DELETE, r"points\[1\] without `norm_max`"),
        (("points", 1, "mib_s"), None, r"points\[1\]\.mib_s = null, not a number"),
        (("points", 1, "mib_s_min"), -1.0, r"points\[1\]\.mib_s_min = -1, below 0"),
        (("points", 1, "passes"), 0, r"points\[1\]\.passes = 0, not a count"),
        (("points", 1, "norm"), 1.5, r"points\[1\]\.norm = 1.5, outside 0\.\.1"),
        (("points", 1, "norm"), None, r"points\[1\]\.norm = null, not a number"),
        (("points", 1, "value"), 0.0, r"value 0 \(points\[1\]\) after 0; values must be"),
        (("points", 2, "value"), 10.0, r"value 10 \(points\[2\]\) after 50"),
    ],
)
def test_read_curve_rejects(
    docs: dict[str, dict[str, Any]], tmp_path: Path, path: tuple[Any, ...], value: Any,
    problem: str,
) -> None:  # fmt: skip
    file = tmp_path / "curve-a.json"
    file.write_text(json.dumps(_edit(docs["a"], path, value)))
    with pytest.raises(ConfigError, match=problem) as raised:
        read_curve(file)
    assert f"curve file `{file}`" in raised.value.message
    assert raised.value.hint and "docs/sweep.md" in raised.value.hint


def test_read_curve_rejects_what_is_not_a_curve(tmp_path: Path) -> None:
    missing = tmp_path / "curve-none.json"
    with pytest.raises(ConfigError, match=r"curve-none\.json` cannot be read"):
        read_curve(missing)
    broken = tmp_path / "curve-broken.json"
    broken.write_text('{"format": ')
    with pytest.raises(ConfigError, match=r"curve-broken\.json` is not JSON"):
        read_curve(broken)
    listed = tmp_path / "curve-list.json"
    listed.write_text("[]")
    with pytest.raises(ConfigError, match=r"is not a JSON object"):
        read_curve(listed)


def test_stalled_disk_curve_is_valid(docs: dict[str, dict[str, Any]], tmp_path: Path) -> None:
    """Null norms pass only for a disk that never moved (max_mib_s 0)."""
    file = tmp_path / "curve-b.json"
    file.write_text(json.dumps(docs["b"]))
    assert read_curve(file)["max_mib_s"] == 0
    file.write_text(json.dumps(_edit(docs["b"], ("max_mib_s",), 1.0)))
    with pytest.raises(ConfigError, match=r"points\[0\]\.norm = null"):
        read_curve(file)


# --- sensors per step -------------------------------------------------------------------------


def test_step_sensor_means() -> None:
    s = 1_000_000_000
    # Pass 1 step 0 (0 %): disk a holds 10-20 s, disk b 9-21 s → the window is 9-21 s.
    # Pass 1 step 1 (50 %): both disks hold 30-40 s.
    rows = [
        step_row("a", 1, 0, 0.0, 1.0) | {"start_mono_ns": 10 * s, "end_mono_ns": 20 * s},
        step_row("b", 1, 0, 0.0, 1.0) | {"start_mono_ns": 9 * s, "end_mono_ns": 21 * s},
        step_row("a", 1, 1, 50.0, 1.0) | {"start_mono_ns": 30 * s, "end_mono_ns": 40 * s},
        step_row("b", 1, 1, 50.0, 1.0) | {"start_mono_ns": 30 * s, "end_mono_ns": 40 * s},
    ]
    steps = pa.Table.from_pylist(rows, STEP_SCHEMA)
    readings = [
        # fan1: 8 s and 22 s fall outside; 9 s and 21 s are the window's ends, included.
        # Window 1: (2 + 3 + 4) / 3 = 3, min 2, max 4. Window 2: 35 s → 10.
        ("ipmi", "FAN1", "RPM", 8, 1.0), ("ipmi", "FAN1", "RPM", 9, 2.0),
        ("ipmi", "FAN1", "RPM", 15, 3.0), ("ipmi", "FAN1", "RPM", 21, 4.0),
        ("ipmi", "FAN1", "RPM", 22, 5.0), ("ipmi", "FAN1", "RPM", 35, 10.0),
        # CPU temperature, listed out of time order: window 1 sees 60 and 70 → 65.
        # No reading in window 2: no row. A NaN reading is skipped.
        ("ipmi", "CPU Temp", "C", 19, 70.0), ("ipmi", "CPU Temp", "C", 12, 60.0),
        ("ipmi", "CPU Temp", "C", 13, math.nan),
    ]  # fmt: skip
    sensors = pa.Table.from_pylist(
        [
            {"run_id": RUN, "source": src, "channel": ch, "unit": unit, "mono_ns": t * s,
             "t_s": float(t), "value": v}
            for src, ch, unit, t, v in readings
        ],
        SENSOR_SCHEMA,
    )  # fmt: skip
    means = step_sensor_means(steps, sensors)
    assert means.schema == SENSOR_MEANS_SCHEMA
    got = [
        (r["channel"], r["pass_no"], r["step"], r["value"], r["start_mono_ns"], r["end_mono_ns"],
         r["mean"], r["min"], r["max"], r["count"])
        for r in means.to_pylist()
    ]  # fmt: skip
    assert got == [
        ("CPU Temp", 1, 0, 0.0, 9 * s, 21 * s, 65.0, 60.0, 70.0, 2),
        ("FAN1", 1, 0, 0.0, 9 * s, 21 * s, 3.0, 2.0, 4.0, 3),
        ("FAN1", 1, 1, 50.0, 30 * s, 40 * s, 10.0, 10.0, 10.0, 1),
    ]
    assert set(means["unit"].to_pylist()) == {"C", "RPM"}


def test_step_sensor_means_without_sensors() -> None:
    for sensors in (None, SENSOR_SCHEMA.empty_table()):
        table = step_sensor_means(steps_table(), sensors)
        assert table.num_rows == 0 and table.schema == SENSOR_MEANS_SCHEMA
