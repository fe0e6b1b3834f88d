#!/usr/bin/env python3
"""How fast iowatt reads a big access log, beside GoAccess and a plain awk field split.

Usage::

    python bench/trace_parse.py                      # 3.5 M lines, 3 timed runs each
    python bench/trace_parse.py --lines 500000 --runs 5 --json-out /tmp/trace_parse.json
    python bench/trace_parse.py --smoke              # 20,000 lines, a check that it works

Generates a Combined log of ``--lines`` requests with ``iowatt trace generate`` (seeded; client
addresses are IPs, which GoAccess needs), then times with hyperfine, each as a fresh process:

- ``iowatt trace stats LOG --json``: parse every line, then requests, bytes, the busiest second,
  requests per hour, the status and method mix, the top targets and the daily profile;
- ``awk``: split every line into fields and count requests by status and sum bytes (mawk, Debian's
  default awk) — the floor of "reading a log";
- ``goaccess LOG --log-format=COMBINED -o report.json`` (Debian package ``goaccess``), its full
  analysis written as JSON.

Goal: iowatt's time ≤ the faster peer's (ratio ≥ 1.0, peer time / iowatt time).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _smoke import fmt, parse, peer, ratio_line, render_table, timed_runs

AWK = "awk '{s[$9]++; b+=$10} END {for (k in s) print k, s[k]; print b}'"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lines", type=int, default=3_500_000, help="requests in the log")
    ap.add_argument("--runs", type=int, default=3, help="timed runs per command")
    ap.add_argument("--no-goaccess", action="store_true", help="skip GoAccess (slow)")
    ap.add_argument("--json-out", type=Path, help="write the figures here as JSON")
    args = parse(ap, {"lines": 20_000, "runs": 2})
    if shutil.which("iowatt") is None:
        sys.exit("iowatt is not installed: pip install .")
    tool = peer("hyperfine")
    use = {name: args.no_goaccess is False or name != "goaccess" for name in ("awk", "goaccess")}
    present = {name: bool(peer(name)) for name, wanted in use.items() if wanted}
    with tempfile.TemporaryDirectory(prefix="iowatt-trace-parse-", dir="/var/tmp") as tmp:
        root = Path(tmp)
        log = root / "access.log"
        subprocess.run(
            ["iowatt", "trace", "generate", "-o", str(log), "--requests", str(args.lines),
             "--duration", "1d", "--seed", "1"],
            check=True,
        )  # fmt: skip
        size = log.stat().st_size
        commands = {
            "iowatt": f"iowatt trace stats {log} --json",
        }
        if present.get("awk"):
            commands["awk"] = f"{AWK} {log}"
        if present.get("goaccess"):
            commands["goaccess"] = (
                f"goaccess {log} --log-format=COMBINED --no-progress -o {root / 'report.json'}"
            )
        times = timed_runs(commands, args.runs, 1, tool, shell=True)
    medians = {k: statistics.median(v) for k, v in times.items()}
    peers = {k: v for k, v in medians.items() if k != "iowatt"}
    rows = [["command", "median s", "M lines/s", "MB/s", "peer / iowatt"]]
    for name, seconds in medians.items():
        ratio = "" if name == "iowatt" else fmt(seconds / medians["iowatt"], 2)
        rows.append([name, fmt(seconds, 3), fmt(args.lines / seconds / 1e6, 2),
                     fmt(size / seconds / 1e6, 0), ratio])  # fmt: skip
    print(f"{args.lines:,} lines, {size / 1e6:,.0f} MB")
    print("\n".join(render_table(rows, {1, 2, 3, 4})))
    for name in present:
        ratio_line(
            f"{name} time / iowatt time",
            peers[name] / medians["iowatt"] if name in peers else None,
            "≥ 1.0 for the faster peer",
            None if name in peers else name,
        )
    ratio = min(peers.values()) / medians["iowatt"] if peers else None
    if args.json_out:
        args.json_out.write_text(
            json.dumps({"lines": args.lines, "bytes": size, "times": times, "ratio": ratio})
        )


if __name__ == "__main__":
    main()
