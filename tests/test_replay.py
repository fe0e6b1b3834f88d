"""Replaying web traces against a real nginx on loopback: a generated log requesting the files
of a tree that `iowatt tree recreate` made from its snapshot, logstalgia's real log, a slow
location, Ctrl-C, power beside the replay, the report and bad input."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest
from prometheus_client.parser import text_string_to_metric_families

from iowatt.live.board import labels_of
from iowatt.live.feed import parse, stored
from support.cli import assert_user_error, iowatt, manifest, runs_in, summary
from support.nginx import access_lines, free_port, nginx
from support.wait import stderr_lines, wait_for

LOGSTALGIA = Path("/usr/share/logstalgia/example.log")
# A served replay's histograms and the requests.parquet column each counts.
COLUMN_OF_METRIC = {
    "iowatt_io_latency_seconds": "completion_ns",
    "iowatt_io_ttfb_seconds": "ttfb_ns",
    "iowatt_io_service_time_seconds": "completion_sent_ns",
}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A small real tree, its hashed snapshot, ten minutes of generated traffic for it (200s
    and 404s only) and the tree recreated from the snapshot, as the README's demo makes them."""
    base = tmp_path_factory.mktemp("site")
    src = base / "src"
    for d in range(4):
        (src / f"dir{d}").mkdir(parents=True)
        for f in range(6):
            (src / f"dir{d}" / f"page{f}.html").write_bytes(b"x" * (100 + 997 * d * f))
    key = base / "tree.key"
    key.write_bytes(bytes(range(32)))
    manifest_path, log, www = base / "tree.parquet", base / "access.log", base / "www"
    run = [sys.executable, "-c", "from iowatt.cli import main; main()"]
    for args in (
        ["tree", "snapshot", src, "--key-file", key, "-o", manifest_path, "-q"],
        ["trace", "generate", "-o", log, "--tree", manifest_path, "--duration", "10m",
         "--rate", "3", "--slow-share", "0", "--not-modified", "0", "--seed", "7", "-q"],
        ["tree", "recreate", manifest_path, www, "-q"],
    ):  # fmt: skip
        subprocess.run([*run, *map(str, args)], check=True)
    return {"log": log, "www": www, "base": base}


def _requests(run: Path) -> list[dict]:
    return pq.read_table(run / "requests.parquet").to_pylist()


def test_a_generated_log_replayed_against_nginx_serving_its_recreated_tree(capsys, tmp_path, site):
    results = tmp_path / "results"
    with nginx(site["www"], tmp_path / "nginx") as url:
        r = iowatt(capsys, "replay", site["log"], "--target", url, "--speedup", "300",
                   "--results", results, "--no-report", "-q")  # fmt: skip
        served = access_lines(tmp_path / "nginx")
    assert r.code == 0, r.err
    (run,) = runs_in(results)
    rows = _requests(run)
    assert len(rows) == len(site["log"].read_text().splitlines()) == len(served)
    # Every file the log requested exists in the recreated tree at its size; every 404 of the
    # log is a 404 again.
    for row in rows:
        assert row["status"] == row["log_status"], row
        if row["status"] == 200 and row["method"] == "GET":
            assert row["bytes"] == row["log_bytes"], row
        assert row["sent_ns"] >= row["due_ns"], "sent before it was due"
        assert row["ttfb_ns"] >= row["ttfb_sent_ns"] and row["completion_ns"] >= row["ttfb_ns"]
    s = summary(run)["replay"]
    assert s["success_rate"] == s["log_success_rate"] < 1.0
    assert s["measured"] == len(rows) and s["failed"] == 0
    offsets = [row["offset_ns"] for row in rows]
    assert [row["due_ns"] for row in rows] == [o // 300 for o in offsets]
    # Little's law over the whole run: the mean open per second adds up to the time requests
    # spent in flight.
    intervals = pq.read_table(run / "intervals.parquet")
    in_flight_s = sum(row["done_ns"] - row["sent_ns"] for row in rows) / 1e9
    assert sum(intervals["open"].to_pylist()) == pytest.approx(in_flight_s, rel=1e-6)
    assert sum(intervals["intended"].to_pylist()) == sum(intervals["sent"].to_pylist()) == len(rows)
    assert manifest(run)["kind"] == "replay" and manifest(run)["status"] == "complete"
    with duckdb.connect(str(results / "catalog.duckdb"), read_only=True) as con:
        (kind,) = con.execute("SELECT kind FROM runs").fetchone()
        (n,) = con.execute("SELECT count(*) FROM requests WHERE success").fetchone()
        (due,) = con.execute("SELECT sum(intended) FROM intervals").fetchone()
    assert (kind, n, due) == ("replay", sum(row["success"] for row in rows), len(rows))


def test_warmup_and_cooldown_are_cut_by_log_time(capsys, tmp_path, site):
    results = tmp_path / "results"
    with nginx(site["www"], tmp_path / "nginx") as url:
        r = iowatt(capsys, "replay", site["log"], "--target", url, "--speedup", "300",
                   "--warmup", "2m", "--cooldown", "3m", "--spread", "even",
                   "--results", results, "--no-report", "-q")  # fmt: skip
    assert r.code == 0, r.err
    (run,) = runs_in(results)
    rows = _requests(run)
    span_ns = (rows[-1]["offset_ns"] // 10**9 + 1) * 10**9
    for row in rows:
        expected = ("warmup" if row["offset_ns"] < 120 * 10**9
                    else "cooldown" if row["offset_ns"] >= span_ns - 180 * 10**9
                    else "measured")  # fmt: skip
        assert row["phase"] == expected
    measured = sum(row["phase"] == "measured" for row in rows)
    s = summary(run)
    assert s["replay"]["measured"] == measured == s["workloads"]["replay"]["ops"]
    assert manifest(run)["config"]["spread"] == "even"


def test_logstalgias_real_log_is_replayed_request_for_request(capsys, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    results = tmp_path / "results"
    with nginx(empty, tmp_path / "nginx") as url:
        r = iowatt(capsys, "replay", LOGSTALGIA, "--target", url, "--speedup", "60",
                   "--keep-alive", "--results", results, "--no-report", "-q")  # fmt: skip
        served = access_lines(tmp_path / "nginx")
    assert r.code == 0, r.err
    (run,) = runs_in(results)
    rows = _requests(run)
    assert len(rows) == len(served) == 3260
    assert all(row["status"] == 404 and row["error"] is None for row in rows)
    s = summary(run)["replay"]
    assert s["success_rate"] == 0.0 and s["status_classes"] == {"4xx": 3260}
    assert 0.9 < s["log_success_rate"] < 1.0


def test_a_slow_location_times_out_and_counts_against_success(capsys, tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.html").write_text("a")
    log = tmp_path / "access.log"
    lines = [
        f'10.0.0.{i} - - [02/Mar/2026:00:00:{i:02d} +0000] "GET /{path} HTTP/1.1" 200 1 "-" "-"'
        for i, path in enumerate(["a.html", "slow", "a.html", "slow", "a.html"])
    ]
    log.write_text("\n".join(lines) + "\n")
    results, metrics = tmp_path / "results", tmp_path / "metrics"
    metrics.mkdir()
    with nginx(root, tmp_path / "nginx", slow_s=5) as url:
        r = iowatt(capsys, "replay", log, "--target", url, "--speedup", "10",
                   "--timeout", "300ms", "--textfile", metrics, "--results", results,
                   "--no-report", "-q")  # fmt: skip
    assert r.code == 0, r.err
    (run,) = runs_in(results)
    rows = _requests(run)
    assert [row["error"] for row in rows] == [None, "timeout", None, "timeout", None]
    assert all(row["done_ns"] - row["sent_ns"] >= 300_000_000 for row in rows[1::2])
    s = summary(run)["replay"]
    assert s["errors_by_kind"] == {"timeout": 2} and s["success_rate"] == pytest.approx(3 / 5)
    # Served as they happened, by kind, as the run stores them.
    served = {
        (s.name, s.labels.get("kind")): s.value
        for family in text_string_to_metric_families((metrics / "iowatt.prom").read_text())
        for s in family.samples
        if s.name.startswith("iowatt_io_errors")
    }
    assert served == {("iowatt_io_errors_total", None): 2.0,
                      ("iowatt_io_errors_by_kind_total", "timeout"): 2.0}  # fmt: skip


def test_ctrl_c_keeps_every_completed_request_and_writes_the_run_incomplete(tmp_path, site):
    results = tmp_path / "results"
    with nginx(site["www"], tmp_path / "nginx") as url:
        proc = subprocess.Popen(
            [sys.executable, "-c", "from iowatt.cli import main; main()", "replay", site["log"],
             "--target", url, "--results", results, "--no-report", "-q"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        wait_for(lambda: len(access_lines(tmp_path / "nginx")) >= 3, proc, what="3 requests")
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        served = len(access_lines(tmp_path / "nginx"))
    assert proc.returncode == 130, err
    (run,) = runs_in(results)
    m = manifest(run)
    assert (m["status"], m["reason"]) == ("incomplete", "interrupted")
    rows = _requests(run)
    answered = [row for row in rows if row["status"] is not None]
    assert len(answered) == served >= 3
    assert rows[-1]["error"] == "not_sent"
    assert not list(results.glob(".tmp-*"))


def test_power_is_recorded_beside_the_replay_and_the_report_draws_it(capsys, tmp_path, site):
    results = tmp_path / "results"
    with nginx(site["www"], tmp_path / "nginx") as url:
        r = iowatt(capsys, "replay", site["log"], "--target", url, "--speedup", "300",
                   "--power", "cmd:command=echo 35", "--power-hz", "20",
                   "--results", results)  # fmt: skip
    assert r.code == 0, r.err
    (run,) = runs_in(results)
    e = summary(run)["power"]["workloads"]["replay"]["cmd/cmd"]
    assert e["avg_w"] == pytest.approx(35.0)
    assert e["j_per_op"] == pytest.approx(e["energy_j"] / summary(run)["replay"]["answered"])
    html = (run / "report.html").read_text()
    for plot in ("replay-ttfb", "replay-completion", f"replay-load-{run.name}"):
        assert (
            f'data-plot="{plot}"' in html and "<svg" in html.split(f'data-plot="{plot}"')[1][:300]
        )


def test_two_runs_report_their_cdfs_with_the_envelope(capsys, tmp_path, site):
    results = tmp_path / "results"
    with nginx(site["www"], tmp_path / "nginx") as url:
        for env in ("a", "b"):
            r = iowatt(capsys, "replay", site["log"], "--target", url, "--speedup", "600",
                       "--label", f"env={env}", "--results", results, "--no-report")  # fmt: skip
            assert r.code == 0, r.err
    runs = runs_in(results)
    out = tmp_path / "both.html"
    r = iowatt(capsys, "report", *runs, "-o", out)
    assert r.code == 0, r.err
    html = out.read_text()
    assert html.count('<tr data-run="') >= 2 and "min–max of the runs" in html
    # compare: each environment's figure is its run's own (one run each).
    for metric, figure in (
        ("p99_ns", lambda s: s["replay"]["ttfb_ns"]["p99"]),
        ("completion_p99_ns", lambda s: s["replay"]["completion_ns"]["p99"]),
        ("success_rate", lambda s: s["replay"]["success_rate"]),
    ):
        r = iowatt(capsys, "compare", "--by", "env", "--metric", metric, "--format", "json",
                   "--results", results)  # fmt: skip
        assert r.code == 0, r.err
        cells = {c["env"]: c for c in json.loads(r.out)["cells"] if c["workload"] == "replay"}
        for run in runs:
            env = manifest(run)["labels"]["env"]
            assert cells[env]["runs"] == [run.name]
            assert cells[env]["median"] == pytest.approx(figure(summary(run))), metric
    r = iowatt(capsys, "compare", "--by", "env", "--metric", "success_rate", "--results", results)
    assert r.code == 0 and "success rate" in r.out and "%" in r.out, r


def test_an_https_server_is_replayed_when_its_certificate_is_trusted(capsys, tmp_path, site):
    results = tmp_path / "results"
    args = ["--speedup", "600", "--results", results, "--no-report", "-q"]
    with nginx(site["www"], tmp_path / "nginx", tls=True) as url:
        cert = tmp_path / "nginx" / "cert.pem"
        trusted = iowatt(capsys, "replay", site["log"], "--target", url, "--ca-file", cert, *args)
        untrusted = iowatt(capsys, "replay", site["log"], "--target", url, *args)
        insecure = iowatt(capsys, "replay", site["log"], "--target", url, "--insecure", *args)
        served = access_lines(tmp_path / "nginx")
    assert trusted.code == untrusted.code == insecure.code == 0, (trusted, untrusted, insecure)
    configs = [manifest(run)["config"] for run in runs_in(results)]
    rows = {(c["ca_file"], c["insecure"]): _requests(run)
            for c, run in zip(configs, runs_in(results), strict=True)}  # fmt: skip
    for answered in (rows[str(cert), False], rows[None, True]):
        assert all(row["status"] == row["log_status"] for row in answered)
    # Without the CA, every handshake fails and nothing reaches nginx's log.
    assert {row["error"] for row in rows[None, False]} == {"tls"}
    assert len(served) == 2 * len(rows[None, True])


def test_the_logs_host_header_is_sent_unless_one_is_given(capsys, tmp_path, site):
    log = tmp_path / "vhost.log"
    vhosts = ["www.a.org", "b.org", "www.a.org"]
    log.write_text("".join(
        f'{v}:80 10.0.0.{i} - - [02/Mar/2026:00:00:0{i} +0000] "GET /x HTTP/1.1" 404 1 "-" "-"\n'
        for i, v in enumerate(vhosts)))  # fmt: skip
    results = tmp_path / "results"
    args = ["--format", "vhost_combined", "--speedup", "10", "--results", results, "-q"]
    with nginx(site["www"], tmp_path / "nginx") as url:
        assert iowatt(capsys, "replay", log, "--target", url, *args).code == 0
        given = iowatt(capsys, "replay", log, "--target", url, "--host-header", "c.org", *args)
        assert given.code == 0
        hosts = [line.rsplit('"', 2)[-2] for line in access_lines(tmp_path / "nginx")]
    assert hosts == [*vhosts, "c.org", "c.org", "c.org"]


def test_a_split_trace_replays_like_its_log(capsys, tmp_path, site):
    split = tmp_path / "split"
    assert iowatt(capsys, "trace", "split", site["log"], "-o", split).code == 0
    results = tmp_path / "results"
    with nginx(site["www"], tmp_path / "nginx") as url:
        r = iowatt(capsys, "replay", split, "--target", url, "--speedup", "300",
                   "--results", results, "--no-report", "-q")  # fmt: skip
    assert r.code == 0, r.err
    (run,) = runs_in(results)
    assert len(_requests(run)) == json.loads((split / "trace.json").read_text())["requests"]


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["--target", "127.0.0.1:8080"], ["--target", "127.0.0.1:8080"]),
        (["--insecure"], ["--insecure", "https"]),
        (["--target", "https://127.0.0.1:9", "--ca-file", "/nonexistent.pem"], ["--ca-file"]),
        (["--speedup", "0"], ["--speedup", "0"]),
        (["--speedup", "-8"], ["--speedup"]),
        (["--speedup", "nan"], ["--speedup", "nan"]),
        (["--max-conns", "0"], ["--max-conns", "0"]),
        (["--max-conns", "900000"], ["--max-conns", "900000", "open-files limit"]),
        (["--timeout", "0s"], ["--timeout"]),
        (["--threads", "0"], ["--threads", "0"]),
        (["--warmup", "8m", "--cooldown", "8m"], ["--warmup and --cooldown"]),
    ],
)
def test_bad_options_are_one_line_and_write_nothing(capsys, tmp_path, site, args, fragments):
    results = tmp_path / "results"
    target = ["--target", f"http://127.0.0.1:{free_port()}"]
    r = iowatt(capsys, "replay", site["log"], *target, *args, "--results", results)
    assert_user_error(r, *fragments)
    assert not results.exists() or not any(results.iterdir())


def test_a_target_refusing_connections_is_named_before_the_schedule(capsys, tmp_path, site):
    results = tmp_path / "results"
    url = f"http://127.0.0.1:{free_port()}"
    r = iowatt(capsys, "replay", site["log"], "--target", url, "--results", results)
    assert_user_error(r, url, "does not accept connections")
    assert runs_in(results) == [] and not list(results.glob(".tmp-*"))


def test_a_split_whose_counts_disagree_is_refused(capsys, tmp_path, site):
    import pyarrow as pa

    split = tmp_path / "split"
    assert iowatt(capsys, "trace", "split", site["log"], "-o", split).code == 0
    schedule = pq.read_table(split / "schedule.parquet")
    one_more = pa.array([n + 1 for n in schedule["requests"].to_pylist()], pa.int64())
    pq.write_table(schedule.set_column(2, "requests", one_more), split / "schedule.parquet")
    r = iowatt(capsys, "replay", split, "--target", "http://127.0.0.1:9", "--results", tmp_path)
    assert_user_error(r, str(split), "schedule.parquet counts")


def test_a_replay_run_is_a_trace_the_raid_simulator_serves(capsys, tmp_path, site):
    """The replayed requests, laid out as the snapshot lists the tree, serve as the RAID
    simulator's trace: the same answered GETs, no file missing from the manifest."""
    results = tmp_path / "results"
    with nginx(site["www"], tmp_path / "nginx") as url:
        r = iowatt(capsys, "replay", site["log"], "--target", url, "--speedup", "300",
                   "--results", results, "--no-report", "-q")  # fmt: skip
    assert r.code == 0, r.err
    (run,) = runs_in(results)
    answered = [q for q in _requests(run)
                if q["method"] == "GET" and 200 <= (q["log_status"] or 0) < 300
                and (q["log_bytes"] or 0) > 0]  # fmt: skip
    r = iowatt(capsys, "sim", "raid", run, "--tree", site["base"] / "tree.parquet",
               "--personalities", "raid0", "--json", "--no-report", "--results",
               tmp_path / "sim")  # fmt: skip
    assert r.code == 0, r.err
    (sim_run,) = runs_in(tmp_path / "sim")
    trace = manifest(sim_run)["config"]["trace"]
    assert trace["layout"] == "replay-run" and trace["not_in_tree"] == 0
    assert trace["requests"] == len(answered)
    # The replay and its simulation in one report: the replay's figures, then the array's.
    out = tmp_path / "both.html"
    r = iowatt(capsys, "report", run, sim_run, "-o", out)
    assert r.code == 0, r.err
    html = out.read_text()
    assert "Web trace replay" in html and "RAID simulation of the trace" in html
    assert html.index("Web trace replay") < html.index("RAID simulation of the trace")
    assert 'data-table="personalities"' in html


def test_a_served_replay_ends_with_its_requests_histograms_from_the_due_time(tmp_path):
    """Scraped at its end, a served replay's latency is its answered requests' completion from
    their due time and its second histogram their time to first byte from it: each `_count`
    and `_sum` those of requests.parquet, warm-up included and failures left out, as the
    report counts them. One connection makes the requests queue behind a timed-out one, so
    the time from the send (served under a name of its own) is far shorter."""
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.html").write_text("a")
    log = tmp_path / "access.log"
    paths = ["a.html", "a.html", "slow", "a.html", "a.html", "a.html", "a.html"]
    seconds = [0, 0, 1, 1, 1, 2, 2]
    log.write_text(
        "".join(
            f'10.0.0.{i} - - [02/Mar/2026:00:00:0{second} +0000] "GET /{path} HTTP/1.1" 200 1 '
            '"-" "-"\n'
            for i, (second, path) in enumerate(zip(seconds, paths, strict=True))
        )
    )
    results = tmp_path / "results"
    with nginx(root, tmp_path / "nginx", slow_s=1) as url:
        options = f"--target {url} --speedup 10 --max-conns 1 --timeout 300ms --warmup 1s"
        text = _scraped_at_the_end(log, *options.split(), "--results", results, "--no-report")
    (run,) = runs_in(results)
    rows = _requests(run)
    assert [row["error"] for row in rows] == [None, None, "timeout", None, None, None, None]
    assert [row["phase"] for row in rows][:2] == ["warmup", "warmup"]
    answered = [row for row in rows if row["error"] is None]
    samples = {
        (s.name, s.labels.get("le")): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.labels.get("workload") == "requests"
    }
    assert samples[("iowatt_io_operations_total", None)] == len(rows)
    assert samples[("iowatt_io_errors_total", None)] == 1
    sums = {c: sum(row[c] for row in answered) / 1e9 for c in COLUMN_OF_METRIC.values()}
    for metric, column in COLUMN_OF_METRIC.items():
        assert samples[(f"{metric}_count", None)] == len(answered), metric
        assert samples[(f"{metric}_bucket", "+Inf")] == len(answered), metric
        # The engine's histograms keep three significant digits.
        assert samples[(f"{metric}_sum", None)] == pytest.approx(sums[column], rel=1e-3), metric
    # Two requests waited behind the timed-out one for its 300 ms before they were sent.
    assert sums["completion_ns"] - sums["completion_sent_ns"] >= 0.6
    # iowatt live reads the same, from the endpoint or from the stored run.
    key = labels_of({"workload": "requests"})
    for seen in (parse(text).series[key], stored(run)[-1].series[key]):
        assert (seen.ops, seen.errors, seen.measured) == (len(rows), 1, len(answered))
        assert seen.latency_sum_s == pytest.approx(sums["completion_ns"], rel=1e-3)
        for name, column in (("ttfb", "ttfb_ns"), ("service", "completion_sent_ns")):
            assert sum(seen.beside[name].bands) == len(answered)
            assert seen.beside[name].sum_s == pytest.approx(sums[column], rel=1e-3)


def _scraped_at_the_end(trace: Path, *options: object) -> str:
    """``iowatt replay`` served on a free port, scraped while it lingers after its run; Ctrl-C
    then ends the linger."""
    command = [sys.executable, "-c", "from iowatt.cli import main; main()", "replay", trace]
    serve = ["--serve", "0", "--serve-linger", "10m", "-q"]
    proc = subprocess.Popen(
        [*map(str, [*command, *options, *serve])],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines, reader = stderr_lines(proc)
    try:
        wait_for(
            lambda: any("serving the final metrics" in ln for ln in lines),
            proc,
            what="the replay to end and linger",
        )
        (url,) = [m[1] for ln in lines if (m := re.search(r"serving metrics on (http://\S+)", ln))]
        with urllib.request.urlopen(url, timeout=10) as answer:
            text: str = answer.read().decode()
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        reader.join(timeout=10)
        assert proc.stderr is not None
        proc.stderr.close()
    assert proc.returncode == 0, "".join(lines)
    return text
