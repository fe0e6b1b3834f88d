"""``iowatt sim raid``: the per-personality table and its arithmetic, the trace layouts it
reads, the run it writes and bad input as one line (the study's shape on a study-like day:
test_sim_raid_study.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from support.cli import assert_user_error, iowatt, runs_in

KEYS = {
    "personality", "seeds", "energy_j", "energy_saving_vs_raid0", "mean_w", "latency_s",
    "completion_s", "success_rate", "timeouts", "spin_cycles", "most_cycles_a_day",
    "rated_cycles_per_day", "cache_hits",
}  # fmt: skip


def sim(capsys, results: Path, trace: Path, *args: str | Path) -> dict[str, dict]:
    r = iowatt(capsys, "sim", "raid", trace, "--json", "--results", results, *args)
    assert r.code == 0, r.err
    return {row["personality"]: row for row in json.loads(r.out)}


@pytest.fixture(scope="module")
def day_log(tmp_path_factory) -> Path:
    """A generated day of diurnal web traffic (busy middays, quiet nights)."""
    from iowatt.cli import main

    out = tmp_path_factory.mktemp("log") / "day.log"
    main(["trace", "generate", "-o", str(out), "--duration", "1d", "--rate", "0.5"])
    return out


def msr(path: Path, rows: list[tuple[int, str, int, int]]) -> Path:
    """An MSR-Cambridge CSV: (100 ns ticks, Read/Write, offset, size) per row."""
    path.write_text("".join(f"{t},web,0,{k},{o},{s},100\n" for t, k, o, s in rows))
    return path


def test_the_json_table_is_each_personality_against_raid0(capsys, tmp_path, day_log):
    rows = sim(capsys, tmp_path / "r", day_log, "--speedup", "8", "--no-report")
    assert list(rows) == ["raid0", "lru", "paraid"]
    raid0 = rows["raid0"]
    for r in rows.values():
        assert set(r) == KEYS and len(r["spin_cycles"]) == 4
        assert r["energy_saving_vs_raid0"] == pytest.approx(1 - r["energy_j"] / raid0["energy_j"])
        q = r["latency_s"]
        assert q["p50"] <= q["p90"] <= q["p99"] <= q["max"]
        assert r["latency_s"]["p50"] <= r["completion_s"]["p50"]
    (run_dir,) = runs_in(tmp_path / "r")
    runs = pq.read_table(run_dir / "raid_runs.parquet")
    assert runs["personality"].to_pylist() == ["raid0", "lru", "paraid"]
    power = pq.read_table(run_dir / "raid_power.parquet").to_pylist()
    array = [p for p in power if p["personality"] == "raid0" and p["disk"] is None]
    # The bins add up to the run's energy; each is as wide as the run lasted into it.
    assert sum(p["energy_j"] for p in array) == pytest.approx(raid0["energy_j"])
    assert all(p["spinning"] == pytest.approx(4.0) for p in array), "RAID-0 never spins down"
    assert sum(p["width_s"] for p in array) == pytest.approx(runs["duration_s"][0].as_py())
    assert {p["width_s"] for p in array[:-1]} == {15.0} and 0 < array[-1]["width_s"] <= 15
    last = array[-1]
    assert last["mean_w"] == pytest.approx(last["energy_j"] / last["width_s"])


def test_the_report_leads_with_the_table_and_draws_the_study_s_figures(capsys, tmp_path, day_log):
    r = iowatt(capsys, "sim", "raid", day_log, "--speedup", "8", "--seeds", "2",
               "--results", tmp_path / "r")  # fmt: skip
    assert r.code == 0, r.err
    assert "report:" in r.out
    (run_dir,) = runs_in(tmp_path / "r")
    html = (run_dir / "report.html").read_text()
    for plot in ("power", "latency", "completion"):
        assert f'data-plot="{plot}"' in html
    assert html.index("<table") < html.index('data-plot="power"'), "the answer first"
    # A path that is no run is one line, not an internal failure.
    r = iowatt(capsys, "report", run_dir, tmp_path / "no-run")
    assert_user_error(r, "is not a run directory")


def test_an_msr_block_trace_is_served_and_an_offset_beyond_the_array_refused(capsys, tmp_path):
    trace = msr(tmp_path / "t.csv", [(0, "Read", 0, 4096), (10_000_000, "Write", 1 << 20, 65536),
                                      (20_000_000, "Read", 0, 4096)])  # fmt: skip
    rows = sim(capsys, tmp_path / "r", trace, "--personalities", "raid0", "--cache", "1m")
    assert rows["raid0"]["cache_hits"] == 1, "the third request re-reads the first"
    far = msr(tmp_path / "far.csv", [(0, "Read", 10**15, 4096)])
    r = iowatt(capsys, "sim", "raid", far, "--results", tmp_path / "r")
    assert_user_error(r, "beyond the array")


def test_blkparse_text_is_read_from_its_queue_lines(capsys, tmp_path):
    lines = [
        "  8,0    0        1     0.000000000  4102  Q   R 2048 + 8 [cat]",
        "  8,0    0        2     0.000010000  4102  G   R 2048 + 8 [cat]",
        "  8,0    0        3     0.500000000  4102  Q  WS 409600 + 256 [dd]",
        "  8,0    0        4     1.000000000  4102  C   R 2048 + 8 [0]",
    ]  # fmt: skip
    trace = tmp_path / "trace.txt"
    trace.write_text("\n".join(lines) + "\n")
    sim(capsys, tmp_path / "r", trace, "--personalities", "raid0")
    (run_dir,) = runs_in(tmp_path / "r")
    req = pq.read_table(run_dir / "raid_requests.parquet").to_pylist()
    assert [(r["t_s"], r["offset"], r["bytes"]) for r in req] == [
        (0.0, 2048 * 512, 8 * 512), (0.5, 409600 * 512, 256 * 512)]  # fmt: skip


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["--timeout", "0s"], ["--timeout", "above zero"]),
        (["--personalities", "raid5"], ["`raid5`", "not a personality"]),
        (["--disk-model", "floppy"], ["`floppy`", "not a disk model"]),
        (["--disks", "0"], ["--disks"]),
        (["--speedup", "0"], ["--speedup"]),
    ],
)
def test_bad_options_are_one_line(capsys, tmp_path, day_log, args, fragments):
    r = iowatt(capsys, "sim", "raid", day_log, *args, "--results", tmp_path / "r")
    assert_user_error(r, *fragments)
    assert runs_in(tmp_path / "r") == []


def test_bad_models_and_params_name_the_value(capsys, tmp_path, day_log):
    from iowatt.sim.disks import load_disks

    row = load_disks()["ultrastar-36z15"]
    lines = [f"{k} = {json.dumps(v)}" for k, v in row.items() if not isinstance(v, dict)]
    lines += ["active = { w = 13.5 }", "idle = { w = 10.2 }", "standby = { w = 11.0 }"]
    models = _write(tmp_path / "m.toml", "[hot]\n" + "\n".join(lines) + "\n")
    r = iowatt(capsys, "sim", "raid", day_log, "--disk-models", models, "--disk-model", "hot",
               "--results", tmp_path / "r")  # fmt: skip
    assert_user_error(r, "standby 11 W is above idle 10.2 W")
    params = _write(tmp_path / "p.toml", "[paraid]\ngears = [2, 6]\n")
    r = iowatt(capsys, "sim", "raid", day_log, "--params", params, "--results", tmp_path / "r")
    assert_user_error(r, "gear of 6 disks is larger than the array's 4")
    garbage = _write(tmp_path / "g.bin", "\x00\x01 not a trace\n")
    r = iowatt(capsys, "sim", "raid", garbage, "--results", tmp_path / "r")
    assert_user_error(r, "no layout iowatt knows", "MSR-Cambridge CSV", "blkparse")


def test_the_same_seed_gives_the_same_tables(capsys, tmp_path, day_log):
    for d in ("a", "b"):
        sim(capsys, tmp_path / d, day_log, "--speedup", "8", "--seed", "3")
    (a,), (b,) = runs_in(tmp_path / "a"), runs_in(tmp_path / "b")
    for name in ("raid_runs.parquet", "raid_power.parquet", "raid_requests.parquet"):
        assert (
            pq.read_table(a / name)
            .drop(["run_id"])
            .equals(pq.read_table(b / name).drop(["run_id"]))
        ), name


def test_the_traces_filters_pick_the_requests_served(capsys, tmp_path, day_log):
    # The afternoon only, 2xx only: fewer requests than the whole day's, each counted.
    whole = sim(capsys, tmp_path / "a", day_log, "--personalities", "raid0", "--no-report")
    part = sim(capsys, tmp_path / "b", day_log, "--personalities", "raid0", "--no-report",
               "--from", "2026-03-02T12:00", "--until", "2026-03-02T18:00")  # fmt: skip
    assert part["raid0"]["energy_j"] < whole["raid0"]["energy_j"] / 2
    (run_dir,) = runs_in(tmp_path / "b")
    trace = json.loads((run_dir / "manifest.json").read_text())["config"]["trace"]
    assert trace["dropped"]["before --from"] > 0 and trace["dropped"]["after --until"] > 0
    r = iowatt(capsys, "sim", "raid", day_log, "--status", "7xx", "--results", tmp_path / "c")
    assert_user_error(r, "--status `7xx`")


from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from iowatt.errors import ConfigError  # noqa: E402
from iowatt.sim.requests import load_requests  # noqa: E402

_MSR_ROW = st.builds(
    "{},{},{},{},{},{},{}\n".format,
    st.integers(-5, 10**18), st.sampled_from(["web", "", "a,b"]), st.integers(0, 3),
    st.sampled_from(["Read", "Write", "Trim"]), st.integers(-1, 2**64),
    st.integers(-1, 2**40), st.integers(0, 10),
)  # fmt: skip
_BLK_ROW = st.builds(
    "  8,0 {} {} {} {} {} {} {} + {} [x]\n".format,
    st.integers(0, 3), st.integers(0, 99), st.floats(0, 1e6), st.integers(0, 9),
    st.sampled_from(["Q", "C", "G"]), st.sampled_from(["R", "W", "WS", "X"]),
    st.integers(-1, 2**50), st.integers(-1, 2**20),
)  # fmt: skip


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.one_of(st.lists(_MSR_ROW, max_size=5), st.lists(_BLK_ROW, max_size=5),
                 st.lists(st.text(max_size=60), max_size=4)))  # fmt: skip
def test_any_trace_file_gives_requests_or_one_error(tmp_path, rows):
    path = tmp_path / "trace.txt"
    path.write_text("".join(rows), encoding="utf-8", errors="replace")
    try:
        req = load_requests(path, "combined", 1.0)
    except ConfigError as e:
        assert "\n" not in e.message
    else:
        assert len(req.t_ns) == len(req.offset) == len(req.size) == len(req.write)
        assert (req.t_ns[1:] >= req.t_ns[:-1]).all()


def test_a_trace_longer_than_the_clock_holds_is_one_error(tmp_path):
    # MSR ticks are 100 ns: 2e17 ticks apart is 634 years, past a u64 of nanoseconds.
    path = tmp_path / "msr.csv"
    path.write_text("0,web,0,Read,0,4096,1\n200000000000000000,web,0,Read,0,4096,1\n")
    with pytest.raises(ConfigError, match="spans 634 years") as e:
        load_requests(path, "combined", 1.0)
    assert "100 ns ticks" in (e.value.hint or "")


def test_ctrl_c_writes_the_runs_done_marked_incomplete(tmp_path):
    import os
    import select
    import signal
    import subprocess
    import sys

    import numpy as np

    # 200,000 reads over an hour: each personality × seed takes a noticeable moment.
    n = 200_000
    rng = np.random.default_rng(1)
    ticks = np.cumsum(rng.exponential(18_000 * 10_000 / 1000, n)).astype(np.int64)
    offsets = rng.integers(0, 50_000_000_000 // 4096, n) * 4096
    rows = [f"{t},web,0,Read,{o},65536,100" for t, o in zip(ticks, offsets, strict=True)]
    trace = tmp_path / "t.csv"
    trace.write_text("\n".join(rows) + "\n")
    results = tmp_path / "r"
    cmd = [sys.executable, "-c", "from iowatt.cli import main; main()", "sim", "raid", str(trace),
           "--seeds", "30", "--no-report", "--results", str(results)]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})  # fmt: skip
    # Ready when the first run is done: a line on stderr says so.
    ready, _, _ = select.select([proc.stderr], [], [], 120)
    assert ready
    first = proc.stderr.readline()
    assert first.startswith("1/90 simulated"), first
    proc.send_signal(signal.SIGINT)
    _, rest = proc.communicate(timeout=120)
    assert proc.returncode == 130, first + rest
    assert "Traceback" not in rest and "interrupted" in rest
    (run_dir,) = runs_in(results)
    m = json.loads((run_dir / "manifest.json").read_text())
    assert m["status"] == "incomplete" and m["reason"] == "interrupted"
    done = pq.read_table(run_dir / "raid_runs.parquet").num_rows
    assert 1 <= done < 90
    assert not list(results.glob(".tmp-*"))
