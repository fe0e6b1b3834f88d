"""``iowatt sim server|raid|tasks --grid``: the points of a parameter grid simulated as Dask
tasks and gathered into one table — each point what the simulator gives for that model alone,
the same bytes for the same grid, bad grids refused in one line."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from iowatt.errors import ConfigError
from iowatt.sim.grid import parse_grid, points, with_values
from support.cli import assert_user_error, iowatt, runs_in

MODEL = {"chunk_mb": 4.0, "node": {"cores": 8, "ht_gain": 0.25}, "name": "x"}


def test_ranges_and_lists_make_every_combination():
    axes = parse_grid(["node.ht_gain=0..0.5:0.1", "node.cores=4,8"], MODEL)
    assert axes[0].values == (0.0, 0.1, 0.2, 0.3, 0.4, 0.5)  # decimal steps: 0.3, not 0.30…04
    grid = points(axes)
    assert len(grid) == 12 and grid[1] == {"node.ht_gain": 0.0, "node.cores": 8.0}
    model = with_values(MODEL, grid[1])
    assert model["node"] == {"cores": 8, "ht_gain": 0.0} and isinstance(model["node"]["cores"], int)
    assert MODEL["node"]["ht_gain"] == 0.25  # the base model is left as it was


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("node.nope=1..2:1", "nope"),
        ("name=1,2", "not a number"),
        ("node=1,2", "not a number"),
        ("chunk_mb=4..2:1", "backwards"),
        ("chunk_mb=1..2:0", "step"),
        ("chunk_mb=a..b:1", "`a`"),
        ("chunk_mb", "KEY=A..B:STEP"),
        ("chunk_mb=0..1e9:1", "values"),
    ],
)
def test_a_bad_grid_is_one_error_naming_it(text, fragment):
    with pytest.raises(ConfigError) as e:
        parse_grid([text], MODEL)
    assert fragment in e.value.message and e.value.hint


def test_too_many_points_are_refused_before_anything_runs():
    with pytest.raises(ConfigError) as e:
        parse_grid(["chunk_mb=1..200:1", "node.ht_gain=0..1:0.01"], MODEL)
    assert "20,200 points" in e.value.message


def _json(capsys, *args) -> list[dict]:
    r = iowatt(capsys, *args, "--json")
    assert r.code == 0, r.err
    return json.loads(r.out)


@pytest.mark.slow
def test_each_point_of_a_tasks_grid_is_the_simulator_s_answer_for_that_model(capsys, tmp_path):
    grid = _json(capsys, "sim", "tasks", "io", "--disk", "hdd", "--per-core", "1,2", "--grid",
                 "node.ht_gain=0,0.5", "--grid", "chunk_mb=4,8", "--results", tmp_path / "g",
                 "--cluster", "local:2")  # fmt: skip
    assert sorted({(r["node.ht_gain"], r["chunk_mb"]) for r in grid}) == [
        (0.0, 4.0), (0.0, 8.0), (0.5, 4.0), (0.5, 8.0)
    ]  # fmt: skip
    model = tmp_path / "m.toml"
    model.write_text("chunk_mb = 8.0\n[node]\nht_gain = 0.5\n")
    alone = _json(capsys, "sim", "tasks", "io", "--disk", "hdd", "--per-core", "1,2", "--model",
                  model, "--results", tmp_path / "one")  # fmt: skip
    point = [r for r in grid if r["node.ht_gain"] == 0.5 and r["chunk_mb"] == 8.0]
    strip = {"point", "node.ht_gain", "chunk_mb", "error"}
    assert [{k: v for k, v in r.items() if k not in strip} for r in point] == alone
    # One run holds the grid: its table has a row per point and result row.
    (run,) = runs_in(tmp_path / "g")
    table = pq.read_table(run / "grid.parquet").to_pylist()
    assert len(table) == len(grid) == 8
    assert json.loads((run / "manifest.json").read_text())["kind"] == "sim-grid"
    from iowatt.store.catalog import catalog

    with catalog(tmp_path / "g") as con:
        found = con.execute('SELECT count(*), max("node.ht_gain") FROM grid').fetchone()
    assert found == (8, 0.5)


@pytest.mark.slow
def test_a_server_grid_gives_the_same_bytes_twice_and_fans_change_the_answer(capsys, tmp_path):
    args = ("sim", "server", "--workloads", "W4", "--policies", "DLB,FSTM", "--grid",
            "fans.max_cfm=100,145")  # fmt: skip
    first = _json(capsys, *args, "--results", tmp_path / "a")
    second = _json(capsys, *args, "--results", tmp_path / "b")
    assert first == second
    fstm = {r["fans.max_cfm"]: r for r in first if r["policy"] == "FSTM"}
    assert fstm[100.0]["peak_temp_c"] != fstm[145.0]["peak_temp_c"]


@pytest.mark.slow
def test_a_raid_grid_varies_the_disk_and_a_refused_point_is_named(capsys, tmp_path):
    log = tmp_path / "day.log"
    assert iowatt(capsys, "trace", "generate", "-o", log, "--duration", "2h", "--rate",
                  "0.5").code == 0  # fmt: skip
    rows = _json(capsys, "sim", "raid", log, "--personalities", "raid0,lru", "--grid",
                 "lru.timeout_s=5,60", "--results", tmp_path / "r")  # fmt: skip
    lru = {r["lru.timeout_s"]: r for r in rows if r["personality"] == "lru"}
    # A longer timeout spins the disks down less: less saved.
    assert lru[60.0]["energy_saving_vs_raid0"] < lru[5.0]["energy_saving_vs_raid0"]
    r = iowatt(capsys, "sim", "raid", log, "--grid", "disks=0,4", "--results", tmp_path / "bad")
    assert_user_error(r, "point 0", "disks=0")
    (run,) = runs_in(tmp_path / "bad")
    assert json.loads((run / "summary.json").read_text())["status"] == "incomplete"


def test_a_grid_key_the_model_lacks_is_one_line(capsys, tmp_path):
    r = iowatt(capsys, "sim", "tasks", "io", "--grid", "node.speed=1..2:1", "--results", tmp_path)
    assert_user_error(r, "node.speed", "speed")
    assert runs_in(tmp_path) == []
