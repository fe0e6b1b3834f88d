"""A real Prometheus scraping real runs served with ``--serve``: what PromQL computes from the
live metrics agrees with what the run stored, and every query of the Grafana dashboard
(docs/grafana/iowatt-dashboard.json) answers from a served sweep with power, fan and
temperature sensors. The heatmap panel's colours and bands are checked against
:mod:`iowatt.histogram`, so the report, ``iowatt live`` and Grafana draw one heatmap."""

from __future__ import annotations

import bisect
import contextlib
import json
import math
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from matplotlib import colormaps
from matplotlib.colors import to_hex

from iowatt.histogram import DEFAULT_SLOW_NS, HEAT_EDGES_NS, HEAT_PALETTE
from iowatt.live.exposition import BUCKET_BOUNDS
from support.cli import manifest, runs_in, summary
from support.power import counting, make_fans, make_hwmon, make_rapl
from support.prometheus import Prometheus, prometheus, target_of
from support.wait import wait_for

DASHBOARD = Path(__file__).parents[1] / "docs/grafana/iowatt-dashboard.json"
SERVING = re.compile(r"serving metrics on (http://\S+)")
# Grafana's $__rate_interval: max($__interval + scrape interval, 4 × scrape interval), with
# the data source's scrape interval set to the job's 1 s.
GRAFANA = {"$__rate_interval": "4s", "$__interval": "1s"}
ALL = ".*"  # the workload variable's "All"


@dataclass
class Served:
    proc: subprocess.Popen[str]
    url: str  # its metrics endpoint
    log: Path  # its stderr

    def finished(self, timeout_s: float = 60.0) -> None:
        """Waits for the run to exit (after its linger); it must have succeeded."""
        try:
            self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            pytest.fail(f"iowatt did not exit:\n{self.log.read_text()}")
        assert self.proc.returncode == 0, self.log.read_text()


@contextlib.contextmanager
def served(log: Path, *args: str | Path) -> Iterator[Served]:
    """``iowatt ARGS --serve 0`` as a subprocess; yields once it says where it serves. A run
    still going at the end (a failed test) is stopped as a user would: SIGTERM."""
    cmd = [sys.executable, "-c", "from iowatt.cli import main; main()", *map(str, args)]
    with open(log, "w") as err:
        proc = subprocess.Popen(
            [*cmd, "--serve", "0"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=err, text=True,
        )  # fmt: skip
    try:
        found: list[str] = []

        def serving() -> bool:
            if proc.poll() is not None:
                pytest.fail(f"iowatt exited ({proc.returncode}) before serving:\n{log.read_text()}")
            found[:] = SERVING.findall(log.read_text())
            return bool(found)

        wait_for(serving, what="iowatt to serve its metrics")
        yield Served(proc, found[0], log)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def value(result: list[dict[str, Any]]) -> float:
    """The one value of an instant query's result."""
    assert len(result) == 1, result
    return float(result[0]["value"][1])


def ended_at(prom: Prometheus, run: Served) -> float:
    """When Prometheus first scraped the run ended (its counters final), Unix seconds."""
    ended = f'timestamp(iowatt_run_ended{{instance="{target_of(run.url)}"}} == 1)'
    return value(prom.wait_until(ended, run.proc))


def band(ns: float) -> int:
    """The heatmap band holding ``ns``: band i is above HEAT_EDGES_NS[i - 1], up to
    HEAT_EDGES_NS[i]."""
    return bisect.bisect_left(HEAT_EDGES_NS, round(ns))


def measured_window(run_dir: Path) -> tuple[float, float]:
    """The first measured interval's start and the last one's end, Unix seconds."""
    wall_ns, mono_ns = manifest(run_dir)["clock_anchor"]
    rows = pq.read_table(run_dir / "intervals.parquet", columns=["mono_ns", "duration_s"])
    starts, durations = rows["mono_ns"].to_pylist(), rows["duration_s"].to_pylist()
    ends = [t + round(d * 1e9) for t, d in zip(starts, durations, strict=True)]
    return (wall_ns + min(starts) - mono_ns) / 1e9, (wall_ns + max(ends) - mono_ns) / 1e9


# --- PromQL against the stored run ----------------------------------------------------------

RATE = 2000  # ops/s, open loop: a steady rate
RUNTIME_S = 20
RATE_WINDOW_S = 10


@pytest.mark.slow
def test_promql_rate_and_p99_agree_with_the_stored_run(tmp_path: Path) -> None:
    target, results = tmp_path / "target", tmp_path / "results"
    target.mkdir()
    with served(
        tmp_path / "bench.log", "bench", "randomread", "--target", target, "--filesize", "64m",
        "--runtime", f"{RUNTIME_S}s", "--rate", str(RATE), "--nthreads", "1",
        "--results", results, "--no-report", "-q", "--serve-linger", "5s",
    ) as run, prometheus(target_of(run.url)) as prom:  # fmt: skip
        end = ended_at(prom, run)
        run.finished()
        (run_dir,) = runs_in(results)
        stored = summary(run_dir)["workloads"]["randomread"]
        start_s, end_s = measured_window(run_dir)
        series = 'iowatt_io_operations_total{workload="randomread"}'

        # (a) The rate over the last seconds of the measured window is the stored ops/s.
        at = end_s - 2
        assert at - RATE_WINDOW_S >= start_s, (start_s, end_s)
        scrapes = value(prom.query(f"count_over_time({series}[{RATE_WINDOW_S}s])", at))
        assert scrapes >= RATE_WINDOW_S - 1, "Prometheus scraped the whole window"
        rate = value(prom.query(f"rate({series}[{RATE_WINDOW_S}s])", at))
        assert rate / stored["ops_s"] == pytest.approx(1, abs=0.05), (rate, stored["ops_s"])

        # (b) The last scrape holds every operation, each measured, and its p99 is in the
        # stored p99's heatmap band or the next.
        ops = value(prom.query(series, end))
        measured = value(prom.query('iowatt_io_latency_seconds_count{workload="randomread"}', end))
        buckets = 'iowatt_io_latency_seconds_bucket{workload="randomread"}'
        p99_ns = value(prom.query(f"histogram_quantile(0.99, sum by (le) ({buckets}))", end)) * 1e9
    stored_p99_ns = stored["latency_ns"]["p99"]
    assert ops == measured == stored["ops"]
    assert abs(band(p99_ns) - band(stored_p99_ns)) <= 1, (p99_ns, stored_p99_ns)
    print(f"rate {rate:.1f} / stored {stored['ops_s']:.1f} ops/s = {rate / stored['ops_s']:.4f}; "
          f"p99 {p99_ns:.0f} ns (band {band(p99_ns)}), stored {stored_p99_ns} ns "
          f"(band {band(stored_p99_ns)})")  # fmt: skip


# --- the Grafana dashboard -------------------------------------------------------------------


def dashboard() -> dict[str, Any]:
    return json.loads(DASHBOARD.read_text())


def panels(board: dict[str, Any]) -> list[dict[str, Any]]:
    """Every panel, those inside collapsed rows too."""
    out = []
    for p in board["panels"]:
        out.append(p)
        out.extend(p.get("panels", []))
    return [p for p in out if p["type"] != "row"]


def promql(expr: str, workload: str = ALL) -> str:
    """A panel's expression as Grafana sends it."""
    for name, text in GRAFANA.items():
        expr = expr.replace(name, text)
    return expr.replace("${workload}", workload).replace("$workload", workload)


def variable(board: dict[str, Any], name: str) -> dict[str, Any]:
    (found,) = [v for v in board["templating"]["list"] if v["name"] == name]
    return found


def heatmap_panel(board: dict[str, Any]) -> dict[str, Any]:
    (heat,) = [p for p in panels(board) if p["type"] == "heatmap"]
    return heat


def test_the_dashboard_is_an_importable_grafana_model() -> None:
    board = dashboard()
    assert board["uid"] and board["title"] and board["schemaVersion"] >= 36
    datasource = variable(board, "datasource")
    assert (datasource["type"], datasource["query"]) == ("datasource", "prometheus")
    workload = variable(board, "workload")
    assert workload["includeAll"] and workload["allValue"] == ALL
    ids = [p["id"] for p in panels(board)]
    assert len(ids) == len(set(ids))
    for p in panels(board):
        assert p["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, p["title"]
        pos = p["gridPos"]
        assert set(pos) == {"x", "y", "w", "h"} and pos["x"] + pos["w"] <= 24, p["title"]
        refs = [t["refId"] for t in p["targets"]]
        assert p["targets"] and len(refs) == len(set(refs)), p["title"]
        for t in p["targets"]:
            assert t["datasource"] == p["datasource"] and t["expr"].strip(), p["title"]


def test_the_heatmap_panel_is_the_reports_heatmap() -> None:
    heat = heatmap_panel(dashboard())
    (target,) = heat["targets"]
    assert target["format"] == "heatmap" and target["legendFormat"] == "{{le}}"
    assert re.fullmatch(
        r"sum\(rate\(iowatt_io_latency_seconds_bucket\{.*\}\[\$__rate_interval\]\)\) by \(le\)",
        target["expr"],
    ), target["expr"]
    options = heat["options"]
    assert options["calculate"] is False and options["rowsFrame"]["layout"] == "le"
    assert options["yAxis"]["unit"] == "s"  # the le bounds are seconds
    # Grafana quantizes its scheme into `steps` colours at i / (steps - 1) and reverses them:
    # the report's palette is viridis taken the same way (light yellow few, dark purple many).
    color = options["color"]
    assert (color["mode"], color["scheme"], color["reverse"]) == ("scheme", "Viridis", True)
    assert color["steps"] == len(HEAT_PALETTE)
    viridis = colormaps["viridis"]
    steps = color["steps"] - 1
    grafana = [to_hex(viridis(i / steps)) for i in range(steps + 1)][::-1]
    assert grafana == list(HEAT_PALETTE)
    assert (HEAT_PALETTE[0], HEAT_PALETTE[-1]) == ("#fde725", "#440154")
    # A cell without operations is not drawn (the report's white).
    assert 0 < options["filterValues"]["le"] < 1e-6


def test_the_slow_share_panel_uses_the_reports_threshold() -> None:
    (slow,) = [p for p in panels(dashboard()) if "100 ms" in p["title"]]
    threshold = f"{DEFAULT_SLOW_NS[0] / 1e9:g}"
    assert threshold in BUCKET_BOUNDS
    assert f'le="{threshold}"' in slow["targets"][0]["expr"]


@pytest.mark.slow
def test_every_dashboard_query_answers_from_a_served_sweep(tmp_path: Path) -> None:
    """A fan sweep with fixture hwmon (power, temperatures, fan speeds and duties) and RAPL (a
    counting energy counter) sensors, scraped by a real Prometheus; every panel's query, as
    Grafana sends it, returns data over the run."""
    sysfs, disk, results = tmp_path / "sys", tmp_path / "disk", tmp_path / "results"
    disk.mkdir()
    hwmon = make_hwmon(sysfs)
    make_fans(sysfs)
    zones = make_rapl(tmp_path / "rapl")
    board = dashboard()
    with (
        counting(zones["package-0"] / "energy_uj", 20.0),
        served(
            tmp_path / "sweep.log", "sweep", "--stimulus", "fan", "--steps", "100,60,30",
            "--driver", "cmd", "--set", "true {value}", "--disk", disk, "--allow-boot-disk",
            "--size", "16m", "--iosize", "64k", "--settle", "1s", "--hold", "2s",
            "--sensor", f"hwmon:root={hwmon}",
            "--sensor", f"rapl:root={tmp_path / 'rapl/class/powercap'}", "--sensor-hz", "5",
            "--results", results, "--no-report", "-q", "--serve-linger", "3s",
        ) as run,
        prometheus(target_of(run.url)) as prom,
    ):  # fmt: skip
        end = ended_at(prom, run)
        run.finished()
        began = f'iowatt_run_start_timestamp_seconds{{instance="{target_of(run.url)}"}}'
        start = value(prom.query(began, end))

        # The workload variable lists the sweep's disk.
        (workload,) = summary(runs_in(results)[0])["disks"]
        query = variable(board, "workload")["query"]["query"]
        parsed = re.fullmatch(r"label_values\((\w+), *(\w+)\)", query)
        assert parsed, query
        metric, label = parsed.groups()
        values = prom.api(f"label/{label}/values", **{"match[]": metric})
        assert workload in values

        answers: dict[str, list[dict[str, Any]]] = {}
        for p in panels(board):
            for t in p["targets"]:
                expr = promql(t["expr"])
                result = prom.query_range(expr, start, end, 1)
                numbers = [float(v) for s in result for _, v in s["values"]]
                assert any(math.isfinite(n) for n in numbers), f"{p['title']}: {expr} has no data"
                answers[f"{p['title']}/{t['refId']}"] = result
        # One workload picked in the variable narrows the I/O panels to it.
        ops = next(t for p in panels(board) if p["title"] == "Operations/s" for t in p["targets"])
        picked = prom.query_range(promql(ops["expr"], workload), start, end, 1)
        assert [s["metric"]["workload"] for s in picked] == [workload]

        # The heatmap's rows are the report's bands, in seconds.
        heat = answers[f"{heatmap_panel(board)['title']}/A"]
        les = sorted((s["metric"]["le"] for s in heat), key=float)
        assert les == [*BUCKET_BOUNDS, "+Inf"]
        assert [float(le) for le in les[:-1]] == [edge / 1e9 for edge in HEAT_EDGES_NS]
        assert max(float(v) for s in answers["Operations/s/A"] for _, v in s["values"]) > 0
        assert any(float(v) > 0 for s in answers["Power/A"] for _, v in s["values"])
