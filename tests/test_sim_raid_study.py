"""``iowatt sim raid`` on a study-like day: the power-and-performance study's shape from the
personalities' mechanisms (a tenth of the study's requests and files, 8×), the file system's
own traffic, arrival jitter by seed, and parameters refused before anything is simulated."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from support.cli import assert_user_error, iowatt, runs_in

SPEEDUP = 8.0
HOUR = 3600 / SPEEDUP  # an hour of the log, simulated seconds
WARM_UP = 6  # hours: the study's warm-up before its day


@pytest.fixture(scope="module")
def tenth(tmp_path_factory) -> tuple[Path, Path]:
    """The study's 30 h (warm-up, a day, cool-down) at a tenth of its requests and files."""
    from iowatt.cli import main

    out = tmp_path_factory.mktemp("study") / "tenth.log"
    main(["trace", "generate", "--preset", "study-web", "--scale", "0.1", "-o", str(out), "-q"])
    return out, out.with_name("tenth.tree.parquet")


def sim(capsys, results: Path, trace: tuple[Path, Path], *args: str | Path) -> dict[str, dict]:
    log, tree = trace
    r = iowatt(capsys, "sim", "raid", log, "--tree", tree, "--speedup", str(SPEEDUP), "--json",
               "--no-report", "--results", results, *args)  # fmt: skip
    assert r.code == 0, r.err
    return {row["personality"]: row for row in json.loads(r.out)}


def hourly(run_dir: Path, seed: int) -> dict[str, np.ndarray]:
    """Per hour of the log's day (after the warm-up): requests and each personality's W."""
    power = pq.read_table(run_dir / "raid_power.parquet").to_pandas()
    power = power[power["disk"].isna() & (power["seed"] == seed)]
    req = pq.read_table(run_dir / "raid_requests.parquet").to_pandas()
    req = req[(req["personality"] == "raid0") & (req["seed"] == seed)]
    hours = range(WARM_UP, WARM_UP + 24)
    out = {"requests": req.groupby(req["t_s"] // HOUR).size().reindex(hours).to_numpy()}
    for p, part in power.groupby("personality"):
        by = part.groupby(part["t_s"] // HOUR)
        out[str(p)] = (by["energy_j"].sum() / by["width_s"].sum()).reindex(hours).to_numpy()
    return out


def test_the_study_s_shape_comes_from_the_mechanisms(capsys, tmp_path, tenth):
    rows = sim(capsys, tmp_path / "r", tenth, "--seeds", "2", "--timeout", "10s")
    raid0, lru, paraid = rows["raid0"], rows["lru"], rows["paraid"]
    (run_dir,) = runs_in(tmp_path / "r")
    h = hourly(run_dir, seed=1)
    busy, quiet = np.argsort(h["requests"])[-3:], np.argsort(h["requests"])[:3]
    # Power follows the day for all three.
    for p in ("raid0", "lru", "paraid"):
        assert np.corrcoef(h["requests"], h[p])[0, 1] > 0.7, p
    # PARAID saves substantially with similar latency: its low gear's two disks serve it all.
    assert paraid["energy_saving_vs_raid0"] > 0.25
    assert paraid["latency_s"]["p50"] < 2 * raid0["latency_s"]["p50"]
    # Its saving changes through the day: its two disks' busy time grows with the load while
    # two stay in standby, so the busiest hours save less than the quietest.
    saving = 1 - h["paraid"] / h["raid0"]
    assert saving[busy].mean() < saving[quiet].mean()
    # LRU saves little on average, more at night; its spin-ups are orders of magnitude above
    # RAID-0's worst, and some clients time out.
    assert lru["energy_saving_vs_raid0"] < paraid["energy_saving_vs_raid0"] / 2
    lru_saving = 1 - h["lru"] / h["raid0"]
    assert lru_saving[quiet].mean() > lru_saving[busy].mean() + 0.1
    assert lru["latency_s"]["max"] > 100 * raid0["latency_s"]["max"]
    assert lru["timeouts"] > 0 and raid0["timeouts"] == 0
    # Far past what the disks are rated for; PARAID keeps within it.
    assert max(lru["most_cycles_a_day"]) > lru["rated_cycles_per_day"]
    assert max(paraid["most_cycles_a_day"]) <= int(paraid["rated_cycles_per_day"])


def test_the_file_system_s_traffic_keeps_lru_s_disks_awake(capsys, tmp_path, tenth):
    with_fs = sim(capsys, tmp_path / "fs", tenth)
    params = tmp_path / "nofs.toml"
    params.write_text("[fs]\nenabled = false\n")
    without = sim(capsys, tmp_path / "nofs", tenth, "--params", params)
    (fs_run,), (plain_run,) = runs_in(tmp_path / "fs"), runs_in(tmp_path / "nofs")
    fs_rows = pq.read_table(fs_run / "raid_runs.parquet").to_pylist()
    plain_rows = pq.read_table(plain_run / "raid_runs.parquet").to_pylist()
    assert all(r["fs_reads"] > 0 and r["fs_writes"] > 0 for r in fs_rows)
    assert all(r["fs_reads"] == 0 and r["fs_writes"] == 0 for r in plain_rows)
    # Metadata reads add seeks before the data.
    assert with_fs["raid0"]["completion_s"]["p50"] > without["raid0"]["completion_s"]["p50"]
    # Access-time writes land on disks LRU would have let sleep.
    assert with_fs["lru"]["energy_saving_vs_raid0"] < without["lru"]["energy_saving_vs_raid0"]


def test_each_seed_draws_its_own_arrivals_within_their_seconds(capsys, tmp_path, tenth):
    sim(capsys, tmp_path / "u", tenth, "--seeds", "2", "--personalities", "raid0")
    sim(capsys, tmp_path / "n", tenth, "--arrival-jitter", "none", "--personalities", "raid0")
    (uniform,), (none,) = runs_in(tmp_path / "u"), runs_in(tmp_path / "n")
    req = pq.read_table(uniform / "raid_requests.parquet").to_pandas()
    starts = pq.read_table(none / "raid_requests.parquet")["t_s"].to_numpy()
    # Without jitter every request starts its log second (1/8 s apart at 8×).
    assert np.allclose(starts * SPEEDUP, np.round(starts * SPEEDUP))
    a, b = (req[req["seed"] == s]["t_s"].to_numpy() for s in (1, 2))
    assert not np.array_equal(a, b)
    for t in (a, b):
        assert (np.diff(t) >= 0).all(), "order kept"
        assert ((t >= starts - 1e-9) & (t < starts + 1 / SPEEDUP)).all(), "within its second"


@pytest.mark.parametrize(
    ("args", "params", "fragments"),
    [
        (["--arrival-jitter", "gauss"], "", ["`gauss`", "--arrival-jitter"]),
        (["--max-bad", "-1"], "", ["--max-bad", "-1"]),
        ([], "[array]\nspinup_stagger_s = -4\n", ["spinup_stagger_s", "-4"]),
        ([], "[lru]\ntimeout_s = -1\n", ["lru.timeout_s", "-1"]),
        ([], "[lru]\ncycles_per_day = -3\n", ["lru.cycles_per_day", "-3"]),
        ([], "[paraid]\ncycles_per_day = -1\n", ["paraid.cycles_per_day", "-1"]),
        ([], "[paraid]\nup = 1.5\n", ["up 1.5", "within 0..1"]),
        ([], "[paraid]\nup = 0.3\ndown = 0.5\n", ["down 0.5", "down below up"]),
    ],
)
def test_bad_input_is_refused_before_anything_is_simulated(
    capsys, tmp_path, tenth, args, params, fragments
):
    extra: list[str | Path] = [*args]
    if params:
        (tmp_path / "p.toml").write_text(params)
        extra += ["--params", tmp_path / "p.toml"]
    log, tree = tenth
    r = iowatt(capsys, "sim", "raid", log, "--tree", tree, "--results", tmp_path / "r", *extra)
    assert_user_error(r, *fragments)
    assert "simulated" not in r.err, "refused before the first run"
    assert runs_in(tmp_path / "r") == [] and not list((tmp_path / "r").glob(".tmp-*"))
