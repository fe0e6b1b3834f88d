"""`iowatt bench` on FileBench workload files: the built-in FileMacro suite, FileBench's own
files run unchanged, a hand-written file using every flowop, and what bad input gets."""

from __future__ import annotations

import json
import re
from pathlib import Path

import duckdb
import pytest

from iowatt.wml import BUILTIN, builtin_path
from support.cli import assert_user_error, iowatt, manifest, runs_in, summary

HERE = Path(__file__).parent
FILEBENCH = HERE / "wml" / "filebench"
EVERY_FLOWOP = HERE / "wml" / "every_flowop.f"
# Small enough for a one-second run on this machine's disk (nfiles must leave more absent
# entries than threads, or creates run out, in FileBench too); the suite applies each where defined.
# oltp's 200 shadows hold up to 128 files each (opennext), more than a 20,000-file hard limit.
SMALL = ("--set", "nfiles=200", "--set", "filesize=16k", "--set", "nthreads=8",
         "--set", "nshadows=20")  # fmt: skip


def _catalog_flowops(results: Path) -> dict[str, dict[str, tuple[str, bool, int]]]:
    con = duckdb.connect(str(results / "catalog.duckdb"), read_only=True)
    rows = con.execute("SELECT workload, flowop, kind, io, ops FROM flowops").fetchall()
    con.close()
    out: dict[str, dict[str, tuple[str, bool, int]]] = {}
    for workload, flowop, kind, io, ops in rows:
        out.setdefault(workload, {})[flowop] = (kind, io, ops)
    return out


@pytest.mark.slow
def test_the_filemacro_suite_runs_all_five_with_per_flowop_results_in_catalog_and_report(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    results = tmp_path / "results"
    r = iowatt(capsys, "bench", "--suite", "filemacro", "--runtime", "1s", *SMALL,
               "--target", tmp_path, "--results", results)  # fmt: skip
    assert r.code == 0, r.err
    (run,) = runs_in(results)
    s = summary(run)
    assert list(s["workloads"]) == list(BUILTIN)
    catalog = _catalog_flowops(results)
    for name, w in s["workloads"].items():
        assert w["status"] == "complete", (name, w["reason"])
        assert w["ops"] > 0 and w["ops_s"] > 0
        io_ops = sum(f["ops"] for f in w["flowops"].values() if f["io"])
        assert w["ops"] == io_ops, f"{name}: the workload counts its I/O flowops"
        # The catalog has one row per flowop, with FileBench's flowop type.
        assert {f: (x["kind"], x["io"], x["ops"]) for f, x in w["flowops"].items()} == catalog[name]
    fileserver = s["workloads"]["fileserver"]["flowops"]
    assert list(fileserver) == [
        "createfile1", "wrtfile1", "closefile1", "openfile1", "appendfilerand1", "closefile2",
        "openfile2", "readfile1", "closefile3", "deletefile1", "statfile1",
    ]  # fmt: skip
    assert all(f["ops"] > 0 for f in fileserver.values())
    oltp = s["workloads"]["oltp"]["flowops"]
    assert oltp["shadowread"]["ops"] > 0 and not oltp["shadowhog"]["io"]
    # --set reached every file that has the variable, and only those.
    for wl in manifest(run)["config"]["workloads"]:
        assert wl["variables"]["nfiles"] == "200" and wl["overrides"]["nfiles"] == "200"
        assert wl["model"]["filesets"], wl["name"]
    html = (run / "report.html").read_text()
    assert "<h2>Flowops</h2>" in html
    for name in BUILTIN:
        assert re.search(rf"{name}\s*<code>{run.name}</code> \(\d+ flowops\)</summary>", html)
    # iowatt removed every file it created, and nothing else.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results"]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["fileserver.f", "varmail.f", "webproxy.f", "webserver.f"])
def test_filebench_macro_files_run_unchanged(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str
) -> None:
    results = tmp_path / "results"
    r = iowatt(capsys, "bench", FILEBENCH / name, "--runtime", "1s", "--set", "nfiles=300",
               "--set", "nthreads=8", "--target", tmp_path, "--results", results,
               "--no-report")  # fmt: skip
    assert r.code == 0, r.err
    w = summary(runs_in(results)[0])["workloads"][name.removesuffix(".f")]
    assert w["status"] == "complete"
    for flowop, f in w["flowops"].items():
        if f["io"]:
            assert f["ops"] > 0 and f["p50_ns"] > 0, flowop


@pytest.mark.slow
def test_filebench_oltp_runs_its_semaphores_and_log_writer(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    results = tmp_path / "results"
    r = iowatt(capsys, "bench", FILEBENCH / "oltp.f", "--runtime", "2s", "--set", "nshadows=20",
               "--set", "filesize=1m", "--set", "usermode=1000",
               "--target", tmp_path, "--results", results, "--no-report")  # fmt: skip
    assert r.code == 0, r.err
    f = summary(runs_in(results)[0])["workloads"]["oltp"]["flowops"]
    reads, posts = f["shadowread"]["ops"], f["shadow-post-dbwr"]["ops"]
    assert reads > 1000
    # Each of the 10 dbwr blocks for 1000 posts: every post reaches all ten.
    assert f["dbwr-block"]["ops"] <= posts // 1000 * 10 + 10
    # 100 writes (iters=100) per pass of each dbwr, one pass per block.
    assert f["dbwrite-a"]["ops"] >= 100 * f["dbwr-block"]["ops"]


@pytest.mark.slow
def test_a_file_with_every_flowop_runs_and_reports_each_on_its_own(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    results = tmp_path / "results"
    r = iowatt(capsys, "bench", EVERY_FLOWOP, "--target", tmp_path, "--results", results,
               "--no-report", "--json")  # fmt: skip
    assert r.code == 0, r.err
    w = json.loads(r.out)["workloads"]["every_flowop"]
    assert w["status"] == "complete"
    kinds = {f["kind"] for f in w["flowops"].values()}
    every = {"createfile", "writewholefile", "appendfile", "appendfilerand", "fsync",
             "fsyncset", "openfile", "readwholefile", "closefile", "deletefile", "statfile",
             "makedir", "listdir", "removedir", "read", "write", "aiowrite", "aiowait",
             "semblock", "sempost", "hog", "eventlimit", "block", "wakeup", "delay",
             "opslimit", "iopslimit", "bwlimit", "finishoncount", "finishonbytes"}  # fmt: skip
    assert every <= kinds
    ran = {name for name, f in w["flowops"].items() if f["ops"] > 0}
    for name in ("create1", "writewhole1", "append1", "appendrand1", "fsync1", "open2",
                 "readwhole2", "fsyncset2", "delete3", "stat4", "mkdir1", "listdir1", "rmdir1",
                 "randread1", "randwrite1", "seqwrite1", "seqread1", "lg-write", "lg-block",
                 "shadowread", "shadowhog", "shadow-post", "nap", "wake", "pause"):  # fmt: skip
        assert name in ran, f"{name} never ran"
    # The event generator (1000/s) paces the churn loop through its opslimit.
    assert w["flowops"]["create1"]["ops_s"] < 1000
    # echo printed its message with the variables filled in (sizes as bytes, as FileBench).
    assert "every_flowop: 2 churn threads, I/O size 4096" in r.err


@pytest.mark.slow
def test_set_overrides_a_variable_and_the_manifest_records_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    results = tmp_path / "results"
    r = iowatt(capsys, "bench", builtin_path("webserver"), "--runtime", "1s", "--set",
               "nthreads=3", "--set", "nfiles=50", "--target", tmp_path, "--results", results,
               "--no-report")  # fmt: skip
    assert r.code == 0, r.err
    (wl,) = manifest(runs_in(results)[0])["config"]["workloads"]
    assert wl["nthreads"] == 3 and wl["variables"]["nthreads"] == "3"
    assert wl["model"]["threads"][0]["instances"] == 3
    assert wl["model"]["filesets"][0]["entries"] == 50


def _write(tmp_path: Path, text: str) -> Path:
    f = tmp_path / "bad.f"
    f.write_text(text)
    return f


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        (
            "set $dir=/tmp\ndefine fileset name=a,path=$dir,entries=10,dirwidth=5\n"
            "define process name=p {\n thread name=t {\n"
            "  flowop read name=r,filesetname=a,iosz=4k\n"
            " }\n}\nrun 1\n",
            ("bad.f:5:", "iosz"),
        ),
        (
            "set $dir=/tmp\ndefine fileset name=a,path=$dir,entries=10,dirwidth=5\n"
            "define process name=p {\n thread name=t {\n  flowop frobnicate name=r,filesetname=a\n"
            " }\n}\n",
            ("bad.f:5:", "frobnicate"),
        ),
        ("set $dir=/tmp\nset $n 16k\nrun 1\n", ("bad.f:2:",)),
        ("set $dir=/tmp\nenable multi master=a,client=b\n", ("bad.f:2:", "enable multi")),
    ],
)
def test_a_malformed_file_names_its_line_and_runs_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str, fragments: tuple[str, ...]
) -> None:
    results = tmp_path / "results"
    r = iowatt(capsys, "bench", _write(tmp_path, text), "--target", tmp_path,
               "--results", results)  # fmt: skip
    assert_user_error(r, *fragments)
    assert not results.exists() or not runs_in(results)


def test_a_missing_file_and_an_unknown_variable_are_user_errors(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    r = iowatt(capsys, "bench", tmp_path / "nope.f", "--target", tmp_path)
    assert_user_error(r, "nope.f", "does not exist")
    r = iowatt(capsys, "bench", builtin_path("varmail"), "--set", "nfile=10", "--target", tmp_path)
    assert_user_error(r, "nfile")
    r = iowatt(capsys, "bench", "randomread", "--set", "nfiles=10", "--target", tmp_path)
    assert_user_error(r, "--set")


def test_filesets_larger_than_the_free_space_are_refused_before_anything_is_created(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, mounts: object
) -> None:
    small = tmp_path / "small"
    small.mkdir()
    mounts.mount("-t", "tmpfs", "-o", "size=8m", "tmpfs", target=small)  # type: ignore[attr-defined]
    results = tmp_path / "results"
    r = iowatt(capsys, "bench", builtin_path("fileserver"), "--runtime", "1s",
               "--target", small, "--results", results)  # fmt: skip
    # fileserver.f defines bigfileset on its line 14: 10,000 files of 128 KiB mean, 80 % made.
    line = next(i for i, text in enumerate(builtin_path("fileserver").read_text().splitlines(), 1)
                if text.startswith("define fileset"))  # fmt: skip
    assert_user_error(r, f"fileserver.f:{line}:", "bigfileset", "available")
    assert list(small.iterdir()) == []


@pytest.mark.slow
def test_the_fio_section_puts_a_mixed_workloads_reads_and_writes_apart(capsys, tmp_path):
    target, results = tmp_path / "t", tmp_path / "r"
    target.mkdir()
    r = iowatt(capsys, "bench", builtin_path("varmail"), "--runtime", "1s", "--set",
               "nfiles=200", "--target", target, "--results", results, "--quiet",
               "--no-report")  # fmt: skip
    assert r.code == 0, r.err
    s = summary(runs_in(results)[0])
    flowops = s["workloads"]["varmail"]["flowops"].values()
    (job,) = s["fio"]["jobs"]
    for direction, kinds in (("read", {"readwholefile"}), ("write", {"appendfilerand"})):
        ops = sum(f["ops"] for f in flowops if f["kind"] in kinds)
        assert ops > 0 and job[direction]["total_ios"] == ops, direction
        assert job[direction]["io_bytes"] == sum(f["bytes"] for f in flowops if f["kind"] in kinds)
        assert job[direction]["clat_ns"]["N"] == ops
    # Opens, closes, creates, deletes and fsyncs are neither.
    io = s["workloads"]["varmail"]["ops"]
    assert job["read"]["total_ios"] + job["write"]["total_ios"] < io
