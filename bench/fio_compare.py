#!/usr/bin/env python3
"""Side-by-side benchmark of fio and iowatt on the same jobs, in the same run.

Usage::

    python bench/fio_compare.py                      # defaults: 1 GiB, 10 s, 3 reps, all jobs
    python bench/fio_compare.py --runtime 3 --reps 3 --jobs a,b --targets shm
    python bench/fio_compare.py --json-out /tmp/fio_compare.json
    python bench/fio_compare.py --smoke              # 16 MiB, 1 s, 2 reps, jobs a,b on shm

Jobs (each on every target: ``shm`` = a file in /dev/shm, tmpfs, always buffered;
``disk`` = a file under /var/tmp on the root file system):

    a  4k random read,      psync,    QD1,  1 thread
    b  4k random read,      io_uring, QD32, 1 thread (O_DIRECT on disk, buffered on shm)
    c  1m sequential read,  psync,    QD1,  1 thread (buffered)
    d  4k random write,     psync,    QD1,  1 thread (O_DIRECT on disk, buffered on shm)

Method. Both tools get identical parameters (I/O size, engine, depth, threads, file size,
runtime, direct/buffered). fio lays its file out once per target before the measured reps
(``--create_only=1``, not timed) and the file is deleted at the end. The layout uses a read
job so fio writes every block: a write job would only fallocate the file, and ext4 answers
reads of unwritten extents with zeros without touching the device. iowatt lays out and
deletes its own file in each run (also not timed). Both tools drop the file's page cache
when a run starts. The runs are interleaved, the order swapped every rep -- fio, iowatt,
iowatt, fio, ... -- so slow drifts of this noisy VM (neighbours, host page cache) hit both
tools alike, and every figure is the median over the reps, with the IOPS min-max shown to
expose the noise.
iowatt's ``summary.json`` carries a ``fio`` section with exactly fio's JSON shape
(``jobs[0]``), so one parser reads both tools.

Per rep: IOPS, completion-latency p50/p99 (``clat_ns`` percentiles), and CPU time per
I/O = (usr_cpu + sys_cpu) / 100 x job_runtime / 1000 / total_ios. Ratios are iowatt/fio
on the medians: IOPS (goal >= 1.0), CPU per I/O (goal <= 1.0) and p50 (should be within
5 % of 1.0).

If fio is not installed the script installs it with ``apt-get install -y fio`` (after
``apt-get update`` if the first attempt fails). Standard library only; Python 3.10+.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from _smoke import alternate, fmt, median_of, parse, ratio, ratio_line, render_table, tail

TOOLS = ("fio", "iowatt")
# Parent directories; each run works in a fresh iowatt-fio-compare-* directory inside.
DEFAULT_TARGETS = {"shm": Path("/dev/shm"), "disk": Path("/var/tmp")}
FIO_FILE = "iowatt-fio.dat"
P50_TOLERANCE = 0.05
EN_DASH = "\u2013"
MICRO = "\u00b5"


@dataclass(frozen=True)
class Job:
    """One workload, described in both tools' vocabularies."""

    name: str
    fio_rw: str
    iowatt_workload: str
    bs: str
    engine: str
    iodepth: int
    direct_on_disk: bool

    @property
    def is_write(self) -> bool:
        return "write" in self.fio_rw

    def direct(self, target: str) -> bool:
        """O_DIRECT only on the disk target; tmpfs runs are buffered."""
        return self.direct_on_disk and target == "disk"

    def describe(self, target: str) -> str:
        mode = "direct" if self.direct(target) else "buffered"
        return f"{self.bs} {self.fio_rw} {self.engine} QD{self.iodepth} {mode}"


JOBS: dict[str, Job] = {
    "a": Job("a", "randread", "randomread", "4k", "psync", 1, False),
    "b": Job("b", "randread", "randomread", "4k", "io_uring", 32, True),
    "c": Job("c", "read", "singlestreamread", "1m", "psync", 1, False),
    "d": Job("d", "randwrite", "randomwrite", "4k", "psync", 1, True),
}


@dataclass
class Settings:
    size: str
    runtime: int
    reps: int
    targets: dict[str, Path]
    jobs: list[Job]
    json_out: Path | None
    fio: str = "fio"
    iowatt: str = "iowatt"


@dataclass
class Rep:
    """One measured run of one tool."""

    target: str
    job: str
    tool: str
    rep: int
    ok: bool
    cmd: list[str]
    wall_s: float
    iops: float | None = None
    p50_us: float | None = None
    p99_us: float | None = None
    cpu_us_per_io: float | None = None
    total_ios: int | None = None
    usr_cpu: float | None = None
    sys_cpu: float | None = None
    job_runtime_ms: float | None = None
    error: str | None = None


@dataclass
class Summary:
    """Medians over the successful reps of one (target, job, tool)."""

    n: int
    iops: float | None = None
    iops_min: float | None = None
    iops_max: float | None = None
    p50_us: float | None = None
    p99_us: float | None = None
    cpu_us_per_io: float | None = None
    errors: list[str] = field(default_factory=list)


class ToolError(RuntimeError):
    """A benchmark tool failed or printed something we cannot parse."""


# --------------------------------------------------------------------------------------------
# Environment
# --------------------------------------------------------------------------------------------


def ensure_fio() -> str:
    """Path of fio, installing it with apt-get if it is missing."""
    found = shutil.which("fio")
    if found:
        return found
    print("fio not found: installing it with `apt-get install -y fio` ...", flush=True)
    install = ["apt-get", "install", "-y", "fio"]
    if subprocess.run(install, check=False).returncode != 0:
        print("apt-get install failed: running `apt-get update` and retrying ...", flush=True)
        subprocess.run(["apt-get", "update"], check=False)
        subprocess.run(install, check=True)
    found = shutil.which("fio")
    if not found:
        sys.exit("fio is still not on PATH after installing it")
    print(f"installed fio at {found}", flush=True)
    return found


def ensure_iowatt() -> str:
    found = shutil.which("iowatt")
    if not found:
        sys.exit("iowatt is not on PATH (install the project, e.g. `pip install -e .`)")
    return found


def version_of(cmd: list[str]) -> str:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=60)
    except OSError as e:
        return f"unknown ({e})"
    text = (out.stdout or out.stderr).strip()
    if out.returncode != 0 or not text:
        return f"unknown (exit {out.returncode})"
    return text.splitlines()[0]


def machine_info(settings: Settings) -> dict[str, Any]:
    return {
        "nproc": os.cpu_count(),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "fio_version": version_of([settings.fio, "--version"]),
        "iowatt_version": version_of([settings.iowatt, "--version"]),
        "runtime_s": settings.runtime,
        "size": settings.size,
        "reps": settings.reps,
        "targets": {name: str(path) for name, path in settings.targets.items()},
        "jobs": [job.name for job in settings.jobs],
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


# --------------------------------------------------------------------------------------------
# Commands
# --------------------------------------------------------------------------------------------


def fio_size(size: str) -> str:
    """fio spelling of a size such as ``1g`` or ``512MiB`` (fio's kb_base is 1024)."""
    return size.lower().removesuffix("ib").removesuffix("b").upper()


def fio_cmd(settings: Settings, job: Job, target: str, directory: Path) -> list[str]:
    cmd = [
        settings.fio,
        f"--name={job.name}",
        f"--filename={directory / FIO_FILE}",
        f"--rw={job.fio_rw}",
        f"--bs={job.bs}",
        f"--ioengine={job.engine}",
        f"--iodepth={job.iodepth}",
        "--numjobs=1",
        f"--size={fio_size(settings.size)}",
        f"--runtime={settings.runtime}",
        "--time_based",
    ]
    if job.direct(target):
        cmd.append("--direct=1")
    return [*cmd, "--percentile_list=50:99:99.9", "--output-format=json"]


def fio_layout_cmd(settings: Settings, directory: Path) -> list[str]:
    return [
        settings.fio,
        "--name=layout",
        f"--filename={directory / FIO_FILE}",
        "--rw=read",  # a read job makes fio write every block; a write job only fallocates
        "--bs=1m",
        f"--size={fio_size(settings.size)}",
        "--create_only=1",
        "--output-format=json",
    ]


def iowatt_cmd(
    settings: Settings, job: Job, target: str, directory: Path, results: Path
) -> list[str]:
    return [
        settings.iowatt,
        "bench",
        job.iowatt_workload,
        "--iosize",
        job.bs,
        "--engine",
        job.engine,
        "--iodepth",
        str(job.iodepth),
        "--nthreads",
        "1",
        "--filesize",
        settings.size.lower(),
        "--runtime",
        f"{settings.runtime}s",
        "--target",
        str(directory),
        "--directio" if job.direct(target) else "--buffered",
        "--results",
        str(results),
        "--json",
        "--no-report",
        "--quiet",
    ]


def run_json(cmd: list[str], timeout: float) -> dict[str, Any]:
    """Run a command and parse the JSON document it prints on stdout."""
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise ToolError(f"timed out after {timeout:.0f} s") from e
    if out.returncode != 0:
        raise ToolError(f"exit {out.returncode}: {tail(out.stderr or out.stdout)}")
    text = out.stdout
    start = text.find("{")  # fio may print notes before the JSON document
    if start < 0:
        raise ToolError(f"no JSON on stdout: {tail(out.stderr or text)}")
    try:
        doc: dict[str, Any] = json.loads(text[start:])
    except json.JSONDecodeError as e:
        raise ToolError(f"bad JSON on stdout: {e}") from e
    return doc


# --------------------------------------------------------------------------------------------
# Parsing (same function for both tools: iowatt's summary["fio"] mirrors fio's JSON)
# --------------------------------------------------------------------------------------------


def fio_job(doc: dict[str, Any], tool: str) -> dict[str, Any]:
    root = doc.get("fio", {}) if tool == "iowatt" else doc
    jobs = root.get("jobs") or []
    if not jobs:
        raise ToolError(f"{tool}: no jobs[0] in the JSON output")
    job: dict[str, Any] = jobs[0]
    if job.get("error"):
        raise ToolError(f"{tool}: job error {job['error']}")
    return job


def percentile_us(clat: dict[str, Any], key: str) -> float:
    return float(clat["percentile"][key]) / 1000.0


def parse_job(job: dict[str, Any], is_write: bool) -> dict[str, Any]:
    """IOPS, p50/p99 completion latency (µs) and CPU per I/O (µs) from a fio-shaped job."""
    side = job["write" if is_write else "read"]
    total_ios = int(side["total_ios"])
    usr, sys_ = float(job["usr_cpu"]), float(job["sys_cpu"])
    runtime_ms = float(job["job_runtime"])
    cpu_s = (usr + sys_) / 100.0 * runtime_ms / 1000.0
    return {
        "iops": float(side["iops"]),
        "p50_us": percentile_us(side["clat_ns"], "50.000000"),
        "p99_us": percentile_us(side["clat_ns"], "99.000000"),
        "cpu_us_per_io": cpu_s / total_ios * 1e6 if total_ios else None,
        "total_ios": total_ios,
        "usr_cpu": usr,
        "sys_cpu": sys_,
        "job_runtime_ms": runtime_ms,
    }


# --------------------------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------------------------


def measure(
    settings: Settings, job: Job, target: str, directory: Path, tool: str, rep: int, results: Path
) -> Rep:
    if tool == "fio":
        cmd = fio_cmd(settings, job, target, directory)
    else:
        cmd = iowatt_cmd(settings, job, target, directory, results)
    timeout = settings.runtime * 3 + 600  # iowatt lays out its file inside the run
    started = time.monotonic()
    try:
        values = parse_job(fio_job(run_json(cmd, timeout), tool), job.is_write)
    except (ToolError, KeyError, TypeError, ValueError) as e:
        wall = time.monotonic() - started
        return Rep(target, job.name, tool, rep, False, cmd, wall, error=f"{type(e).__name__}: {e}")
    return Rep(target, job.name, tool, rep, True, cmd, time.monotonic() - started, **values)


def layout(settings: Settings, directory: Path) -> None:
    """Have fio lay out its file once (not timed)."""
    print(f"laying out {directory / FIO_FILE} ({settings.size}) ...", flush=True)
    try:
        run_json(fio_layout_cmd(settings, directory), timeout=3600)
    except ToolError as e:
        sys.exit(f"fio could not lay out {directory / FIO_FILE}: {e}")


def progress_line(rep: Rep, total: int, done: int) -> str:
    head = f"[{done:>3}/{total}] {rep.target:<4} {rep.job} {rep.tool:<6} rep {rep.rep + 1}"
    if not rep.ok:
        return f"{head}  FAILED: {rep.error}"
    return (
        f"{head}  {rep.iops:>11,.0f} IOPS  p50 {rep.p50_us:8.2f} {MICRO}s  "
        f"p99 {rep.p99_us:8.2f} {MICRO}s  cpu {fmt(rep.cpu_us_per_io, 2)} {MICRO}s/io  "
        f"({rep.wall_s:.1f} s)"
    )


def run_all(settings: Settings, meta: dict[str, Any]) -> list[Rep]:
    reps: list[Rep] = []
    total = len(settings.targets) * len(settings.jobs) * settings.reps * len(TOOLS)
    results = Path(tempfile.mkdtemp(prefix="iowatt-fio-compare-results-"))
    try:
        for target, parent in settings.targets.items():
            parent.mkdir(parents=True, exist_ok=True)
            directory = Path(tempfile.mkdtemp(prefix="iowatt-fio-compare-", dir=parent))
            try:
                layout(settings, directory)
                for job in settings.jobs:
                    for rep in range(settings.reps):
                        for tool in alternate(rep, TOOLS):
                            reps.append(
                                measure(settings, job, target, directory, tool, rep, results)
                            )
                            print(progress_line(reps[-1], total, len(reps)), flush=True)
                            write_json(settings.json_out, meta, reps)
            finally:
                shutil.rmtree(directory, ignore_errors=True)  # fio's file and any leftovers
    finally:
        shutil.rmtree(results, ignore_errors=True)
    return reps


# --------------------------------------------------------------------------------------------
# Summaries and output
# --------------------------------------------------------------------------------------------


def summarize(reps: list[Rep]) -> Summary:
    good = [r for r in reps if r.ok]
    errors = [r.error or "failed" for r in reps if not r.ok]
    if not good:
        return Summary(0, errors=errors)
    iops = [r.iops for r in good if r.iops is not None]
    return Summary(
        n=len(good),
        iops=median_of(list(iops)),
        iops_min=min(iops) if iops else None,
        iops_max=max(iops) if iops else None,
        p50_us=median_of([r.p50_us for r in good]),
        p99_us=median_of([r.p99_us for r in good]),
        cpu_us_per_io=median_of([r.cpu_us_per_io for r in good]),
        errors=errors,
    )


def verdict_iops(r: float | None) -> str:
    return "" if r is None else ("ok" if r >= 1.0 else "SLOWER")


def verdict_cpu(r: float | None) -> str:
    return "" if r is None else ("ok" if r <= 1.0 else "MORE CPU")


def verdict_p50(r: float | None) -> str:
    return "" if r is None else ("ok" if abs(r - 1.0) <= P50_TOLERANCE else "DIFFERS")


def grouped(settings: Settings, reps: list[Rep]) -> list[tuple[str, Job, Summary, Summary]]:
    out = []
    for target in settings.targets:
        for job in settings.jobs:
            mine = [r for r in reps if r.target == target and r.job == job.name]
            fio = summarize([r for r in mine if r.tool == "fio"])
            iow = summarize([r for r in mine if r.tool == "iowatt"])
            out.append((target, job, fio, iow))
    return out


def results_table(groups: list[tuple[str, Job, Summary, Summary]]) -> list[str]:
    header = [
        "target", "job", "workload", "tool", "n", "IOPS med", f"IOPS min{EN_DASH}max",
        f"p50 {MICRO}s", f"p99 {MICRO}s", f"CPU {MICRO}s/IO",
    ]  # fmt: skip
    rows = [header]
    for target, job, fio, iow in groups:
        for tool, s in (("fio", fio), ("iowatt", iow)):
            spread = f"{fmt(s.iops_min)}{EN_DASH}{fmt(s.iops_max)}" if s.n else "n/a"
            rows.append([
                target, job.name, job.describe(target), tool, str(s.n), fmt(s.iops), spread,
                fmt(s.p50_us, 2), fmt(s.p99_us, 2), fmt(s.cpu_us_per_io, 3),
            ])  # fmt: skip
    return render_table(rows, right={4, 5, 6, 7, 8, 9})


def ratio_table(groups: list[tuple[str, Job, Summary, Summary]]) -> list[str]:
    header = ["target", "job", "IOPS (>=1.0)", "", "CPU/IO (<=1.0)", "", "p50 (1.0+-5%)", ""]
    rows = [header]
    for target, job, fio, iow in groups:
        r_iops = ratio(iow.iops, fio.iops)
        r_cpu = ratio(iow.cpu_us_per_io, fio.cpu_us_per_io)
        r_p50 = ratio(iow.p50_us, fio.p50_us)
        rows.append([
            target, job.name, fmt(r_iops, 3), verdict_iops(r_iops), fmt(r_cpu, 3),
            verdict_cpu(r_cpu), fmt(r_p50, 3), verdict_p50(r_p50),
        ])  # fmt: skip
    return render_table(rows, right={2, 4, 6})


def report(settings: Settings, meta: dict[str, Any], reps: list[Rep]) -> str:
    groups = grouped(settings, reps)
    lines = [
        "fio vs iowatt, interleaved (fio first in odd reps, iowatt in even), medians over reps",
        f"machine: nproc={meta['nproc']} kernel={meta['kernel']}",
        f"fio: {meta['fio_version']}   iowatt: {meta['iowatt_version']}",
        f"runtime={settings.runtime}s  size={settings.size}  reps={settings.reps}  "
        + "targets="
        + ", ".join(f"{n}={p}" for n, p in settings.targets.items()),
        "shm = tmpfs, always buffered (b and d use O_DIRECT on disk only); "
        "CPU = (usr+sys) x runtime / total_ios",
        "",
        *results_table(groups),
        "",
        "ratios iowatt/fio (of the medians)",
        "",
        *ratio_table(groups),
    ]
    failures = [r for r in reps if not r.ok]
    if failures:
        lines += ["", "failed runs:"]
        lines += [f"  {r.target} {r.job} {r.tool} rep {r.rep + 1}: {r.error}" for r in failures]
    return "\n".join(lines)


def write_json(path: Path | None, meta: dict[str, Any], reps: list[Rep]) -> None:
    if path is None:
        return
    doc = {"meta": meta, "reps": [asdict(r) for r in reps]}
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=2) + "\n")
    tmp.replace(path)


def write_final_json(settings: Settings, meta: dict[str, Any], reps: list[Rep]) -> None:
    if settings.json_out is None:
        return
    summaries = []
    for target, job, fio, iow in grouped(settings, reps):
        summaries.append({
            "target": target, "job": job.name, "workload": job.describe(target),
            "fio": asdict(fio), "iowatt": asdict(iow),
            "ratio_iops": ratio(iow.iops, fio.iops),
            "ratio_cpu_per_io": ratio(iow.cpu_us_per_io, fio.cpu_us_per_io),
            "ratio_p50": ratio(iow.p50_us, fio.p50_us),
        })  # fmt: skip
    doc = {"meta": meta, "reps": [asdict(r) for r in reps], "summary": summaries}
    settings.json_out.write_text(json.dumps(doc, indent=2) + "\n")


# --------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------


def parse_list(text: str, allowed: set[str], what: str) -> list[str]:
    items = [t.strip() for t in text.split(",") if t.strip()]
    unknown = [t for t in items if t not in allowed]
    if unknown or not items:
        raise argparse.ArgumentTypeError(f"unknown {what}: {','.join(unknown) or '(none)'}")
    return items


def parse_args(argv: list[str] | None) -> Settings:
    p = argparse.ArgumentParser(
        description="Run the same jobs through fio and iowatt, interleaved, and compare.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--size", default="1g", help="file size (1g, 512m, ...)")
    p.add_argument("--runtime", type=int, default=10, help="seconds per run")
    p.add_argument("--reps", type=int, default=3, help="runs per tool and job (>= 1)")
    p.add_argument("--targets", default="shm,disk", help="comma list of shm, disk")
    p.add_argument("--jobs", default="a,b,c,d", help="comma list of a, b, c, d")
    p.add_argument("--shm-dir", type=Path, default=DEFAULT_TARGETS["shm"], help="tmpfs parent")
    p.add_argument("--disk-dir", type=Path, default=DEFAULT_TARGETS["disk"], help="disk parent")
    p.add_argument("--json-out", type=Path, help="write the raw per-rep numbers here")
    a = parse(p, {"size": "16m", "runtime": 1, "reps": 2}, argv, {"targets": "shm", "jobs": "a,b"})
    try:
        targets = parse_list(a.targets, set(DEFAULT_TARGETS), "target")
        jobs = parse_list(a.jobs, set(JOBS), "job")
    except argparse.ArgumentTypeError as e:
        p.error(str(e))
    if a.reps < 1 or a.runtime < 1:
        p.error("--reps and --runtime must be at least 1")
    dirs = {"shm": a.shm_dir, "disk": a.disk_dir}
    return Settings(
        size=a.size,
        runtime=a.runtime,
        reps=a.reps,
        targets={t: dirs[t] for t in targets},
        jobs=[JOBS[j] for j in jobs],
        json_out=a.json_out,
    )


def main(argv: list[str] | None = None) -> int:
    settings = parse_args(argv)
    # On SIGTERM (e.g. from `timeout`) unwind normally, so the 1 GiB files are removed.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    settings.fio = ensure_fio()
    settings.iowatt = ensure_iowatt()
    meta = machine_info(settings)
    runs = len(settings.targets) * len(settings.jobs) * settings.reps * len(TOOLS)
    print(
        f"{runs} runs of {settings.runtime} s (about {runs * settings.runtime / 60:.0f} min "
        "plus file layout)",
        flush=True,
    )
    reps = run_all(settings, meta)
    print()
    print(report(settings, meta, reps))
    write_final_json(settings, meta, reps)
    for target, job, fio, iow in grouped(settings, reps):
        name = f"{target} {job.name} iowatt/fio"
        ratio_line(f"{name} IOPS", ratio(iow.iops, fio.iops), ">= 1.0")
        ratio_line(f"{name} CPU/IO", ratio(iow.cpu_us_per_io, fio.cpu_us_per_io), "<= 1.0")
    if settings.json_out:
        print(f"\nraw per-rep numbers: {settings.json_out}")
    return 0 if all(r.ok for r in reps) else 1


if __name__ == "__main__":
    sys.exit(main())
