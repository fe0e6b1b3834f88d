"""``iowatt sim tasks``: the table a user reads, a closed form through the command, the
study's shape on its shipped sets, and bad input as one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.cli import assert_user_error, iowatt, runs_in

KEYS = {"set", "disk", "per_core", "nodes", "tasks", "makespan_s", "jobs_per_h", "avg_w",
        "wh_per_job", "out_of_memory"}  # fmt: skip


def sim(capsys, tmp_path: Path, *args: str | Path) -> list[dict]:
    r = iowatt(capsys, "sim", "tasks", *args, "--json", "--results", tmp_path / "r")
    assert r.code == 0, r.err
    return json.loads(r.out)


def test_one_task_alone_takes_its_time_and_its_energy(capsys, tmp_path):
    s = tmp_path / "one.toml"
    s.write_text('[types.burn]\ncpu_s = 100.0\nmemory_gb = 1.0\n'
                 '[sets]\none = { repeat = 1, tasks = ["burn"] }\n')  # fmt: skip
    (row,) = [r for r in sim(capsys, tmp_path, s, "--per-core", "1", "--disk", "hdd")
              if r["set"] == "one"]  # fmt: skip
    assert set(row) == KEYS
    assert row["makespan_s"] == pytest.approx(100.0)
    # node.toml: 150 W idle + 12.5 W for the busy core, for 100 s.
    assert row["wh_per_job"] == pytest.approx((150.0 + 12.5) * 100.0 / 3600.0)
    assert row["jobs_per_h"] == pytest.approx(36.0)


def test_the_study_s_shape_on_its_sets(capsys, tmp_path):
    rows = sim(capsys, tmp_path, "io,cpu,mixed,io-then-cpu", "--per-core", "1,2,3")
    at = {(r["set"], r["disk"], r["per_core"]): r for r in rows}
    # Multitasking raises throughput and lowers energy per job on the I/O set.
    for disk in ("hdd", "ssd"):
        one, two = at["io", disk, 1], at["io", disk, 2]
        assert two["jobs_per_h"] > one["jobs_per_h"] and two["wh_per_job"] < one["wh_per_job"]
    # The SSD helps the I/O set a lot, the mixed set a little, the CPU set barely; never hurts.
    gain = {s: at[s, "ssd", 1]["jobs_per_h"] / at[s, "hdd", 1]["jobs_per_h"] - 1
            for s in ("io", "mixed", "cpu")}  # fmt: skip
    assert gain["io"] > 0.1 and gain["io"] > gain["mixed"] >= gain["cpu"] >= 0
    assert at["io", "ssd", 1]["wh_per_job"] < at["io", "hdd", 1]["wh_per_job"]
    # Mixing beats the I/O set then the CPU set as separate batches.
    assert at["mixed", "hdd", 1]["jobs_per_h"] > at["io-then-cpu", "hdd", 1]["jobs_per_h"]
    # Too much multitasking runs out of memory: 24 simulations of 0.86 GB need more than 16.
    assert at["cpu", "hdd", 3]["out_of_memory"] and at["cpu", "hdd", 3]["makespan_s"] is None
    assert at["cpu", "hdd", 2]["out_of_memory"] is None
    (run_dir,) = runs_in(tmp_path / "r")
    assert (run_dir / "tasks_sim.parquet").exists()


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["io", "--per-core", "0"], ["--per-core", "at least 1"]),
        (["nosuch"], ["set `nosuch` is not defined"]),
        (["io", "--disk", "tape"], ["--disk `tape`"]),
        (["io", "--nodes", "0"], ["--nodes"]),
    ],
)
def test_bad_options_are_one_line(capsys, tmp_path, args, fragments):
    r = iowatt(capsys, "sim", "tasks", *args, "--results", tmp_path / "r")
    assert_user_error(r, *fragments)
    assert runs_in(tmp_path / "r") == []


def test_bad_set_files_name_what_is_wrong(capsys, tmp_path):
    unknown = tmp_path / "u.toml"
    unknown.write_text('[sets]\nx = { repeat = 2, tasks = ["nosuch"] }\n')
    assert_user_error(iowatt(capsys, "sim", "tasks", unknown, "--results", tmp_path / "r"),
                      "task type `nosuch`")  # fmt: skip
    big = tmp_path / "big.toml"
    big.write_text('[types.huge]\ncpu_s = 1.0\nmemory_gb = 32.0\n'
                   '[sets]\nx = { tasks = ["huge"] }\n')  # fmt: skip
    assert_user_error(iowatt(capsys, "sim", "tasks", big, "--results", tmp_path / "r"),
                      "holds 32 GB, more than the node's 16 GB")  # fmt: skip
