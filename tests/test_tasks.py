"""``iowatt tasks``: the runner on Dask — k × cores in flight, figures from the tasks' own
timestamps and a power series, failures and timeouts recorded while the set goes on, Ctrl-C
keeping finished tasks and the same command finishing the run, memory refused and enforced,
bad input as one line; the batch job scripts; the simulator calibrated and validated against
real runs; `compare` on the runs' labels."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from iowatt.errors import ConfigError
from iowatt.tasks.figures import (
    interval_energy,
    makespan_s,
    other_load,
    other_load_warning,
    spread_busy,
    totals,
)
from iowatt.tasks.taskset import KEYS as KEYS_OF_A_TYPE
from iowatt.tasks.taskset import load
from support.cli import assert_user_error, iowatt, manifest, runs_in, summary
from support.emulated import MountProcess, mount_dirs

KEYS = {"set", "disk", "per_core", "makespan_s", "jobs_per_h", "avg_w", "wh_per_job"}


def set_file(tmp_path: Path, types: dict[str, str], sets: str) -> Path:
    text = "".join(f"[types.{name}]\n{body}\n" for name, body in types.items())
    path = tmp_path / "set.toml"
    path.write_text(f"{text}[sets]\n{sets}\n")
    return path


def run(capsys, tmp_path: Path, *args: str | Path) -> list[dict]:
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    r = iowatt(
        capsys,
        "tasks",
        *args,
        "--data",
        f"hdd={data}",
        "--results",
        tmp_path / "r",
        "--json",
        "--quiet",
    )
    assert r.code == 0, r.err
    return json.loads(r.out)


def tasks_of(run_dir: Path) -> list[dict]:
    return pq.read_table(run_dir / "tasks.parquet").to_pylist()


def in_flight(rows: list[dict], at_ns: int) -> int:
    return sum(1 for r in rows if r["start_ns"] <= at_ns < r["end_ns"])


@pytest.mark.slow
def test_k_times_cores_in_flight_and_the_figures_from_the_timestamps(capsys, tmp_path):
    s = set_file(
        tmp_path, {"nap": 'command = "sleep 0.4"'}, 'naps = { repeat = 10, tasks = ["nap"] }'
    )
    rows = run(
        capsys, tmp_path, s, "--per-core", "1,2", "--cores", "2", "--power", "cmd:command=echo 40"
    )
    assert [r["per_core"] for r in rows] == [1, 2] and all(set(r) >= KEYS for r in rows)
    for row, run_dir in zip(rows, runs_in(tmp_path / "r"), strict=True):
        tasks = tasks_of(run_dir)
        slots = 2 * row["per_core"]
        assert len(tasks) == 10 and all(t["status"] == "ok" for t in tasks)
        starts = sorted(t["start_ns"] for t in tasks)
        # Never more than the slots; exactly the slots whenever a task starts while the queue
        # still holds more than a slot's worth.
        assert max(in_flight(tasks, t) for t in starts) == slots
        assert all(in_flight(tasks, t) <= slots for t in starts)
        assert in_flight(tasks, starts[slots - 1]) == slots
        span = (max(t["end_ns"] for t in tasks) - min(t["start_ns"] for t in tasks)) / 1e9
        assert row["makespan_s"] == pytest.approx(span)
        assert row["jobs_per_h"] == pytest.approx(10 * 3600 / span)
        # A constant 40 W over the makespan.
        assert row["avg_w"] == pytest.approx(40.0, rel=1e-6)
        assert row["wh_per_job"] == pytest.approx(40.0 * span / 3600 / 10, rel=1e-6)
        assert row["power"] == "measured: cmd/cmd"
        assert manifest(run_dir)["labels"] == {
            "set": "naps",
            "disk": "hdd",
            "per_core": str(row["per_core"]),
            "env": f"hdd-k{row['per_core']}",
            "rep": "1",
        }


def test_energy_of_a_sampled_series_by_hand():
    # Three half-second samples: 100 W over (0, 0.5], 200 W over (0.5, 1], 300 W over (1, 1.5];
    # the window [0.25 s, 1.25 s] takes a quarter second of the first and of the last.
    ends = [500_000_000, 1_000_000_000, 1_500_000_000]
    import numpy as np

    e, peak = interval_energy(
        np.asarray(ends), np.asarray([100.0, 200.0, 300.0]), 0, 250_000_000, 1_250_000_000
    )
    assert e == pytest.approx(100 * 0.25 + 200 * 0.5 + 300 * 0.25)
    assert peak == 300.0
    records = [
        {"start_ns": 0, "end_ns": 2_000_000_000, "status": "ok"},
        {"start_ns": 1_000_000_000, "end_ns": 3_000_000_000, "status": "failed"},
    ]
    assert makespan_s(records) == 3.0
    # Two segments (an interrupted run finished later) add up; failed tasks are not jobs.
    t = totals(
        records,
        [
            {"makespan_s": 3.0, "energy_j": 600.0, "peak_w": 250.0, "power": "x"},
            {"makespan_s": 1.0, "energy_j": 200.0, "peak_w": 210.0, "power": "x"},
        ],
    )
    assert (t["done"], t["failed"], t["makespan_s"], t["energy_j"]) == (1, 1, 4.0, 800.0)
    assert t["avg_w"] == 200.0 and t["peak_w"] == 250.0 and t["wh_per_job"] == 800 / 3600
    assert t["jobs_per_h"] == 900.0
    assert t["failed_tasks"] == {"count": 1, "kinds": {"failed": 1}}
    assert totals(records[:1], [])["failed_tasks"] is None


@pytest.mark.slow
def test_a_failed_or_timed_out_task_is_recorded_and_the_set_goes_on(capsys, tmp_path):
    s = set_file(
        tmp_path,
        {
            "ok": 'command = "echo fine > {output}"',
            "bad": 'command = "echo broken >&2; exit 3"',
            "slow": 'command = "sleep 60"',
        },
        'mix = { tasks = ["bad", "slow", "ok", "ok"] }',
    )
    (row,) = run(capsys, tmp_path, s, "--timeout", "1s", "--cores", "1")
    assert (row["status"], row["done"], row["failed"]) == ("complete", 2, 2)
    tasks = {t["index"]: t for t in tasks_of(runs_in(tmp_path / "r")[0])}
    assert (tasks[0]["status"], tasks[0]["exit_code"], tasks[0]["error"]) == ("failed", 3, "broken")
    assert tasks[1]["status"] == "timeout" and tasks[1]["wall_s"] < 30
    assert tasks[2]["status"] == "ok" and tasks[2]["summary"].strip() == "fine"
    assert row["jobs_per_h"] == pytest.approx(2 * 3600 / row["makespan_s"])


@pytest.mark.slow
def test_a_run_with_failed_tasks_is_flagged_and_validation_leaves_it_out_unless_named(
    capsys, tmp_path
):
    s = set_file(
        tmp_path,
        {"sim": "cpu_s = 0.05", "no": 'command = "false"\ncpu_s = 0.05'},
        'good = { repeat = 2, tasks = ["sim"] }\nbad = { tasks = ["sim", "no", "no"] }',
    )
    rows = {r["set"]: r for r in run(capsys, tmp_path, s, "--cores", "1")}
    good, bad = rows["good"], rows["bad"]
    # The run keeps its status; its failed tasks are counted by how they ended.
    assert good["failed_tasks"] is None
    assert bad["status"] == "complete"
    assert bad["failed_tasks"] == {"count": 2, "kinds": {"failed": 2}}
    assert summary(tmp_path / "r" / bad["run_id"])["tasks"]["failed_tasks"] == bad["failed_tasks"]
    from iowatt.store.catalog import catalog

    with catalog(tmp_path / "r") as con:
        flagged = dict(con.execute("SELECT run_id, failed_tasks FROM task_runs").fetchall())
    assert flagged[good["run_id"]] is None
    assert json.loads(flagged[bad["run_id"]]) == bad["failed_tasks"]

    def validate(*refs: str) -> tuple[list[str], str]:
        r = iowatt(capsys, "sim", "tasks", "--validate", *refs, "--json", "--results",
                   tmp_path / "r")  # fmt: skip
        assert r.code == 0, r.err
        return [x["run_id"] for x in json.loads(r.out)], r.err

    ids, err = validate("all")
    assert ids == [good["run_id"]]
    assert "left out 1 run with failed tasks" in err and bad["run_id"] in err
    ids, err = validate(f"{good['run_id']},{bad['run_id']}")
    assert ids == [good["run_id"], bad["run_id"]] and "left out" not in err
    r = iowatt(capsys, "sim", "tasks", "--validate", bad["run_id"], "--results", tmp_path / "r")
    assert r.code == 0, r.err
    assert f"{bad['run_id']}!" in r.out and "!: a run with failed tasks" in r.out


@pytest.mark.slow
def test_an_interrupted_run_keeps_its_finished_tasks_and_the_same_command_finishes_it(tmp_path):
    log = tmp_path / "done.log"
    s = set_file(
        tmp_path,
        {"nap": f'command = "sleep 0.3 && echo {{index}} >> {log}"'},
        'naps = { repeat = 12, tasks = ["nap"] }',
    )
    (tmp_path / "data").mkdir()
    argv = [
        sys.executable,
        "-c",
        "from iowatt.cli import main; main()",
        "tasks",
        str(s),
        "--cores",
        "1",
        "--data",
        f"hdd={tmp_path / 'data'}",
        "--results",
        str(tmp_path / "r"),
        "--quiet",
    ]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    # A fourth line: the third task has exited and been counted (one slot), not only echoed.
    while not (log.exists() and len(log.read_text().split()) >= 4):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "written as incomplete" in err and "Traceback" not in err
    (first,) = runs_in(tmp_path / "r")
    assert manifest(first)["status"] == "incomplete"
    kept = {t["index"] for t in tasks_of(first) if t["status"] == "ok"}
    assert len(kept) >= 3
    assert not list((tmp_path / "data").iterdir())  # its work directory is gone
    before = log.read_text().split()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    second = next(p for p in runs_in(tmp_path / "r") if p != first)
    assert summary(second)["tasks"]["done"] == 12
    assert manifest(second)["config"]["resumed_from"] == first.name
    rerun = [int(i) for i in log.read_text().split()[len(before) :]]
    assert not kept & set(rerun)  # finished tasks were not run again
    assert set(rerun) | kept == set(range(12))
    # Once complete, the same command has nothing left to do.
    again = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert again.returncode == 0 and len(runs_in(tmp_path / "r")) == 2


@pytest.mark.slow
@pytest.mark.parametrize("group", ["cgroup", "session"])
def test_a_run_s_tasks_share_one_cpu_group_and_a_timeout_kills_only_its_own_task(
    capsys, tmp_path, monkeypatch, group
):
    from iowatt.sweep.throttle import find_hierarchy

    if group == "session":  # no CPU cgroup to be had: one launcher's session
        monkeypatch.setattr("iowatt.tasks.cgroup.find_hierarchy", lambda **_: None)
    elif os.geteuid() != 0 or find_hierarchy(v1_file="cpu.shares", v2_controller="cpu") is None:
        pytest.skip("no CPU cgroup can be made here")
    where = "cat /proc/$$/stat /proc/self/cgroup > {output}"
    s = set_file(
        tmp_path,
        {
            "first": f'command = "{where}; sleep 1"',
            "slow": 'command = "sleep 60"',
            "later": f'command = "{where}; sleep 1.5"',
        },
        # Two slots: `later` starts as `first` ends, and is running when `slow` times out.
        'x = { tasks = ["first", "slow", "later"] }',
    )
    run(capsys, tmp_path, s, "--cores", "2", "--timeout", "2s")
    run_dir = runs_in(tmp_path / "r")[0]
    tasks = {t["type"]: t for t in tasks_of(run_dir)}
    assert {k: t["status"] for k, t in tasks.items()} == {
        "first": "ok",
        "slow": "timeout",
        "later": "ok",
    }
    slow, later = tasks["slow"], tasks["later"]
    assert later["start_ns"] < slow["end_ns"] < later["end_ns"]
    placed = manifest(run_dir)["config"]["cpu_group"]
    assert placed["kind"] == group
    sessions = set()
    for t in (tasks["first"], tasks["later"]):
        stat, *cgroups = t["summary"].splitlines()
        pid, _, rest = stat.partition(" (")
        pgrp, session = (int(x) for x in rest.split(") ")[1].split()[2:4])
        assert pgrp == int(pid)  # a process group of its own: what a timeout kills
        sessions.add(session)
        if group == "cgroup":
            name = f"/iowatt-tasks-{os.getpid()}"
            assert placed["path"].endswith(name)
            v1 = placed["version"] == "v1"
            (cpu,) = (
                c
                for c in cgroups
                if ("cpu" in c.split(":")[1].split(",") if v1 else c[:3] == "0::")
            )
            assert cpu.endswith(name), cgroups
    if group == "session":
        # One session for all of them, not iowatt's: one autogroup.
        assert len(sessions) == 1 and sessions != {os.getsid(0)}


def test_other_load_from_the_node_s_and_the_tasks_cpu_by_hand():
    import numpy as np

    # Two half-second samples; a task of 0.5 CPU seconds over (0.25 s, 0.75 s] is half in each.
    ends = np.asarray([500_000_000, 1_000_000_000])
    busy = spread_busy(ends, 0, [(250_000_000, 750_000_000, 0.5)])
    assert busy == pytest.approx([0.5, 0.5])
    # The node had 1.5 cores busy throughout, 2 cores in all: 1 s of 2 was not the tasks'.
    load = other_load(ends, np.asarray([1.5, 1.5]), busy, 2, 0, 0, 1_000_000_000)
    assert load == pytest.approx({"node_cpu_s": 2.0, "tasks_cpu_s": 0.5, "other_cpu_s": 1.0})
    segment = {"makespan_s": 1.0, "energy_j": 1.0, "peak_w": 1.0, "power": "x", **load}
    t = totals([{"start_ns": 0, "end_ns": 1, "status": "ok"}], [segment])
    assert t["other_cpu_share"] == 0.5
    assert t["warnings"] == [other_load_warning(0.5)]
    assert "other load: 50 % of the node's CPU during the run" in t["warnings"][0]
    # A segment written before other load was measured: no share, no warning.
    old = {k: v for k, v in segment.items() if k not in load}
    assert totals([], [old])["other_cpu_share"] is None and totals([], [old])["warnings"] == []
    assert other_load_warning(0.05) is None


def test_a_cpu_group_s_time_reads_from_cgroup_v1_or_v2(tmp_path):
    from iowatt.tasks.cgroup import usage_ns

    (tmp_path / "cpuacct.usage").write_text("1234567890\n")
    (tmp_path / "cpu.stat").write_text("usage_usec 2500000\nuser_usec 2000000\n")
    assert usage_ns(str(tmp_path / "cpuacct.usage")) == 1_234_567_890
    assert usage_ns(str(tmp_path / "cpu.stat")) == 2_500_000_000
    assert usage_ns(str(tmp_path / "gone")) is None


@pytest.mark.slow
@pytest.mark.parametrize("group", ["cgroup", "session"])
def test_a_cpu_burner_outside_the_group_is_other_load_and_modelled_power_leaves_it_out(
    capsys, tmp_path, monkeypatch, group
):
    import numpy as np

    from iowatt.sim.disks import load_disks
    from iowatt.sim.tasks import disk_watts, load_node
    from iowatt.store.catalog import catalog
    from iowatt.sweep.throttle import find_hierarchy
    from iowatt.tasks.figures import modelled_watts
    from iowatt.tasks.monitor import Samples

    if group == "session":  # no CPU cgroup: the tasks' CPU from their rusage
        monkeypatch.setattr("iowatt.tasks.cgroup.find_hierarchy", lambda **_: None)
    elif os.geteuid() != 0 or find_hierarchy(v1_file="cpu.shares", v2_controller="cpu") is None:
        pytest.skip("no CPU cgroup can be made here")
    s = set_file(tmp_path, {"c": "cpu_s = 0.3"}, 'cs = { repeat = 4, tasks = ["c"] }')
    (tmp_path / "data").mkdir()

    def tasks_run(results: str) -> tuple[dict, Path, str, str]:
        r = iowatt(capsys, "tasks", s, "--cores", "1", "--data", f"hdd={tmp_path / 'data'}",
                   "--results", tmp_path / results, "--quiet")  # fmt: skip
        assert r.code == 0, r.err
        (run_dir,) = runs_in(tmp_path / results)
        return summary(run_dir)["tasks"], run_dir, r.out, r.err

    quiet, _, _, _ = tasks_run("quiet")
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        loaded, run_dir, out, err = tasks_run("loaded")
    finally:
        for b in burners:
            b.kill()
            b.wait()
    assert manifest(run_dir)["config"]["cpu_group"]["kind"] == group
    # The node's CPU outside the tasks' group is counted and said.
    assert loaded["other_cpu_share"] > 0.05
    assert loaded["other_cpu_share"] > quiet["other_cpu_share"]
    share = f"{loaded['other_cpu_share'] * 100:.0f} %"
    assert f"warning: run {run_dir.name}: other load: {share} of the node's CPU" in err
    assert loaded["warnings"] and share in loaded["warnings"][0]
    assert "*: 1 of the runs shared the node with other load" in out
    with catalog(tmp_path / "loaded") as con:
        (recorded,) = con.execute("SELECT other_cpu_share FROM task_runs").fetchone()
    assert recorded == pytest.approx(loaded["other_cpu_share"])
    # Modelled power charges the tasks' busy cores, not the node's.
    util = pq.read_table(run_dir / "utilisation.parquet").to_pydict()
    watts = pq.read_table(run_dir / "power.parquet").to_pydict()["watts"]
    model = load_node(None, [], "--power-model")
    disk = disk_watts(model["disks"]["hdd"], load_disks())
    samples = Samples(cpu_busy=util["cpu_busy"], disk_util=util["disk_util"])
    samples.tasks_busy = util["tasks_busy"]
    assert watts == pytest.approx(list(modelled_watts(samples, model["node"], disk)))
    other = np.asarray(util["cpu_busy"]) - np.asarray(util["tasks_busy"])
    assert other.mean() > 0.5  # the burners' cores, left out of the watts
    samples.tasks_busy = [None] * len(watts)  # what charging the node's busy cores would give
    node_charged = modelled_watts(samples, model["node"], disk)
    assert np.mean(node_charged - np.asarray(watts)) > 0.5 * model["node"]["core_w"]


def test_a_set_that_would_not_fit_in_memory_at_this_k_is_refused(capsys, tmp_path):
    s = set_file(
        tmp_path,
        {"big": 'command = "true"\nmemory_gb = 1.0'},
        'bigs = { repeat = 4, tasks = ["big"] }',
    )
    rows = run(capsys, tmp_path, s, "--per-core", "1,2", "--cores", "2", "--memory", "3g")
    assert [r["status"] for r in rows] == ["complete", "refused"]
    assert "needs 4.00 GB" in rows[1]["reason"] and len(runs_in(tmp_path / "r")) == 1


@pytest.mark.needs_root
@pytest.mark.slow
def test_a_task_that_outgrows_the_node_is_killed_for_memory(capsys, tmp_path):
    grow = f"{sys.executable} -c 'b = [1] * 50_000_000; print(len(b))'"  # 400 MB, touched
    s = set_file(
        tmp_path,
        {"grow": f'command = "{grow}"\nmemory_gb = 0.05', "fine": 'command = "true"'},
        'g = { tasks = ["grow", "fine"] }',
    )
    (row,) = run(capsys, tmp_path, s, "--cores", "1", "--memory", "200m")
    statuses = {t["type"]: t["status"] for t in tasks_of(runs_in(tmp_path / "r")[0])}
    assert statuses == {"grow": "out-of-memory", "fine": "ok"}
    assert row["failed"] == 1


@pytest.mark.slow
def test_the_synthetic_tasks_read_their_fresh_input_and_spend_their_cpu(capsys, tmp_path):
    s = set_file(
        tmp_path,
        {"ana": "cpu_s = 0.3\ninput_mb = 6.0", "sim": "cpu_s = 0.4\nmemory_gb = 0.05"},
        'pair = { tasks = ["ana", "sim"] }',
    )
    (row,) = run(capsys, tmp_path, s, "--cores", "2")
    assert row["power"] == "modelled" and row["avg_w"] > 0
    run_dir = runs_in(tmp_path / "r")[0]
    tasks = {t["type"]: t for t in tasks_of(run_dir)}
    ana, sim = (json.loads(tasks[k]["summary"]) for k in ("ana", "sim"))
    assert ana["bytes_read"] == 6_000_000 and sim["bytes_held"] == 50_000_000
    assert tasks["ana"]["rchar"] >= 6_000_000 and tasks["ana"]["syscr"] > 0
    assert row["rchar"] >= 6_000_000 and row["mean_read_b"] > 0
    assert tasks["ana"]["cpu_s"] >= 0.3 and tasks["sim"]["cpu_s"] >= 0.4
    assert tasks["sim"]["max_rss_bytes"] >= 50_000_000
    probe = summary(run_dir)["probe"]
    assert probe["streams"] == 2 and probe["one_mb_s"] > 0
    util = pq.read_table(run_dir / "utilisation.parquet").to_pydict()
    assert util["t_s"] and max(util["cpu_busy"]) > 0.5
    power = pq.read_table(run_dir / "power.parquet").to_pydict()
    assert set(power["source"]) == {"model"}


def test_a_task_s_reads_are_counted_on_any_file_system(tmp_path):
    # /proc/PID/io's figures, read between the task's end and its reaping: a shell's include
    # those of the children it reaped.
    from iowatt.tasks.execute import run_task

    data = tmp_path / "in.dat"
    data.write_bytes(os.urandom(3_000_000))
    spec = {
        "index": 0,
        "type": "cat",
        "batch": 0,
        "command": "cat {input} && true",
        "input": str(data),
        "output": str(tmp_path / "out.json"),
        "stderr": str(tmp_path / "err.txt"),
        "cpu_s": 0.0,
        "memory": 0,
        "chunk": 1 << 20,
        "timeout_s": None,
    }
    rec = run_task(spec)
    assert rec["status"] == "ok"
    assert rec["rchar"] >= 3_000_000 and rec["syscr"] > 0


@pytest.fixture
def emulated(tmp_path: Path) -> Iterator[tuple[Path, Path, Path]]:
    yield from mount_dirs(tmp_path)


@pytest.mark.needs_root
@pytest.mark.slow
def test_a_run_on_an_emulated_disk_records_what_the_disk_served(capsys, tmp_path, emulated):
    backing, mount, results = emulated
    m = MountProcess(backing, mount, results)
    s = set_file(
        tmp_path,
        {"cat": 'command = "cat {input}"\ninput_mb = 2.0'},
        'cats = { repeat = 2, tasks = ["cat"] }',
    )
    try:
        r = iowatt(capsys, "tasks", s, "--data", f"hdd={mount}", "--cores", "1", "--results",
                   tmp_path / "r", "--json", "--quiet")  # fmt: skip
    finally:
        code, _, err = m.stop()
    assert r.code == 0, r.err
    assert code == 0, err
    run_dir = runs_in(tmp_path / "r")[0]
    disk = summary(run_dir)["emulated_disk"]
    assert disk["requests"] > 0 and disk["read_bytes"] >= 2 * 2_000_000
    assert all(t["rchar"] >= 2_000_000 for t in tasks_of(run_dir))


@pytest.mark.slow
def test_the_simulator_calibrated_from_runs_predicts_each_of_them(capsys, tmp_path):
    s = set_file(
        tmp_path,
        {"ana": "cpu_s = 0.3\ninput_mb = 4.0", "sim": "cpu_s = 0.5"},
        'mixed = { repeat = 3, tasks = ["ana", "sim"] }',
    )
    runs = run(capsys, tmp_path, s, "--per-core", "1,2", "--cores", "2")
    r = iowatt(
        capsys,
        "sim",
        "tasks",
        "--validate",
        "all",
        "--json",
        "--results",
        tmp_path / "r",
        "--save-model",
        tmp_path / "node.toml",
    )
    assert r.code == 0, r.err
    rows = json.loads(r.out)
    assert [x["run_id"] for x in rows] == [x["run_id"] for x in runs]
    for x, measured in zip(rows, runs, strict=True):
        assert x["jobs_per_h_measured"] == measured["jobs_per_h"]
        assert x["jobs_per_h_predicted"] > 0 and x["jobs_per_h_error_pct"] is not None
    # The calibrated CPU time of a type is the median its tasks took.
    cpu = sorted(
        t["cpu_s"] for d in runs_in(tmp_path / "r") for t in tasks_of(d) if t["type"] == "sim"
    )
    text = (tmp_path / "node.toml").read_text()
    assert f"sim = {(cpu[2] + cpu[3]) / 2:.3f}" in text and "cores = 2" in text
    # The saved model is one `iowatt sim tasks --model` takes.
    r = iowatt(
        capsys,
        "sim",
        "tasks",
        s,
        "--model",
        tmp_path / "node.toml",
        "--disk",
        "hdd",
        "--per-core",
        "1",
        "--json",
        "--results",
        tmp_path / "r2",
    )
    assert r.code == 0, r.err


@pytest.mark.slow
def test_compare_gives_the_study_s_table_from_the_labels(capsys, tmp_path):
    s = set_file(
        tmp_path, {"nap": 'command = "sleep 0.2"'}, 'naps = { repeat = 4, tasks = ["nap"] }'
    )
    run(capsys, tmp_path, s, "--per-core", "1,2", "--cores", "1", "--repeat", "2")
    r = iowatt(
        capsys,
        "compare",
        "--results",
        tmp_path / "r",
        "--by",
        "env",
        "--metric",
        "jobs_per_h",
        "--control",
        "hdd-k1",
    )
    assert r.code == 0, r.err
    line = next(x for x in r.out.splitlines() if "hdd-k2" in x)
    assert "naps" in line and "%" in line


@pytest.mark.parametrize(
    ("kind", "directive"),
    [("slurm", "#SBATCH --cpus-per-task=8"), ("pbs", "ncpus=8"), ("sge", "#$ -N iowatt-tasks")],
)
def test_the_batch_job_starts_a_worker_with_k_times_cores_threads(capsys, kind, directive):
    r = iowatt(
        capsys,
        "tasks",
        "io",
        "--per-core",
        "2",
        "--cores",
        "8",
        "--memory",
        "16g",
        "--timeout",
        "2h",
        "--job-script",
        kind,
        "--cluster",
        "tcp://head:8786",
    )
    assert r.code == 0, r.err
    assert directive in r.out
    assert "distributed.cli.dask_worker tcp://head:8786" in r.out
    assert r.out.count("--nthreads") == 1 and "--nthreads 16" in r.out


def test_bad_input_is_one_line(capsys, tmp_path):
    data = tmp_path / "d"
    data.mkdir()
    good = ("--data", f"hdd={data}", "--results", tmp_path / "r")
    s = set_file(tmp_path, {"a": 'command = "true"'}, 'x = { tasks = ["a", "nope"] }')
    assert_user_error(iowatt(capsys, "tasks", s, *good), "`nope`", "not defined")
    s2 = tmp_path / "s2.toml"
    s2.write_text('[types.a]\ninput = "missing.dat"\n[sets]\nx = { tasks = ["a"] }\n')
    assert_user_error(iowatt(capsys, "tasks", s2, *good), "missing.dat", "does not exist")
    assert_user_error(iowatt(capsys, "tasks", "io", "--per-core", "0", *good), "--per-core", "0")
    assert_user_error(
        iowatt(capsys, "tasks", "io", "--data", f"hdd={tmp_path / 'no'}"), "not a directory"
    )
    assert_user_error(iowatt(capsys, "tasks", "io", "--data", "hdd"), "NAME=DIR")
    assert_user_error(
        iowatt(capsys, "tasks", "io", "--memory", "100m", *good), "analysis-heavy", "0.368 GB"
    )
    s3 = set_file(tmp_path, {"a": 'command = "cat {inptu}"'}, 'x = { tasks = ["a"] }')
    assert_user_error(iowatt(capsys, "tasks", s3, *good), "{inptu}")
    assert not runs_in(tmp_path / "r")


@pytest.mark.needs_root
def test_a_read_only_data_location_is_refused(capsys, tmp_path, mounts):
    ro = tmp_path / "ro"
    ro.mkdir()
    mounts.mount("-t", "tmpfs", "-o", "ro", "tmpfs", target=ro)
    assert_user_error(iowatt(capsys, "tasks", "io", "--data", f"ssd={ro}"), "not writable")
    assert os.listdir(ro) == []


@pytest.fixture
def throttled_hdd(loop_device: Path, mounts, sh, tmp_path: Path):
    """The "HDD" of the demo: an ext4 loop device whose reads blkio caps at 20 MB/s."""
    control = Path("/sys/fs/cgroup/blkio/blkio.throttle.read_bps_device")
    if not control.exists():
        pytest.skip("cgroup v1 blkio is not mounted")
    sh("mkfs.ext4", "-q", loop_device)
    mnt = mounts.mount(loop_device, target=tmp_path / "hdd")
    st = os.stat(loop_device).st_rdev
    dev = f"{os.major(st)}:{os.minor(st)}"
    control.write_text(f"{dev} 20000000\n")
    try:
        yield mnt
    finally:
        control.write_text(f"{dev} 0\n")


@pytest.mark.needs_root
@pytest.mark.slow
def test_on_a_throttled_loop_device_the_probe_and_the_utilisation_see_the_disk(
    capsys, tmp_path, throttled_hdd
):
    s = set_file(
        tmp_path, {"ana": "cpu_s = 0.1\ninput_mb = 8.0"}, 'anas = { repeat = 3, tasks = ["ana"] }'
    )
    r = iowatt(
        capsys,
        "tasks",
        s,
        "--data",
        f"hdd={throttled_hdd}",
        "--cores",
        "1",
        "--results",
        tmp_path / "r",
        "--json",
        "--quiet",
    )
    assert r.code == 0, r.err
    run_dir = runs_in(tmp_path / "r")[0]
    probe = summary(run_dir)["probe"]
    assert probe["one_mb_s"] == pytest.approx(20.0, rel=0.3)
    util = pq.read_table(run_dir / "utilisation.parquet").to_pydict()
    # Reads held in the throttle are not on the device: its busy time stays near zero, its
    # read rate is the throttle's.
    assert all(u is not None for u in util["disk_util"])
    assert max(util["read_mb_s"]) == pytest.approx(20.0, rel=0.3)
    tasks = tasks_of(run_dir)
    assert all(t["bytes_read"] >= 8_000_000 for t in tasks)  # from the device, not the cache


_VALUES = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-(10**20), 10**20),
    st.booleans(),
    st.text(max_size=12),
    st.lists(st.integers(), max_size=2),
)


@pytest.mark.fuzz
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    types=st.dictionaries(
        st.sampled_from(["a", "b"]),
        st.dictionaries(st.sampled_from([*KEYS_OF_A_TYPE, "nope"]), _VALUES, max_size=4),
        min_size=1,
        max_size=2,
    ),
    tasks=st.lists(st.sampled_from(["a", "b", "c"]), max_size=3),
    rounds=st.integers(-2, 3),
)
def test_any_set_file_loads_or_is_one_config_error(tmp_path, types, tasks, rounds):
    body = "".join(
        f"[types.{name}]\n" + "".join(f"{k} = {_toml(v)}\n" for k, v in spec.items())
        for name, spec in types.items()
    )
    path = tmp_path / "fuzz.toml"
    path.write_text(f"{body}[sets]\ns = {{ tasks = {_toml(tasks)}, repeat = {rounds} }}\n")
    try:
        (loaded,) = load(str(path))
    except ConfigError as e:
        assert e.message and "\n" not in e.message
        return
    assert loaded.tasks and all(t in loaded.types for t in loaded.tasks)
    assert all(t.cpu_s >= 0 and t.input_mb >= 0 and t.memory_gb >= 0 for t in loaded.types.values())


def _toml(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v != v:
        return "nan"
    if isinstance(v, float) and v in (float("inf"), float("-inf")):
        return "inf" if v > 0 else "-inf"
    if isinstance(v, list):
        return "[" + ", ".join(_toml(x) for x in v) + "]"
    return json.dumps(v)


@pytest.mark.slow
def test_an_existing_dask_scheduler_runs_the_set_when_it_has_the_slots(capsys, tmp_path):
    from distributed import LocalCluster

    s = set_file(
        tmp_path, {"nap": 'command = "sleep 0.2"'}, 'naps = { repeat = 4, tasks = ["nap"] }'
    )
    with LocalCluster(
        n_workers=1, threads_per_worker=2, processes=False, dashboard_address=":0"
    ) as cluster:
        (row,) = run(capsys, tmp_path, s, "--cores", "2", "--cluster", cluster.scheduler_address)
        assert row["status"] == "complete" and row["done"] == 4
        r = iowatt(capsys, "tasks", s, "--cores", "2", "--per-core", "2", "--cluster",
                   cluster.scheduler_address, "--data", f"hdd={tmp_path / 'data'}")  # fmt: skip
        assert_user_error(r, "2 worker threads", "needs 4")
