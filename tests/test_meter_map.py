"""Meter channel maps: shunt arithmetic against a hand calculation, and bad maps."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from iowatt.errors import ConfigError, MeterFormatError
from iowatt.power import meter_map
from support.power import TWO_DISKS


def test_two_disks_match_a_hand_calculation(tmp_path: Path) -> None:
    path = tmp_path / "map.toml"
    path.write_text(TWO_DISKS)
    cmap = meter_map.load(path)
    cols = {
        "s12_b": np.array([0.05, 0.04]),
        "d12_b": np.array([11.9, 12.1]),
        "s5_b": np.array([0.06, np.nan]),  # a missing reading on the second line
        "s12_c": np.array([0.16, 0.16]),
        "s5_c": np.array([0.08, 0.08]),
        "d5_c": np.array([4.95, 4.95]),
        "server": np.array([150.0, 151.0]),
    }
    got = {d.channel: d for d in meter_map.apply(cmap, cols)}
    # sdb: 12 V rail 0.05 V / 0.1 Ω = 0.5 A × 11.9 V = 5.95 W; 5 V rail 0.6 A × 5 V = 3 W.
    # sdc (0.2 Ω): 0.8 A × 12 V = 9.6 W; 0.4 A × 4.95 V = 1.98 W.
    assert got["disk:sdb:12v"].watts[0] == pytest.approx(5.95)
    assert got["disk:sdb:5v"].watts[0] == pytest.approx(3.0)
    assert got["disk:sdb"].watts[0] == pytest.approx(8.95)
    assert got["disk:sdc"].watts[0] == pytest.approx(11.58)
    assert got["disks"].watts[0] == pytest.approx(20.53)
    assert got["server"].watts[0] == pytest.approx(150.0)
    assert got["total"].watts[0] == pytest.approx(170.53)
    assert got["disk:sdb:12v"].watts[1] == pytest.approx(0.04 / 0.1 * 12.1)
    # A missing input makes the rail, the disk and every sum missing — never zero.
    for name in ("disk:sdb:5v", "disk:sdb", "disks", "total"):
        assert np.isnan(got[name].watts[1]), name
    assert got["disk:sdc"].watts[1] == pytest.approx(11.58)
    assert {d.scope for d in got.values()} == {"disk-rail", "disk", "disks", "server", "total"}


def test_a_wall_meter_is_a_one_column_map() -> None:
    cmap = meter_map.parse({"watts": {"wall": "W"}})
    (d,) = meter_map.apply(cmap, {"W": np.array([231.5])})
    assert (d.channel, d.scope, d.watts[0]) == ("wall", "wall", 231.5)


def test_columns_missing_from_the_log_are_named() -> None:
    cmap = meter_map.parse({"shunt_ohms": 0.1, "disks": {"sdb": {"v12_shunt": "ch9",
                                                                  "v12_drive": 12}}})  # fmt: skip
    with pytest.raises(MeterFormatError, match="`ch9`") as e:
        cmap.check_columns(["time", "ch1", "ch2"], "meter.csv")
    assert "ch1, ch2" in (e.value.hint or "")


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (
            {"shunt_ohms": 0, "disks": {"a": {"v12_shunt": "x", "v12_drive": 12}}},
            "must be positive",
        ),
        ({"shunt_ohms": -0.1, "disks": {"a": {"v5_shunt": "x", "v5_drive": 5}}}, "`-0.1`"),
        ({"disks": {"a": {"v12_shunt": "x", "v12_drive": 12}}}, "no shunt resistance"),
        ({"shunt_ohms": 0.1, "disks": {"a": {"v12_shunt": "x"}}}, "needs both"),
        (
            {"shunt_ohms": 0.1, "disks": {"a": {"v12_shunt": "x", "v12_drv": 1}}},
            "`disks.a.v12_drv`",
        ),
        ({"shunt_ohms": 0.1}, "maps nothing"),
        ({"disk": {}}, "unknown key `disk`"),
    ],
)
def test_bad_maps_are_refused_with_the_offending_key(data: dict, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        meter_map.parse(data)


def test_a_missing_or_malformed_map_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        meter_map.load(tmp_path / "nope.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("shunt_ohms = = 1\n")
    with pytest.raises(ConfigError, match=r"bad\.toml"):
        meter_map.load(bad)
