"""``iowatt bench --cluster``: one workload on every host at one instant, one run with each
host's rows and the merged totals; a slow host named; a host that dies named, the others kept.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from iowatt.bench.merge import done_rates, merge_results
from iowatt.bench.summary import workload_summary
from iowatt.compare.hosts import host_levels
from iowatt.errors import ConfigError
from iowatt.fleet.hosts import Targets, parse_targets, pick
from iowatt.histogram import percentile
from support.cli import assert_user_error, iowatt, runs_in

QUICK = ("--runtime", "2s", "--filesize", "8m", "--no-report")


# ---- merging, on the engine's result shape --------------------------------------------------


def _result(counts: dict[int, int], seconds: list[int], *, measured_s: float = 0.0) -> dict:
    """An engine result of one read flowop with this histogram and these ops per second."""
    values = sorted(counts)
    n = sum(counts.values())
    mean = sum(v * c for v, c in counts.items()) / n if n else 0.0
    hist = {"value_ns": values, "count": [counts[v] for v in values],
            "min_ns": values[0] if n else 0, "max_ns": values[-1] if n else 0,
            "mean_ns": mean, "stdev_ns": 0.0, "saturated": 0}  # fmt: skip
    k = len(seconds)
    return {
        "name": "rr", "status": "complete", "reason": None, "measure_start_ns": 0,
        "measured_ns": round((measured_s or k) * 1e9), "cpu_usr_ns": 1, "cpu_sys_ns": 2,
        "errors_by_kind": {}, "histogram": hist,
        "flowops": [{**hist, "name": "read1", "kind": "read", "io": True, "ops": n,
                     "bytes": 4096 * n, "errors": 0}],
        "intervals": {
            "t_ns": [i * 10**9 for i in range(k)], "duration_ns": [10**9] * k,
            "ops": seconds, "bytes": [4096 * s for s in seconds], "errors": [0] * k,
            "p50_ns": [values[0]] * k, "p99_ns": [values[-1]] * k, "p999_ns": [values[-1]] * k,
            "max_ns": [values[-1]] * k, "slow_ns": [100_000_000], "slow_ops": [[0]] * k,
        },
    }  # fmt: skip


buckets = st.dictionaries(st.sampled_from([1000, 2000, 5000, 10**6, 10**8]),
                          st.integers(1, 500), min_size=1)  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(st.lists(buckets, min_size=1, max_size=6))
def test_merged_histograms_are_the_hosts_bucket_by_bucket(hosts):
    results = [_result(c, [sum(c.values())]) for c in hosts]
    merged = merge_results(results, 0)
    total: dict[int, int] = {}
    for c in hosts:
        for v, n in c.items():
            total[v] = total.get(v, 0) + n
    h = merged["histogram"]
    assert dict(zip(h["value_ns"], h["count"], strict=True)) == total
    assert merged["flowops"][0]["ops"] == sum(sum(c.values()) for c in hosts)
    # A fleet's percentile lies between its hosts' smallest and largest.
    for p in (50, 99):
        each = [percentile(r["histogram"]["value_ns"], r["histogram"]["count"], p)
                for r in results]  # fmt: skip
        assert min(each) <= percentile(h["value_ns"], h["count"], p) <= max(each)


def test_one_host_merges_to_itself():
    r = _result({1000: 10, 5000: 2}, [6, 6])
    assert workload_summary(merge_results([r], 0)) == workload_summary(r)


def test_first_done_counts_every_host_until_the_first_finished():
    # Two hosts at 100 ops/s: one runs 2 s, the other 4 s at half the rate after 2 s.
    fast = _result({1000: 200}, [100, 100])
    slow = _result({1000: 300}, [100, 100, 50, 50])
    rates = done_rates([fast, slow])
    assert rates["first_done_s"] == 2.0 and rates["last_done_s"] == 4.0
    assert rates["first_done_ops_s"] == pytest.approx(200.0)  # (200 + 200) / 2 s
    assert rates["last_done_ops_s"] == pytest.approx(125.0)  # 500 ops / 4 s
    merged = merge_results([fast, slow], 0)
    assert merged["intervals"]["ops"] == [200, 200, 50, 50]
    assert workload_summary(merged)["ops_s"] == pytest.approx(rates["last_done_ops_s"])


def test_a_host_slower_than_the_fleet_is_named_with_its_interval():
    levels = host_levels({"a": [100, 101, 99, 100, 100], "b": [100, 99, 101, 100, 100],
                          "e": [100] * 6, "c": [50, 51, 49, 50, 50], "d": [50] * 4})  # fmt: skip
    by = {lv.host: lv for lv in levels}
    assert by["c"].verdict == "slower" and by["c"].pct == pytest.approx(-50.0)
    assert by["c"].ci_low <= by["c"].pct <= by["c"].ci_high < 0
    assert by["a"].verdict == by["b"].verdict == ""
    # Four seconds are too few to call a host slower, however far off it is.
    assert by["d"].pct == pytest.approx(-50.0) and by["d"].verdict == ""


# ---- --hosts and per-host targets -------------------------------------------------------------


WORKERS = {f"tcp://127.0.0.1:{4000 + i}": {"name": f"local-{i}"} for i in (0, 1, 2, 10)}


def test_hosts_and_targets_name_workers():
    t = parse_targets(["/data", "local-1=/dev/sdb"])
    assert t.of("local-1") == Path("/dev/sdb") and t.of("local-0") == Path("/data")
    assert list(pick(WORKERS, None, t).values()) == ["local-0", "local-1", "local-2", "local-10"]
    assert list(pick(WORKERS, ["local-2", "local-0"], Targets()).values()) == [
        "local-0",
        "local-2",
    ]
    # ssh and batch clusters number their workers: they are called by their machine.
    numbered = {"tcp://node1:4000": {"name": 0}, "tcp://node2:4000": {"name": 1}}
    assert list(pick(numbered, None, Targets()).values()) == ["node1", "node2"]


@pytest.mark.parametrize(
    ("hosts", "targets", "fragment"),
    [
        (["local-7"], [], "local-7"),
        (None, ["local-9=/x"], "local-9"),
        (["local-0"], ["local-1=/x"], "local-1"),
        (None, ["/a", "/b"], "/b"),
        (None, ["local-0=/a", "local-0=/b"], "local-0"),
    ],
)
def test_a_host_that_is_not_there_is_named(hosts, targets, fragment):
    with pytest.raises(ConfigError) as e:
        pick(WORKERS, hosts, parse_targets(targets))
    assert fragment in e.value.message and e.value.hint


def test_fleet_options_without_a_cluster_are_one_line(capsys):
    assert_user_error(iowatt(capsys, "bench", "--hosts", "local-0"), "--hosts")
    assert_user_error(iowatt(capsys, "bench", "--target", "local-0=/x"), "local-0=/x")
    r = iowatt(capsys, "bench", "--cluster", "local:2", "--power", "rapl")
    assert_user_error(r, "--power")


# ---- on a real LocalCluster -------------------------------------------------------------------


@pytest.fixture(scope="module")
def fleet3():
    from iowatt.fleet.cluster import connect
    from iowatt.fleet.spec import parse

    with connect(parse("local:3"), 1) as client:
        yield client


def _summary(run: Path) -> dict[str, Any]:
    return json.loads((run / "summary.json").read_text())


@pytest.mark.slow
def test_a_fleet_run_keeps_every_host_and_merges_them_exactly(capsys, tmp_path, fleet3):
    targets = []
    for i in range(3):
        (tmp_path / f"d{i}").mkdir()
        targets += ["--target", f"local-{i}={tmp_path / f'd{i}'}"]
    results = tmp_path / "r"
    r = iowatt(capsys, "bench", "randomread", "--buffered", "--cluster", fleet3.scheduler.address,
               *targets, *QUICK, "--results", results)  # fmt: skip
    assert r.code == 0, r.err
    (run,) = runs_in(results)
    s = _summary(run)
    assert s["status"] == "complete" and sorted(s["hosts"]) == ["local-0", "local-1", "local-2"]
    hosts = pq.read_table(run / "hosts.parquet").to_pylist()
    merged = s["workloads"]["randomread"]
    assert merged["ops"] == sum(h["ops"] for h in hosts) > 0
    assert merged["bytes"] == sum(h["bytes"] for h in hosts)
    assert {h["target"] for h in hosts} == {str(tmp_path / f"d{i}") for i in range(3)}
    # The merged histogram is the hosts' summed bucket by bucket, and its p99 the stored one.
    whole = pq.read_table(run / "latency.parquet").to_pandas()
    each = pq.read_table(run / "host_latency.parquet").to_pandas()
    top = whole[whole.flowop.isna()].set_index("value_ns")["count"]
    summed = each[each.flowop.isna()].groupby("value_ns")["count"].sum()
    assert top.sort_index().to_dict() == summed.sort_index().to_dict()
    assert merged["latency_ns"]["p99"] == percentile(top.index, top.values, 99)
    # Every host started, and each start is recorded against the first one's.
    assert all(h["start_skew_ns"] >= 0 and h["late_ns"] is not None for h in hosts)
    assert min(h["start_skew_ns"] for h in hosts) == 0
    assert merged["fleet"]["first_done_s"] <= merged["fleet"]["last_done_s"]
    # The per-host seconds add up to the merged ones, and the terminal showed each host.
    seconds = pq.read_table(run / "host_intervals.parquet").to_pandas()
    assert seconds.ops.sum() == pq.read_table(run / "intervals.parquet").to_pandas().ops.sum()
    assert all(f"local-{i}" in r.out for i in range(3)) and "first" in r.out
    # iowatt deletes what it created on every host, and nothing else.
    assert all(os.listdir(tmp_path / f"d{i}") == [] for i in range(3))
    # DuckDB users find the hosts in the catalog's views.
    from iowatt.store.catalog import catalog

    with catalog(results) as con:
        rows = con.execute("SELECT host, ops FROM hosts ORDER BY host").fetchall()
    assert rows == [(h["host"], h["ops"]) for h in sorted(hosts, key=lambda h: h["host"])]
    # compare groups a fleet's runs by host; results without a fleet run say so.
    r = iowatt(capsys, "compare", "--by", "host", "--results", results, "--format", "json")
    assert r.code == 0, r.err
    groups = {cell["host"] for cell in json.loads(r.out)["cells"]}
    assert groups == {"local-0", "local-1", "local-2"}
    plain = tmp_path / "plain"
    assert iowatt(capsys, "bench", "randomread", "--runtime", "0.2s", "--filesize", "1m",
                  "--buffered", "--no-report", "--results", plain).code == 0  # fmt: skip
    assert_user_error(iowatt(capsys, "compare", "--by", "host", "--results", plain), "fleet")


@pytest.mark.slow
def test_a_served_fleet_shows_each_host_as_its_own_series(capsys, tmp_path, fleet3):
    metrics = tmp_path / "metrics"
    metrics.mkdir()
    r = iowatt(capsys, "bench", "randomread", "--buffered", "--cluster", fleet3.scheduler.address,
               "--target", str(tmp_path), *QUICK, "--runtime", "3s", "--textfile", metrics,
               "--results", tmp_path / "r", "--no-report")  # fmt: skip
    assert r.code == 0, r.err
    served = {
        s.labels["host"]: s.value
        for family in text_string_to_metric_families((metrics / "iowatt.prom").read_text())
        for s in family.samples
        if s.name == "iowatt_io_latency_seconds_count"
    }
    # Each host's measured operations, as it last published them while running.
    assert sorted(served) == ["local-0", "local-1", "local-2"]
    assert all(n > 0 for n in served.values())


@pytest.mark.slow
def test_a_host_whose_target_fails_is_named_and_nothing_runs(capsys, tmp_path, fleet3):
    (tmp_path / "ok").mkdir()
    results = tmp_path / "r"
    r = iowatt(capsys, "bench", "randomread", "--cluster", fleet3.scheduler.address,
               "--target", str(tmp_path / "ok"), "--target", f"local-1={tmp_path / 'nope'}",
               *QUICK, "--results", results)  # fmt: skip
    assert_user_error(r, "local-1", "does not exist")
    (run,) = runs_in(results)
    assert _summary(run)["status"] == "incomplete"
    assert os.listdir(tmp_path / "ok") == []


@pytest.mark.needs_root
@pytest.mark.slow
def test_a_throttled_host_is_named_slower_than_the_fleet(capsys, tmp_path, fleet3, shm_loops,
                                                          mounts, sh):  # fmt: skip
    control = Path("/sys/fs/cgroup/blkio/blkio.throttle.read_iops_device")
    if not control.exists():
        pytest.skip("cgroup v1 blkio is not mounted")
    targets = []
    for i in range(3):
        dev = shm_loops()
        sh("mkfs.ext4", "-q", dev)
        targets += ["--target", f"local-{i}={mounts.mount(dev, target=tmp_path / f'd{i}')}"]
        if i == 2:
            rdev = os.stat(dev).st_rdev
            slow = f"{os.major(rdev)}:{os.minor(rdev)}"
    control.write_text(f"{slow} 300\n")
    try:
        r = iowatt(capsys, "bench", "randomread", "--directio", "--cluster",
                   fleet3.scheduler.address, *targets, "--runtime", "6s", "--filesize", "16m",
                   "--results", tmp_path / "r")  # fmt: skip
    finally:
        control.write_text(f"{slow} 0\n")
    assert r.code == 0, r.err
    line = next(x for x in r.out.splitlines() if x.strip().startswith("local-2"))
    assert "slower" in line
    assert not any("slower" in x for x in r.out.splitlines() if "local-0" in x or "local-1" in x)
    # The report's hosts section marks it too, and draws each host's CDF.
    (run,) = runs_in(tmp_path / "r")
    html = (run / "report.html").read_text()
    assert '<tr data-host="local-2" class="slower">' in html
    assert html.count('<tr data-host="local-') == 3 and 'data-plot="host-latency-cdf"' in html


class _Killer:
    """A reporter that kills one worker's process once the hosts have started."""

    def __init__(self, pid: int) -> None:
        self.pid = pid

    def workload_started(self, wl: Any) -> None: ...
    def update(self, wl: Any, progress: Any) -> None: ...
    def workload_finished(self, wl: Any, summary: Any) -> None: ...

    def note(self, message: str) -> None:
        if "starting together" in message:
            threading.Timer(0.8, os.kill, (self.pid, signal.SIGKILL)).start()


@pytest.mark.slow
def test_a_host_that_dies_is_named_and_the_others_are_kept(tmp_path):
    from iowatt.bench import Options, plan
    from iowatt.bench.fleet import run_fleet
    from iowatt.errors import SourceUnavailableError
    from iowatt.fleet.cluster import connect
    from iowatt.fleet.spec import parse

    config = plan("randomread", Options(runtime="3s", filesize="8m", directio=False),
                  results=tmp_path / "r", report=False)  # fmt: skip
    (tmp_path / "t").mkdir()
    with connect(parse("local:3"), 1) as client:
        pids = client.run(os.getpid)
        victim = next(a for a, w in client.scheduler_info()["workers"].items()
                      if w["name"] == "local-1")  # fmt: skip
        spec = parse(client.scheduler.address)
        with pytest.raises(SourceUnavailableError) as e:
            run_fleet(config, spec, None, Targets(tmp_path / "t"), _Killer(pids[victim]))
    assert "local-1" in e.value.message and "left the cluster" in e.value.message
    (run,) = runs_in(tmp_path / "r")
    s = _summary(run)
    assert s["status"] == "incomplete" and "local-1" in s.get("reason", "") + str(s)
    hosts = {h["host"]: h for h in pq.read_table(run / "hosts.parquet").to_pylist()}
    assert hosts["local-1"]["status"] == "failed" and hosts["local-1"]["ops"] is None
    assert hosts["local-0"]["ops"] > 0 and hosts["local-2"]["ops"] > 0
    assert s["workloads"]["randomread"]["ops"] == hosts["local-0"]["ops"] + hosts["local-2"]["ops"]


@pytest.mark.slow
def test_ctrl_c_in_the_terminal_stops_every_host_and_keeps_what_they_measured(tmp_path):
    # A terminal's Ctrl-C goes to the whole process group: Dask's worker processes too.
    (tmp_path / "t").mkdir()
    cmd = ["iowatt", "bench", "randomread", "--buffered", "--runtime", "60s", "--filesize", "8m",
           "--cluster", "local:2", "--target", str(tmp_path / "t"), "--results",
           str(tmp_path / "r"), "--no-report"]  # fmt: skip
    with subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, start_new_session=True) as p:
        assert p.stderr is not None
        lead = next(
            m for line in p.stderr if (m := re.search(r"starting together in (\d+) ms", line))
        )
        # The hosts measure from the instant announced: interrupt once it has passed.
        time.sleep(int(lead[1]) / 1000 + 0.2)
        os.killpg(p.pid, signal.SIGINT)
        err = p.stderr.read()
        assert p.wait(timeout=120) == 130, err
    assert "Traceback" not in err and "error: interrupted" in err
    (run,) = runs_in(tmp_path / "r")
    s = _summary(run)
    assert s["status"] == "incomplete"
    for host in ("local-0", "local-1"):
        mine = s["hosts"][host]["workloads"]["randomread"]
        assert mine["status"] == "cancelled" and mine["ops"] > 0
    assert os.listdir(tmp_path / "t") == []


@pytest.mark.needs_root
@pytest.mark.slow
def test_a_fleet_started_over_ssh_runs_on_each_worker(capsys, tmp_path):
    from support.sshd import sshd_cluster

    (tmp_path / "t").mkdir()
    with sshd_cluster(tmp_path / "ssh", workers=2) as cluster:
        r = iowatt(capsys, "bench", "randomread", "--buffered", "--cluster", cluster,
                   "--target", tmp_path / "t", *QUICK, "--results", tmp_path / "r")  # fmt: skip
        # A key sshd does not know: one line with sshd's reason, before anything runs.
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f",
                        str(tmp_path / "other_key")], check=True)  # fmt: skip
        other = tmp_path / "other.toml"
        other.write_text(cluster.read_text().replace(str(tmp_path / "ssh" / "client_key"),
                                                     str(tmp_path / "other_key")))  # fmt: skip
        refused = iowatt(capsys, "bench", "--cluster", other, "--results", tmp_path / "no")
    assert_user_error(refused, "other.toml", "Permission denied")
    assert not (tmp_path / "no").exists() or runs_in(tmp_path / "no") == []
    assert r.code == 0, r.err
    (run,) = runs_in(tmp_path / "r")
    hosts = pq.read_table(run / "hosts.parquet").to_pylist()
    # Two workers on one machine: called by its address, each with its port added.
    assert len(hosts) == 2 and len({h["host"] for h in hosts}) == 2
    assert all(h["status"] == "complete" and h["ops"] > 0 for h in hosts)
    assert _summary(run)["workloads"]["randomread"]["ops"] == sum(h["ops"] for h in hosts)
    assert os.listdir(tmp_path / "t") == []


class _Recorder:
    """A reporter that keeps every progress update."""

    def __init__(self) -> None:
        self.updates: list[dict[str, Any]] = []

    def workload_started(self, wl: Any) -> None: ...
    def workload_finished(self, wl: Any, summary: Any) -> None: ...
    def note(self, message: str) -> None: ...

    def update(self, wl: Any, progress: Any) -> None:
        self.updates.append(dict(progress))


@pytest.mark.slow
def test_a_fleet_bench_shows_the_hosts_progress_as_one(tmp_path, fleet3):
    from iowatt.bench import Options, plan
    from iowatt.bench.fleet import run_fleet
    from iowatt.fleet.spec import parse

    config = plan("randomread", Options(runtime="3s", filesize="8m", directio=False),
                  results=tmp_path / "r", report=False)  # fmt: skip
    (tmp_path / "t").mkdir()
    recorder = _Recorder()
    run = run_fleet(config, parse(fleet3.scheduler.address), None, Targets(tmp_path / "t"),
                    recorder)  # fmt: skip
    measuring = [u for u in recorder.updates if u["phase"] == "measuring"]
    assert measuring and measuring[-1]["ops"] > 0
    ops = [u["ops"] for u in measuring]
    assert ops == sorted(ops)  # the hosts' counts only grow
    # What the last update showed is at most what the run stored.
    assert ops[-1] <= _summary(run)["workloads"]["randomread"]["ops"]


@pytest.mark.slow
def test_a_repeated_fleet_bench_is_a_series_with_every_host_in_each_run(capsys, tmp_path, fleet3):
    r = iowatt(capsys, "bench", "randomread", "--buffered", "--cluster", fleet3.scheduler.address,
               "--runtime", "1s", "--filesize", "4m", "--repeat", "2", "--quiet",
               "--results", tmp_path / "r")  # fmt: skip
    assert r.code == 0, r.err
    runs = runs_in(tmp_path / "r")
    assert len(runs) == 2
    for run in runs:
        assert len(pq.read_table(run / "hosts.parquet")) == 3
    labels = [json.loads((run / "manifest.json").read_text())["labels"] for run in runs]
    assert (
        sorted(x["rep"] for x in labels) == ["1", "2"] and len({x["series"] for x in labels}) == 1
    )


def test_an_ssh_host_that_refuses_the_connection_is_one_line(capsys, tmp_path):
    pytest.importorskip("asyncssh")
    from support.nginx import free_port

    cluster = tmp_path / "c.toml"
    cluster.write_text(f'kind = "ssh"\nhosts = ["127.0.0.1", "127.0.0.1"]\nport = {free_port()}\n')
    r = iowatt(capsys, "bench", "--cluster", cluster, "--results", tmp_path / "r")
    assert_user_error(r, "c.toml", "Connect call failed")


@pytest.mark.slow
def test_a_filebench_workload_file_runs_on_every_host(capsys, tmp_path, fleet3):
    varmail = Path(__file__).resolve().parents[1] / "python/iowatt/workloads/varmail.f"
    (tmp_path / "t").mkdir()
    r = iowatt(capsys, "bench", varmail, "--set", "nfiles=100", "--cluster",
               fleet3.scheduler.address, "--hosts", "local-0,local-2", "--target",
               tmp_path / "t", *QUICK, "--results", tmp_path / "r")  # fmt: skip
    assert r.code == 0, r.err
    (run,) = runs_in(tmp_path / "r")
    hosts = pq.read_table(run / "hosts.parquet").to_pylist()
    assert sorted(h["host"] for h in hosts) == ["local-0", "local-2"]  # --hosts picked them
    merged = _summary(run)["workloads"]["varmail"]
    # Every flowop of the file, on both hosts, summed.
    flowops = pq.read_table(run / "host_latency.parquet").to_pandas().flowop.dropna().unique()
    assert set(merged["flowops"]) == set(flowops) and merged["ops"] == sum(h["ops"] for h in hosts)
    assert os.listdir(tmp_path / "t") == []
