"""``iowatt bench``, ``runs`` and ``report`` end to end on real files."""

from __future__ import annotations

import duckdb
import pyarrow.parquet as pq
import pytest

from support.cli import iowatt, manifest, runs_in, summary

SHORT = ("--runtime", "1s", "--filesize", "16m", "--quiet")


@pytest.mark.slow
def test_the_fileio_suite_fills_the_catalog_and_writes_a_report(tmp_path, capsys):
    results, target = tmp_path / "results", tmp_path / "target"
    target.mkdir()
    r = iowatt(capsys, "bench", "--suite", "fileio", "--nthreads", "2", *SHORT,
               "--target", target, "--results", results, "--label", "env=lab")  # fmt: skip
    assert r.code == 0, r.err
    (run_dir,) = runs_in(results)
    assert manifest(run_dir)["status"] == "complete"
    with duckdb.connect(str(results / "catalog.duckdb"), read_only=True) as con:
        names = {row[0] for row in con.execute("SELECT workload FROM workloads").fetchall()}
        assert len(names) == 10 and "singlestreamwritedirect1m" in names
        zero = con.execute("SELECT count(*) FROM workloads WHERE ops = 0").fetchone()
        assert zero == (0,), "every workload did some I/O"
        per_second = con.execute(
            "SELECT count(DISTINCT workload) FROM intervals WHERE ops > 0"
        ).fetchone()
        assert per_second == (10,)
    assert (run_dir / "report.html").stat().st_size > 10_000
    assert list(target.iterdir()) == [], "the test files were removed"


@pytest.mark.slow
def test_a_single_personality_records_everything_it_ran_with(tmp_path, capsys):
    results = tmp_path / "results"
    r = iowatt(capsys, "bench", "randomread", "--iosize", "4k", "--engine", "io_uring",
               "--iodepth", "8", "--directio", "--seed", "7", "--ramp", "200ms", *SHORT,
               "--target", tmp_path, "--results", results, "--json")  # fmt: skip
    assert r.code == 0, r.err
    (run_dir,) = runs_in(results)
    m = manifest(run_dir)
    (wl,) = m["config"]["workloads"]
    assert (wl["iosize"], wl["engine"], wl["iodepth"], wl["directio"]) == (
        4096,
        "io_uring",
        8,
        True,
    )
    assert (m["seed"], wl["ramp_s"], wl["filesize"]) == (7, 0.2, 16 << 20)
    assert m["host"]["target"]["fs_type"] and m["host"]["kernel"]
    (thread,) = wl["model"]["threads"]
    assert (thread["name"], thread["instances"]) == ("rand-thread", 1)
    assert thread["flowops"][0]["random"] and wl["model"]["files"][0]["name"] == "largefile1"
    # --json prints summary.json, whose fio section fio tooling can read.
    import json

    printed = json.loads(r.out)
    (job,) = printed["fio"]["jobs"]
    # Against what the engine stored on its own: the per-second series and the histogram.
    per_second = pq.read_table(run_dir / "intervals.parquet").column("ops").to_pylist()
    lat = pq.read_table(run_dir / "latency.parquet").to_pylist()
    in_histogram = sum(b["count"] for b in lat if b["flowop"] is None)
    assert job["read"]["total_ios"] == sum(per_second) == in_histogram > 0
    assert job["read"]["clat_ns"]["N"] == in_histogram
    assert job["read"]["iops"] == pytest.approx(
        sum(per_second) / (job["job_runtime"] / 1000), rel=1e-3
    )
    assert job["read"]["io_bytes"] == 4096 * in_histogram
    assert job["write"]["total_ios"] == 0


@pytest.mark.slow
def test_the_reported_percentiles_are_the_engines_own(tmp_path, capsys):
    results = tmp_path / "results"
    r = iowatt(capsys, "bench", "randomwrite", *SHORT, "--target", tmp_path, "--results", results)
    assert r.code == 0, r.err
    (run_dir,) = runs_in(results)
    lat = pq.read_table(run_dir / "latency.parquet").to_pandas()
    whole = lat[lat.flowop.isna()]
    reported = summary(run_dir)["workloads"]["randomwrite"]
    assert whole["count"].sum() == reported["ops"]
    # The engine computes each second's percentiles itself (Rust, from its HDR histogram); a
    # 1 s run has one second, whose figures must be the summary's, computed from the buckets.
    (second,) = pq.read_table(run_dir / "intervals.parquet").to_pylist()
    assert second["ops"] == reported["ops"]
    lat_ns = reported["latency_ns"]
    engine = (second["p50_ns"], second["p99_ns"], second["p999_ns"], second["max_ns"])
    assert engine == (lat_ns["p50"], lat_ns["p99"], lat_ns["p99.9"], lat_ns["max"])
    per_flowop = lat[lat.flowop == "rand-write1"]
    assert per_flowop["count"].sum() == reported["ops"]
    iv = pq.read_table(run_dir / "intervals.parquet").to_pandas()
    assert iv.ops.sum() == reported["ops"]
    assert (iv.ops_s * iv.duration_s).round().sum() == reported["ops"]


@pytest.mark.slow
def test_runs_lists_and_filters_by_label(tmp_path, capsys):
    results = tmp_path / "results"
    for env in ("quiet-room", "metal-rack"):
        r = iowatt(capsys, "bench", "randomread", *SHORT, "--target", tmp_path,
                   "--results", results, "--label", f"env={env}", "--no-report")  # fmt: skip
        assert r.code == 0, r.err
    r = iowatt(capsys, "runs", "--results", results, "--label", "env=metal-rack", "--json")
    assert r.code == 0
    import json

    rows = [json.loads(line) for line in r.out.splitlines()]
    assert [row["labels"] for row in rows] == [{"env": "metal-rack"}]
    r = iowatt(capsys, "runs", "--results", results)
    assert r.out.count("bench") == 2


@pytest.mark.slow
def test_report_combines_runs_into_one_file(tmp_path, capsys):
    results = tmp_path / "results"
    for _ in range(2):
        iowatt(capsys, "bench", "randomread", *SHORT, "--target", tmp_path, "--results", results,
               "--no-report")  # fmt: skip
    ids = [p.name for p in runs_in(results)]
    out = tmp_path / "both.html"
    r = iowatt(capsys, "report", *ids, "-o", out, "--results", results)
    assert r.code == 0, r.err
    html = out.read_text()
    assert all(i in html for i in ids)
    r = iowatt(capsys, "report", "nonexistent-run", "--results", results)
    assert r.code == 2 and "`nonexistent-run`" in r.err
