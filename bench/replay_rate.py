#!/usr/bin/env python3
"""The replayer beside wrk and httperf against one loopback nginx, and its schedule accuracy.

Usage::

    python bench/replay_rate.py                    # ~4 min
    python bench/replay_rate.py --seconds 3 --rounds 1
    python bench/replay_rate.py --smoke            # 1 s tries, coarse search, ~25 s

nginx (Debian's nginx-light, one worker) serves one 16 KiB file and is pinned to the last CPU;
every client is pinned to CPU 0 (taskset), so the ratios compare the clients, not the server.

1. Keep-alive: `wrk -t1 -c C` (closed loop, its maximum), then `iowatt replay --keep-alive
   --max-conns C` of a log whose requests are all due at once from C client addresses (so it
   runs as fast as C kept-alive connections allow), in alternating rounds, the median of each.
   Goal: iowatt ≥ 1.0× wrk.
2. A new connection per request: the highest offered rate each client sustains open loop
   (answered ≥ 95 % of offered, failures ≤ 1 %), found by doubling then bisecting: `httperf
   --rate R --num-conns N --hog` beside `iowatt replay` of a log of R requests per second spread
   evenly. Goal: iowatt ≥ 1.0× httperf.
3. Schedule accuracy at 80 % of iowatt's rate of (2): send time minus due time (p50, p99, max;
   goal p99 ≤ 1 ms), and time to first byte from the due time and from the send; then the same
   with nginx stopped (SIGSTOP) for 2 s mid-run, whose stall must show in the latencies
   counted from the due time (as wrk2 shows it).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from _smoke import alternate, parse, peer, ratio_line
from support.nginx import nginx

FILE = "/f16k"
CLIENT_CPU = "0"


def busy(pidfile: Path) -> float:
    """CPU seconds nginx's worker has used so far."""
    master = pidfile.read_text().strip()
    worker = subprocess.run(["pgrep", "-P", master], capture_output=True, text=True).stdout.split()
    fields = Path(f"/proc/{worker[0]}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def write_log(path: Path, per_second: list[int], clients: int) -> int:
    """A Combined log with ``per_second[s]`` requests in second s, client addresses in turn."""
    n = 0
    with path.open("w") as f:
        for s, count in enumerate(per_second):
            t = time.strftime("%d/%b/%Y:%H:%M:%S", time.gmtime(1_767_225_600 + s))
            for _ in range(count):
                ip = f"10.{n % clients // 65536}.{n % clients // 256 % 256}.{n % clients % 256}"
                f.write(f'{ip} - - [{t} +0000] "GET {FILE} HTTP/1.1" 200 16384 "-" "-"\n')
                n += 1
    return n


def iowatt(log: Path, url: str, results: Path, *args: str) -> dict:
    cmd = ["taskset", "-c", CLIENT_CPU, sys.executable, "-c",
           "from iowatt.cli import main; main()", "replay", str(log), "--target", url,
           "--results", str(results), "--no-report", "--json", "--timeout", "10s",
           *args]  # fmt: skip
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def run_dir(results: Path, summary: dict) -> Path:
    return results / summary["run_id"]


def wrk(url: str, conns: int, seconds: int) -> float:
    out = subprocess.run(
        ["taskset", "-c", CLIENT_CPU, "wrk", "-t1", f"-c{conns}", f"-d{seconds}s", url + FILE],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    return float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))


def httperf(port: int, rate: int, seconds: float) -> tuple[float, float]:
    """(replies/s over the run, share of connections that failed)."""
    n = int(rate * seconds)
    try:
        out = subprocess.run(
            ["taskset", "-c", CLIENT_CPU, "httperf", "--server", "127.0.0.1", "--port",
             str(port), "--uri", FILE, "--rate", str(rate), "--num-conns", str(n), "--hog",
             "--timeout", "10"],
            capture_output=True, text=True, timeout=seconds * 3 + 20,
        ).stdout  # fmt: skip
    except subprocess.TimeoutExpired:
        # Past ~1,000 open connections httperf's select() loop spins without finishing.
        return 0.0, 1.0
    replies = int(re.search(r"Total: connections \d+ requests \d+ replies (\d+)", out).group(1))
    elapsed = float(re.search(r"test-duration ([\d.]+) s", out).group(1))
    errors = int(re.search(r"Errors: total (\d+)", out).group(1))
    return replies / elapsed, errors / n


def iowatt_open_loop(url: str, rate: int, seconds: float, tmp: Path) -> tuple[float, float]:
    log = tmp / f"rate-{rate}.log"
    n = write_log(log, [rate] * int(seconds), clients=1000)
    s = iowatt(log, url, tmp / "results", "--spread", "even")
    log.unlink()
    r = s["replay"]
    answered = r["answered"] / s["workloads"]["replay"]["runtime_s"]
    return answered, (n - r["success"]) / n


def max_rate(try_rate, start: int, within: float = 0.05) -> tuple[int, float]:
    """The highest rate ``try_rate`` sustains: doubling, then bisecting to ``within``."""

    def ok(rate: int) -> tuple[bool, float]:
        achieved, failed = try_rate(rate)
        print(f"    offered {rate:>7,}/s: answered {achieved:>9,.0f}/s, failed {failed:.1%}")
        return achieved >= 0.95 * rate and failed <= 0.01, achieved

    lo, hi, best = 0, start, 0.0
    while True:
        good, achieved = ok(hi)
        if not good:
            break
        lo, best, hi = hi, achieved, hi * 2
    while hi - lo > max(int(lo * within), 50):
        mid = (lo + hi) // 2
        good, achieved = ok(mid)
        if good:
            lo, best = mid, achieved
        else:
            hi = mid
    return lo, best


def accuracy(url: str, rate: int, seconds: float, tmp: Path, stall: Path | None) -> dict:
    log = tmp / "accuracy.log"
    write_log(log, [rate] * int(seconds), clients=1000)
    results = tmp / "results"
    timer = None
    if stall is not None:
        # SIGSTOP nginx's master and worker 2 s in the middle of the run, as wrk2's ^Z demo.
        def stop_nginx() -> None:
            master = int(stall.read_text())
            pids = [master, *map(int, subprocess.run(["pgrep", "-P", str(master)],
                    capture_output=True, text=True).stdout.split())]  # fmt: skip
            for p in pids:
                os.kill(p, signal.SIGSTOP)
            time.sleep(2)
            for p in pids:
                os.kill(p, signal.SIGCONT)

        timer = threading.Timer(seconds / 2, stop_nginx)
        timer.start()
    s = iowatt(log, url, results, "--spread", "even")
    if timer is not None:
        timer.join()
    t = pq.read_table(run_dir(results, s) / "requests.parquet")

    def pct(col: str) -> tuple[float, float, float]:
        v = t[col].drop_null().to_numpy()
        return (np.percentile(v, 50) / 1e6, np.percentile(v, 99) / 1e6, v.max() / 1e6)

    return {
        "lateness": pct("lateness_ns"),
        "ttfb from due": pct("ttfb_ns"),
        "ttfb from send": pct("ttfb_sent_ns"),
        "failed": t["error"].null_count and 1 - t["error"].null_count / t.num_rows,
        "max_open": s["replay"]["max_open"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=int, default=5, help="length of each measurement")
    ap.add_argument("--conns", type=int, default=64, help="keep-alive connections")
    ap.add_argument("--rounds", type=int, default=3, help="keep-alive rounds (median of each)")
    args = parse(ap, {"seconds": 1, "conns": 16, "rounds": 2})
    # A smoke run stops at the first failed doubling: it checks the search, not the rate.
    within = 1.0 if args.smoke else 0.05
    have = {name: peer(name) is not None for name in ("wrk", "httperf")}
    cpus = os.cpu_count() or 1
    with tempfile.TemporaryDirectory(prefix="iowatt-replay-bench-") as d:
        tmp = Path(d)
        root = tmp / "root"
        root.mkdir()
        (root / FILE[1:]).write_bytes(os.urandom(16384))
        with nginx(root, tmp / "nginx", workers=1, cpu=cpus - 1) as url:
            port = int(url.rsplit(":", 1)[1])
            print(f"nginx 1 worker on CPU {cpus - 1}, clients on CPU {CLIENT_CPU}, {FILE} 16 KiB")
            print(f"\n1. keep-alive, {args.conns} connections, {args.seconds:g} s")
            pid = tmp / "nginx" / "nginx.pid"
            theirs: list[float] = []
            ours: list[float] = []
            busy_of = {"wrk": 0.0, "iowatt": 0.0}
            for rnd in range(args.rounds):
                # wrk goes first in the first round: iowatt's log asks for what wrk last did.
                for side in alternate(rnd, ["wrk", "iowatt"] if have["wrk"] else ["iowatt"]):
                    cpu, t = busy(pid), time.monotonic()
                    if side == "wrk":
                        theirs.append(wrk(url, args.conns, args.seconds))
                        busy_of["wrk"] = (busy(pid) - cpu) / (time.monotonic() - t)
                        continue
                    log = tmp / "keepalive.log"
                    n = int(theirs[-1] * args.seconds) if theirs else 20_000 * args.seconds
                    write_log(log, [n], clients=args.conns)
                    s = iowatt(log, url, tmp / "results", "--keep-alive", "--max-conns",
                               str(args.conns))  # fmt: skip
                    ours.append(s["workloads"]["replay"]["ops_s"])
                    # Over the engine's own time: the CLI's start and writing load no server.
                    busy_of["iowatt"] = (busy(pid) - cpu) / s["workloads"]["replay"]["runtime_s"]
                print(
                    f"   round: wrk {theirs[-1] if theirs else 0:,.0f} req/s (nginx busy "
                    f"{busy_of['wrk']:.0%}), iowatt {ours[-1]:,.0f} req/s (nginx busy "
                    f"{busy_of['iowatt']:.0%})"
                )
            mine = statistics.median(ours)
            w = statistics.median(theirs) if theirs else None
            print(f"   wrk -t1 -c{args.conns}: {w or 0:,.0f} req/s   iowatt: {mine:,.0f} req/s")
            ratio_line("keep-alive req/s iowatt/wrk", mine / w if w else None, "≥ 1.0", "wrk")
            print(f"\n2. a new connection per request, open loop, {args.seconds:g} s per try")
            # One search each: each is a series of tries, too long to interleave.
            rates = {}
            for side in ["httperf", "iowatt"] if have["httperf"] else ["iowatt"]:
                print(f"   {side}:")
                if side == "httperf":
                    rates[side], _ = max_rate(
                        lambda r: httperf(port, r, args.seconds), 2000, within
                    )
                else:
                    rates[side], _ = max_rate(
                        lambda r: iowatt_open_loop(url, r, args.seconds, tmp), 2000, within
                    )
            i_rate, h_rate = rates["iowatt"], rates.get("httperf")
            print(f"   sustained: httperf {h_rate or 0:,}/s   iowatt {i_rate:,}/s")
            ratio_line(
                "new-connection req/s iowatt/httperf",
                i_rate / h_rate if h_rate else None,
                "≥ 1.0",
                "httperf",
            )
            rate = int(i_rate * 0.8)
            seconds = args.seconds * 2 if args.smoke else max(args.seconds * 2, 10)
            for name, stall in (
                ("no stall", None),
                ("nginx stopped 2 s", pid),
            ):
                a = accuracy(url, rate, seconds, tmp, stall)
                print(f"\n3. {rate:,} req/s (80 %), {seconds:g} s, {name}:"
                      f" failed {a['failed']:.2%}, most open {a['max_open']:,}")  # fmt: skip
                for key in ("lateness", "ttfb from due", "ttfb from send"):
                    p50, p99, mx = a[key]
                    print(f"   {key:<15} p50 {p50:8.3f} ms  p99 {p99:8.3f} ms  max {mx:8.3f} ms")
                if stall is None:
                    ratio_line("lateness p99 / 1 ms", a["lateness"][1] / 1.0, "≤ 1")


if __name__ == "__main__":
    main()
