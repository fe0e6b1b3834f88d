"""Many processes on one results directory, and processes killed at any moment: every committed
run is indexed, nobody fails because another holds the catalog, and `runs --check` leaves a
clean directory and no test data behind."""

from __future__ import annotations

import json
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from support.cli import iowatt, runs_in
from support.wait import wait_for

CLI = [sys.executable, "-c", "from iowatt.cli import main; main()"]


def _bench(results: Path, target: Path, runtime: str = "0.3s") -> subprocess.Popen[str]:
    cmd = [*CLI, "bench", "randomread", "--runtime", runtime, "--filesize", "2m", "--quiet",
           "--no-report", "--target", str(target), "--results", str(results)]  # fmt: skip
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _clean(results: Path, target: Path) -> None:
    """Nothing half-done is left: no temporary run, no half-built catalog, no test data."""
    assert [p.name for p in results.iterdir() if p.name.startswith((".tmp-", ".catalog-"))] == []
    assert list(target.iterdir()) == []


def _listed(capsys: pytest.CaptureFixture[str], results: Path) -> set[str]:
    r = iowatt(capsys, "runs", "--results", results, "--json")
    assert r.code == 0, r
    return {json.loads(line)["run_id"] for line in r.out.splitlines()}


_HOLDER = """
import sys, time, duckdb
con = duckdb.connect(sys.argv[1], read_only=True)   # the README's notebook example
print(con.execute("SELECT count(*) FROM runs").fetchone()[0], flush=True)
sys.stdin.readline()
"""


@pytest.mark.slow
def test_eight_benches_and_readers_share_one_results_directory(tmp_path, capsys):
    results, target = tmp_path / "results", tmp_path / "target"
    target.mkdir()
    first = _bench(results, target)
    assert first.communicate(timeout=120) and first.returncode == 0
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(results / "catalog.duckdb")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "1"
        benches = [_bench(results, target) for _ in range(8)]
        seen_by_reader = 0
        while any(b.poll() is None for b in benches):
            seen_by_reader = max(seen_by_reader, len(_listed(capsys, results)))
        for b in benches:
            _, err = b.communicate()
            assert b.returncode == 0, err
            assert "catalog" not in err  # no process had to leave its run unindexed
        assert holder.poll() is None  # the notebook's connection stayed open throughout
    finally:
        holder.kill()
        holder.communicate()
    assert _listed(capsys, results) == {d.name for d in runs_in(results)}
    assert len(runs_in(results)) == 9 and seen_by_reader >= 1
    con = duckdb.connect(str(results / "catalog.duckdb"), read_only=True)
    assert con.execute("SELECT count(DISTINCT run_id) FROM intervals").fetchone() == (9,)
    con.close()
    _clean(results, target)


@pytest.mark.slow
def test_a_bench_killed_at_any_moment_leaves_nothing_that_check_does_not_repair(tmp_path, capsys):
    results, target = tmp_path / "results", tmp_path / "target"
    target.mkdir()
    results.mkdir()
    rng = random.Random(14)
    for _ in range(8):
        bench = _bench(results, target, runtime="1s")
        time.sleep(rng.uniform(0.0, 2.0))  # a random point of its life, not a readiness wait
        bench.send_signal(signal.SIGKILL)
        bench.communicate()
        r = iowatt(capsys, "runs", "--results", results, "--check")
        assert r.code == 0, r
        _clean(results, target)
        assert _listed(capsys, results) == {d.name for d in runs_in(results)}


@pytest.fixture(scope="module")
def fio_files(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    where = tmp_path_factory.mktemp("fio")
    if shutil.which("fio") is None:
        pytest.skip("`fio` is not on PATH")
    out = where / "randread.json"
    subprocess.run(
        ["fio", "--output-format=json+", f"--output={out}", f"--directory={where}",
         "--name=randread", "--filename=data", "--size=4m", "--rw=randread", "--bs=4k",
         "--runtime=0.3", "--time_based"],
        check=True, capture_output=True, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    (where / "data").unlink()
    copies = [out]
    for i in range(5):
        copies.append(where / f"copy{i}.json")
        shutil.copyfile(out, copies[-1])
    return copies


@pytest.mark.slow
def test_an_import_killed_at_any_moment_leaves_nothing_that_check_does_not_repair(
    tmp_path, capsys, fio_files
):
    results = tmp_path / "results"
    results.mkdir()
    rng = random.Random(15)
    for _ in range(8):
        proc = subprocess.Popen(
            [*CLI, "import", *map(str, fio_files), "--results", str(results)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        time.sleep(rng.uniform(0.0, 2.0))
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
        r = iowatt(capsys, "runs", "--results", results, "--check")
        assert r.code == 0, r
        assert [p.name for p in results.iterdir() if p.name.startswith(".tmp-")] == []
        assert _listed(capsys, results) == {d.name for d in runs_in(results)}


@pytest.mark.slow
def test_check_waits_for_nothing_while_a_bench_is_running(tmp_path, capsys):
    """A running bench's temporary directory and test data are left alone."""
    results, target = tmp_path / "results", tmp_path / "target"
    target.mkdir()
    bench = _bench(results, target, runtime="30s")
    try:
        wait_for(lambda: any(target.glob("iowatt-*/largefile1")), bench, what="the layout")
        r = iowatt(capsys, "runs", "--results", results, "--check")
        assert r.code == 0 and "in-progress" in r.out
        assert any(target.glob("iowatt-*/largefile1"))
    finally:
        bench.send_signal(signal.SIGINT)
        bench.communicate(timeout=60)
    assert bench.returncode == 130
    assert len(runs_in(results)) == 1
    _clean(results, target)
