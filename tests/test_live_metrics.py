"""Live metrics (``--serve``, ``--serve-linger``, ``--textfile``): what a scrape says — the
latency histogram in the report's heatmap bands, counters that only grow, energy from watts
and from RAPL-like counters — against a board filled by hand and against a real engine; bad
input refused before anything runs; and a failing scrape never stopping the run."""

from __future__ import annotations

import itertools
import json
import math
import re
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from iowatt._engine import WorkloadRun
from iowatt.bench import Options, plan
from iowatt.histogram import HEAT_EDGES_NS, heat_bands
from iowatt.live.board import Board, Counts
from iowatt.live.endpoint import Endpoint, Serve
from iowatt.live.exposition import registry_of
from support.cli import assert_user_error, iowatt, runs_in, summary
from support.wait import stderr_lines, wait_for

BANDS = len(HEAT_EDGES_NS) + 1
LE = [edge / 1e9 for edge in HEAT_EDGES_NS] + [math.inf]  # the buckets' bounds, seconds
SERVING = re.compile(r"serving metrics on (http://\S+)")
# A tiny, rate-limited bench: a second of 1,000 reads/s on one thread.
TINY = ("--runtime", "1s", "--filesize", "4m", "--rate", "1000", "--nthreads", "1",
        "--no-report")  # fmt: skip

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def parse(text: str) -> Samples:
    """Every sample of an exposition, by name and labels (``le`` among them)."""
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def exposed(board: Board) -> Samples:
    return parse(generate_latest(registry_of(board)).decode())


def scrape(url: str) -> Samples:
    with urllib.request.urlopen(url, timeout=10) as answer:
        return parse(answer.read().decode())


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples[name, frozenset(labels.items())]


def buckets(samples: Samples, **labels: str) -> list[float]:
    """The latency histogram's cumulative bucket counts, lowest bound first, +Inf last."""
    found = {
        float(dict(key)["le"]): v
        for (name, key), v in samples.items()
        if name == "iowatt_io_latency_seconds_bucket"
        and {k: x for k, x in key if k != "le"} == labels
    }
    assert sorted(found) == LE, sorted(found)
    return [found[le] for le in LE]


def cumulative(bands: list[int]) -> list[float]:
    return [float(n) for n in itertools.accumulate(bands)]


def tiny_engine(tmp_path: Path, runtime: str, ramp: str = "0s") -> WorkloadRun:
    """A rate-limited random read (1,000 reads/s, one thread, a 4 MiB file) on tmp_path."""
    options = Options(runtime=runtime, ramp=ramp, filesize="4m", rate=1000, nthreads=1, seed=1)
    (wl,) = plan("randomread", options, results=tmp_path / "results").workloads
    return WorkloadRun.fileio(wl.engine_spec(tmp_path, device=False))


@pytest.fixture
def notes() -> list[str]:
    """What an endpoint told the user (its ``note`` lines)."""
    return []


@pytest.fixture
def results(tmp_path: Path) -> Path:
    return tmp_path / "results"


def nothing_written(results: Path) -> bool:
    return runs_in(results) == [] and list(results.glob("*")) == []


# --- the exposition ---------------------------------------------------------------------------


def test_latency_buckets_are_cumulative_over_the_heatmap_bands_in_seconds() -> None:
    board = Board()
    bands = [0] * BANDS
    bands[0], bands[5], bands[12], bands[-1] = 3, 40, 7, 2  # ≤ 1 µs, … , above 100 s
    board.add(Counts(52, 52 * 4096, 1, bands, latency_sum_s=250.5), workload="randomread")
    s = exposed(board)
    got = buckets(s, workload="randomread")
    assert got == cumulative(bands)
    assert got == sorted(got), "cumulative"
    assert got[-1] == value(s, "iowatt_io_latency_seconds_count", workload="randomread") == 52
    assert value(s, "iowatt_io_latency_seconds_sum", workload="randomread") == 250.5
    # The bounds are the heatmap's edges in seconds: 1 µs … 100 s.
    assert (LE[0], LE[-2]) == (1e-6, 100.0)


def test_counters_end_in_total_and_the_run_info_carries_its_labels() -> None:
    board = Board()
    before = time.time()
    board.begin("20261126-120000-bench-abc123", "bench", {"env": "rack-a"})
    board.add(Counts(10, 40960, 2), workload="randomread")
    s = exposed(board)
    for counter, n in (("operations", 10), ("bytes", 40960), ("errors", 2)):
        assert value(s, f"iowatt_io_{counter}_total", workload="randomread") == n
    assert not any(name in {"iowatt_io_operations", "iowatt_io_bytes"} for name, _ in s)
    info = value(s, "iowatt_run_info", run_id="20261126-120000-bench-abc123", kind="bench",
                 env="rack-a")  # fmt: skip
    assert info == 1
    assert before <= value(s, "iowatt_run_start_timestamp_seconds") <= time.time()
    assert value(s, "iowatt_run_ended") == 0
    board.end()
    assert value(exposed(board), "iowatt_run_ended") == 1


def test_a_label_named_like_the_runs_info_does_not_replace_it() -> None:
    board = Board()
    board.begin("20261126-120000-bench-abc123", "bench", {"kind": "ssd"})
    (info,) = [dict(k) for name, k in exposed(board) if name == "iowatt_run_info"]
    assert info["kind"] == "bench"


POWER = {"source": "meter", "channel": "server", "unit": "W"}
RAPL = {"source": "rapl", "channel": "package-0", "unit": "J"}
FAN = {"source": "hwmon", "channel": "fan1", "unit": "RPM"}
TEMP = {"source": "hwmon", "channel": "temp1", "unit": "C"}
PWM = {"source": "hwmon", "channel": "pwm1", "unit": "ratio"}


def chunk(*readings: tuple[float, int, float]) -> dict[str, list[Any]]:
    """Samples (seconds, channel index, value) as a recording's drain gives them."""
    return {
        "mono_ns": [round(t * 1e9) for t, _, _ in readings],
        "channel": [i for _, i, _ in readings],
        "value": [v for _, _, v in readings],
    }


def test_watts_integrate_to_joules_each_held_until_the_next_sample() -> None:
    board = Board()
    board.readings([POWER], chunk((10.0, 0, 100.0), (11.0, 0, 200.0)))
    s = exposed(board)
    assert value(s, "iowatt_energy_joules_total", channel="meter/server") == 100.0
    board.readings([POWER], chunk((13.0, 0, 50.0), (13.5, 0, 80.0)))
    s = exposed(board)
    # Left rectangles: 100 W × 1 s + 200 W × 2 s + 50 W × 0.5 s.
    assert value(s, "iowatt_energy_joules_total", channel="meter/server") == 525.0
    assert value(s, "iowatt_power_watts", channel="meter/server") == 80.0


def test_an_energy_counter_counts_its_increase_and_a_wrap_adds_nothing() -> None:
    board = Board()
    board.readings([RAPL], chunk((1.0, 0, 1000.0), (2.0, 0, 1060.0), (3.0, 0, 1100.0)))
    s = exposed(board)
    assert value(s, "iowatt_energy_joules_total", channel="rapl/package-0") == 100.0
    assert value(s, "iowatt_power_watts", channel="rapl/package-0") == 40.0
    # The counter wraps at its maximum (RAPL's max_energy_range_uj): that interval is lost,
    # the next ones count from the new value.
    board.readings([RAPL], chunk((4.0, 0, 30.0), (5.0, 0, 80.0)))
    s = exposed(board)
    assert value(s, "iowatt_energy_joules_total", channel="rapl/package-0") == 150.0
    assert value(s, "iowatt_power_watts", channel="rapl/package-0") == 50.0


def test_fans_temperatures_and_a_fan_stimulus_are_gauges_in_base_units() -> None:
    board = Board()
    board.readings([FAN, TEMP, PWM], chunk((1.0, 0, 4200.0), (1.0, 1, 41.5), (2.0, 0, 4300.0),
                                          (2.0, 2, 0.6)))  # fmt: skip
    board.set_stimulus("fan", 0.6, 2, 5)
    s = exposed(board)
    assert value(s, "iowatt_fan_speed_rpm", fan="hwmon/fan1") == 4300.0
    assert value(s, "iowatt_temperature_celsius", sensor="hwmon/temp1") == 41.5
    assert value(s, "iowatt_fan_duty_ratio", fan="hwmon/pwm1") == 0.6
    assert value(s, "iowatt_stimulus_fan_duty_ratio") == 0.6
    assert (value(s, "iowatt_sweep_step"), value(s, "iowatt_sweep_steps")) == (2, 5)
    assert not any(name.startswith("iowatt_energy") for name, _ in s), "no power channel"


# --- the board --------------------------------------------------------------------------------


def test_a_series_watched_again_carries_on_so_counters_never_go_back() -> None:
    """The next sweep step or campaign run watches a new engine under the same labels."""
    board = Board()
    first = {"n": 0}
    board.watch(lambda: Counts(first["n"], first["n"] * 4096), workload="w")
    seen = []
    for n in (10, 25):
        first["n"] = n
        seen.append(value(exposed(board), "iowatt_io_operations_total", workload="w"))
    board.begin("run-2", "campaign")  # the next run: new info, same counters
    second = {"n": 0}
    board.watch(lambda: Counts(second["n"], second["n"] * 4096), workload="w")
    board.watch(lambda: Counts(1000), workload="other")
    for n in (0, 5):
        second["n"] = n
        seen.append(value(exposed(board), "iowatt_io_operations_total", workload="w"))
    assert seen == [10, 25, 25, 30]
    s = exposed(board)
    assert value(s, "iowatt_io_bytes_total", workload="w") == 30 * 4096
    assert value(s, "iowatt_io_operations_total", workload="other") == 1000
    assert value(s, "iowatt_run_info", run_id="run-2", kind="campaign") == 1


@pytest.mark.parametrize(
    ("latency_s", "le"),
    [
        (0.0, 1e-6),  # the first band holds everything up to 1 µs
        (0.0015, 0.002),
        (0.002, 0.002),  # a bound belongs to the band below it, as `le` says
        (0.0020001, 0.005),
        (150.0, math.inf),
    ],
)
def test_a_counted_task_lands_in_its_band(latency_s: float, le: float) -> None:
    board = Board()
    board.count(latency_s, 4096, workload="backup")
    board.count(latency_s, 0, failed="out-of-memory", workload="backup")
    s = exposed(board)
    got = buckets(s, workload="backup")
    assert got == [2.0 if bound >= le else 0.0 for bound in LE], got
    assert value(s, "iowatt_io_latency_seconds_sum", workload="backup") == 2 * latency_s
    assert value(s, "iowatt_io_operations_total", workload="backup") == 2
    assert value(s, "iowatt_io_errors_total", workload="backup") == 1
    assert value(s, "iowatt_io_errors_by_kind_total", workload="backup", kind="out-of-memory") == 1
    assert value(s, "iowatt_io_bytes_total", workload="backup") == 4096


# --- a real engine ----------------------------------------------------------------------------


@pytest.mark.slow
def test_a_served_engine_counts_as_it_runs_and_ends_on_its_result(tmp_path, notes):
    engine = tiny_engine(tmp_path, runtime="2s", ramp="300ms")
    board = Board()
    board.begin("20261126-120000-bench-abc123", "bench")
    board.watch_engine(engine, workload="randomread")
    endpoint = Endpoint(board, Serve(("127.0.0.1", 0)), notes.append)
    try:
        assert endpoint.url is not None
        url = endpoint.url
        engine.start()

        def ops() -> float:
            return value(scrape(url), "iowatt_io_operations_total", workload="randomread")

        wait_for(lambda: ops() > 0, what="operations to show")
        first = ops()
        wait_for(lambda: ops() > first, what="the operations to grow")
        # The latencies are merged once an interval (1 s), so the histogram comes later.
        wait_for(lambda: value(scrape(url), "iowatt_io_latency_seconds_count",
                               workload="randomread") > 0,
                 what="the first interval's latencies", timeout_s=10)  # fmt: skip
        during = scrape(url)
        assert value(during, "iowatt_run_ended") == 0
        counted = buckets(during, workload="randomread")
        assert counted == sorted(counted)
        # Operations are published every 64 per thread, so mid-run the counter may trail the
        # engine by up to 63; the ramp's ~300 keep it ahead of the measured histogram here.
        assert counted[-1] <= value(during, "iowatt_io_operations_total", workload="randomread")
        assert engine.wait(30)
        board.end()
        after = scrape(url)
    finally:
        endpoint.close()
    result = engine.result()
    assert result["status"] == "complete"
    progress = engine.progress()
    # Operations and bytes count everything the engine did, the ramp included ...
    assert value(after, "iowatt_io_operations_total", workload="randomread") == progress["ops"]
    assert value(after, "iowatt_io_bytes_total", workload="randomread") == progress["bytes"]
    # ... the histogram only the measured phase, as the result does. The engine records no
    # operation completing after the window (its recorder drops them, and the collector only
    # drops intervals past the window of a cancelled run), so the two agree exactly.
    measured = sum(f["ops"] for f in result["flowops"] if f["io"])
    assert 0 < measured < progress["ops"]
    assert measured == sum(result["intervals"]["ops"]) == sum(result["histogram"]["count"])
    counted = buckets(after, workload="randomread")
    assert counted[-1] == value(after, "iowatt_io_latency_seconds_count", workload="randomread")
    assert counted[-1] == measured
    # The same bands the report's heatmap draws from the stored histogram.
    h = result["histogram"]
    assert counted == cumulative(heat_bands(h["value_ns"], h["count"]))
    mean_s = value(after, "iowatt_io_latency_seconds_sum", workload="randomread") / measured
    assert mean_s == pytest.approx(h["mean_ns"] / 1e9, rel=1e-6)
    assert value(after, "iowatt_run_ended") == 1
    assert notes == [f"serving metrics on {url}"]


@pytest.mark.slow
def test_a_failing_scrape_answers_500_is_said_once_and_the_run_goes_on(tmp_path, notes, capfd):
    engine = tiny_engine(tmp_path, runtime="1s")
    board = Board()
    board.watch_engine(engine, workload="randomread")
    broken = threading.Event()
    broken.set()

    def flaky() -> Counts:
        if broken.is_set():
            raise OSError(5, "Input/output error")
        return Counts(1)

    board.watch(flaky, workload="sensor")
    endpoint = Endpoint(board, Serve(("127.0.0.1", 0)), notes.append)
    try:
        assert endpoint.url is not None
        engine.start()
        for _ in range(3):
            with pytest.raises(urllib.error.HTTPError) as answer:
                scrape(endpoint.url)
            answer.value.close()
            assert answer.value.code == 500
        broken.clear()
        wait_for(lambda: value(scrape(endpoint.url), "iowatt_io_operations_total",
                               workload="randomread") > 0, what="a good scrape")  # fmt: skip
        assert engine.wait(30)
        after = scrape(endpoint.url)
    finally:
        endpoint.close()
    assert engine.result()["status"] == "complete"
    assert value(after, "iowatt_io_operations_total", workload="randomread") > 0
    failed = [n for n in notes if "failed" in n]
    assert failed == ["metrics endpoint failed: OSError: [Errno 5] Input/output error"]
    assert "Traceback" not in capfd.readouterr().err, "a traceback per failed scrape"


# --- through the CLI --------------------------------------------------------------------------


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A port another program listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


def test_a_port_in_use_is_named_before_anything_runs(tmp_path, capsys, results, busy_port):
    r = iowatt(capsys, "bench", "randomread", *TINY, "--target", tmp_path, "--results",
               results, "--serve", f"127.0.0.1:{busy_port}")  # fmt: skip
    assert_user_error(r, f"127.0.0.1:{busy_port}", "in use")
    assert "--serve 0" in r.err
    assert nothing_written(results)


@pytest.mark.parametrize(
    ("serve", "named"),
    [
        ("192.0.2.1:9464", "`192.0.2.1:9464`"),  # TEST-NET-1: not an address of this machine
        ("abc", "`abc`"),
        ("70000", "`70000`"),
        ("127.0.0.1:", "`127.0.0.1:`"),
        ("no-such-host.invalid:9464", "`no-such-host.invalid:9464`"),
    ],
)
def test_a_bad_serve_address_is_named_with_a_hint(tmp_path, capsys, results, serve, named):
    r = iowatt(capsys, "bench", "randomread", *TINY, "--target", tmp_path, "--results",
               results, "--serve", serve)  # fmt: skip
    assert_user_error(r, "--serve", named)
    assert nothing_written(results)


def test_a_bad_linger_is_named(tmp_path, capsys, results):
    r = iowatt(capsys, "bench", "randomread", *TINY, "--target", tmp_path, "--results",
               results, "--serve", "0", "--serve-linger", "soon")  # fmt: skip
    assert_user_error(r, "`soon`")
    assert nothing_written(results)


@pytest.mark.parametrize("make", ["file", "missing"])
def test_a_textfile_path_that_is_not_a_directory_is_refused(tmp_path, capsys, results, make):
    where = tmp_path / "textfile"
    if make == "file":
        where.write_text("")
    r = iowatt(capsys, "bench", "randomread", *TINY, "--target", tmp_path, "--results",
               results, "--textfile", where)  # fmt: skip
    assert_user_error(r, f"--textfile `{where}`", "not a directory")
    assert nothing_written(results)


@pytest.mark.needs_root
def test_a_textfile_directory_that_cannot_be_written_is_refused(tmp_path, capsys, results,
                                                                mounts):  # fmt: skip
    ro = mounts.mount("-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", target=tmp_path / "ro")
    r = iowatt(capsys, "bench", "randomread", *TINY, "--target", tmp_path, "--results",
               results, "--textfile", ro)  # fmt: skip
    assert_user_error(r, f"--textfile `{ro}`", "cannot be written")
    assert nothing_written(results)
    assert list(ro.iterdir()) == []


def test_a_refused_textfile_closes_the_endpoint_it_opened(tmp_path, capsys, results):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    r = iowatt(capsys, "bench", "randomread", *TINY, "--target", tmp_path, "--results",
               results, "--serve", f"127.0.0.1:{port}",
               "--textfile", tmp_path / "missing")  # fmt: skip
    assert_user_error(r, "--textfile")
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))  # free again


@pytest.mark.slow
def test_a_textfile_holds_the_final_counts_and_nothing_else(tmp_path, capsys, results):
    textfile = tmp_path / "textfile"
    textfile.mkdir()
    r = iowatt(capsys, "bench", "randomread", *TINY, "--target", tmp_path, "--results",
               results, "--textfile", textfile, "--quiet")  # fmt: skip
    assert r.code == 0, r.err
    (run_dir,) = runs_in(results)
    assert [p.name for p in textfile.iterdir()] == ["iowatt.prom"], "no temporary file left"
    s = parse((textfile / "iowatt.prom").read_text())
    ran = summary(run_dir)["workloads"]["randomread"]
    assert value(s, "iowatt_run_info", run_id=run_dir.name, kind="bench") == 1
    assert value(s, "iowatt_run_ended") == 1
    assert value(s, "iowatt_io_latency_seconds_count", workload="randomread") == ran["ops"]
    assert value(s, "iowatt_io_operations_total", workload="randomread") == ran["ops"]  # no ramp
    assert value(s, "iowatt_io_bytes_total", workload="randomread") == ran["bytes"]
    assert f"writing metrics to {textfile / 'iowatt.prom'}" in r.err


@pytest.mark.slow
@pytest.mark.needs_root
def test_a_served_fan_sweep_shows_its_duty_as_a_ratio_and_counts_across_steps(
    tmp_path, capsys, results, loop_device
):
    textfile = tmp_path / "textfile"
    textfile.mkdir()
    r = iowatt(capsys, "sweep", "--stimulus", "fan", "--steps", "40,80", "--disk", loop_device,
               "--driver", "cmd", "--set", "true {value}", "--no-watchdog", "--settle", "0.3s",
               "--hold", "0.7s", "--iosize", "64k", "--no-report", "--results", results,
               "--textfile", textfile, "--quiet")  # fmt: skip
    assert r.code == 0, r.err
    (run_dir,) = runs_in(results)
    s = parse((textfile / "iowatt.prom").read_text())
    assert value(s, "iowatt_stimulus_fan_duty_ratio") == 0.8  # 80 %
    assert (value(s, "iowatt_sweep_step"), value(s, "iowatt_sweep_steps")) == (2, 2)
    # Each step is a new engine under the same labels: the histogram holds both steps' holds.
    steps = pq.read_table(run_dir / "steps.parquet").to_pylist()
    assert [st["value"] for st in steps] == [40, 80]
    name = steps[0]["disk"]
    assert value(s, "iowatt_io_latency_seconds_count", workload=name) == sum(
        st["ops"] for st in steps
    )


@pytest.mark.slow
def test_serve_linger_keeps_the_final_metrics_after_the_run(tmp_path):
    proc = subprocess.Popen(
        ["iowatt", "bench", "randomread", *TINY, "--target", str(tmp_path), "--results",
         str(tmp_path / "results"), "--serve", "0", "--serve-linger", "2s", "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    lines, reader = stderr_lines(proc)
    try:
        wait_for(lambda: any("serving the final metrics for 2 s" in ln for ln in lines), proc,
                 what="the run to end and linger")  # fmt: skip
        (url,) = [m[1] for ln in lines if (m := SERVING.search(ln))]
        lingering = scrape(url)
        out, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    reader.join(timeout=10)
    assert proc.returncode == 0, "".join(lines)
    assert value(lingering, "iowatt_run_ended") == 1
    ops = json.loads(out)["workloads"]["randomread"]["ops"]
    assert ops > 0
    assert value(lingering, "iowatt_io_latency_seconds_count", workload="randomread") == ops
    with pytest.raises(urllib.error.URLError):
        scrape(url)  # the linger is over: the endpoint has closed


@pytest.mark.needs_root
def test_errors_are_served_by_kind_as_the_run_stores_them(tmp_path, capsys, results, mounts):
    """A stream of writes into a 1 MiB file system runs out of space mid-run."""
    full = mounts.mount("-t", "tmpfs", "-o", "size=1m", "tmpfs", target=tmp_path / "full")
    textfile = tmp_path / "textfile"
    textfile.mkdir()
    r = iowatt(capsys, "bench", "singlestreamwrite", "--target", full, "--runtime", "1s",
               "--textfile", textfile, "--results", results, "--no-report", "-q")  # fmt: skip
    assert r.code == 2 and "free some space" in r.err, r.err
    (run_dir,) = runs_in(results)
    stored = summary(run_dir)["workloads"]["singlestreamwrite"]["errors_by_kind"]
    assert stored.get("ENOSPC", 0) > 0, stored
    s = parse((textfile / "iowatt.prom").read_text())
    served = {dict(labels)["kind"]: v for (name, labels), v in s.items()
              if name == "iowatt_io_errors_by_kind_total"}  # fmt: skip
    assert set(served) == set(stored) and all(served[k] >= n for k, n in stored.items())
