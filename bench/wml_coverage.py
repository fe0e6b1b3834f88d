#!/usr/bin/env python3
"""The share of FileBench's shipped workload files that iowatt runs to completion.

Usage::

    python bench/wml_coverage.py                      # tests/wml/filebench, 2 s each, /dev/shm
    python bench/wml_coverage.py --runtime 5 --dir /mnt/ext4 --files 'my/*.f' --json
    python bench/wml_coverage.py --smoke              # 4 of the files, 0.5 s each

Each file runs as a user would run it, ``iowatt bench FILE.f --target DIR --runtime Ns``, with
small filesets so that laying out takes seconds, not minutes: every variable of the file whose
name is in SMALL (file counts, thread counts, file sizes) is set to the value there, and any
other size variable above 64 MiB is set to 64 MiB. A file counts as run when iowatt exits 0 and
its summary says the workload completed; the script prints one line per file (ops/s, or the
error's first line) and the share.

Standard library plus the installed ``iowatt`` package; Python 3.10+.
"""

from __future__ import annotations

import argparse
import glob
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from _smoke import parse, ratio_line
from iowatt.errors import IowattError
from iowatt.units import parse_size
from iowatt.wml import parse_file

HERE = Path(__file__).resolve().parent
SHIPPED = HERE.parent / "tests" / "wml" / "filebench"
# Values that keep a layout small on any machine (FileBench's own names for them).
SMALL = {"nfiles": "1000", "ndirs": "100", "nthreads": "4", "filesize": "16k",
         "meanfilesize": "16k", "nshadows": "10", "ndbwriters": "2", "nfiles_per_thread": "100",
         "numactivevids": "2", "numpassivevids": "4", "nwriters": "2", "nreaders": "2"}  # fmt: skip
LARGE = 64 << 20  # a single file bigger than this is made this big


def overrides(path: Path) -> dict[str, str]:
    """The --set values that keep this file's filesets small."""
    try:
        variables = parse_file(path, {}, dir=Path("/x")).variables
    except IowattError:
        return {}
    out = {k: v for k, v in SMALL.items() if k in variables}
    for name, text in variables.items():
        try:
            if name not in out and name != "dir" and parse_size(text, name) > LARGE:
                out[name] = "64m"
        except IowattError:
            pass
    return out


def run_one(path: Path, target: Path, runtime: float, iowatt: str) -> tuple[bool, str]:
    results = Path(tempfile.mkdtemp(prefix="iowatt-coverage-"))
    sets = [x for k, v in overrides(path).items() for x in ("--set", f"{k}={v}")]
    cmd = [iowatt, "bench", str(path), "--target", str(target), "--runtime", f"{runtime}s",
           "--results", str(results), "--no-report", "--json", *sets]  # fmt: skip
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=runtime * 20 + 120)
    except subprocess.TimeoutExpired:
        return False, "timed out"
    finally:
        shutil.rmtree(results, ignore_errors=True)
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.startswith("error:")]
        return False, (lines or done.stderr.splitlines() or ["?"])[-1]
    summary = json.loads(done.stdout)
    (workload,) = summary["workloads"].values()
    if workload["status"] != "complete":
        return False, f"{workload['status']}: {workload['reason']}"
    return True, f"{workload['ops_s']:,.0f} ops/s"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", default=str(SHIPPED / "*.f"), help="a glob of .f files")
    ap.add_argument("--dir", type=Path, default=Path("/dev/shm"), help="where they run")
    ap.add_argument("--runtime", type=float, default=2.0, help="seconds each")
    ap.add_argument("--iowatt", default=shutil.which("iowatt") or "iowatt")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parse(ap, {"runtime": 0.5}, narrow={"files": str(SHIPPED / "[vw]*.f")})
    files = sorted(Path(p) for p in glob.glob(args.files))
    if not files:
        print(f"error: no file matches {args.files}", file=sys.stderr)
        return 2
    target = Path(tempfile.mkdtemp(prefix="iowatt-coverage-", dir=args.dir))
    rows = []
    try:
        for path in files:
            ok, said = run_one(path, target, args.runtime, args.iowatt)
            rows.append({"file": path.name, "ran": ok, "result": said})
            if not args.json:
                print(f"{'ran   ' if ok else 'FAILED'} {path.name:<34} {said}", flush=True)
    finally:
        shutil.rmtree(target, ignore_errors=True)
    ran = sum(r["ran"] for r in rows)
    if args.json:
        print(json.dumps({"ran": ran, "files": len(rows), "rows": rows}, indent=2))
    else:
        print(f"{ran} of {len(rows)} files ran to completion ({ran / len(rows):.0%})")
    # No peer: FileBench itself would be the only one, and it is the files' author.
    ratio_line("files run / files", ran / len(rows), "1", file=sys.stderr if args.json else None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
