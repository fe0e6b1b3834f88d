#!/usr/bin/env python3
"""What serving live metrics costs: a bench's throughput with and without ``--serve``, and
the time a scrape of a hundred running workloads takes.

Usage::

    python bench/serve_overhead.py                        # 5 × 2 runs of 10 s, 100 scrapes
    python bench/serve_overhead.py --runtime 5 --reps 3 --scrapes 50
    python bench/serve_overhead.py --smoke                # 2 pairs of 1 s, 10 workloads

1. ``iowatt bench randomread --target DIR --runtime N --json`` (a 64 MiB file on /dev/shm by
   default, one thread, no rate limit, no report), each a fresh process, alternated plain and
   with ``--serve 0`` while a thread of this script scrapes the served one's endpoint every
   ``--scrape-every`` seconds (urllib), as Prometheus would. Printed: the medians of ops/s,
   served/plain, the plain runs' own spread ((max − min) / median: the noise band) and
   whether the difference is inside a 2 % band. Goal: inside it.
2. One process with ``--workloads`` real engines (``iowatt._engine.WorkloadRun``) running at
   once, each a rate-limited random read on one thread over its own tiny file on /dev/shm,
   each watched on one board (``watch_engine(engine, workload="w000")`` …) served by an
   ``Endpoint``, as a sweep over that many disks would be. Once every engine has merged a
   second of latencies, ``--scrapes`` scrapes of /metrics are timed end to end (request to
   last byte; median, p95, max) beside the board's snapshot alone and the text built from it
   alone, in this process. Goal: ≤ 50 ms for 100 workloads × 3 series (operations, bytes and
   the latency histogram, with the errors counter beside them).

Standard library plus iowatt; Python 3.10+.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import subprocess
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from _smoke import parse, ratio_line

SERVING = re.compile(r"serving metrics on (http://\S+)")
BAND_PCT = 2.0
GOAL_MS = 50.0


def fetch(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=10) as answer:
        return answer.read()


class Scraper(threading.Thread):
    """Scrapes ``url`` every ``every_s`` seconds until stopped; counts answers and failures."""

    def __init__(self, url: str, every_s: float) -> None:
        super().__init__(daemon=True)
        self.url, self.every_s = url, every_s
        self.stop = threading.Event()
        self.ok = self.failed = 0

    def run(self) -> None:
        while not self.stop.wait(self.every_s):
            try:
                fetch(self.url)
                self.ok += 1
            except OSError:
                self.failed += 1  # the run ended between two scrapes, or a real failure


def bench(target: Path, results: Path, runtime: str, filesize: str, serve: bool,
          every_s: float) -> tuple[float, int, int]:  # fmt: skip
    """One bench; its ops/s and, when served, the scrapes answered and failed."""
    cmd = ["iowatt", "bench", "randomread", "--target", str(target), "--results", str(results),
           "--runtime", runtime, "--filesize", filesize, "--nthreads", "1", "--no-report",
           "--json"]  # fmt: skip
    if serve:
        cmd += ["--serve", "0"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    scraper = None
    if serve:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        url = SERVING.search(line)
        if url is None:
            proc.kill()
            raise SystemExit(f"no endpoint announced: {line}{proc.communicate()[1]}")
        scraper = Scraper(url[1], every_s)
        scraper.start()
    out, err = proc.communicate()
    if scraper is not None:
        scraper.stop.set()
        scraper.join()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{err}")
    ops_s = float(json.loads(out)["workloads"]["randomread"]["ops_s"])
    return ops_s, (scraper.ok if scraper else 0), (scraper.failed if scraper else 0)


def throughput(reps: int, runtime: str, filesize: str, where: str, every_s: float) -> dict:
    plain: list[float] = []
    served: list[float] = []
    scrapes = failed = 0
    with tempfile.TemporaryDirectory(prefix="iowatt-serve-overhead-", dir=where) as d:
        target, results = Path(d) / "t", Path(d) / "r"
        target.mkdir()
        for rep in range(reps):
            # Alternated, and the order swapped every repeat, so a drift hits both alike.
            for serve in (False, True) if rep % 2 == 0 else (True, False):
                ops_s, ok, bad = bench(target, results, runtime, filesize, serve, every_s)
                (served if serve else plain).append(ops_s)
                scrapes, failed = scrapes + ok, failed + bad
                print(f"  rep {rep + 1}/{reps} {'served' if serve else 'plain '}: "
                      f"{ops_s:,.0f} ops/s", flush=True)  # fmt: skip
    a, b = statistics.median(plain), statistics.median(served)
    ratio = b / a
    # Each served run beside the plain run next to it: a drift of the machine cancels out.
    paired = [s / p for s, p in zip(served, plain, strict=True)]
    noise = 100 * (max(plain) - min(plain)) / a
    spread = 100 * (max(served) - min(served)) / b
    diff = (ratio - 1) * 100
    if abs(diff) <= BAND_PCT:
        verdict = f"inside the {BAND_PCT:g} % band (goal met)"
    elif abs(diff) <= noise:
        verdict = (f"outside the {BAND_PCT:g} % band but inside the noise band: "
                   "this machine cannot tell them apart")  # fmt: skip
    else:
        verdict = f"outside the {BAND_PCT:g} % band and the noise band: a cost (goal: inside)"
    print(f"plain:  median {a:,.0f} ops/s (min–max {min(plain):,.0f}–{max(plain):,.0f}; "
          f"spread {noise:.1f} %)")  # fmt: skip
    print(f"served: median {b:,.0f} ops/s (min–max {min(served):,.0f}–{max(served):,.0f}; "
          f"spread {spread:.1f} %), scraped every {every_s:g} s: {scrapes} answered, "
          f"{failed} failed")  # fmt: skip
    print(f"served/plain = {ratio:.3f} ({diff:+.1f} %); paired runs: median "
          f"{statistics.median(paired):.3f} (min–max {min(paired):.3f}–{max(paired):.3f}); "
          f"noise band (plain (max − min) / median) {noise:.1f} %")  # fmt: skip
    print(f"  {verdict}")
    return {"plain": plain, "served": served, "ratio": ratio, "paired": paired,
            "noise_pct": noise, "scrapes": scrapes, "scrape_failures": failed}  # fmt: skip


def percentile(values: list[float], p: float) -> float:
    """Nearest rank."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def timings(label: str, ms: list[float]) -> str:
    return (f"{label}: median {statistics.median(ms):.1f} ms, p95 {percentile(ms, 95):.1f} ms, "
            f"max {max(ms):.1f} ms")  # fmt: skip


def scrape_latency(workloads: int, scrapes: int, rate: float, where: str) -> dict:
    from prometheus_client import generate_latest

    from iowatt._engine import WorkloadRun
    from iowatt.bench import Options, plan
    from iowatt.live.board import Board
    from iowatt.live.endpoint import Endpoint, Serve
    from iowatt.live.exposition import registry_of

    board = Board()
    board.begin("serve-overhead", "bench")
    engines = []
    with tempfile.TemporaryDirectory(prefix="iowatt-serve-scrape-", dir=where) as d:
        # Long enough for every scrape; cancelled once they are done.
        runtime = f"{60 + scrapes}s"
        for i in range(workloads):
            work = Path(d) / f"w{i:03d}"
            work.mkdir()
            options = Options(runtime=runtime, filesize="1m", iosize="4k", rate=rate,
                              nthreads=1, seed=i)  # fmt: skip
            (wl,) = plan("randomread", options, results=Path(d) / "results").workloads
            engine = WorkloadRun.fileio(wl.engine_spec(work, device=False))
            board.watch_engine(engine, workload=f"w{i:03d}")
            engines.append(engine)
        endpoint = Endpoint(board, Serve(("127.0.0.1", 0)), lambda _: None)
        assert endpoint.url is not None
        try:
            for engine in engines:
                engine.start()
            # Every engine past its first interval: the histograms are filled.
            deadline = time.monotonic() + 60
            while min(e.live([])["count"] for e in engines) == 0:
                if time.monotonic() > deadline:
                    raise SystemExit("the engines did not measure within 60 s")
                time.sleep(0.1)
            text = fetch(endpoint.url)
            registry = registry_of(board)
            samples = sum(1 for line in text.splitlines() if line and not line.startswith(b"#"))
            served, snap, expo = [], [], []
            for _ in range(scrapes):
                t0 = time.perf_counter()
                fetch(endpoint.url)
                served.append((time.perf_counter() - t0) * 1e3)
                t0 = time.perf_counter()
                board.snapshot()
                t1 = time.perf_counter()
                generate_latest(registry)  # snapshot and text, as a scrape does
                t2 = time.perf_counter()
                snap.append((t1 - t0) * 1e3)
                expo.append((t2 - t1) * 1e3)
                time.sleep(0.05)  # the engines run between scrapes, as with Prometheus
            ops = sum(c.ops for c in board.snapshot().series.values())
        finally:
            endpoint.close()
            for engine in engines:
                engine.cancel()
            for engine in engines:
                engine.wait(30)
    print(f"{workloads} workloads running ({rate:g} reads/s each, {ops:,} operations by the "
          f"end), one exposition: {len(text) / 1024:.0f} KiB, {samples:,} samples")  # fmt: skip
    print(timings(f"  scrape of /metrics, {scrapes}×", served))
    print(timings("  board snapshot alone", snap))
    print(timings("  snapshot + text, in process", expo))
    med = statistics.median(served)
    print(
        f"goal ≤ {GOAL_MS:g} ms per scrape: {'met' if med <= GOAL_MS else 'NOT met'} "
        f"(median; p95 {'within' if percentile(served, 95) <= GOAL_MS else 'over'})"
    )
    return {"workloads": workloads, "bytes": len(text), "samples": samples, "scrape_ms": served,
            "snapshot_ms": snap, "exposition_ms": expo}  # fmt: skip


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--reps", type=int, default=5, help="plain/served pairs [5]")
    p.add_argument("--runtime", default="10s", help="each bench's runtime [10s]")
    p.add_argument("--filesize", default="64m", help="the bench's file [64m]")
    p.add_argument("--scrape-every", type=float, default=1.0, help="seconds [1]")
    p.add_argument("--workloads", type=int, default=100, help="engines scraped at once [100]")
    p.add_argument("--rate", type=float, default=100, help="each engine's reads/s [100]")
    p.add_argument("--scrapes", type=int, default=100, help="scrapes timed [100]")
    p.add_argument("--dir", default="/dev/shm", help="where the files go [/dev/shm]")
    p.add_argument("--skip-throughput", action="store_true", help="only the scrape latency")
    p.add_argument("--json-out", type=Path, help="every run's numbers")
    a = parse(
        p,
        {"reps": 2, "runtime": "1s", "filesize": "8m", "workloads": 10, "scrapes": 10},
    )
    doc = {}
    if not a.skip_throughput:
        print(f"throughput: {a.reps} × (plain, --serve 0) of {a.runtime}, alternated")
        doc["throughput"] = throughput(a.reps, a.runtime, a.filesize, a.dir, a.scrape_every)
        ratio_line("ops/s served/plain", doc["throughput"]["ratio"], "1 ± 0.02")
    print("scrape latency:")
    doc["scrape"] = scrape_latency(a.workloads, a.scrapes, a.rate, a.dir)
    scrape_ms = statistics.median(doc["scrape"]["scrape_ms"])
    ratio_line(f"scrape of {a.workloads} workloads ms / {GOAL_MS:g} ms", scrape_ms / GOAL_MS, "≤ 1")
    if a.json_out:
        a.json_out.write_text(json.dumps(doc, indent=1))


if __name__ == "__main__":
    main()
