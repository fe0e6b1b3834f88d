"""Measured tails (python/iowatt/emulate/tails.py) from a real emulated fan sweep: each step's
table of multipliers has mean 1 and rises, the reference step (best throughput of its pass) is
the constant S / r − S, a step whose latency is the reference's shifted is constant too, a
heavier tail gives larger upper multipliers, and a curve file or a profile has none. End to
end, an emulated disk drawing from a table keeps the mean added time on the curve, and the same
seed draws the same multipliers."""

from __future__ import annotations

import json
import mmap
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from importlib.resources import files
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
import tomllib

# The extension itself until iowatt._engine.Emulation takes `tails=` too.
from iowatt._engine import Emulation
from iowatt.cli import main
from iowatt.emulate.tails import measure_tails, resolve_tails, tails_from_run
from iowatt.emulate.vibration import resolve_curve
from iowatt.errors import ConfigError
from support.cli import iowatt, summary
from support.emulated import MountProcess, mounted

pytestmark = [pytest.mark.needs_root, pytest.mark.slow]
N = 256
BLOCK = 65536
READS = 200


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fan sweep of hit-sata's emulated disk (blkio throttling on a loop device in /dev/shm):
    two passes of 100, 75, 50, 25 %, 1 s settle and 1 s hold each."""
    if os.geteuid() != 0:
        pytest.skip("needs root: loop devices")
    if not Path("/sys/fs/cgroup/blkio").is_dir() and not Path("/sys/fs/cgroup/io.max").exists():
        pytest.skip("no blkio throttling here")
    fd, image = tempfile.mkstemp(prefix="iowatt-test-", suffix=".img", dir="/dev/shm")
    os.ftruncate(fd, 256 * 1024 * 1024)
    os.close(fd)
    done = subprocess.run(["losetup", "--find", "--show", image], capture_output=True,
                          text=True, check=False)  # fmt: skip
    if done.returncode != 0:
        os.unlink(image)
        pytest.skip(f"no loop device available: {done.stderr.strip()}")
    device = done.stdout.strip()
    results = tmp_path_factory.mktemp("tails") / "results"
    try:
        try:
            main(["sweep", "--from", "100", "--to", "25", "--step", "25", "--passes", "2",
                  "--driver", "emulated", "--disk", f"{device}=hit-sata", "--settle", "1s",
                  "--hold", "1s", "--iosize", "64k", "--no-report",
                  "--results", str(results)])  # fmt: skip
        except SystemExit as e:
            assert not e.code, f"the sweep exited {e.code}"
    finally:
        subprocess.run(["losetup", "-d", device], check=False)
        os.unlink(image)
    (run,) = [p.parent for p in results.glob("*/manifest.json")]
    yield run


def _steps(run: Path) -> list[dict[str, Any]]:
    return pq.read_table(run / "steps.parquet").to_pylist()


def _references(run: Path) -> dict[int, dict[str, Any]]:
    """Each pass's step of the best throughput (the earliest on a tie)."""
    out: dict[int, dict[str, Any]] = {}
    for r in sorted(_steps(run), key=lambda r: (r["pass_no"], r["step"])):
        best = out.get(r["pass_no"])
        if best is None or r["mib_s"] > best["mib_s"]:
            out[r["pass_no"]] = r
    return out


def _copy(run: Path, to: Path, passes: set[int] | None = None) -> Path:
    """A copy of the run (only ``passes``' rows of its steps and histograms when given)."""
    dest = to / run.name
    shutil.copytree(run, dest)
    if passes is not None:
        for name in ("steps.parquet", "latency.parquet"):
            t = pq.read_table(dest / name)
            keep = pc.is_in(t["pass_no"], value_set=pa.array(sorted(passes), pa.int32()))
            pq.write_table(t.filter(keep), dest / name)
    return dest


def _histogram(run: Path, pass_no: int, step: int) -> tuple[np.ndarray, np.ndarray]:
    t = pq.read_table(run / "latency.parquet").to_pandas()
    h = t[(t["pass_no"] == pass_no) & (t["step"] == step)].sort_values("value_ns")
    return h["value_ns"].to_numpy(np.int64), h["count"].to_numpy(np.int64)


def _replace(run: Path, new: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]]) -> None:
    """Gives the hold windows ``(pass, step)`` of ``new`` those histograms instead."""
    t = pq.read_table(run / "latency.parquet")
    rows = [r for r in t.to_pylist() if (r["pass_no"], r["step"]) not in new]
    like = {(r["pass_no"], r["step"]): r for r in t.to_pylist()}
    for key, (values, counts) in new.items():
        for v, c in zip(values.tolist(), counts.tolist(), strict=True):
            rows.append(like[key] | {"value_ns": int(v), "count": int(c)})
    pq.write_table(pa.Table.from_pylist(rows, t.schema), run / "latency.parquet")


def _check_tables(tables: list[tuple[float, list[float]]]) -> None:
    assert [v for v, _ in tables] == sorted({v for v, _ in tables})
    for value, q in tables:
        m = np.asarray(q)
        assert m.size == N, value
        assert m.mean() == pytest.approx(1.0, abs=1e-9), value
        assert np.all(np.diff(m) >= 0), f"{value}: not non-decreasing"
        assert np.all(m >= 0), value


def test_each_table_has_mean_1_rises_and_the_reference_is_the_constant(
    sweep: Path, tmp_path: Path
) -> None:
    tables = tails_from_run(sweep, _steps(sweep)[0]["disk"], N)
    assert tables is not None
    assert [v for v, _ in tables] == [25.0, 50.0, 75.0, 100.0]
    _check_tables(tables)
    # One pass: its reference's X is 0 at every u, so its table is all 1s, and said.
    one = measure_tails(_copy(sweep, tmp_path, {1}), None, N)
    assert one is not None
    _check_tables(one.tables)
    ref = _references(sweep)[1]
    assert one.references == {1: ref["value"]}
    table = dict(one.tables)[ref["value"]]
    assert table == [1.0] * N
    step = next(s for s in one.steps if s.value == ref["value"])
    assert step.applied == "constant" and step.reason == "the reference step (X = 0)"
    # 100 % slows hit-sata to 12 %: the added latency is a tail of its own.
    top = next(s for s in one.steps if s.value == 100.0)
    assert top.applied == "tail" and top.mean_extra_ns > 0 and top.windows == 1
    summary = one.as_dict()
    assert summary["references"] == {"1": ref["value"]}
    assert {s["value"]: s["applied"] for s in summary["steps"]}[ref["value"]] == "constant"
    json.dumps(summary)  # it goes into the run's summary.json


def test_a_shifted_copy_of_the_reference_is_constant_and_a_heavier_tail_is_larger_above(
    sweep: Path, tmp_path: Path
) -> None:
    run = _copy(sweep, tmp_path)
    refs = _references(run)
    ref_values = {r["value"] for r in refs.values()}
    others = sorted({r["value"] for r in _steps(run)} - ref_values)
    assert len(others) >= 3, f"the emulated sweep's references: {ref_values}"
    shifted, scaled, heavy = others[:3]
    new = {}
    for r in _steps(run):
        values, counts = _histogram(run, r["pass_no"], refs[r["pass_no"]]["step"])
        key = (r["pass_no"], r["step"])
        if r["value"] == shifted:  # L_s(u) = L_ref(u) + 5 ms at every u: X ≡ 5 ms
            new[key] = (values + 5_000_000, counts)
        elif r["value"] == scaled:  # L_s = 1.5 L_ref: X = L_ref / 2
            new[key] = ((values * 3) // 2, counts)
        elif r["value"] == heavy:  # the reference, its slowest tenth 20 times slower
            cut = np.searchsorted(np.cumsum(counts), 0.9 * counts.sum())
            new[key] = (np.where(np.arange(values.size) > cut, values * 20, values), counts)
    _replace(run, new)
    tails = measure_tails(run, None, N)
    assert tails is not None
    _check_tables(tails.tables)
    t = {v: np.asarray(q) for v, q in tails.tables}
    info = {s.value: s for s in tails.steps}
    # A pure shift adds the same time at every u: the constant case, though X is not 0.
    assert t[shifted] == pytest.approx(np.ones(N), abs=1e-12)
    assert info[shifted].applied == "tail"
    assert info[shifted].mean_extra_ns == pytest.approx(5e6)
    # Heavier tails put more of the added time in the upper multipliers.
    assert 1 < t[scaled][-1] < t[heavy][-1]
    assert t[heavy][: int(0.85 * N)].max() == 0  # nothing added below the slowest tenth
    assert np.quantile(t[heavy], 0.99) > np.quantile(t[scaled], 0.99)


def test_passes_are_pooled_and_one_pass_gives_its_own_table(sweep: Path, tmp_path: Path) -> None:
    one = measure_tails(_copy(sweep, tmp_path / "one", {1}), None, N)
    # Pass 2's windows given pass 1's histograms: pooling two equal passes changes nothing.
    twice = _copy(sweep, tmp_path / "twice")
    steps = _steps(twice)
    by_value = {r["value"]: r["step"] for r in steps if r["pass_no"] == 1}
    tp = pq.read_table(twice / "steps.parquet")
    pass1 = tp.filter(pc.equal(tp["pass_no"], 1))
    pass2 = pass1.set_column(tp.schema.get_field_index("pass_no"), "pass_no",
                             pa.array([2] * pass1.num_rows, pa.int32()))  # fmt: skip
    pq.write_table(pa.concat_tables([pass1, pass2]), twice / "steps.parquet")
    _replace(twice, {(2, s): _histogram(twice, 1, s) for s in by_value.values()})
    both = measure_tails(twice, None, N)
    assert one is not None and both is not None
    for (v1, q1), (v2, q2) in zip(one.tables, both.tables, strict=True):
        assert v1 == v2
        assert q2 == pytest.approx(q1, rel=1e-12, abs=1e-12), v1
    assert {s.windows for s in both.steps} == {2}
    # The real two passes: every table still has mean 1.
    real = measure_tails(sweep, None, N)
    assert real is not None
    _check_tables(real.tables)
    assert set(real.references) == {1, 2}


def test_a_curve_file_a_profile_or_a_run_without_histograms_has_no_tails(
    sweep: Path, tmp_path: Path
) -> None:
    results = sweep.parent
    (curve,) = sweep.glob("curve-*.json")
    disk = json.loads(curve.read_text())["disk"]["name"]
    assert resolve_tails(str(curve), results) is None
    assert resolve_tails("hit-sata", results) is None
    for ref in (sweep.name, f"{sweep.name}:{disk}", "latest", f"latest:{disk}"):
        found = resolve_tails(ref, results, "fan")
        assert found is not None and found.disk == disk, ref
    with pytest.raises(ConfigError, match="no disk `sdz`"):
        measure_tails(sweep, "sdz")
    bare = _copy(sweep, tmp_path)
    (bare / "latency.parquet").unlink()
    assert tails_from_run(bare, disk) is None


# --- end to end: an emulated disk drawing from a table -------------------------------------


def _reads(mount: Path, n: int) -> None:
    """``n`` O_DIRECT reads of one block each, in order: one request each."""
    buf = mmap.mmap(-1, BLOCK)
    fd = os.open(mount / "data", os.O_RDONLY | os.O_DIRECT)
    try:
        for i in range(n):
            assert os.preadv(fd, [buf], i * BLOCK) == BLOCK
    finally:
        os.close(fd)
        buf.close()


def _mount_and_read(
    root: Path, tables: list[tuple[float, list[float]]], at: float, seed: int
) -> np.ndarray:
    """Each served request's multiplier: its slowdown over S / r − S (r = ½ everywhere)."""
    if not os.path.exists("/dev/fuse"):
        pytest.skip("no /dev/fuse")
    models = tomllib.loads(files("iowatt.sim").joinpath("disks.toml").read_text())
    backing, mount = root / "backing", root / "mount"
    backing.mkdir(parents=True)
    mount.mkdir()
    (backing / "data").write_bytes(b"t" * (READS * BLOCK))
    lo, hi = tables[0][0], tables[-1][0]
    e = Emulation(str(backing), str(mount), models["ultrastar-36z15"], name="ultrastar-36z15",
                  spin_down_s=None, seed=seed, page_cache=False, curve=[(lo, 0.5), (hi, 0.5)],
                  at=at, tails=tables)  # fmt: skip
    e.start()
    try:
        deadline = time.monotonic() + 30
        while not e.progress()["ready"]:
            assert not e.wait(0.0), "the emulated disk ended before it was mounted"
            assert time.monotonic() < deadline, "not mounted in 30 s"
            time.sleep(0.01)
        _reads(mount, READS)
    finally:
        e.cancel()
        assert e.wait(30), "not unmounted in 30 s"
        if mounted(mount):
            subprocess.run(["umount", "-l", str(mount)], check=False)
    c = {k: np.frombuffer(v, dtype=np.uint64 if k in _INTS else np.float64)
         for k, v in e.result()["columns"].items()}  # fmt: skip
    served = (c["drained"] == 0) & (c["failed"] == 0)
    s = (c["overhead_s"] + c["seek_s"] + c["rotation_s"] + c["transfer_s"])[served]
    assert served.sum() == READS
    return c["slowdown_s"][served] / (s / 0.5 - s)


_INTS = {"arrived_ns", "started_ns", "done_ns", "offset", "bytes", "write", "drained", "failed",
         "stream"}  # fmt: skip


def test_an_emulated_disk_drawing_from_a_table_keeps_the_mean_on_the_curve(
    sweep: Path, tmp_path: Path
) -> None:
    tails = measure_tails(sweep, None, N)
    assert tails is not None
    # The step whose multipliers vary the most (r is ½ everywhere on this mount's curve): the
    # strictest check of the mean.
    value, table = max(tails.tables, key=lambda t: float(np.std(t[1])))
    q = np.asarray(table)
    assert q.std() > 0.05, "the sweep gave no step a tail"
    m = _mount_and_read(tmp_path / "a", tails.tables, value, seed=7)
    # Every multiplier is one of the table's entries, drawn uniformly: mean 1 within 4 SE.
    assert all(np.isclose(q, x, rtol=1e-9, atol=1e-12).any() for x in m)
    assert abs(m.mean() - 1) <= 4 * q.std() / np.sqrt(READS), (m.mean(), q.std())
    # The same seed draws the same multipliers.
    again = _mount_and_read(tmp_path / "b", tails.tables, value, seed=7)
    assert again == pytest.approx(m, rel=1e-9, abs=1e-12)


def test_mount_with_tails_records_them_and_draws_each_slowed_request_s_time_from_them(
    sweep: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tails = measure_tails(sweep)
    assert tails is not None
    # The step the curve slows most: where the drawn times are largest.
    slowest, r = min(resolve_curve(str(sweep), sweep.parent).points, key=lambda p: p[1])
    assert r < 1
    backing, mount = tmp_path / "backing", tmp_path / "mount"
    backing.mkdir()
    mount.mkdir()
    (backing / "data").write_bytes(b"t" * (READS * BLOCK))
    m = MountProcess(backing, mount, sweep.parent, "--curve", str(sweep), "--at",
                     f"{slowest:g}", "--tails", "--seed", "7")  # fmt: skip
    _reads(mount, 60)
    code, _, err = m.stop()
    assert code == 0, err
    run = max(sweep.parent.glob("*-emulate-*"))
    recorded = summary(run)["vibration"]["tails"]
    assert recorded == json.loads(json.dumps(tails.as_dict()))
    (table,) = [q for v, q in tails.tables if v == slowest]
    rows = pq.read_table(run / "disk_requests.parquet").to_pylist()
    reads = [row for row in rows if not row["write"]]
    assert reads, "slowed reads were served"
    for row in reads:
        model_s = row["overhead_s"] + row["seek_s"] + row["rotation_s"] + row["transfer_s"]
        added = model_s / r - model_s
        assert min(abs(row["slowdown_s"] / added - q) for q in table) < 1e-9, row
    # Without histograms, --tails is refused.
    r = iowatt(capsys, "emulate", "mount", backing, mount, "--curve", "hit-sata", "--tails")
    assert r.code == 2 and "--tails needs a sweep run's curve" in r.err
