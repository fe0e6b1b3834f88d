"""``iowatt sim tasks --validate`` on runs made on an emulated disk: each is predicted on the
emulator's disk model under the simulator's scheduler matching the emulator's (a real mount,
and a directory whose ``.iowatt/`` says it is one); a model or scheduler it cannot be predicted
on is one error line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from iowatt.errors import ConfigError
from iowatt.sim.disks import load_disks
from iowatt.tasks.validate import emulated_disk
from support.cli import assert_user_error, iowatt, runs_in, summary
from support.emulated import MountProcess, mount_dirs


def set_file(tmp_path: Path) -> Path:
    path = tmp_path / "set.toml"
    path.write_text('[types.cat]\ncommand = "cat {input}"\ninput_mb = 2.0\n'
                    '[sets]\ncats = { repeat = 2, tasks = ["cat"] }\n')  # fmt: skip
    return path


def tasks_run(capsys, tmp_path: Path, data: Path) -> None:
    r = iowatt(capsys, "tasks", set_file(tmp_path), "--data", f"hdd={data}", "--cores", "1",
               "--results", tmp_path / "r", "--json", "--quiet")  # fmt: skip
    assert r.code == 0, r.err


def validate(capsys, tmp_path: Path, *args: str | Path) -> Any:
    return iowatt(capsys, "sim", "tasks", "--validate", "all", "--results", tmp_path / "r", *args)


def disk_models(path: Path, name: str, model: dict[str, Any]) -> Path:
    """A --disk-models file defining ``name`` as ``model`` (a disks.toml table)."""

    def value(v: Any) -> str:
        if isinstance(v, dict):
            return "{ " + ", ".join(f"{a} = {value(b)}" for a, b in v.items()) + " }"
        return json.dumps(v)

    path.write_text(f"[{name}]\n" + "".join(f"{k} = {value(v)}\n" for k, v in model.items()))
    return path


def looks_emulated(tmp_path: Path, **settings: Any) -> Path:
    """A plain directory with the control files of an emulated disk mounted with
    ``settings``: what a tasks run records of a mount, without one."""
    data = tmp_path / "data"
    (data / ".iowatt").mkdir(parents=True)
    (data / ".iowatt" / "counters.json").write_text(
        json.dumps(
            {"read_ops": 0, "write_ops": 0, "read_bytes": 0, "write_bytes": 0, "energy_j": 0.0}
        )
    )
    base = {"disk_model": "barracuda-7200", "scheduler": "cfq", "slice_s": 0.1,
            "idle_window_s": 0.008, "page_cache": False, "array": False}  # fmt: skip
    (data / ".iowatt" / "config.json").write_text(json.dumps({**base, **settings}))
    return data


@pytest.fixture
def emulated(tmp_path: Path) -> Iterator[tuple[Path, Path, Path]]:
    yield from mount_dirs(tmp_path)


@pytest.mark.needs_root
@pytest.mark.slow
def test_a_run_on_an_emulated_disk_is_predicted_on_its_model_and_scheduler(
    capsys, tmp_path, emulated
):
    backing, mount, results = emulated
    m = MountProcess(backing, mount, results, "--disk-model", "barracuda-7200",
                     "--scheduler", "cfq", "--slice", "50ms", "--idle-window", "4ms")  # fmt: skip
    try:
        tasks_run(capsys, tmp_path, mount)
    finally:
        code, _, err = m.stop()
    assert code == 0, err
    (run_dir,) = runs_in(tmp_path / "r")
    settings = summary(run_dir)["emulated_disk"]["settings"]
    assert settings["disk_model"] == "barracuda-7200" and settings["scheduler"] == "cfq"
    assert settings["slice_s"] == 0.05 and settings["idle_window_s"] == 0.004

    r = validate(capsys, tmp_path, "--json")
    assert r.code == 0, r.err
    (row,) = json.loads(r.out)
    disk = summary(run_dir)["emulated_disk"]
    assert row["predicted_on"] == {
        "source": "emulated",
        "emulator_scheduler": "cfq",
        "model": "barracuda-7200",
        "scheduler": "cfq",
        "slice_ms": 50.0,
        "idle_ms": 4.0,
        "readahead_kb": disk["mean_read_b"] / 1024,
        "drive_read_ahead": False,
    }
    saved = tmp_path / "node.toml"
    r = validate(capsys, tmp_path, "--save-model", saved)
    assert r.code == 0, r.err
    assert "barracuda-7200 under cfq (slice 50 ms, idle 4 ms)" in r.out
    assert f"{run_dir.name}: on its emulated disk" in r.out
    # The saved node serves the emulated disk as --validate did.
    assert "drive_read_ahead = false" in saved.read_text()
    r = iowatt(capsys, "sim", "tasks", set_file(tmp_path), "--model", saved, "--disk", "hdd",
               "--per-core", "1", "--json", "--results", tmp_path / "r2")  # fmt: skip
    assert r.code == 0, r.err

    # The prediction is the model's: the same disk ten times slower serves the run slower.
    slower_disk = {**load_disks()["barracuda-7200"], "outer_mb_s": 6.5, "inner_mb_s": 3.25}
    slow = disk_models(tmp_path / "slow.toml", "barracuda-7200", slower_disk)
    r2 = validate(capsys, tmp_path, "--json", "--disk-models", slow)
    assert r2.code == 0, r2.err
    (slower,) = json.loads(r2.out)
    assert slower["jobs_per_h_predicted"] < row["jobs_per_h_predicted"] * 0.7


@pytest.mark.slow
def test_a_model_given_with_disk_models_serves_and_an_unknown_one_is_one_line(capsys, tmp_path):
    tasks_run(capsys, tmp_path, looks_emulated(tmp_path, disk_model="my-disk"))
    saved = tmp_path / "node.toml"
    r = validate(capsys, tmp_path, "--save-model", saved)
    assert_user_error(r, "emulated `my-disk` disk", "not a disk model")
    assert "--disk-models" in r.err and not saved.exists()

    mine = disk_models(tmp_path / "mine.toml", "my-disk", load_disks()["dc-s3700"])
    r = validate(capsys, tmp_path, "--json", "--disk-models", mine)
    assert r.code == 0, r.err
    (row,) = json.loads(r.out)
    assert row["predicted_on"]["model"] == "my-disk" and row["jobs_per_h_predicted"] > 0


@pytest.mark.slow
def test_a_scheduler_without_a_simulator_match_is_one_line_naming_both(capsys, tmp_path):
    tasks_run(capsys, tmp_path, looks_emulated(tmp_path, scheduler="bfq"))
    r = validate(capsys, tmp_path)
    assert_user_error(r, "scheduler `bfq`", "cfq, deadline, none")
    assert "elevator as deadline" in r.err


def run_on(settings: dict[str, Any] | None) -> dict[str, Any]:
    disk = None if settings is None else {"settings": settings}
    return {"run_id": "r1", "summary": {"emulated_disk": disk}}


@pytest.mark.parametrize(
    ("emulator", "simulator"),
    [
        ({"scheduler": "fifo"}, {"scheduler": "none", "ncq_depth": 1}),
        ({"scheduler": "elevator"}, {"scheduler": "deadline"}),
        (
            {"scheduler": "cfq", "slice_s": 0.2, "idle_window_s": 0.01},
            {"scheduler": "cfq", "slice_ms": 200.0, "idle_ms": 10.0},
        ),
    ],
)
def test_each_emulator_scheduler_is_set_against_the_simulator_s(emulator, simulator):
    entry = emulated_disk(run_on({"disk_model": "x25-m-g2", **emulator}), load_disks())
    assert entry == {"model": "x25-m-g2", "drive_read_ahead": False, **simulator}


def test_the_mean_request_the_mount_served_is_the_readahead_once_the_run_read_enough():
    def entry(read_bytes: int) -> dict[str, Any] | None:
        run = run_on({"disk_model": "x25-m-g2", "scheduler": "elevator"})
        run["summary"]["emulated_disk"].update(read_bytes=read_bytes, mean_read_b=262144.0)
        return emulated_disk(run, load_disks())

    same = {"model": "x25-m-g2", "scheduler": "deadline", "drive_read_ahead": False}
    assert entry(8 << 20) == {**same, "readahead_kb": 256.0}
    assert entry(4096) == same


def test_a_plain_directory_or_an_old_emulator_keeps_the_probe_and_an_array_is_refused():
    assert emulated_disk(run_on(None), load_disks()) is None
    with pytest.raises(ConfigError, match="emulated array of `x25-m-g2` disks"):
        emulated_disk(run_on({"disk_model": "x25-m-g2", "scheduler": "fifo", "array": True}),
                      load_disks())  # fmt: skip


ANY = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=8))


@pytest.mark.fuzz
@given(
    model=st.one_of(ANY, st.sampled_from(["barracuda-7200", "dc-s3700"])),
    scheduler=st.one_of(ANY, st.sampled_from(["fifo", "elevator", "cfq"])),
    slice_s=ANY,
    idle_window_s=ANY,
    array=ANY,
)
def test_any_recorded_settings_give_a_disk_or_one_config_error(
    model, scheduler, slice_s, idle_window_s, array
):
    settings = {"disk_model": model, "scheduler": scheduler, "slice_s": slice_s,
                "idle_window_s": idle_window_s, "array": array}  # fmt: skip
    try:
        entry = emulated_disk(run_on(settings), load_disks())
    except ConfigError as e:
        assert "\n" not in e.message and "run r1" in e.message
        return
    assert entry is not None and entry["model"] == model
