"""The run store loses nothing: readers never block writers, every committed run reaches the
catalog, damaged runs and catalogs are named and worked around, and `runs --check` repairs what
killed processes left (docs/run-store.md)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest

from iowatt.store.catalog import CATALOG, refresh
from iowatt.store.lock import WRITER_LOCK
from iowatt.store.writer import MARKER, OWNER, RunWriter
from support.cli import assert_user_error, iowatt
from support.compare import FakeRun, write_runs

TINY = ("--runtime", "0.1s", "--filesize", "1m", "--quiet", "--no-report")


def _listed(capsys: pytest.CaptureFixture[str], results: Path) -> list[str]:
    r = iowatt(capsys, "runs", "--results", results, "--json")
    assert r.code == 0, r
    return sorted(json.loads(line)["run_id"] for line in r.out.splitlines())


def _fake(results: Path, n: int) -> list[Path]:
    return write_runs(
        results, [FakeRun({"randomread": 1000.0 + i}, {"env": "a"}) for i in range(n)]
    )


def _commit_only(results: Path, run_id: str) -> Path:
    """A run committed by a process that was killed before it indexed it."""
    source = _fake(results.parent / "elsewhere", 1)[0]
    writer = RunWriter(results, run_id)
    manifest = json.loads((source / "manifest.json").read_text())
    writer.write_json("manifest.json", {**manifest, "run_id": run_id})
    writer.write_json("summary.json", json.loads((source / "summary.json").read_text()))
    return writer.commit()


def test_a_run_committed_but_never_indexed_is_listed_by_the_next_read(tmp_path, capsys):
    results = tmp_path / "results"
    dirs = _fake(results, 2)
    _commit_only(results, "20261125-000000-bench-killed")
    listed = _listed(capsys, results)
    assert listed == sorted([d.name for d in dirs] + ["20261125-000000-bench-killed"])


def test_a_deleted_run_disappears_from_the_catalog(tmp_path, capsys):
    results = tmp_path / "results"
    dirs = _fake(results, 3)
    for f in dirs[1].iterdir():
        f.unlink()
    dirs[1].rmdir()
    assert _listed(capsys, results) == [dirs[0].name, dirs[2].name]
    con = duckdb.connect(str(results / CATALOG), read_only=True)
    assert con.execute("SELECT count(*) FROM runs").fetchone() == (2,)
    con.close()


def test_an_open_read_only_connection_keeps_its_snapshot_and_blocks_no_writer(tmp_path):
    """The README's notebook example, held open in another process while runs are added."""
    results = tmp_path / "results"
    _fake(results, 1)
    reader = subprocess.Popen(
        [sys.executable, "-c", _READER, str(results / CATALOG)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert reader.stdout is not None and reader.stdout.readline().strip() == "1"
        _commit_only(results, "20261125-000001-bench-new")
        done = refresh(results)
        assert done.added == ["20261125-000001-bench-new"]
        out, err = reader.communicate("again\n", timeout=60)
        assert out.strip() == "1", err  # its snapshot, until it reconnects
    finally:
        reader.kill()
        reader.communicate()
    con = duckdb.connect(str(results / CATALOG), read_only=True)
    assert con.execute("SELECT count(*) FROM runs").fetchone() == (2,)
    con.close()


_READER = """
import sys, duckdb
con = duckdb.connect(sys.argv[1], read_only=True)
print(con.execute("SELECT count(*) FROM runs").fetchone()[0], flush=True)
sys.stdin.readline()
print(con.execute("SELECT count(*) FROM runs").fetchone()[0], flush=True)
"""


def test_a_damaged_run_is_named_and_the_others_stay_listed(tmp_path, capsys):
    results = tmp_path / "results"
    dirs = _fake(results, 3)
    (dirs[0] / "summary.json").write_text('{"workloads": ')
    (dirs[2] / "latency.parquet").write_bytes(b"PAR1 not really")
    r = iowatt(capsys, "runs", "--results", results, "--check")
    r = iowatt(capsys, "runs", "--results", results, "--json")
    assert r.code == 0
    assert [json.loads(x)["run_id"] for x in r.out.splitlines()] == [dirs[1].name]
    r = iowatt(capsys, "runs", "--results", results, "--check")
    assert r.code == 0
    broken = [line for line in r.out.splitlines() if line.startswith("broken")]
    assert len(broken) == 2
    assert dirs[0].name in broken[0] and "summary.json" in broken[0]
    assert dirs[2].name in broken[1] and "latency.parquet" in broken[1]


def test_compare_works_when_another_runs_parquet_is_damaged(tmp_path, capsys):
    results = tmp_path / "results"
    runs = [FakeRun({"randomread": 1000.0 + i}, {"env": "ab"[i % 2]}) for i in range(6)]
    dirs = write_runs(results, runs)
    (dirs[0] / "latency.parquet").write_bytes(b"garbage")  # damaged after it was indexed
    r = iowatt(capsys, "compare", "--results", results, "--by", "env")
    assert_user_error(r, f"run `{dirs[0].name}`: its latency.parquet cannot be read")
    assert "runs --check" in r.err
    r = iowatt(capsys, "runs", "--results", results, "--check")
    assert f"broken       {dirs[0].name}" in r.out
    r = iowatt(capsys, "compare", "--results", results, "--by", "env", "--format", "json")
    assert r.code == 0, r.err
    assert dirs[0].name not in r.out and dirs[1].name in r.out


def test_a_corrupt_catalog_is_rebuilt_and_says_so(tmp_path, capsys):
    results = tmp_path / "results"
    dirs = _fake(results, 2)
    (results / CATALOG).write_bytes(b"\0" * 4096)
    listed = _listed(capsys, results)
    assert listed == [d.name for d in dirs]


def test_a_truncated_catalog_is_named_in_the_warning(tmp_path, capsys):
    results = tmp_path / "results"
    _fake(results, 2)
    path = results / CATALOG
    path.write_bytes(path.read_bytes()[:5000])
    r = iowatt(capsys, "runs", "--results", results)
    assert r.code == 0
    assert f"`{path}` could not be read" in r.err and "rebuilt" in r.err


def test_rebuild_makes_the_catalog_from_the_run_directories(tmp_path, capsys):
    results = tmp_path / "results"
    dirs = _fake(results, 3)
    (results / CATALOG).unlink()
    r = iowatt(capsys, "runs", "--results", results, "--rebuild")
    assert r.code == 0 and "3 runs" in r.out
    con = duckdb.connect(str(results / CATALOG), read_only=True)
    assert sorted(r for (r,) in con.execute("SELECT run_id FROM runs").fetchall()) == [
        d.name for d in dirs
    ]
    rows = sum(pq.read_metadata(d / "latency.parquet").num_rows for d in dirs)
    assert con.execute("SELECT count(*) FROM latency").fetchone() == (rows,)
    con.close()


def test_check_removes_a_killed_runs_temporary_directory_and_its_test_data(tmp_path, capsys):
    results, target = tmp_path / "results", tmp_path / "target"
    target.mkdir()
    writer = RunWriter(results, "20261125-000002-bench-dead")
    work = writer.creates(target / "iowatt-20261125-000002-bench-dead")
    (work / "largefile1").write_bytes(b"x" * 4096)
    foreign = target / "iowatt-not-ours"
    foreign.mkdir()
    (foreign / "data").write_text("someone else's")
    (writer.tmp / OWNER).write_text(
        json.dumps({"run_id": writer.run_id, "creates": [str(work), str(foreign)]})
    )
    writer.release()  # as if its process had been killed
    r = iowatt(capsys, "runs", "--results", results, "--check")
    assert r.code == 0, r
    assert not writer.tmp.exists() and not work.exists()
    assert foreign.exists()  # named by the record, but not marked as the run's: kept
    assert f"kept         {foreign}" in r.out


def test_check_leaves_a_running_run_alone(tmp_path, capsys):
    results, target = tmp_path / "results", tmp_path / "target"
    target.mkdir()
    writer = RunWriter(results, "20261125-000003-bench-live")
    work = writer.creates(target / "iowatt-live")
    r = iowatt(capsys, "runs", "--results", results, "--check")
    assert r.code == 0
    assert writer.tmp.exists() and work.exists()
    assert "in-progress" in r.out
    writer.abandon()
    assert not writer.tmp.exists()


def test_check_commits_a_run_written_in_full_but_not_renamed(tmp_path, capsys):
    results = tmp_path / "results"
    source = _fake(tmp_path / "elsewhere", 1)[0]
    writer = RunWriter(results, source.name)
    for f in source.iterdir():
        (writer.tmp / f.name).write_bytes(f.read_bytes())
    (writer.tmp / OWNER).unlink()
    writer.release()
    r = iowatt(capsys, "runs", "--results", results, "--check")
    assert r.code == 0
    assert f"committed    {source.name}" in r.out
    assert _listed(capsys, results) == [source.name]


def test_a_killed_catalog_writers_half_built_file_is_removed(tmp_path, capsys):
    results = tmp_path / "results"
    _fake(results, 1)
    half = results / ".catalog-deadbeef.duckdb"
    half.write_bytes(b"half")
    _commit_only(results, "20261125-000004-bench-x")
    assert len(_listed(capsys, results)) == 2
    assert not half.exists()


def test_the_writer_lock_is_not_a_file_readers_open(tmp_path, capsys):
    results = tmp_path / "results"
    _fake(results, 1)
    _listed(capsys, results)
    assert (results / WRITER_LOCK).exists()
    assert not (results / f"{CATALOG}.wal").exists()


def test_a_results_path_that_is_a_file_is_one_error(tmp_path, capsys):
    results = tmp_path / "results"
    results.write_text("not a directory")
    r = iowatt(capsys, "bench", "randomread", *TINY, "--target", tmp_path, "--results", results)
    assert_user_error(r, f"`{results}` is not a directory")
    r = iowatt(capsys, "runs", "--results", results)
    assert_user_error(r, f"`{results}`")


@pytest.mark.needs_root
def test_a_bench_refuses_a_full_results_directory_before_measuring(tmp_path, capsys, mounts):
    results, target = tmp_path / "results", tmp_path / "target"
    results.mkdir()
    target.mkdir()
    mounts.mount("-t", "tmpfs", "-o", "size=4m", "tmpfs", target=results)
    r = iowatt(capsys, "bench", "randomread", *TINY, "--target", target, "--results", results)
    assert_user_error(r, f"`{results}` has 4 MiB free")
    assert list(results.iterdir()) == [] and list(target.iterdir()) == []


@pytest.mark.needs_root
def test_a_read_only_results_directory_is_refused_up_front_and_still_listed(
    tmp_path, capsys, mounts
):
    results, target = tmp_path / "results", tmp_path / "target"
    target.mkdir()
    _fake(results, 2)
    _commit_only(results, "20261125-000007-bench-unindexed")
    mounts.mount("--bind", results, target=results)
    mounts.mount("-o", "remount,bind,ro", results, target=results)
    r = iowatt(capsys, "bench", "randomread", *TINY, "--target", target, "--results", results)
    assert_user_error(r, "Read-only file system", f"`{results}`")
    assert list(target.iterdir()) == []
    r = iowatt(capsys, "runs", "--results", results, "--json")
    assert r.code == 0 and len(r.out.splitlines()) == 3
    assert "read-only" in r.err


@pytest.mark.needs_root
def test_a_results_disk_that_fills_during_the_run_loses_nothing(
    tmp_path, capsys, mounts, monkeypatch
):
    """The run's files go to the rescue directory it names; moved back, the run is indexed."""
    results, target, rescue = tmp_path / "results", tmp_path / "target", tmp_path / "rescue"
    results.mkdir()
    target.mkdir()
    mounts.mount("-t", "tmpfs", "-o", "size=20m", "tmpfs", target=results)
    monkeypatch.setenv("IOWATT_RESCUE_DIR", str(rescue))
    filler = results / "filler"

    from iowatt.bench import plan, run
    from iowatt.bench.config import Options, SilentReporter
    from iowatt.errors import StoreError

    class Filling(SilentReporter):
        def workload_started(self, wl):  # the disk fills while the run measures
            with open(filler, "wb", buffering=0) as f:
                while True:
                    try:
                        f.write(b"\0" * 2**20)
                    except OSError:
                        break

    opts = Options(runtime="0.2s", filesize="1m")
    config = plan("randomread", opts, target=target, results=results, report=False)
    with pytest.raises(StoreError) as caught:
        run(config, Filling())
    message = str(caught.value)
    assert "No space left on device" in message and str(rescue) in message
    [saved] = list(rescue.iterdir())
    assert json.loads((saved / "summary.json").read_text())["workloads"]["randomread"]["ops"] > 0
    assert [p.name for p in results.iterdir() if p.name.startswith(".tmp")] == []
    assert list(target.iterdir()) == []
    filler.unlink()
    shutil.move(saved, results / saved.name)  # as the hint says: mv
    assert _listed(capsys, results) == [saved.name]


def test_the_marker_names_the_run(tmp_path):
    writer = RunWriter(tmp_path / "results", "20261125-000005-bench-m")
    work = writer.creates(tmp_path / "work")
    assert (work / MARKER).read_text() == writer.run_id
    assert json.loads((writer.tmp / OWNER).read_text())["creates"] == [str(work)]
    writer.abandon()


def test_the_catalog_needs_no_write_access_to_the_catalog_file(tmp_path):
    """A writer never opens catalog.duckdb for writing: it renames a new file over it."""
    results = tmp_path / "results"
    _fake(results, 1)
    before = os.stat(results / CATALOG).st_ino
    _commit_only(results, "20261125-000006-bench-y")
    refresh(results)
    assert os.stat(results / CATALOG).st_ino != before


@pytest.mark.parametrize(
    ("name", "content"),
    [("manifest.json", b'{"run_id": '), ("summary.json", b"[]"), ("latency.parquet", b"junk")],
)
def test_a_report_of_a_damaged_run_names_the_run_and_the_file(tmp_path, capsys, name, content):
    results = tmp_path / "results"
    dirs = _fake(results, 2)
    (dirs[0] / name).write_bytes(content)
    r = iowatt(capsys, "report", str(dirs[0]), "-o", tmp_path / "r.html")
    assert_user_error(r, f"run `{dirs[0].name}`", name)
    r = iowatt(capsys, "report", str(dirs[1]), "-o", tmp_path / "r.html")
    assert r.code == 0, r.err  # the other runs keep working


@pytest.mark.parametrize(
    ("verb", "option"),
    [("report", "-o"), ("compare", "--output"), ("age", "--manifest")],
)
@pytest.mark.parametrize("where", ["missing", "directory"])
def test_an_output_path_that_cannot_be_written_is_refused_first(
    tmp_path, capsys, verb, option, where
):
    results = tmp_path / "results"
    _fake(results, 2)
    out = tmp_path / "no" / "such" / "out" if where == "missing" else tmp_path
    args = {
        "report": ("latest", "--results", results),
        "compare": ("--results", results, "--by", "env"),
        "age": (tmp_path / "fs", "--fill", "1%"),
    }[verb]
    r = iowatt(capsys, verb, *args, option, out)
    assert_user_error(
        r, f"{option} `{out}`", "does not exist" if where == "missing" else "is a directory"
    )
    assert not (tmp_path / "fs").exists()
