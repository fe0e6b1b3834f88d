"""``iowatt sim tasks``: the table a user reads, closed forms through the command, the study's
shape on its shipped sets with tasks that vary, replication by seeds, and bad input as one
line."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from iowatt.errors import ConfigError
from iowatt.sim.disks import load_disks
from iowatt.sim.tasks import SetPlan, check_type, plan, simulate, simulate_batches
from support.cli import assert_user_error, iowatt, runs_in

FIGURES = ("makespan_s", "tasks_per_h", "jobs_per_h", "avg_w", "wh_per_task", "wh_per_job",
           "disk_w", "disk_busy", "cpu_busy")  # fmt: skip
KEYS = {"set", "disk", "disk_model", "per_core", "nodes", "tasks", "jobs", "seeds",
        "out_of_memory", *FIGURES, *(f"{f}_ci95" for f in FIGURES)}  # fmt: skip
ONE = (
    '[types.burn]\ncpu_s = 100.0\nmemory_gb = 1.0\n[sets]\none = { repeat = 1, tasks = ["burn"] }\n'
)


def sim(capsys, tmp_path: Path, *args: str | Path) -> list[dict]:
    r = iowatt(capsys, "sim", "tasks", *args, "--json", "--results", tmp_path / "r")
    assert r.code == 0, r.err
    return json.loads(r.out)


def watts(power: dict) -> float:
    return power.get("w", 12 * power.get("a12", 0.0) + 5 * power.get("a5", 0.0))


def test_one_task_alone_takes_its_time_and_the_node_s_parts_draw(capsys, tmp_path):
    s = tmp_path / "one.toml"
    s.write_text(ONE)
    rows = sim(capsys, tmp_path, s, "--per-core", "1", "--task-spread", "0")
    one = {r["disk"]: r for r in rows if r["set"] == "one"}
    assert set(one["hdd"]) == KEYS
    models = load_disks()
    for disk, model in (("hdd", "barracuda-es2"), ("ssd", "x25-m-g2")):
        row = one[disk]
        assert row["disk_model"] == model
        assert row["makespan_s"] == pytest.approx(100.0)
        # node.toml: 142 W idle without the disk, 12.5 W for the busy core, and the data
        # disk's idle draw by its model, for 100 s; no reads, so the disk never served.
        idle = watts(models[model]["idle"])
        assert row["wh_per_job"] == pytest.approx((142.0 + 12.5 + idle) * 100.0 / 3600.0)
        assert row["disk_w"] == pytest.approx(idle) and row["disk_busy"] == 0
        assert row["jobs_per_h"] == pytest.approx(36.0) and row["seeds"] == 1


@pytest.mark.slow
def test_the_study_s_shape_holds_with_tasks_that_vary(capsys, tmp_path):
    rows = sim(capsys, tmp_path, "io,cpu,mixed,io-then-cpu", "--per-core", "1,2,3",
               "--seeds", "5")  # fmt: skip
    at = {(r["set"], r["disk"], r["per_core"]): r for r in rows}

    def lo(r: dict, key: str = "jobs_per_h") -> float:
        return r[f"{key}_ci95"][0]

    def hi(r: dict, key: str = "jobs_per_h") -> float:
        return r[f"{key}_ci95"][1]

    # The I/O set is disk-bound on the hard disk (its reads are scattered), not on the SSD.
    for k in (1, 2):
        assert at["io", "hdd", k]["disk_busy"] > 0.9 > 0.7 > at["io", "hdd", k]["cpu_busy"]
        assert at["io", "ssd", k]["cpu_busy"] > 0.9
    # Multitasking keeps the hard disk busier: more jobs an hour, less energy each.
    one, two = at["io", "hdd", 1], at["io", "hdd", 2]
    assert lo(two) > hi(one) and hi(two, "wh_per_job") < lo(one, "wh_per_job")
    assert two["disk_busy"] > one["disk_busy"]
    # The SSD helps the I/O set much more than the mixed or CPU sets, and never hurts.
    gain = {s: at[s, "ssd", 1]["jobs_per_h"] / at[s, "hdd", 1]["jobs_per_h"] - 1
            for s in ("io", "mixed", "cpu")}  # fmt: skip
    assert gain["io"] > 0.3 and gain["io"] > 10 * max(gain["mixed"], gain["cpu"])
    for s in ("io", "mixed", "cpu"):
        assert hi(at[s, "ssd", 1]) >= lo(at[s, "hdd", 1])
    assert at["io", "ssd", 1]["wh_per_job"] < at["io", "hdd", 1]["wh_per_job"]
    # Mixing beats the I/O set then the CPU set as separate batches, on the hard disk.
    for k in (1, 2):
        assert lo(at["mixed", "hdd", k]) > hi(at["io-then-cpu", "hdd", k])
    # Jobs are set instances: 3 tasks of the I/O set, 7 of the mixed set and of io-then-cpu.
    for s, size in (("io", 3), ("cpu", 4), ("mixed", 7), ("io-then-cpu", 7)):
        r = at[s, "hdd", 1]
        assert r["tasks"] == 50 * size and r["jobs"] == 50
        assert r["tasks_per_h"] == pytest.approx(size * r["jobs_per_h"])
        assert r["wh_per_job"] == pytest.approx(size * r["wh_per_task"])
    # Too much multitasking runs out of memory: 24 simulations of 0.86 GB need more than 16.
    assert at["cpu", "hdd", 3]["out_of_memory"] and at["cpu", "hdd", 3]["makespan_s"] is None
    assert at["cpu", "hdd", 2]["out_of_memory"] is None
    (run_dir,) = runs_in(tmp_path / "r")
    stored = pq.read_table(run_dir / "tasks_sim.parquet").to_pylist()
    assert len(stored) == 4 * 2 * 3 * 5
    assert {r["seed"] for r in stored} == {1, 2, 3, 4, 5}


@pytest.mark.slow
def test_without_spread_the_shape_is_the_same_within_the_intervals(capsys, tmp_path):
    def table(spread: str) -> dict:
        rows = sim(capsys, tmp_path, "io,mixed", "--per-core", "1,2", "--seeds", "5",
                   "--task-spread", spread)  # fmt: skip
        return {(r["set"], r["disk"], r["per_core"]): r for r in rows}

    identical, varied = table("0"), table("0.01")
    for key, a in identical.items():
        b = varied[key]
        half = sum((r["jobs_per_h_ci95"][1] - r["jobs_per_h_ci95"][0]) / 2 for r in (a, b))
        assert abs(a["jobs_per_h"] - b["jobs_per_h"]) <= max(half, 0.01 * a["jobs_per_h"]), key


@pytest.mark.slow
def test_a_seed_list_gives_the_same_rows_twice_and_other_seeds_others(capsys, tmp_path):
    args = ("io", "--per-core", "1", "--disk", "hdd", "--seed", "3,4")
    first, again = sim(capsys, tmp_path, *args), sim(capsys, tmp_path, *args)
    assert first == again and first[0]["seeds"] == 2
    other = sim(capsys, tmp_path, "io", "--per-core", "1", "--disk", "hdd", "--seed", "5,6")
    assert other[0]["makespan_s"] != first[0]["makespan_s"]
    stored = [pq.read_table(d / "tasks_sim.parquet").to_pylist() for d in runs_in(tmp_path / "r")]
    same = [rows for rows in stored if {r["seed"] for r in rows} == {3, 4}]
    assert len(same) == 2
    strip = [[{k: v for k, v in r.items() if k != "run_id"} for r in rows] for rows in same]
    assert strip[0] == strip[1]


def test_the_analysis_tasks_alone_take_the_study_s_times(tmp_path):
    # tasksets.toml derives their CPU time from the study's time alone (99 s and 46 s) less
    # their reads alone on the study's hard disk.
    p = plan("io", results=tmp_path, task_spread=0.0)
    node = p.node("hdd")
    for name, alone in (("analysis-heavy", 99.0), ("analysis-light", 46.0)):
        spans = [
            simulate_batches(node, p.types, [[name]], 1, 1, p.model["chunk_mb"], 0.0, s)[
                "makespan_s"
            ]
            for s in range(1, 6)
        ]
        assert sum(spans) / len(spans) == pytest.approx(alone, abs=0.5), (name, spans)


def test_an_old_node_file_with_a_fluid_disk_still_runs_with_a_note(capsys, tmp_path):
    old = tmp_path / "old.toml"
    old.write_text("[disks.hdd]\nseq_mb_s = 100.0\nswitch_s = 0.012\nslice_mb = 8.0\n"
                   "active_w = 4.0\n")  # fmt: skip
    r = iowatt(capsys, "sim", "tasks", "io", "--per-core", "1", "--disk", "hdd", "--model",
               old, "--json", "--results", tmp_path / "r")  # fmt: skip
    assert r.code == 0, r.err
    assert "note: [disks.hdd] gives a fluid rate" in r.err
    (row,) = json.loads(r.out)
    assert row["disk_model"] is None and row["jobs_per_h"] > 0


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["io", "--per-core", "0"], ["--per-core", "at least 1"]),
        (["nosuch"], ["set `nosuch` is not defined"]),
        (["io", "--disk", "tape"], ["--disk `tape`"]),
        (["io", "--nodes", "0"], ["--nodes"]),
        (["io", "--task-spread", "1.5"], ["--task-spread 1.5", "0..1"]),
        (["io", "--task-spread", "-0.1"], ["--task-spread -0.1", "0..1"]),
        (["io", "--seeds", "0"], ["--seeds"]),
        (["io", "--seeds", "1001"], ["--seeds"]),
        (["io", "--seed", "a"], ["--seed `a`", "whole number"]),
        (["io", "--disk-model", "nosuch"], ["--disk-model `nosuch`"]),
    ],
)
def test_bad_options_are_one_line(capsys, tmp_path, args, fragments):
    r = iowatt(capsys, "sim", "tasks", *args, "--results", tmp_path / "r")
    assert_user_error(r, *fragments)
    assert runs_in(tmp_path / "r") == []


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        ('[sets]\nx = { repeat = 2, tasks = ["nosuch"] }\n', ["task type `nosuch`"]),
        ('[types.huge]\ncpu_s = 1.0\nmemory_gb = 32.0\n[sets]\nx = { tasks = ["huge"] }\n',
         ["holds 32 GB, more than the node's 16 GB"]),
        ("[types.t]\ncpu_s = 1.0\ninput_mb = -1.0\nmemory_gb = 0.1\n",
         ["`t`", "input_mb = -1.0 must be 0 or more"]),
        ("[types.t]\ncpu_s = 1.0\ninput_mb = 1.0\nrequest_kb = 0\nmemory_gb = 0.1\n",
         ["`t`", "request_kb = 0 must be at least 0.5"]),
        ('[types.t]\ncpu_s = 1.0\ninput_mb = 1.0\npattern = "zigzag"\nmemory_gb = 0.1\n',
         ["pattern `zigzag`"]),
    ],
)  # fmt: skip
def test_bad_set_files_name_what_is_wrong(capsys, tmp_path, text, fragments):
    f = tmp_path / "bad.toml"
    f.write_text(text)
    r = iowatt(capsys, "sim", "tasks", f, "--per-core", "1", "--results", tmp_path / "r")
    assert_user_error(r, *fragments)
    assert runs_in(tmp_path / "r") == []


# Sizes up to a GB: every refusal is reached, and no example asks for billions of requests.
NUMBERS = st.one_of(
    st.floats(-1e3, 1e3), st.sampled_from([math.nan, math.inf, -math.inf]), st.integers(-5, 10**3),
    st.text(max_size=4), st.booleans(),
)  # fmt: skip


@pytest.mark.fuzz
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    values=st.dictionaries(
        st.sampled_from(["cpu_s", "input_mb", "memory_gb", "request_kb"]), NUMBERS
    ),
    pattern=st.one_of(st.none(), st.sampled_from(["sequential", "scattered", "zigzag", ""])),
)
def test_any_task_type_runs_or_is_one_config_error(tmp_path, values, pattern):
    spec = {"cpu_s": 1.0, "memory_gb": 0.1, **values}
    if pattern is not None:
        spec["pattern"] = pattern
    try:
        config = plan("io", results=tmp_path / "r", per_core="1", disk="hdd,ssd")
        config.types = {"t": spec}
        config.sets = {"x": SetPlan([["t", "t"]], 1)}
        check_type("t", spec)
        rows = simulate(config)
    except ConfigError as e:
        assert e.message and "\n" not in e.message
        return
    assert all(r["makespan_s"] is None or r["makespan_s"] >= 0 for r in rows)


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        ('[disks.hdd]\nscheduler = "bfq"\n', ["scheduler `bfq`"]),
        ('[disks.hdd]\nmodel = "nosuch"\n', ["model `nosuch`"]),
        ("[disks.hdd]\nslice_mb = 8.0\n", ["[disks.hdd] lacks seq_mb_s"]),
    ],
)
def test_bad_disks_in_a_node_file_are_one_line(capsys, tmp_path, text, fragments):
    f = tmp_path / "node.toml"
    f.write_text(text)
    r = iowatt(capsys, "sim", "tasks", "io", "--model", f, "--results", tmp_path / "r")
    assert_user_error(r, *fragments)
    assert runs_in(tmp_path / "r") == []
