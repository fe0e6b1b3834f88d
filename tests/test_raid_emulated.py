"""The emulated array beside the RAID simulator (bench/raid_emulated.py's steps) on an hour of a
study-like day around its quiet-to-busy change (09:30–10:30, --scale 0.1, 8×): nginx serves the
recreated tree from `iowatt emulate mount --array P`, `iowatt replay` records the array's
power, and `iowatt sim raid` serves the replay run. Only what does not depend on timing is
asserted: what reached the array, energy as the sum of its disks', PARAID below RAID-0 and LRU
spinning disks down on both sides, and a killed emulator leaving no mount. No latency or time."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from support.cli import manifest, runs_in
from support.emulated import MountProcess, mount_dirs, mounted
from support.wait import wait_for

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import raid_emulated as bench

pytestmark = [pytest.mark.slow, pytest.mark.needs_root]

# The hour is short for raid.toml's defaults: PARAID may not shift down within 600 s of the
# mount, and few idle spells last the break-even time. LRU's timeout stays above two spin-ups:
# nginx reads a file in 32 KiB pieces one after another, so a file striped over disks LRU spun
# down wakes them in turn (the simulator's request wakes them at once), and with a shorter one
# the first disk spins down again before the file's next unit on it. The same file goes to
# both sides, with a client timeout no such file reaches: no request times out on either side.
PARAMS = """\
[lru]
timeout_s = 30.0
[paraid]
min_dwell_s = 60.0
long_s = 30.0
"""


@pytest.fixture(scope="module")
def pairs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    missing = bench.missing_peer()
    if missing is not None:
        pytest.skip(f"{missing} missing")
    work = tmp_path_factory.mktemp("raid-emulated")
    backing = work / "backing"
    backing.mkdir()
    (work / "params.toml").write_text(PARAMS)
    day = bench.prepare(work, 0.1, 15.5 * 3600, 3600, backing)
    setup = bench.Setup(warmup="10m", cooldown="10m", params=work / "params.toml", timeout="300s")
    try:
        done = bench.run_all(bench.PERSONALITIES, day, work / "runs", setup, serial=False)
    finally:
        for p in bench.PERSONALITIES:
            mount = work / "runs" / p / "mount"
            assert not mounted(mount), f"{mount} is still mounted"
    return {"day": day, "pairs": done, "figures": {p: bench.compare(done[p]) for p in done}}


def rows(run: Path, name: str, personality: str | None = None) -> dict[str, np.ndarray]:
    return bench.table(run / f"{name}.parquet", personality)


def test_every_replayed_request_reached_the_array(pairs: dict[str, Any]) -> None:
    for p, pair in pairs["pairs"].items():
        replayed = pair.replay_summary["replay"]
        assert replayed["failed"] == 0, (p, replayed["errors_by_kind"])
        assert rows(pair.sim, "raid_runs", p)["timeouts"][0] == 0, p
        req = rows(pair.replay, "requests")
        assert all(e is None for e in req["error"]), (p, set(req["error"]))
        # The replayed log's statuses come back: 304s were made 200s of the file (bench doc).
        assert (req["status"] == req["log_status"]).all(), p
        ok = (req["status"] == 200) & (req["method"] == "GET") & (req["bytes"] > 0)
        array = json.loads((pair.emulate / "summary.json").read_text())["array"]
        # Direct I/O: nginx reads each answered file whole through the mount, and every read
        # reaches the array; a 404's page is nginx's own.
        assert array["write_ops"] == 0
        assert array["bytes"] == int(req["bytes"][ok].sum()), p
        assert array["read_ops"] >= int(ok.sum()), p
        # Each file nginx opened was looked up at least once (the kernel keeps a name a second).
        assert array["lookups"] >= len(set(req["target"][ok])), p
        assert array["drained"] == 0, p
        # The simulator served the same reads.
        sim = rows(pair.sim, "raid_requests", p)
        assert sim["bytes"].size == int(ok.sum()), p
        assert int(sim["bytes"].sum()) == array["bytes"], p
        # The cache setting is the same on both sides, and said so in every run.
        for run in (pair.emulate, pair.replay, pair.sim):
            assert manifest(run)["labels"]["cache"] == "0", run
        sim_config = manifest(pair.sim)["config"]
        assert sim_config["array"]["cache_bytes"] == 0
        assert manifest(pair.emulate)["config"]["page_cache"] is False


def test_each_personalitys_energy_is_the_sum_of_its_disks(pairs: dict[str, Any]) -> None:
    for p, pair in pairs["pairs"].items():
        array = json.loads((pair.emulate / "summary.json").read_text())["array"]
        by_state = [sum(d.values()) for d in array["state_j"]]
        assert array["energy_j"] == pytest.approx(sum(array["energy_by_disk_j"]), rel=1e-9), p
        assert array["energy_by_disk_j"] == pytest.approx(by_state, rel=1e-9), p
        for run in (pair.emulate, pair.sim):
            bins = rows(run, "raid_power", p)
            whole = np.array([d is None or d != d for d in bins["disk"]])
            total = rows(run, "raid_runs", p)["energy_j"][0]
            assert bins["energy_j"][whole].sum() == pytest.approx(total, rel=1e-6), (p, run)
            assert bins["energy_j"][~whole].sum() == pytest.approx(total, rel=1e-6), (p, run)
        # The replay's recording: the array's channel is its disks' channels together.
        work = pair.replay_summary["power"]["work"]
        disks = [work[f"emulated/disk/{d}"]["energy_j"] for d in range(4)]
        assert work["emulated/disk"]["energy_j"] == pytest.approx(sum(disks), rel=1e-3), p


def test_paraid_saves_and_lru_spins_down_on_both_sides(pairs: dict[str, Any]) -> None:
    f = pairs["figures"]
    for side in ("energy_emulated_j", "energy_simulated_j_tree", "energy_simulated_j_log"):
        assert f["paraid"][side] < f["raid0"][side], (side, f)
    assert f["lru"]["cycles_emulated"] > 0, f["lru"]
    assert f["lru"]["cycles_simulated_tree"] > 0, f["lru"]
    assert f["raid0"]["cycles_emulated"] == f["raid0"]["cycles_simulated_tree"] == 0


def test_a_killed_emulated_array_leaves_no_mount(tmp_path: Path) -> None:
    if bench.missing_peer() == "fuse3":
        pytest.skip("fuse3 missing")
    dirs = mount_dirs(tmp_path)
    backing, mount, results = next(dirs)
    (backing / "f").write_bytes(b"x" * 65536)
    m = MountProcess(backing, mount, results, "--array", "paraid")
    try:
        assert (mount / "f").read_bytes() == b"x" * 65536
        code, _, err = m.stop(signal.SIGKILL)
        assert code == -signal.SIGKILL, err
        # Its guardian unmounts and commits what the mount journaled.
        wait_for(lambda: not mounted(mount) and bool(runs_in(results)), what="the guardian")
        assert manifest(runs_in(results)[0])["status"] == "incomplete"
        assert (backing / "f").stat().st_size == 65536
    finally:
        next(dirs, None)  # a mount left behind is taken down lazily
