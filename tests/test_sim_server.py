"""``iowatt sim server``: the policy table a user reads (and its arithmetic), the run it writes
(Parquet, catalog, report, compare), determinism, the study's expected shape on the shipped
workloads, bad input as one line, and Ctrl-C keeping what was simulated."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest

from support.cli import assert_user_error, iowatt, manifest, runs_in, summary

KEYS = {
    "workload", "policy", "seeds", "complete", "service_time_s", "speedup_vs_dlb",
    "speedup_ci95", "batch_slowdown", "energy_j", "energy_saving_vs_dlb", "peak_temp_c",
    "peak_dimm_c", "gating_s", "mean_pwm",
}  # fmt: skip


def sim(capsys, results: Path, *args: str | Path) -> list[dict]:
    r = iowatt(capsys, "sim", "server", "--json", "--no-report", "--results", results, *args)
    assert r.code == 0, r.err
    return json.loads(r.out)


def test_the_json_table_is_each_policy_against_dlb(capsys, tmp_path):
    rows = sim(capsys, tmp_path / "r", "--workloads", "W4", "--policies", "all")
    assert [r["policy"] for r in rows] == ["DLB", "JETC", "App-Oracle", "FSTM", "FSTM-NoSSD"]
    dlb = rows[0]
    for r in rows:
        assert set(r) == KEYS and r["workload"] == "W4" and r["complete"]
        e = r["energy_j"]
        assert e["total"] == pytest.approx(e["socket"] + e["memory"] + e["fans"])
        # One seed: the figures are the ratios of this row's numbers and DLB's.
        assert r["speedup_vs_dlb"] == pytest.approx(dlb["service_time_s"] / r["service_time_s"] - 1)
        for c in ("socket", "memory", "fans", "total"):
            assert r["energy_saving_vs_dlb"][c] == pytest.approx(1 - e[c] / dlb["energy_j"][c])
        assert r["speedup_ci95"] is None  # one seed: no interval
    assert dlb["speedup_vs_dlb"] == 0 and dlb["batch_slowdown"] == 0


def test_policies_not_given_still_run_dlb_the_baseline(capsys, tmp_path):
    r = iowatt(capsys, "sim", "server", "--workloads", "W1", "--policies", "fstm",
               "--json", "--no-report", "--results", tmp_path / "r")  # fmt: skip
    assert r.code == 0, r.err
    assert [row["policy"] for row in json.loads(r.out)] == ["DLB", "FSTM"]
    assert "DLB is simulated too" in r.err


def test_seeds_give_replications_and_an_interval(capsys, tmp_path):
    rows = sim(capsys, tmp_path / "r", "--workloads", "W3", "--policies", "JETC",
               "--seed", "4", "--seeds", "3")  # fmt: skip
    jetc = rows[1]
    assert jetc["seeds"] == 3
    lo, hi = jetc["speedup_ci95"]
    assert lo < jetc["speedup_vs_dlb"] < hi
    (run_dir,) = runs_in(tmp_path / "r")
    table = pq.read_table(run_dir / "policies.parquet")
    assert sorted(set(table["seed"].to_pylist())) == [4, 5, 6]
    # The interval is the seeds' own: their speed-ups' mean is the table's.
    per_seed = [
        s for p, s in zip(table["policy"].to_pylist(), table["speedup_vs_dlb"].to_pylist(),
                          strict=True) if p == "JETC"
    ]  # fmt: skip
    assert jetc["speedup_vs_dlb"] == pytest.approx(sum(per_seed) / 3)


def test_the_same_seed_gives_the_same_tables(capsys, tmp_path):
    args = ("--workloads", "W2,W5", "--policies", "all", "--seed", "9")
    sim(capsys, tmp_path / "a", *args, "--threads", "1")
    sim(capsys, tmp_path / "b", *args, "--threads", "2")
    (a,), (b,) = runs_in(tmp_path / "a"), runs_in(tmp_path / "b")
    for name in ("policies.parquet", "sim_series.parquet", "sim_events.parquet"):
        ta, tb = pq.read_table(a / name), pq.read_table(b / name)
        assert ta.drop(["run_id"]).equals(tb.drop(["run_id"])), name


def test_the_run_is_in_the_catalog_and_compare_reads_it(capsys, tmp_path):
    results = tmp_path / "r"
    for curve in ("hit-sata", "fuj-sata"):
        r = iowatt(capsys, "sim", "server", "--workloads", "W4", "--policies", "FSTM",
                   "--curve", curve, "--label", f"curve={curve}", "--results", results)  # fmt: skip
        assert r.code == 0, r.err
        assert "speed-up" in r.out and "report:" in r.out
    runs = runs_in(results)
    assert all(manifest(d)["kind"] == "sim-server" for d in runs)
    html = (runs[0] / "report.html").read_text()
    for plot in ("speedup", "energy", "series"):
        assert f'data-plot="{plot}"' in html
    con = duckdb.connect(str(results / "catalog.duckdb"), read_only=True)
    got = con.execute(
        "SELECT policy, service_s FROM sim_server WHERE run_id = ? ORDER BY policy",
        [runs[0].name],
    ).fetchall()
    want = sorted((p["policy"], p["service_time_s"]) for p in summary(runs[0])["policies"])
    assert got == want
    kinds = con.execute("SELECT DISTINCT kind FROM sim_events").fetchall()
    assert ("fan",) in kinds and ("cache",) in kinds
    con.close()
    r = iowatt(capsys, "compare", "--results", results, "--by", "curve", "--control", "hit-sata",
               "--metric", "service_s", "--format", "json")  # fmt: skip
    assert r.code == 0, r.err
    assert "W4/FSTM" in r.out


@pytest.mark.slow
def test_the_shipped_workloads_rank_the_policies_as_the_study_found(capsys, tmp_path):
    rows = sim(capsys, tmp_path / "r")
    by = {(r["workload"], r["policy"]): r for r in rows}
    sets = [f"W{i}" for i in range(1, 11)]
    t = {k: r["service_time_s"] for k, r in by.items()}
    for w in sets:
        # JETC beats DLB by running the fans slower: faster disks and less energy.
        assert by[w, "JETC"]["mean_pwm"] < by[w, "DLB"]["mean_pwm"]
        assert t[w, "JETC"] < t[w, "DLB"]
        assert by[w, "JETC"]["energy_saving_vs_dlb"]["total"] > 0
        # FSTM, with or without its cache, ahead of both without slowing batch jobs.
        for p in ("FSTM", "FSTM-NoSSD"):
            assert t[w, p] < min(t[w, "DLB"], t[w, "JETC"]), (w, p)
        for p in ("JETC", "FSTM", "FSTM-NoSSD"):
            assert by[w, p]["batch_slowdown"] < 0.01, (w, p)
    # App-Oracle is the only policy that slows batch jobs, where queries announce heavy I/O.
    io_heavy = [w for w in sets if by[w, "App-Oracle"]["batch_slowdown"] > 0.02]
    assert set(io_heavy) >= {"W3", "W4", "W8", "W9"}
    # The cache helps the sequential hash join (q13: W4, W9) most, and hurts some sets.
    gain = {w: t[w, "FSTM-NoSSD"] / t[w, "FSTM"] - 1 for w in sets}
    assert max(gain, key=gain.get) in ("W4", "W9")
    assert min(gain.values()) < 0


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def _curve_file(tmp_path: Path, **change) -> Path:
    doc = {
        "format": "iowatt-curve/1", "run_id": "r", "status": "complete",
        "disk": {"name": "sdb", "path": "/dev/sdb", "model": None, "rotational": True,
                 "profile": None},
        "stimulus": {"kind": "fan", "unit": "%", "band": None, "amplitude_g": None},
        "settle_s": 20, "hold_s": 20, "passes": 1, "generator": {}, "max_mib_s": 37.0,
        "points": [
            {"value": v, "mib_s": 37 * n, "mib_s_min": 37 * n, "mib_s_max": 37 * n, "norm": n,
             "norm_min": n, "norm_max": n, "passes": 1}
            for v, n in ((0, 1.0), (50, 1.0), (100, 0.3))
        ],
    }  # fmt: skip
    for key, value in change.items():
        if key == "norm":
            doc["points"][2]["norm"] = value
        else:
            doc[key] = value
    return _write(tmp_path / "curve.json", json.dumps(doc))


BAD = [
    (["--policies", "FSTM,COOL"], ["`COOL`", "not a policy"]),
    (["--workloads", "W1..W11"], ["`W11`", "not a workload set"]),
    (["--seed", "5..1"], ["--seed", "runs backwards"]),
    (["--resolution", "0s"], ["--resolution"]),
    (["--focus", "W9", "--workloads", "W1"], ["--focus", "W9"]),
    (["--curve", "no-such-disk"], ["no-such-disk", "not a file, a run or a disk profile"]),
    (["--threads", "0"], ["--threads"]),
]


@pytest.mark.parametrize(("args", "fragments"), BAD)
def test_bad_options_are_one_line_and_write_nothing(capsys, tmp_path, args, fragments):
    r = iowatt(capsys, "sim", "server", *args, "--results", tmp_path / "r")
    assert_user_error(r, *fragments)
    assert runs_in(tmp_path / "r") == []


@pytest.mark.parametrize(
    ("name", "make", "fragments"),
    [
        ("another format", lambda p: _curve_file(p, format="something/2"), ["format"]),
        ("a value above 1", lambda p: _curve_file(p, norm=1.3), ["outside 0..1"]),
        (
            "a frequency curve",
            lambda p: _curve_file(
                p, stimulus={"kind": "frequency", "unit": "Hz", "band": None, "amplitude_g": None}
            ),
            ["frequency curve"],
        ),
        ("not JSON", lambda p: _write(p / "c.json", "{"), ["not JSON"]),
    ],
)
def test_a_bad_curve_file_is_refused(capsys, tmp_path, name, make, fragments):
    r = iowatt(capsys, "sim", "server", "--curve", make(tmp_path), "--results", tmp_path / "r")
    assert_user_error(r, *fragments)


@pytest.mark.parametrize(
    ("flag", "text", "fragments"),
    [
        (
            "--model",
            "[socket]\nr_convection_k_w = -0.1\n",
            ["socket.r_convection_k_w", "must be above 0"],
        ),
        ("--model", "[socket.core]\nr_spreader_k_w = 0\n", ["socket.core.r_spreader_k_w"]),
        ("--model", "[fans]\nmax_rpm = 9000\n", ["unknown key `fans.max_rpm`"]),
        ("--model", '[memory]\ndimms = "eight"\n', ["memory.dimms", "not a number"]),
        ("--model", "inlet_c = [", ["not TOML"]),
        ("--jobs", '[workloads]\nW1 = ["bzip2", "q99"]\n', ["`W1`", "`q99`", "not defined"]),
        ("--jobs", '[workloads]\nWB = ["bzip2"]\n', ["`WB`", "no service job"]),
        ("--jobs", '[jobs.q0]\nkind = "service"\nmem_gb = 1\n', ["`q0`", "phase"]),
    ],
)
def test_a_bad_model_or_job_file_names_the_key(capsys, tmp_path, flag, text, fragments):
    path = _write(tmp_path / "in.toml", text)
    workloads = "WB" if "WB" in text else "W1"
    r = iowatt(capsys, "sim", "server", flag, path, "--workloads", workloads,
               "--results", tmp_path / "r")  # fmt: skip
    assert_user_error(r, *fragments)
    assert runs_in(tmp_path / "r") == []


def test_ctrl_c_writes_what_was_simulated_marked_incomplete(tmp_path):
    results = tmp_path / "r"
    cmd = [sys.executable, "-c", "from iowatt.cli import main; main()", "sim", "server",
           "--threads", "1",
           "--no-report", "--results", str(results)]  # fmt: skip
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)  # fmt: skip
    # Ready when the first run is done: off a terminal, each one is a line on stderr.
    ready, _, _ = select.select([proc.stderr], [], [], 120)
    assert ready, "no run finished"
    first = proc.stderr.readline()
    assert first.startswith("1/50 runs"), first
    proc.send_signal(signal.SIGINT)
    _, rest = proc.communicate(timeout=60)
    err = first + rest
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "interrupted" in err
    (run_dir,) = runs_in(results)
    m = manifest(run_dir)
    assert m["status"] == "incomplete" and m["reason"] == "interrupted"
    status = pq.read_table(run_dir / "policies.parquet")["status"].to_pylist()
    assert status[0] == "complete" and len(status) < 50
    assert not list(results.glob(".tmp-*"))


@pytest.mark.needs_root
@pytest.mark.slow
def test_a_fan_sweep_of_emulated_disks_feeds_the_simulator(capsys, tmp_path, shm_loops):
    """The README's loop: an emulated fan sweep writes curve files; `--curve latest` follows
    them, and FSTM's disk-driven zone is where the measured curve falls steeply."""
    if not Path("/sys/fs/cgroup/blkio").is_dir() and not Path("/sys/fs/cgroup/io.max").exists():
        pytest.skip("no blkio throttling here")
    results = tmp_path / "r"
    r = iowatt(capsys, "sweep", "--from", "100", "--to", "0", "--step", "25", "--driver",
               "emulated", "--disk", f"{shm_loops()}=hit-sata", "--settle", "1s", "--hold", "1s",
               "--iosize", "64k", "--no-report", "--results", results)  # fmt: skip
    assert r.code == 0, r.err
    (sweep,) = runs_in(results)
    r = iowatt(capsys, "sim", "server", "--curve", "latest", "--workloads", "W4",
               "--json", "--no-report", "--results", results)  # fmt: skip
    assert r.code == 0, r.err
    sim_run = next(d for d in runs_in(results) if d != sweep)
    assert manifest(sim_run)["config"]["curve"]["source"].startswith(sweep.name)
    points = manifest(sim_run)["config"]["curve"]["points"]
    assert [p[0] for p in points] == [0.0, 25.0, 50.0, 75.0, 100.0]
    by = {row["policy"]: row for row in json.loads(r.out)}
    # The measured curve slows the disks above 50 %: FSTM keeps the fans lower than DLB's.
    assert by["FSTM"]["mean_pwm"] < by["DLB"]["mean_pwm"]
    assert by["FSTM"]["speedup_vs_dlb"] > 0


def _leaves(node: dict, path: tuple = ()) -> list[tuple]:
    out = []
    for key, value in node.items():
        if isinstance(value, dict):
            out += _leaves(value, (*path, key))
        elif isinstance(value, int | float) and not isinstance(value, bool):
            out.append((*path, key))
    return out


def _model_config(path: tuple, value: object) -> dict:
    from iowatt.sim.server import plan

    config = plan(workloads="W1", policies="DLB", results=Path("/nonexistent")).engine_config()
    node = config["model"]
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return config


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from iowatt.sim.model import load_model  # noqa: E402

LEAVES = _leaves(load_model())


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(LEAVES),
    st.one_of(
        st.floats(allow_nan=False, allow_infinity=False),
        st.integers(min_value=-(2**70), max_value=2**70),
    ),
)
def test_any_model_value_is_taken_or_refused_in_one_line(path, value):
    from iowatt._engine import ServerSim
    from iowatt.errors import ConfigError

    try:
        ServerSim(_model_config(path, value))
    except ConfigError as e:
        assert "\n" not in e.message and e.hint
        assert path[-1] in e.message, (path, e.message)
