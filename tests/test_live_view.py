"""iowatt live: an endpoint's text read back, a stored run replayed, what the dashboard computes
from snapshots, and the dashboard itself driven through textual's pilot at 80 × 24."""

from __future__ import annotations

import asyncio
import html
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from prometheus_client import generate_latest

from iowatt.histogram import HEAT_EDGES_NS, heat_colour
from iowatt.live.board import Board, Counts, Latency, Snapshot, labels_of
from iowatt.live.dashboard import Dashboard
from iowatt.live.exposition import registry_of
from iowatt.live.feed import endpoint_url, parse, stored
from iowatt.live.view import SLOW_BAND, View
from support import chromium
from support.cli import assert_user_error, iowatt, runs_in, summary
from support.wait import wait_for

BANDS = len(HEAT_EDGES_NS) + 1


def band_of(ns: int) -> int:
    return sum(edge < ns for edge in HEAT_EDGES_NS)


def counts(ops: int, *, at_ns: int = 50_000, slow: int = 0, errors: int = 0) -> Counts:
    """``ops`` operations at ``at_ns``, ``slow`` of them at 150 ms instead."""
    bands = [0] * BANDS
    bands[band_of(at_ns)] += ops - slow
    bands[band_of(150_000_000)] += slow
    return Counts(ops, ops * 4096, errors, bands, ops * at_ns / 1e9,
                  {"EIO": errors} if errors else {})  # fmt: skip


def snap(t_s: float, step: tuple[int, int] | None = None, **series: Counts) -> Snapshot:
    """Series named ``host__workload``."""
    s = Snapshot(t_s, elapsed_s=t_s, run={"run_id": "r1", "kind": "sweep"}, step=step)
    for name, c in series.items():
        host, workload = name.split("__")
        s.series[labels_of({"host": host, "workload": workload})] = c
    return s


def test_an_endpoints_text_reads_back_into_the_snapshot_it_was_made_from() -> None:
    board = Board()
    board.begin("20261126-bench-abc", "bench", {"env": "quiet"})
    board.add(counts(1000, slow=7, errors=2), workload="randomread")
    board.add(counts(10, at_ns=3_000_000_000), workload="seqwrite")
    channels = [
        {"source": "rapl", "channel": "package-0", "unit": "J"},
        {"source": "hwmon", "channel": "fan1", "unit": "RPM"},
        {"source": "hwmon", "channel": "temp1", "unit": "C"},
        {"source": "hwmon", "channel": "pwm1", "unit": "ratio"},
    ]
    board.readings(channels, {"mono_ns": [0, 0, 0, 0, 2 * 10**9], "channel": [0, 1, 2, 3, 0],
                              "value": [100.0, 5400.0, 41.5, 0.6, 150.0]})  # fmt: skip
    board.set_stimulus("fan", 0.6, 3, 11)
    made = board.snapshot()

    read = parse(generate_latest(registry_of(board)).decode())

    assert read.run == made.run == {"run_id": "20261126-bench-abc", "kind": "bench", "env": "quiet"}
    assert read.series.keys() == made.series.keys()
    for key, c in made.series.items():
        assert read.series[key].bands == c.bands
        assert (read.series[key].ops, read.series[key].bytes, read.series[key].errors) == (
            c.ops, c.bytes, c.errors)  # fmt: skip
        assert read.series[key].latency_sum_s == pytest.approx(c.latency_sum_s)
        assert read.series[key].errors_by_kind == c.errors_by_kind
    assert read.joules == {"rapl/package-0": 50.0}
    assert read.watts == {"rapl/package-0": 25.0}  # 50 J over 2 s
    assert read.fan_rpm == {"hwmon/fan1": 5400.0} and read.celsius == {"hwmon/temp1": 41.5}
    assert read.fan_duty == {"hwmon/pwm1": 0.6}
    assert read.stimulus == {"fan": 0.6} and read.step == (3, 11)


def test_rates_slow_shares_and_events_come_from_consecutive_snapshots() -> None:
    view = View()
    view.add(snap(10.0, (1, 3), a__read=counts(1000), b__read=counts(500)))
    view.add(snap(12.0, (2, 3), a__read=counts(3000, slow=20), b__read=counts(500, errors=3)))

    rows = {r.name: r for r in view.rows()}
    assert rows["read"].ops_s == pytest.approx((3000 + 500 - 1500) / 2)
    assert rows["read"].mib_s == pytest.approx(2000 * 4096 / 2 / 2**20)
    assert rows["read"].slow_share == pytest.approx(20 / 2000)
    assert any("step 2/3" in e for e in view.events)
    assert any(e.endswith("b, read: 3 errors (EIO 3)") for e in view.events)
    assert any("a, read: operations above 100 ms (20 this second)" in e for e in view.events)
    # The heatmap's last column is the second's operations per band.
    column = view.columns()[-1]
    assert sum(column) == 2000 and column[SLOW_BAND] == 20
    # Slow operations are told when they start and when they stop, not every second.
    view.add(snap(13.0, (2, 3), a__read=counts(4000, slow=40), b__read=counts(500)))
    view.add(snap(14.0, (2, 3), a__read=counts(5000, slow=40), b__read=counts(500)))
    slow_events = [e for e in view.events if "100 ms" in e]
    assert len(slow_events) == 2 and slow_events[1].endswith("a, read: none above 100 ms again")


def test_the_breakdown_and_the_heatmaps_group_switch_over_the_labels_series_carry() -> None:
    view = View()
    view.add(snap(0.0, a__read=Counts(), b__read=Counts()))
    view.add(snap(1.0, a__read=counts(300), b__read=counts(100, at_ns=5_000_000)))
    assert view.breakdowns() == ["host", "workload"]
    assert view.groups() == ["all", "read"]
    view.next_breakdown()
    assert view.breakdown == "host" and view.groups() == ["all", "a", "b"]
    view.add(snap(2.0, a__read=counts(600), b__read=counts(200, at_ns=5_000_000)))
    assert {r.name: r.ops_s for r in view.rows()} == {"a": 300.0, "b": 100.0}
    view.next_group()
    assert view.group == "a"
    # The whole history is redrawn for the group chosen, not only the seconds since.
    assert [sum(c) for c in view.columns()] == [300, 300]
    assert all(c[band_of(5_000_000)] == 0 for c in view.columns())
    view.next_group(-2)
    assert view.group == "b" and view.columns()[-1][band_of(5_000_000)] == 100


def test_a_counter_that_starts_over_is_read_from_zero_not_as_a_negative_rate() -> None:
    view = View()
    view.add(snap(0.0, a__read=counts(5000)))
    view.add(snap(1.0, a__read=counts(40)))  # another process now answers on the port
    assert view.rows()[0].ops_s == 40


@pytest.mark.parametrize(
    ("given", "url"),
    [("9464", None), ("host:9464", "http://host:9464/metrics"),
     ("http://10.0.0.5:9100/", "http://10.0.0.5:9100/metrics"),
     ("https://h/x/metrics", "https://h/x/metrics")],
)  # fmt: skip
def test_an_endpoint_is_given_as_a_port_an_address_or_a_url(given: str, url: str | None) -> None:
    if url is not None:
        assert endpoint_url(given) == url


@pytest.mark.slow
def test_a_stored_run_replays_as_its_endpoint_would_have_said_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "results"
    r = iowatt(capsys, "bench", "randomread", "--target", tmp_path, "--filesize", "4m",
               "--runtime", "3s", "--rate", "3000", "--nthreads", "1", "--results", results,
               "--no-report", "-q")  # fmt: skip
    assert r.code == 0, r.err
    run_dir = runs_in(results)[0]
    ops = summary(run_dir)["workloads"]["randomread"]["ops"]

    seconds = stored(run_dir)

    assert [s.t_s for s in seconds] == [float(i) for i in range(1, len(seconds) + 1)]
    assert 3 <= len(seconds) <= 4
    last = seconds[-1].series[labels_of({"workload": "randomread"})]
    assert last.ops == ops and sum(last.bands) == ops
    assert seconds[-1].ended and not seconds[0].ended
    totals = [s.series[labels_of({"workload": "randomread"})].ops for s in seconds]
    assert totals == sorted(totals) and totals[0] > 0


def screen(app: Dashboard) -> str:
    """The terminal's text as textual would draw it."""
    svg = app.export_screenshot()
    return html.unescape(re.sub(r"<[^>]+>", "", svg)).replace("\xa0", " ")


def sweep_seconds() -> list[Snapshot]:
    """A sweep whose second disk slows down from step 2 on."""
    out = []
    total = {"a": Counts(), "b": Counts()}
    for t in range(1, 41):
        step = 1 if t <= 20 else 2
        total["a"] = total["a"] + counts(2000, at_ns=200_000)
        slow = 30 if step == 2 else 0
        total["b"] = total["b"] + counts(1500, at_ns=400_000, slow=slow)
        s = snap(float(t), (step, 2), a__seqwrite=total["a"], b__seqwrite=total["b"])
        s.stimulus = {"fan": 0.3 if step == 1 else 0.9}
        s.watts = {"ipmi/PSU1": 180.0 + 20 * step}
        s.fan_rpm = {"ipmi/FAN1": 4000.0 + 4000 * step}
        out.append(s)
    return out


def test_the_dashboard_fits_80_by_24_and_its_keys_switch_the_breakdown_and_pause(
    tmp_path: Path,
) -> None:
    seconds = iter(sweep_seconds())

    async def drive() -> None:
        app = Dashboard(lambda: next(seconds, None), every_s=3600)  # the test advances it
        async with app.run_test(size=(80, 24)) as pilot:
            for _ in range(38):  # mounting read the first second
                app.advance()
            await pilot.pause()
            text = screen(app)
            assert "r1 · 39 s · step 2/2" in text and "fan 0.9" in text
            assert "ipmi/PSU1 220.0 W" in text and "ipmi/FAN1 12,000 rpm" in text
            assert re.search(r"seqwrite\s+3,500\s", text), text
            assert "operations above 100 ms" in text
            await pilot.press("b")
            text = screen(app)
            assert re.search(r"host\s+ops/s", text) and re.search(r"\sb\s+1,500\s", text)
            await pilot.press("n", "n")
            assert "heatmap of b" in screen(app) and "▸b" in screen(app)
            await pilot.press("space")
            app.advance()  # paused: the last second is not read
            assert "PAUSED" in screen(app) and next(seconds, None) is not None
            await pilot.press("space")
            app.advance()
            app.advance()
            assert "end of the stored run" in screen(app)
            svg = tmp_path / "live.svg"
            svg.write_text(app.export_screenshot())
            await pilot.press("q")
        assert app.return_code == 0

    asyncio.run(drive())
    assert shutil.which("chromium") is not None, "the CI installs chromium"
    page = tmp_path / "live.html"
    page.write_text(f"<body style='margin:0'>{(tmp_path / 'live.svg').read_text()}</body>")
    png = chromium.screenshot(page, tmp_path / "live.png", width=1000, height=640)
    pixels = np.asarray(Image.open(png).convert("RGB")).reshape(-1, 3)
    # The heatmap is drawn in the report's colours: the busiest cells (b's 1,500 a second at
    # 400 µs in step 1) darkest, its 30 slow ones a second in step 2 on the same log scale.
    seen = {tuple(p) for p in np.unique(pixels, axis=0)}
    for ops in (1_500, 1_470, 30):
        colour = heat_colour(ops, 1_500)
        assert colour is not None
        assert tuple(bytes.fromhex(colour[1:])) in seen, f"no {colour} for {ops} operations"
    if target := os.environ.get("IOWATT_DOCS_IMG"):
        shutil.copy(png, Path(target) / "live-dashboard.png")


def test_live_on_nothing_listening_or_an_unknown_run_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    r = iowatt(capsys, "live", "127.0.0.1:9")
    assert_user_error(r, "127.0.0.1:9")
    r = iowatt(capsys, "live", "no-such-run", "--results", tmp_path)
    assert_user_error(r, "no-such-run")
    r = iowatt(capsys, "live", "20261126", "--results", tmp_path)  # a run id's date, not a port
    assert_user_error(r, "no run `20261126`")
    r = iowatt(capsys, "live", "latest", "--speedup", "0", "--results", tmp_path)
    assert_user_error(r, "--speedup")


@pytest.mark.slow
def test_live_in_tmux_watches_a_running_bench(tmp_path: Path) -> None:
    """End to end, as a user over ssh would: a bench served on a port, iowatt live in an
    80 × 24 tmux pane, q to quit."""
    bench = subprocess.Popen(
        ["iowatt", "bench", "randomread", "--target", str(tmp_path), "--filesize", "4m",
         "--runtime", "30s", "--rate", "2000", "--nthreads", "1", "--serve", "0",
         "--results", str(tmp_path / "results"), "--no-report", "-q"],
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    session = f"iowatt-live-{os.getpid()}"
    try:
        assert bench.stderr is not None
        line = bench.stderr.readline()
        url = re.search(r"serving metrics on (\S+)", line)
        assert url, line
        subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "80", "-y", "24",
                        f"iowatt live {url[1]}"], check=True)  # fmt: skip

        def pane() -> str:
            return subprocess.run(["tmux", "capture-pane", "-p", "-t", session],
                                  capture_output=True, text=True).stdout  # fmt: skip

        wait_for(lambda: re.search(r"randomread\s+[1-9][\d,]*\s", pane()) is not None,
                 what="a throughput row in the pane", timeout_s=30)  # fmt: skip
        shown = pane()
        assert "-bench-" in shown and "≤" in shown, shown  # the status line and the heatmap
        assert max(len(line) for line in shown.splitlines()) <= 80
        subprocess.run(["tmux", "send-keys", "-t", session, "q"], check=True)
        wait_for(lambda: subprocess.run(["tmux", "has-session", "-t", session],
                                        capture_output=True).returncode != 0,
                 what="iowatt live to quit on q", timeout_s=10)  # fmt: skip
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
        bench.terminate()
        bench.communicate(timeout=30)


def replay_counts(requests: int) -> Counts:
    """A replay's ``requests`` at 5 ms from their due time, 2 ms to their first byte, 50 µs
    from their send."""
    c = counts(requests, at_ns=5_000_000)
    c.beside = {
        "ttfb": Latency(counts(requests, at_ns=2_000_000).bands, requests * 0.002),
        "service": Latency(counts(requests, at_ns=50_000).bands, requests * 0.000_05),
    }
    return c


def test_a_replays_histograms_beside_its_latency_read_back_and_the_heatmap_draws_each() -> None:
    board = Board()
    board.add(counts(100), workload="randomread")
    assert "ttfb" not in generate_latest(registry_of(board)).decode()  # a bench's, as ever
    board.add(replay_counts(100), workload="requests")

    read = parse(generate_latest(registry_of(board)).decode())

    assert read.series[labels_of({"workload": "requests"})].beside == replay_counts(100).beside
    assert read.series[labels_of({"workload": "randomread"})].beside == {}
    view = View()
    view.add(snap(0.0, a__requests=replay_counts(100)))
    view.add(snap(1.0, a__requests=replay_counts(300)))
    assert view.histograms() == ["latency", "ttfb", "service"]
    for histogram, at_ns in (("latency", 5_000_000), ("ttfb", 2_000_000), ("service", 50_000)):
        assert view.histogram == histogram
        assert view.columns()[-1][band_of(at_ns)] == 200 == sum(view.columns()[-1])
        view.next_histogram()
    assert view.histogram == "latency"


def test_h_switches_the_dashboards_heatmap_to_a_replays_time_to_first_byte() -> None:
    seconds = iter([snap(float(t), a__requests=replay_counts(100 * t)) for t in range(1, 4)])

    async def drive() -> None:
        app = Dashboard(lambda: next(seconds, None), every_s=3600)  # the test advances it
        async with app.run_test(size=(80, 24)) as pilot:
            app.advance()
            app.advance()
            await pilot.pause()
            # A band's row is labelled by the upper edge of the two bands it draws.
            assert "r1 · 3 s\n" in screen(app) and "≤10 ms" in screen(app)
            await pilot.press("h")
            assert "r1 · 3 s · ttfb heatmap\n" in screen(app) and "≤5 ms" in screen(app)
            await pilot.press("h")
            assert "r1 · 3 s · service heatmap\n" in screen(app) and "≤100 µs" in screen(app)
            await pilot.press("q")

    asyncio.run(drive())
