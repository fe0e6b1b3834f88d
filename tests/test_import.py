"""``iowatt import``: real fio output and FileBench text become runs like iowatt's own."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow.parquet as pq
import pytest

from iowatt.bench.summary import workload_summary
from iowatt.histogram import STANDARD_PERCENTILES, percentile
from iowatt.imports import parse
from support.cli import assert_user_error, iowatt, manifest, runs_in, summary
from support.tool_output import FILEBENCH_15, FILEBENCH_149, run_fio


@pytest.fixture(scope="module")
def fio_plus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """fio json+ of a random-read job and a random read/write job, run side by side."""
    return run_fio(tmp_path_factory.mktemp("fio"), "json+", "randread", "randrw")


def _bins(lat: dict[str, Any]) -> Counter[int]:
    return Counter({int(v): n for v, n in lat["bins"].items()})


def _fio_rank(p: float, n: int) -> int:
    """The rank fio 3.33 picks: it is built with -ffast-math, so gcc evaluates
    ``(long double) p / 100.0 * n`` as ``p * (n * 0.01L)`` in x87 extended precision."""
    one_percent = np.longdouble(1) / np.longdouble(100)
    return int(np.ceil(np.longdouble(p) * (np.longdouble(n) * one_percent)))


def _at_rank(values: list[int], counts: list[int], rank: int) -> int:
    return values[int(np.searchsorted(np.cumsum(counts), rank))]


@pytest.mark.slow
def test_fio_json_plus_lands_in_the_catalog_as_fio_printed_it(fio_plus, tmp_path, capsys):
    results, before = tmp_path / "results", fio_plus.read_bytes()
    r = iowatt(capsys, "import", fio_plus, "--label", "env=x", "--results", results)
    assert r.code == 0, r.err
    (run_dir,) = runs_in(results)
    assert r.out == f"imported {fio_plus} as run {run_dir.name} (2 workloads)\n"
    assert fio_plus.read_bytes() == before
    doc = json.loads(before)
    m, s = manifest(run_dir), summary(run_dir)
    assert (m["kind"], m["status"], m["seed"]) == ("import", "complete", None)
    assert m["labels"] == {"source": "fio", "env": "x"}
    assert (m["config"]["tool_version"], m["config"]["file"]) == (doc["fio version"], str(fio_plus))
    assert m["ended_ns"] == doc["timestamp_ms"] * 1_000_000 > m["started_ns"]
    wl = {w["name"]: w for w in m["config"]["workloads"]}
    assert (wl["randread"]["personality"], wl["randread"]["iosize"], wl["randread"]["engine"]) == (
        "randread", 4096, "psync")  # fmt: skip
    assert s["fio"] == doc, "fio tooling reading summary.json sees fio's own document"
    engine_keys = workload_summary(_EMPTY_RESULT).keys()
    assert all(w.keys() == engine_keys for w in s["workloads"].values())

    job = next(j for j in doc["jobs"] if j["jobname"] == "randread")
    clat = job["read"]["clat_ns"]
    with duckdb.connect(str(results / "catalog.duckdb"), read_only=True) as con:
        row = con.execute(
            "SELECT ops, ops_s, p50_ns, p99_ns, max_ns, nthreads, iodepth, directio"
            " FROM workloads WHERE workload = 'randread'"
        ).fetchone()
    assert row == (job["read"]["total_ios"], job["read"]["iops"], clat["percentile"]["50.000000"],
                   clat["percentile"]["99.000000"], clat["max"], 1, 1, False)  # fmt: skip
    lat = s["workloads"]["randread"]["latency_ns"]
    for p in ("50", "99", "99.9"):
        assert lat[f"p{p}"] == clat["percentile"][f"{float(p):.6f}"]

    table = pq.read_table(run_dir / "latency.parquet").to_pylist()
    merged = [(b["value_ns"], b["count"]) for b in table
              if b["workload"] == "randread" and b["flowop"] is None]  # fmt: skip
    values, counts = [v for v, _ in merged], [c for _, c in merged]
    assert sum(counts) == job["read"]["total_ios"] == clat["N"]
    assert Counter(dict(merged)) == _bins(clat)
    for key, printed in clat["percentile"].items():
        p, n = float(key), clat["N"]
        assert _at_rank(values, counts, _fio_rank(p, n)) == printed
        if _fio_rank(p, n) == math.ceil(p / 100 * n):
            assert percentile(values, counts, p) == printed

    listed = iowatt(capsys, "runs", "--label", "env=x", "--results", results, "--json")
    assert [json.loads(line)["run_id"] for line in listed.out.splitlines()] == [run_dir.name]
    other = iowatt(capsys, "runs", "--label", "env=y", "--results", results, "--json")
    assert other.out == ""


def test_a_read_write_job_is_one_workload_with_a_flowop_per_direction(fio_plus, tmp_path, capsys):
    results = tmp_path / "results"
    r = iowatt(capsys, "import", fio_plus, "--results", results, "--json")
    assert r.code == 0, r.err
    (printed,) = [json.loads(line) for line in r.out.splitlines()]
    assert printed["workloads"] == ["randread", "randrw"] and printed["source"] == "fio"
    job = next(j for j in json.loads(fio_plus.read_text())["jobs"] if j["jobname"] == "randrw")
    w = summary(Path(printed["path"]))["workloads"]["randrw"]
    assert w["ops_s"] == job["read"]["iops"] + job["write"]["iops"]
    assert w["ops"] == job["read"]["total_ios"] + job["write"]["total_ios"]
    assert w["flowops"]["write"]["p99_ns"] == job["write"]["clat_ns"]["percentile"]["99.000000"]
    merged = _bins(job["read"]["clat_ns"]) + _bins(job["write"]["clat_ns"])
    values = sorted(merged)
    for p in STANDARD_PERCENTILES:
        assert w["latency_ns"][f"p{p:g}"] == percentile(values, [merged[v] for v in values], p)
    assert w["latency_ns"]["max"] == max(job[d]["clat_ns"]["max"] for d in ("read", "write"))
    rows = pq.read_table(Path(printed["path"]) / "latency.parquet").to_pylist()
    assert {r["flowop"] for r in rows if r["workload"] == "randrw"} == {None, "read", "write"}


def test_repeated_job_names_stay_apart(fio_plus, tmp_path, capsys):
    doc = json.loads(fio_plus.read_text())
    job = next(j for j in doc["jobs"] if j["jobname"] == "randread")
    clone = {**job, "job options": {**job["job options"], "numjobs": "2"}}
    doc["jobs"] = [clone, clone, {**job, "groupid": 1}, {**job, "jobname": "x", "groupid": 2}]
    two = tmp_path / "clones.json"
    two.write_text(json.dumps(doc))
    parsed = parse(two)
    assert list(parsed.summaries) == ["randread.g0.0", "randread.g0.1", "randread.g1", "x"]
    assert [w["nthreads"] for w in parsed.workloads] == [1, 1, 1, 1]
    r = iowatt(capsys, "import", two, "--workload", "w", "--results", tmp_path / "results")
    assert_user_error(r, f"--workload names one workload but `{two}` has 4 fio jobs")


@pytest.mark.slow
def test_plain_fio_json_keeps_the_printed_percentiles_and_writes_no_buckets(tmp_path, capsys):
    out = run_fio(tmp_path, "json", "randread")
    r = iowatt(capsys, "import", out, "--workload", "rr4k", "--results", tmp_path / "results")
    assert r.code == 0, r.err
    (run_dir,) = runs_in(tmp_path / "results")
    assert not (run_dir / "latency.parquet").exists()
    clat = json.loads(out.read_text())["jobs"][0]["read"]["clat_ns"]
    lat = summary(run_dir)["workloads"]["rr4k"]["latency_ns"]
    assert (lat["p99.99"], lat["min"], lat["mean"]) == (
        clat["percentile"]["99.990000"], clat["min"], clat["mean"])  # fmt: skip


def test_fio_picks_its_percentile_bucket_by_its_own_float_rule(tmp_path):
    """Evidence for docs/import.md: with 2000 I/Os, p99.95 is rank 1999 exactly, but fio's
    x87 threshold lands just above it, so fio prints the 2000th I/O's bucket."""
    out = run_fio(tmp_path, "json+", "randread", extra=("--number_ios=2000",))
    clat = json.loads(out.read_text())["jobs"][0]["read"]["clat_ns"]
    values = sorted(int(v) for v in clat["bins"])
    counts = [clat["bins"][str(v)] for v in values]
    assert (clat["N"], _fio_rank(99.95, 2000), math.ceil(99.95 / 100 * 2000)) == (2000, 2000, 1999)
    assert clat["percentile"]["99.950000"] == values[-1] == _at_rank(values, counts, 2000)
    assert percentile(values, counts, 99.95) == _at_rank(values, counts, 1999)


def test_filebench_output_becomes_one_workload_with_its_flowops(tmp_path, capsys):
    text = tmp_path / "rw-run1.txt"
    text.write_text(FILEBENCH_15)
    results = tmp_path / "results"
    r = iowatt(capsys, "import", text, "--workload", "randomrw8k", "--results", results,
               "--label", "source=lab-archive")  # fmt: skip
    assert r.code == 0, r.err
    (run_dir,) = runs_in(results)
    m, w = manifest(run_dir), summary(run_dir)["workloads"]["randomrw8k"]
    assert m["labels"] == {"source": "lab-archive"} and m["config"]["source"] == "filebench"
    assert m["config"]["tool_version"] == "filebench-1.5-alpha3"
    assert m["config"]["workloads"][0]["personality"] == "randomrw"
    assert (w["ops"], w["ops_s"], w["mib_s"], w["bytes"]) == (1560814, 26010.899, 203.2, None)
    assert w["runtime_s"] == pytest.approx(60.006, abs=1e-3)
    assert w["latency_ns"] == {"min": 2000, "mean": 74000.0, "stdev": None, "p50": None,
                               "p90": None, "p95": None, "p99": None, "p99.9": None,
                               "p99.99": None, "max": 51220000}  # fmt: skip
    assert list(w["flowops"]) == ["rand-write1", "rand-read1"], "the short line is skipped"
    write = w["flowops"]["rand-write1"]
    assert (write["ops"], write["mib_s"], write["mean_ns"], write["min_ns"], write["max_ns"]) == (
        389512, 50.7, 150000.0, 5000, 51220000)  # fmt: skip
    assert round(write["ops_s"]) == 6491 and write["p99_ns"] is None
    assert w.keys() == workload_summary(_EMPTY_RESULT).keys()
    assert not (run_dir / "latency.parquet").exists()
    with duckdb.connect(str(results / "catalog.duckdb"), read_only=True) as con:
        row = con.execute("SELECT ops_s, p99_ns, max_ns FROM workloads").fetchone()
    assert row == (26010.899, None, 51220000)


def test_filebench_1_4_9_output_is_read_too(tmp_path, capsys):
    text = tmp_path / "old.out"
    text.write_text(FILEBENCH_149)
    r = iowatt(capsys, "import", text, "--format", "filebench", "--results", tmp_path / "r")
    assert r.code == 0, r.err
    (run_dir,) = runs_in(tmp_path / "r")
    w = summary(run_dir)["workloads"]["old"]
    assert (w["ops"], w["ops_s"], w["cpu"]["us_per_op"]) == (1413226, 23553.491, 43.0)
    assert (w["latency_ns"]["min"], w["latency_ns"]["max"]) == (0, 8_000_000)


FIO_LIKE = {"fio version": "fio-3.33", "timestamp_ms": 1_700_000_000_000}


@pytest.mark.parametrize(
    ("name", "content", "args", "named"),
    [
        ("x.json", "{\n  \"jobs\": [\n    {oops}\n  ]\n}\n", ("--format", "fio"),
         "`{f}` is not valid JSON: Expecting property name enclosed in double quotes at line 3"),
        ("x.json", json.dumps({"workloads": {}}), ("--format", "fio"),
         "`{f}` is not fio JSON output: no `jobs` list"),
        ("x.json", json.dumps({**FIO_LIKE, "jobs": [{"jobname": "a", "groupid": 0}]}), (),
         "job `a` in `{f}` has no read or write section"),
        ("notes.txt", "nothing to see\n", (), "`{f}` is neither fio JSON output nor FileBench"),
        ("notes.txt", "nothing to see\n", ("--format", "filebench"),
         "`{f}` is not FileBench output: no `IO Summary:` line"),
    ],
)  # fmt: skip
def test_input_that_is_not_what_it_claims_is_named(tmp_path, capsys, name, content, args, named):
    bad = tmp_path / name
    bad.write_text(content)
    r = iowatt(capsys, "import", bad, *args, "--results", tmp_path / "results")
    assert_user_error(r, named.format(f=bad))
    assert not (tmp_path / "results").exists()


def test_a_missing_file_is_named(tmp_path, capsys):
    r = iowatt(capsys, "import", tmp_path / "nope.json", "--results", tmp_path / "results")
    assert_user_error(r, f"no file `{tmp_path / 'nope.json'}`")


def test_one_bad_file_among_good_ones_imports_nothing(tmp_path, capsys):
    good, bad = tmp_path / "good.txt", tmp_path / "bad.json"
    good.write_text(FILEBENCH_15)
    bad.write_text('{"jobs": [')
    results = tmp_path / "results"
    r = iowatt(capsys, "import", good, bad, good, "--results", results)
    assert_user_error(r, f"`{bad}` is not valid JSON", "line 1, column 11")
    assert runs_in(results) == [] and not (results / "catalog.duckdb").exists()


_EMPTY_RESULT: dict[str, Any] = {
    "status": "complete", "reason": None, "measured_ns": 1, "flowops": [], "cpu_usr_ns": 0,
    "cpu_sys_ns": 0, "errors_by_kind": {},
    "histogram": {"value_ns": [], "count": [], "min_ns": 0, "max_ns": 0, "mean_ns": 0.0,
                  "stdev_ns": 0.0, "saturated": False},
}  # fmt: skip
