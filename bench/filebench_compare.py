#!/usr/bin/env python3
"""Side-by-side benchmark of FileBench and iowatt on the same FileBench workload files.

Usage::

    python bench/filebench_compare.py --filebench /opt/filebench/filebench --dir /dev/shm
    python bench/filebench_compare.py --filebench FB --dir /mnt/ext4 --runtime 10 \\
        --workloads fileserver,varmail --set nfiles=10000 --set nthreads=16 --repeat 3 --json
    python bench/filebench_compare.py --smoke      # 1 s runs on tmpfs; FileBench if on PATH

``--smoke`` checks that the script still works: fileserver and varmail with 1000 files and 4
threads, 2 repeats of 1 s, in /dev/shm unless ``--dir`` says otherwise. Without FileBench on
PATH it runs iowatt's half on the copies of FileBench's workload files in tests/wml/filebench.

What it needs. A FileBench binary (``--filebench``; this script never builds FileBench) and
FileBench's workload files: ``--workloads-dir``, by default ``workloads/`` beside the binary
(a source tree built in place) or ``../share/filebench/workloads`` (an installed prefix). A
FileBench build looks for its cvar libraries (``cvar-gamma`` etc., used by fileserver, varmail
and webserver) in ``$prefix/lib/filebench``, so run ``make install`` into the prefix given to
``configure`` before using either binary. FileBench needs address-space randomisation off for
its processes (it keeps function pointers in shared memory across fork+exec); every FileBench
run is started under ``setarch <arch> --addr-no-randomize``, or as is when
``/proc/sys/kernel/randomize_va_space`` is already 0. And ``iowatt`` on PATH (or ``--iowatt``).

Method. For each workload (a name in the workloads directory, or a path to a ``.f`` file) the
script writes a copy of the ``.f`` file with ``set $dir=``, each ``--set NAME=VALUE`` and
``run RUNTIME`` substituted (FileBench 1.5 takes no variables on its command line) and runs
``filebench -f COPY``. iowatt runs the original file with the same values as options:
``iowatt bench FILE.f --target DIR --runtime Ns --set NAME=VALUE ... --json``. Both tools work
in the same directory, ``DIR/iowatt-filebench-compare``, which is emptied after every run (the
filesets each tool created) and removed at the end. As root, the page cache is dropped
(``sync; echo 3 > /proc/sys/vm/drop_caches``) before every run. Repeats alternate the order:
FileBench then iowatt in repeats 1, 3, ...; iowatt then FileBench in repeats 2, 4, ...

FileBench's end-of-run text is read with iowatt's own importer (``iowatt.imports``), which
yields the same summary shape as iowatt's ``summary.json``, so one reader serves both tools.
Figures are medians over the repeats: ops/s and MiB/s per workload (FileBench's "IO Summary"
counts every flowop, as iowatt does), and per flowop the mean latency, flagged when the two
tools differ by more than 20 %. FileBench prints ms/op with three decimals (1 us steps), so
ratios of flowops faster than about 10 us (closefile, fsync on tmpfs) are coarse; a difference
of no more than 1 us is marked as within that step rather than flagged.

FileBench stops a run early -- and prints no results -- when a ``createfile`` finds no free
fileset entry ("could not obtain a file"). Its ``deletefile`` skips files another thread has
open, so with few files and many threads the free entries run out: varmail with its own
defaults (1000 files, 16 threads) does so within seconds on tmpfs. Such a run is reported as
failed with FileBench's message; raise ``nfiles`` or lower ``nthreads``.

Standard library plus the installed ``iowatt`` package; Python 3.10+.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from _smoke import fail, fmt, median_of, parse, peer, ratio, ratio_line, render_table, tail

REPO = Path(__file__).resolve().parent.parent
TOOLS = ("filebench", "iowatt")
# FileBench's own workload files, copied into the tests: what --smoke runs without FileBench.
SHIPPED_WORKLOADS = Path(__file__).resolve().parent.parent / "tests" / "wml" / "filebench"
SMOKE_SETS = ["nfiles=1000", "nthreads=4"]
DEFAULT_WORKLOADS = "fileserver,varmail,webserver"
WORKDIR_NAME = "iowatt-filebench-compare"
LATENCY_TOLERANCE = 0.20
TRACE_BASE_S = 1  # the short traced run (see per_op)
TRACE_SLOWDOWN = 2  # a traced run takes about twice its runtime (layout and clean-up crawl)
# System calls in the groups --syscalls prints, in its order; any other call is "other".
SYSCALL_GROUPS = (
    ("open", ("open", "openat", "openat2", "creat")),
    ("stat", ("stat", "lstat", "fstat", "newfstatat", "statx", "stat64", "lstat64", "fstat64",
              "fstatat64", "statfs", "fstatfs")),
    ("unlink", ("unlink", "unlinkat")),
    ("mkdir/rmdir", ("mkdir", "mkdirat", "rmdir")),
    ("rename", ("rename", "renameat", "renameat2")),
    ("getdents", ("getdents", "getdents64")),
    ("read", ("read", "pread64", "readv", "preadv", "preadv2")),
    ("write", ("write", "pwrite64", "writev", "pwritev", "pwritev2")),
    ("lseek", ("lseek", "_llseek")),
    ("close", ("close", "close_range")),
    ("sync", ("fsync", "fdatasync", "sync_file_range", "syncfs", "sync")),
    ("futex", ("futex",)),
)  # fmt: skip
# The groups that are file-system work (a path walk, a directory change): fewer of these per
# operation in iowatt than in FileBench means the two did unequal work.
FS_GROUPS = ("open", "stat", "unlink", "mkdir/rmdir", "rename", "getdents")
SYSCALL_TOLERANCE_ABS = 0.005  # calls per operation
SYSCALL_TOLERANCE_REL = 0.05
# FileBench prints ms/op with three decimals: means closer than this are within its rounding.
FB_RESOLUTION_MS = 0.001
FB_SHM_GLOB = "filebench-shm-*"  # FileBench's shared-memory file in /tmp, left behind if killed
EN_DASH = "\u2013"
_VAR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_FLOWOP_DEF = re.compile(r"^\s*flowop\s+(\w+)\s+name=\"?([^,\s\"]+)", re.M)


class ToolError(RuntimeError):
    """A tool failed, hung or printed something we cannot read."""


@dataclass(frozen=True)
class Workload:
    """One FileBench workload file and the flowops it defines, in the file's order."""

    name: str
    source: Path
    flowops: dict[str, str]  # flowop name -> flowop type (createfile, read, ...)


@dataclass
class Settings:
    filebench: Path | None
    iowatt: str
    dir: Path
    workdir: Path
    runtime: int
    workloads: list[Workload]
    sets: dict[str, str]
    repeat: int
    tools: list[str]
    as_json: bool
    keep: Path | None
    aslr_prefix: list[str] = field(default_factory=list)
    drop_caches: bool = False
    # Workloads whose system calls are counted under strace (--syscalls), and strace itself.
    traced: list[str] = field(default_factory=list)
    strace: str | None = None
    # Put before either tool's command: strace, for the traced runs.
    wrapper: list[str] = field(default_factory=list)
    # Whether this script inherits the processes a tool leaves behind (FileBench's workers,
    # which it never waits for), so that their CPU time is counted: see become_subreaper.
    subreaper: bool = False
    # iowatt.imports.parse, and the error type it raises (iowatt.errors.IowattError).
    import_parse: Any = None
    import_error: type[Exception] = ToolError


@dataclass
class Run:
    """One measured run of one tool on one workload."""

    workload: str
    tool: str
    repeat: int
    position: int  # 0 = ran first in its repeat
    ok: bool
    cmd: list[str]
    wall_s: float
    caches_dropped: bool
    ops: float | None = None  # operations the tool counted (its IO Summary / summary.json)
    ops_s: float | None = None
    mib_s: float | None = None
    # flowop name -> ops, ops_s, mib_s, mean_ms, min_ms, max_ms, p50_ms, p99_ms (None if absent)
    flowops: dict[str, dict[str, float | None]] = field(default_factory=dict)
    error: str | None = None
    # CPU seconds of the tool's processes (getrusage of this script's reaped children): the
    # whole run, start-up and fileset layout included.
    user_s: float | None = None
    sys_s: float | None = None


@dataclass
class Traced:
    """One run of one tool under ``strace -c -f``: its operations and its system calls."""

    workload: str
    tool: str
    runtime: int
    ok: bool
    ops: float | None = None
    calls: dict[str, int] = field(default_factory=dict)  # system call name -> calls
    error: str | None = None


# --------------------------------------------------------------------------------------------
# iowatt: the command and where its summary keeps the figures. Adjust here if the CLI changes.
# --------------------------------------------------------------------------------------------


def iowatt_cmd(settings: Settings, workload: Workload, results: Path) -> list[str]:
    """``iowatt bench FILE.f`` with the values FileBench's copy of the file got."""
    cmd = [
        *settings.wrapper, settings.iowatt, "bench", str(workload.source),
        "--target", str(settings.workdir),
        "--runtime", f"{settings.runtime}s",
    ]  # fmt: skip
    for name, value in settings.sets.items():
        cmd += ["--set", f"{name}={value}"]
    return [*cmd, "--no-report", "--quiet", "--json", "--results", str(results)]


def iowatt_workload(doc: dict[str, Any], workload: Workload) -> dict[str, Any]:
    """The workload's entry in summary.json: ``workloads[name]``, or the only one there is."""
    workloads = doc.get("workloads") or {}
    if workload.name in workloads:
        entry: dict[str, Any] = workloads[workload.name]
        return entry
    if len(workloads) == 1:
        only: dict[str, Any] = next(iter(workloads.values()))
        return only
    raise ToolError(
        f"no workload `{workload.name}` in iowatt's summary (has: {', '.join(workloads) or '-'})"
    )


# --------------------------------------------------------------------------------------------
# FileBench
# --------------------------------------------------------------------------------------------


def load_importer() -> tuple[Any, type[Exception]]:
    """iowatt's FileBench reader (``iowatt.imports.parse``) and its error type, from the
    installed package or, failing that, from this checkout's python/ directory."""
    try:
        from iowatt.errors import IowattError
        from iowatt.imports import parse
    except ImportError:
        sys.path.insert(0, str(REPO / "python"))
        try:
            from iowatt.errors import IowattError
            from iowatt.imports import parse
        except ImportError as e:
            sys.exit(f"cannot import iowatt.imports ({e}): install iowatt (`pip install -e .`)")
    return parse, IowattError


def filebench_script(settings: Settings, workload: Workload) -> str:
    """The workload file with ``$dir``, the --set variables and ``run N`` substituted."""
    text = workload.source.read_text()
    values = {"dir": str(settings.workdir), **settings.sets}
    if re.search(r"^\s*set\s+\$runtime\s*=", text, re.M):
        values["runtime"] = str(settings.runtime)
    prepend = []
    for name, value in values.items():
        pattern = re.compile(rf"^(\s*)set\s+\${re.escape(name)}\s*=.*$", re.M)
        line = f"set ${name}={value}"
        text, count = pattern.subn(r"\g<1>" + line.replace("\\", r"\\"), text)
        if count == 0:
            if name != "dir":
                warn(f"{workload.source.name} sets no ${name}; adding `set ${name}={value}`")
            prepend.append(f"set ${name}={value}\n")
    text, count = re.subn(r"^(\s*)run\b.*$", rf"\g<1>run {settings.runtime}", text, flags=re.M)
    if count == 0:
        text = text.rstrip("\n") + f"\n\nrun {settings.runtime}\n"
    return "".join(prepend) + text


def filebench_cmd(settings: Settings, script: Path) -> list[str]:
    return [*settings.wrapper, *settings.aslr_prefix, str(settings.filebench), "-f", str(script)]


def filebench_failure(text: str) -> str:
    """FileBench's own explanation of a run without an IO Summary, when it gave one."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if "Run stopped early" in line:
            return " ".join(s.strip() for s in lines[i : i + 3])
        for marker in ("NO VALID RESULTS", "Unexpected Process termination", "syntax error"):
            if marker in line:
                return line.strip()
    return f"no `IO Summary:` line: {tail(text)}"


# --------------------------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------------------------


def run_process(
    cmd: list[str], timeout: float, cwd: Path | None = None, merge: bool = False
) -> tuple[int, str, str]:
    """Exit code, stdout and stderr; on a timeout the whole process group is killed."""
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if merge else subprocess.PIPE,
        text=True,
        cwd=cwd,
        start_new_session=True,  # FileBench forks worker processes: kill them all on a hang
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        raise ToolError(f"no result after {timeout:.0f} s, killed: {tail(out or '')}") from None
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        reap_orphans(proc.pid)
    return proc.returncode, out or "", err or ""


def become_subreaper() -> bool:
    """Make this script the reaper of the processes its tools leave behind.

    FileBench never waits for its worker processes; they are reparented when it exits, and
    their CPU time reaches this script's RUSAGE_CHILDREN only if this script reaps them.
    """
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(36, 1, 0, 0, 0) == 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


def reap_orphans(group: int, timeout: float = 30.0) -> None:
    """Wait for every process a tool left behind (see become_subreaper); after ``timeout``
    seconds kill its process group."""
    deadline, killed = time.monotonic() + timeout, False
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid:
            continue
        if time.monotonic() > deadline:
            if killed:
                return
            with contextlib.suppress(ProcessLookupError):
                os.killpg(group, signal.SIGKILL)
            deadline, killed = time.monotonic() + 5, True
        time.sleep(0.02)


def children_cpu() -> tuple[float, float]:
    """User and system CPU seconds of this script's reaped children so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime, usage.ru_stime


def timeout_of(settings: Settings) -> float:
    return settings.runtime * 3 + 600  # both tools lay out their filesets inside the run


def measure_filebench(settings: Settings, workload: Workload, script: Path, out: Path) -> Run:
    cmd = filebench_cmd(settings, script)
    shm_before = set(Path("/tmp").glob(FB_SHM_GLOB))
    try:
        code, text, _ = run_process(cmd, timeout_of(settings), cwd=script.parent, merge=True)
    finally:
        # A killed or crashed FileBench leaves its (sparse, ~180 MB) shared-memory file behind.
        for leftover in set(Path("/tmp").glob(FB_SHM_GLOB)) - shm_before:
            leftover.unlink(missing_ok=True)
    out.write_text(text)
    if "IO Summary:" not in text:
        raise ToolError(f"exit {code}: {filebench_failure(text)}")
    parsed = settings.import_parse(out, "filebench", workload.name)
    if len(parsed.summaries) != 1:
        raise ToolError(f"{len(parsed.summaries)} IO Summary lines; expected one run")
    summary = next(iter(parsed.summaries.values()))
    return Run(workload.name, "filebench", 0, 0, True, cmd, 0.0, False, **figures(summary))


def measure_iowatt(settings: Settings, workload: Workload, results: Path, out: Path) -> Run:
    cmd = iowatt_cmd(settings, workload, results)
    code, stdout, stderr = run_process(cmd, timeout_of(settings))
    out.write_text(stdout + ("\n--- stderr ---\n" + stderr if stderr else ""))
    if code != 0:
        raise ToolError(f"exit {code}: {tail(stderr or stdout)}")
    start = stdout.find("{")
    if start < 0:
        raise ToolError(f"no JSON on stdout: {tail(stderr or stdout)}")
    try:
        doc = json.loads(stdout[start:])
    except json.JSONDecodeError as e:
        raise ToolError(f"bad JSON on stdout: {e}") from e
    entry = iowatt_workload(doc, workload)
    if entry.get("status") not in (None, "complete"):
        raise ToolError(f"iowatt run {entry.get('status')}: {entry.get('reason')}")
    return Run(workload.name, "iowatt", 0, 0, True, cmd, 0.0, False, **figures(entry))


def figures(summary: dict[str, Any]) -> dict[str, Any]:
    """ops/s, MiB/s and per-flowop figures (latencies in ms) of a summary.json workload; the
    FileBench importer writes the same shape."""

    def ms(value: Any) -> float | None:
        return None if value is None else float(value) / 1e6

    flowops = {}
    for name, f in (summary.get("flowops") or {}).items():
        flowops[name] = {
            "ops": f.get("ops"),
            "ops_s": f.get("ops_s"),
            "mib_s": f.get("mib_s"),
            "mean_ms": ms(f.get("mean_ns")),
            "min_ms": ms(f.get("min_ns")),
            "max_ms": ms(f.get("max_ns")),
            "p50_ms": ms(f.get("p50_ns")),
            "p99_ms": ms(f.get("p99_ns")),
        }
    return {
        "ops": summary.get("ops"),
        "ops_s": summary.get("ops_s"),
        "mib_s": summary.get("mib_s"),
        "flowops": flowops,
    }


def measure(
    settings: Settings,
    workload: Workload,
    tool: str,
    rep: int,
    pos: int,
    scratch: Path,
    tag: str | None = None,
) -> Run:
    empty_dir(settings.workdir)
    dropped = drop_caches() if settings.drop_caches else False
    tag = tag or f"{workload.name}.{tool}.{rep + 1}"
    # FileBench's copy of the file for this runtime (the traced runs have their own).
    script = scratch / f"{workload.name}.{settings.runtime}s.f"
    if tool == "filebench" and not script.exists():
        script.write_text(filebench_script(settings, workload))
    started = time.monotonic()
    cpu_before = children_cpu()
    try:
        if tool == "filebench":
            run = measure_filebench(settings, workload, script, scratch / f"{tag}.txt")
        else:
            results = scratch / "iowatt-results"
            run = measure_iowatt(settings, workload, results, scratch / f"{tag}.json")
        cpu_after = children_cpu()
        if tool == "iowatt" or settings.subreaper:
            run.user_s = cpu_after[0] - cpu_before[0]
            run.sys_s = cpu_after[1] - cpu_before[1]
    except (ToolError, OSError, KeyError, TypeError, ValueError, settings.import_error) as e:
        cmd = (
            filebench_cmd(settings, script)
            if tool == "filebench"
            else iowatt_cmd(settings, workload, scratch / "iowatt-results")
        )
        run = Run(workload.name, tool, rep, pos, False, cmd, 0.0, dropped, error=error_text(e))
    finally:
        empty_dir(settings.workdir)  # the filesets this tool created
    run.repeat, run.position, run.caches_dropped = rep, pos, dropped
    run.wall_s = time.monotonic() - started
    return run


# --------------------------------------------------------------------------------------------
# System calls (--syscalls)
# --------------------------------------------------------------------------------------------


def trace_runtimes(settings: Settings) -> tuple[int, int]:
    """The short and the long traced run, in seconds: the run's own length, or 2 s if that is
    1 s (a smoke run), against 1 s."""
    return TRACE_BASE_S, max(settings.runtime, TRACE_BASE_S + 1)


def trace(settings: Settings, workload: Workload, scratch: Path) -> list[Traced]:
    """Each tool once in a short and once in a long run under ``strace -c -f``."""
    assert settings.strace is not None
    out: list[Traced] = []
    for runtime in trace_runtimes(settings):
        for tool in settings.tools:
            counts = scratch / f"{workload.name}.{tool}.strace-{runtime}s.txt"
            traced = replace(
                settings,
                runtime=runtime,
                wrapper=[settings.strace, "-c", "-f", "-o", str(counts)],
            )
            tag = f"{workload.name}.{tool}.traced-{runtime}s"
            run = measure(traced, workload, tool, 0, 0, scratch, tag)
            t = Traced(workload.name, tool, runtime, run.ok, run.ops, error=run.error)
            if run.ok:
                try:
                    t.calls = strace_counts(counts.read_text())
                except (OSError, ValueError) as e:
                    t.ok, t.error = False, f"strace -c output: {error_text(e)}"
                if t.ok and t.ops is None:
                    t.ok, t.error = False, "no operation count"
            out.append(t)
            state = f"{fmt(t.ops)} ops" if t.ok else f"FAILED: {t.error}"
            print(
                f"[strace] {workload.name} {tool:<9} {runtime} s  {state}  ({run.wall_s:.1f} s)",
                file=sys.stderr,
                flush=True,
            )
    return out


def strace_counts(text: str) -> dict[str, int]:
    """Calls per system call from ``strace -c`` (``% time seconds usecs/call calls [errors]
    syscall`` rows between dashed lines; the ``total`` row is left out)."""
    counts: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 5 or not parts[3].isdigit() or parts[-1] == "total":
            continue
        counts[parts[-1]] = counts.get(parts[-1], 0) + int(parts[3])
    if not counts:
        raise ValueError(f"no counts in: {tail(text)}")
    return counts


def group_of(call: str) -> str:
    for name, members in SYSCALL_GROUPS:
        if call in members:
            return name
    return "other"


def per_op(traces: list[Traced], tool: str) -> dict[str, Any] | None:
    """A tool's system calls per operation: (calls in the long run - calls in the short run) /
    (ops in the long run - ops in the short run), per call and per group, and the total.

    The difference leaves out what both runs do once -- start-up, fileset layout, clean-up --
    which divided by each tool's own (unequal) operation count would skew the comparison. When
    the long run counted too few more operations than the short one for that (under strace a
    run's pace varies), the long run alone is used: ``method`` says which.
    """
    short_s, long_s = (
        min(t.runtime for t in traces),
        max(t.runtime for t in traces),
    )
    pair = [t for t in traces if t.tool == tool and t.ok]
    short = next((t for t in pair if t.runtime == short_s), None)
    long = next((t for t in pair if t.runtime == long_s), None)
    if long is None or not long.ops:
        return None
    if short is not None and short.ops is not None and long.ops - short.ops > long.ops / 5:
        method, ops, base = "difference", long.ops - short.ops, short.calls
    else:
        method, ops, base = "whole run", long.ops, {}
    calls = {
        c: (long.calls.get(c, 0) - base.get(c, 0)) / ops
        for c in sorted(set(long.calls) | set(base))
    }
    groups: dict[str, float] = {}
    for c, n in calls.items():
        groups[group_of(c)] = groups.get(group_of(c), 0.0) + n
    return {
        "method": method,
        "ops": [None if short is None else short.ops, long.ops],
        "calls": calls,
        "groups": groups,
        "total": sum(calls.values()),
    }


def syscall_summary(settings: Settings, traces: list[Traced]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in settings.traced:
        mine = [t for t in traces if t.workload == name]
        if mine:
            out[name] = {tool: per_op(mine, tool) for tool in settings.tools}
    return out


def unequal_work(name: str, s: dict[str, Any]) -> list[str]:
    """Where iowatt makes fewer (or more) file-system calls per operation than FileBench."""
    fb, iw = s.get("filebench"), s.get("iowatt")
    if fb is None or iw is None:
        return []
    lines = []
    for group in FS_GROUPS:
        a, b = fb["groups"].get(group, 0.0), iw["groups"].get(group, 0.0)
        if abs(a - b) <= max(SYSCALL_TOLERANCE_ABS, SYSCALL_TOLERANCE_REL * max(a, b)):
            continue
        if b < a:
            lines.append(
                f"unequal work: {name}: iowatt makes {b:.3f} {group} calls per operation, "
                f"FileBench {a:.3f}: FileBench does file-system work iowatt does not"
            )
        else:
            lines.append(
                f"more calls: {name}: iowatt makes {b:.3f} {group} calls per operation, "
                f"FileBench {a:.3f}"
            )
    return lines


def run_all(settings: Settings, meta: dict[str, Any]) -> tuple[list[Run], list[Traced]]:
    runs: list[Run] = []
    traces: list[Traced] = []
    total = len(settings.workloads) * settings.repeat * len(settings.tools)
    scratch = Path(tempfile.mkdtemp(prefix="iowatt-filebench-compare-"))
    settings.workdir.mkdir(parents=True, exist_ok=True)
    try:
        for workload in settings.workloads:
            for rep in range(settings.repeat):
                order = settings.tools if rep % 2 == 0 else settings.tools[::-1]
                for pos, tool in enumerate(order):
                    runs.append(measure(settings, workload, tool, rep, pos, scratch))
                    progress(runs[-1], len(runs), total)
            if workload.name in settings.traced:
                traces += trace(settings, workload, scratch)
    finally:
        if settings.keep:
            settings.keep.mkdir(parents=True, exist_ok=True)
            for item in scratch.iterdir():
                if item.is_file():
                    shutil.copy2(item, settings.keep / item.name)
        shutil.rmtree(scratch, ignore_errors=True)
        shutil.rmtree(settings.workdir, ignore_errors=True)
    return runs, traces


def empty_dir(directory: Path) -> None:
    if not directory.is_dir():
        directory.mkdir(parents=True, exist_ok=True)
        return
    for child in directory.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink(missing_ok=True)


def drop_caches() -> bool:
    os.sync()
    try:
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
    except OSError:
        return False
    return True


# --------------------------------------------------------------------------------------------
# Environment
# --------------------------------------------------------------------------------------------


def aslr_prefix() -> list[str]:
    """The command prefix that starts FileBench with address-space randomisation off."""
    setarch = shutil.which("setarch")
    if setarch:
        prefix = [setarch, platform.machine(), "--addr-no-randomize"]
        probe = subprocess.run([*prefix, "true"], capture_output=True, check=False)
        if probe.returncode == 0:
            return prefix
    try:
        if Path("/proc/sys/kernel/randomize_va_space").read_text().strip() == "0":
            return []
    except OSError:
        pass
    sys.exit(
        "FileBench needs ASLR off, and `setarch --addr-no-randomize` is unavailable here: "
        "run `sysctl kernel.randomize_va_space=0` first (and restore it afterwards)"
    )


def default_workloads_dir(binary: Path) -> Path | None:
    """``workloads/`` beside the binary (a source tree), or ``../share/filebench/workloads``
    (an installed prefix)."""
    installed = binary.parent.parent / "share" / "filebench" / "workloads"
    for candidate in (binary.parent / "workloads", installed):
        if candidate.is_dir():
            return candidate
    return None


def load_workload(spec: str, directory: Path | None) -> Workload:
    path = Path(spec)
    if spec.endswith(".f"):
        if not path.is_file():
            sys.exit(f"no workload file {path}")
    else:
        if directory is None:
            sys.exit(
                f"cannot find FileBench's workload files for `{spec}`: no workloads/ beside "
                "the binary or in ../share/filebench; pass --workloads-dir"
            )
        path = directory / f"{spec}.f"
        if not path.is_file():
            names = sorted(p.stem for p in directory.glob("*.f"))
            sys.exit(f"no workload `{spec}` in {directory} (has: {', '.join(names)})")
    text = path.read_text()
    flowops = {name: kind for kind, name in _FLOWOP_DEF.findall(text)}
    return Workload(path.stem, path.resolve(), flowops)


def version_of(cmd: list[str], pattern: str | None = None) -> str:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"unknown ({e})"
    text = (out.stdout + out.stderr).strip()
    if pattern:
        m = re.search(pattern, text)
        return m[1] if m else "unknown"
    return text.splitlines()[0] if out.returncode == 0 and text else f"unknown ({out.returncode})"


def fs_type(path: Path) -> str:
    """File system type of the mount holding ``path`` (longest mount-point prefix)."""
    best, kind = "", "unknown"
    try:
        mounts = Path("/proc/mounts").read_text().splitlines()
    except OSError:
        return kind
    resolved = str(path.resolve())
    for line in mounts:
        parts = line.split()
        if len(parts) < 3:
            continue
        point = parts[1].replace("\\040", " ")
        inside = resolved == point or resolved.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):
            best, kind = point, f"{parts[2]} ({parts[0]})"
    return kind


def machine_info(settings: Settings) -> dict[str, Any]:
    return {
        "nproc": os.cpu_count(),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "filebench": str(settings.filebench),
        "filebench_version": version_of(
            [str(settings.filebench), "-h"], r"[Ff]ilebench [Vv]ersion:? (\S+)"
        )
        if settings.filebench
        else None,
        "iowatt": settings.iowatt,
        "iowatt_version": version_of([settings.iowatt, "--version"])
        if "iowatt" in settings.tools
        else None,
        "dir": str(settings.dir),
        "workdir": str(settings.workdir),
        "filesystem": fs_type(settings.dir),
        "runtime_s": settings.runtime,
        "repeat": settings.repeat,
        "sets": settings.sets,
        "tools": settings.tools,
        "workloads": {w.name: str(w.source) for w in settings.workloads},
        "aslr": " ".join(settings.aslr_prefix) or "randomize_va_space=0",
        "drop_caches": settings.drop_caches,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


# --------------------------------------------------------------------------------------------
# Summaries
# --------------------------------------------------------------------------------------------


def tool_summary(runs: list[Run]) -> dict[str, Any]:
    good = [r for r in runs if r.ok]
    ops = [r.ops_s for r in good if r.ops_s is not None]
    cpu = [r for r in good if r.user_s is not None and r.sys_s is not None and r.ops]
    return {
        "n": len(good),
        "user_s": median_of([r.user_s for r in cpu]),
        "sys_s": median_of([r.sys_s for r in cpu]),
        # sys / (user + sys), and CPU microseconds per counted operation, per run
        "kernel_share": median_of([kernel_share(r) for r in cpu]),
        "user_us_op": median_of([1e6 * (r.user_s or 0) / (r.ops or 1) for r in cpu]),
        "sys_us_op": median_of([1e6 * (r.sys_s or 0) / (r.ops or 1) for r in cpu]),
        "ops_s": median_of(list(ops)),
        "ops_s_min": min(ops) if ops else None,
        "ops_s_max": max(ops) if ops else None,
        "mib_s": median_of([r.mib_s for r in good]),
        "errors": [r.error for r in runs if not r.ok],
    }


def kernel_share(run: Run) -> float | None:
    cpu = (run.user_s or 0) + (run.sys_s or 0)
    return (run.sys_s or 0) / cpu if cpu > 0 else None


def flowop_summary(runs: list[Run], name: str) -> dict[str, float | None] | None:
    rows = [r.flowops[name] for r in runs if r.ok and name in r.flowops]
    if not rows:
        return None
    mins = [x["min_ms"] for x in rows if x["min_ms"] is not None]
    maxs = [x["max_ms"] for x in rows if x["max_ms"] is not None]
    return {
        "ops_s": median_of([x["ops_s"] for x in rows]),
        "mib_s": median_of([x["mib_s"] for x in rows]),
        "mean_ms": median_of([x["mean_ms"] for x in rows]),
        "min_ms": min(mins) if mins else None,
        "max_ms": max(maxs) if maxs else None,
        "p50_ms": median_of([x["p50_ms"] for x in rows]),
        "p99_ms": median_of([x["p99_ms"] for x in rows]),
    }


def summarize(settings: Settings, runs: list[Run]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for w in settings.workloads:
        mine = [r for r in runs if r.workload == w.name]
        by_tool = {t: [r for r in mine if r.tool == t] for t in TOOLS}
        fb, iw = tool_summary(by_tool["filebench"]), tool_summary(by_tool["iowatt"])
        # The file's order first, then any flowop a tool reported that the file does not name.
        names = list(w.flowops)
        for r in mine:
            names += [n for n in r.flowops if n not in names]
        flowops = []
        for name in names:
            f_fb = flowop_summary(by_tool["filebench"], name)
            f_iw = flowop_summary(by_tool["iowatt"], name)
            mean_fb, mean_iw = (f_fb or {}).get("mean_ms"), (f_iw or {}).get("mean_ms")
            r_mean = ratio(mean_iw, mean_fb)
            flowops.append({
                "name": name, "type": w.flowops.get(name), "filebench": f_fb, "iowatt": f_iw,
                "ratio_mean": r_mean,
                "flagged": r_mean is not None and abs(r_mean - 1) > LATENCY_TOLERANCE,
                # A difference no larger than FileBench's printing step is no evidence.
                "within_resolution": mean_fb is not None and mean_iw is not None
                and abs(mean_iw - mean_fb) <= FB_RESOLUTION_MS,
            })  # fmt: skip
        out[w.name] = {
            "filebench": fb,
            "iowatt": iw,
            "ratio_ops_s": ratio(iw["ops_s"], fb["ops_s"]),
            "ratio_mib_s": ratio(iw["mib_s"], fb["mib_s"]),
            "flowops": flowops,
        }
    return out


# --------------------------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------------------------


def workload_table(summary: dict[str, Any], tools: list[str]) -> list[str]:
    header = ["workload", "tool", "n", "ops/s med", f"ops/s min{EN_DASH}max", "MiB/s med"]
    rows = [header]
    for name, s in summary.items():
        for tool in (t for t in TOOLS if t in tools):
            t = s[tool]
            spread = f"{fmt(t['ops_s_min'])}{EN_DASH}{fmt(t['ops_s_max'])}" if t["n"] else "n/a"
            rows.append([name, tool, str(t["n"]), fmt(t["ops_s"]), spread, fmt(t["mib_s"], 1)])
        if len(tools) == len(TOOLS):
            ratios = [fmt(s["ratio_ops_s"], 3), "", fmt(s["ratio_mib_s"], 3)]
            rows.append([name, "iowatt/FileBench", "", *ratios])
    return render_table(rows, right={2, 3, 4, 5})


def flowop_table(name: str, s: dict[str, Any], tools: list[str]) -> list[str]:
    """One row per flowop; the columns of the tools that ran (and the ratio if both did)."""

    def fb_range(fb: dict[str, Any]) -> str:
        if fb.get("min_ms") is None:
            return "n/a"
        return f"{fmt(fb['min_ms'], 3)}{EN_DASH}{fmt(fb.get('max_ms'), 3)}"

    def flag(f: dict[str, Any]) -> str:
        if not f["flagged"]:
            return ""
        if f["within_resolution"]:
            return f"(>{LATENCY_TOLERANCE:.0%} but within FileBench's 1 us step)"
        return f"DIFFERS >{LATENCY_TOLERANCE:.0%}"

    columns: list[tuple[str, Any]] = [
        ("flowop", lambda f, fb, iw: f["name"]),
        ("type", lambda f, fb, iw: f["type"] or "?"),
    ]
    if "filebench" in tools:
        columns += [
            ("FB ops/s", lambda f, fb, iw: fmt(fb.get("ops_s"))),
            ("FB mean ms", lambda f, fb, iw: fmt(fb.get("mean_ms"), 3)),
            (f"FB min{EN_DASH}max ms", lambda f, fb, iw: fb_range(fb)),
        ]
    if "iowatt" in tools:
        columns += [
            ("iowatt ops/s", lambda f, fb, iw: fmt(iw.get("ops_s"))),
            ("iowatt mean ms", lambda f, fb, iw: fmt(iw.get("mean_ms"), 3)),
            ("iowatt p99 ms", lambda f, fb, iw: fmt(iw.get("p99_ms"), 3)),
        ]
    if len(tools) == len(TOOLS):
        columns += [
            ("ratio", lambda f, fb, iw: fmt(f["ratio_mean"], 2)),
            ("", lambda f, fb, iw: flag(f)),
        ]
    rows = [[head for head, _ in columns]]
    for f in s["flowops"]:
        fb, iw = f["filebench"] or {}, f["iowatt"] or {}
        rows.append([cell(f, fb, iw) for _, cell in columns])
    right = {i for i, (head, _) in enumerate(columns) if head not in ("flowop", "type", "")}
    title = f"{name}: latency per flowop, medians over the repeats"
    if len(tools) == len(TOOLS):
        title += " (ratio = iowatt/FileBench of the mean)"
    return [title, "", *render_table(rows, right=right)]


def cpu_table(summary: dict[str, Any], tools: list[str]) -> list[str]:
    header = ["workload", "tool", "user s", "sys s", "kernel share", "user us/op", "sys us/op"]
    rows = [header]
    for name, s in summary.items():
        for tool in (t for t in TOOLS if t in tools):
            t = s[tool]
            share = t.get("kernel_share")
            rows.append([
                name, tool, fmt(t.get("user_s"), 2), fmt(t.get("sys_s"), 2),
                "n/a" if share is None else f"{share:.0%}",
                fmt(t.get("user_us_op"), 1), fmt(t.get("sys_us_op"), 1),
            ])  # fmt: skip
    title = (
        "CPU time of each tool's processes (getrusage), medians over the repeats: the whole "
        "run, start-up and fileset layout included; us/op divides by the operations counted"
    )
    return [title, "", *render_table(rows, right={2, 3, 4, 5, 6})]


def syscall_table(settings: Settings, name: str, s: dict[str, Any]) -> list[str]:
    """One row per group of system calls (its calls named), calls per operation per tool."""
    tools = [t for t in TOOLS if t in settings.tools]
    short_s, long_s = trace_runtimes(settings)
    title = (
        f"{name}: system calls per operation (strace -c -f; calls in a {long_s} s run minus "
        f"calls in a {short_s} s run, over the operations counted in the one minus the other)"
    )
    missing = [t for t in tools if s.get(t) is None]
    lines = [title, ""]
    if missing:
        lines.append(f"  no figure for {', '.join(missing)} (a traced run failed)")
    tools = [t for t in tools if s.get(t) is not None]
    if not tools:
        return lines
    label = {"filebench": "FileBench", "iowatt": "iowatt"}
    header = ["calls", *(label[t] for t in tools)]
    if len(tools) == len(TOOLS):
        header.append("iowatt - FileBench")
    rows = [header]
    for group in [g for g, _ in SYSCALL_GROUPS] + ["other"]:
        values = [s[t]["groups"].get(group) for t in tools]
        if all(v is None or abs(v) < 0.0005 for v in values):
            continue
        members = sorted(
            {c for t in tools for c, v in s[t]["calls"].items()
             if group_of(c) == group and abs(v) >= 0.0005},
            key=lambda c: -max(abs(s[t]["calls"].get(c, 0.0)) for t in tools),
        )  # fmt: skip
        shown = ", ".join(members[:3]) + (", ..." if len(members) > 3 else "")
        row = [f"{group} ({shown})", *(fmt(round(v or 0.0, 3) + 0.0, 3) for v in values)]
        if len(tools) == len(TOOLS):
            row.append(f"{round((values[1] or 0.0) - (values[0] or 0.0), 3) + 0.0:+.3f}")
        rows.append(row)
    totals = [s[t]["total"] for t in tools]
    row = ["total", *(fmt(v, 3) for v in totals)]
    if len(tools) == len(TOOLS):
        row.append(f"{totals[1] - totals[0]:+.3f}")
    rows.append(row)
    ops = "; ".join(
        f"{label[t]} {fmt(s[t]['ops'][0])} and {fmt(s[t]['ops'][1])} ops"
        + ("" if s[t]["method"] == "difference" else f" (too close: {long_s} s run alone)")
        for t in tools
    )
    return [*lines, *render_table(rows, right=set(range(1, len(header)))),
            f"traced runs ({short_s} s and {long_s} s): {ops}"]  # fmt: skip


def report(settings: Settings, meta: dict[str, Any], runs: list[Run], traces: list[Traced]) -> str:
    summary = summarize(settings, runs)
    both = len(settings.tools) == len(TOOLS)
    sets = " ".join(f"{k}={v}" for k, v in settings.sets.items()) or "(file defaults)"
    lines = [
        f"{' vs '.join(settings.tools)}, medians over {settings.repeat} repeat(s)"
        + ("; the order alternates (FileBench first in odd repeats)" if both else ""),
        f"machine: nproc={meta['nproc']} kernel={meta['kernel']}",
        f"filebench {meta['filebench_version']} ({settings.filebench})   "
        f"iowatt: {meta['iowatt_version'] or 'not run'}",
        f"dir: {settings.workdir}  fs: {meta['filesystem']}  runtime: {settings.runtime} s  "
        f"set: {sets}  caches dropped: {'yes' if settings.drop_caches else 'no (not root)'}",
        "",
        *workload_table(summary, settings.tools),
    ]
    for name, s in summary.items():
        lines += ["", *flowop_table(name, s, settings.tools)]
    lines += ["", *cpu_table(summary, settings.tools)]
    calls = syscall_summary(settings, traces)
    for name, s in calls.items():
        lines += ["", *syscall_table(settings, name, s)]
    unequal = [line for name, s in calls.items() for line in unequal_work(name, s)]
    if unequal:
        lines += ["", *unequal]
    failures = [r for r in runs if not r.ok]
    failed_traces = [t for t in traces if not t.ok]
    if failures or failed_traces:
        lines += ["", "failed runs:"]
        lines += [f"  {r.workload} {r.tool} repeat {r.repeat + 1}: {r.error}" for r in failures]
        lines += [
            f"  {t.workload} {t.tool} under strace ({t.runtime} s): {t.error}"
            for t in failed_traces
        ]
    return "\n".join(lines)


def json_document(
    settings: Settings, meta: dict[str, Any], runs: list[Run], traces: list[Traced]
) -> dict[str, Any]:
    calls = syscall_summary(settings, traces)
    return {
        "meta": meta,
        "runs": [asdict(r) for r in runs],
        "workloads": summarize(settings, runs),
        "traced_runs": [asdict(t) for t in traces],
        "syscalls_per_op": calls,
        "unequal_work": [line for name, s in calls.items() for line in unequal_work(name, s)],
    }


def progress(run: Run, done: int, total: int) -> None:
    head = f"[{done:>3}/{total}] {run.workload} {run.tool:<9} repeat {run.repeat + 1}"
    if run.ok:
        text = f"{head}  {fmt(run.ops_s):>10} ops/s  {fmt(run.mib_s, 1):>8} MiB/s"
    else:
        text = f"{head}  FAILED: {run.error}"
    print(f"{text}  ({run.wall_s:.1f} s)", file=sys.stderr, flush=True)


def warn(text: str) -> None:
    print(f"warning: {text}", file=sys.stderr, flush=True)


def error_text(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"


# --------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> Settings:
    p = argparse.ArgumentParser(
        description=(
            "Run FileBench and iowatt on the same FileBench workload files, with the same "
            "variables, in the same directory, and compare ops/s, MiB/s and per-flowop mean "
            "latency. Needs a FileBench binary (this script does not build it) with its "
            "workload files, `setarch` (or ASLR already off) and iowatt on PATH. Root is "
            "needed to drop the page cache between runs (skipped otherwise)."
        ),
        epilog=(
            "Example: python bench/filebench_compare.py --filebench /opt/fb/bin/filebench "
            "--dir /dev/shm --runtime 10 --set nfiles=10000 --set nthreads=16 --repeat 3. "
            "FileBench stops early (no results) when createfile runs out of free entries; "
            "varmail's own defaults (1000 files, 16 threads) do so on fast storage: raise "
            "nfiles or lower nthreads."
        ),
    )
    p.add_argument(
        "--filebench", type=Path,
        help="the FileBench binary (required but with --smoke, which looks on PATH)",
    )  # fmt: skip
    p.add_argument(
        "--dir", type=Path,
        help="parent directory to benchmark (required but with --smoke: /dev/shm); both tools "
        f"work in DIR/{WORKDIR_NAME}, emptied between runs and removed at the end",
    )  # fmt: skip
    p.add_argument("--runtime", type=int, default=10, help="seconds per run (default 10)")
    p.add_argument(
        "--workloads", default=DEFAULT_WORKLOADS,
        help=f"comma list of workload names in --workloads-dir, or paths to .f files "
        f"(default {DEFAULT_WORKLOADS})",
    )  # fmt: skip
    p.add_argument(
        "--workloads-dir", type=Path,
        help="FileBench's workloads/ directory (default: workloads/ beside the binary, or "
        "../share/filebench/workloads)",
    )  # fmt: skip
    p.add_argument(
        "--set", dest="sets", action="append", default=[], metavar="NAME=VALUE",
        help="a workload variable for both tools, e.g. --set nfiles=1000 (repeatable)",
    )  # fmt: skip
    p.add_argument("--repeat", type=int, default=3, help="runs per tool and workload (default 3)")
    p.add_argument("--json", action="store_true", help="print everything as JSON on stdout")
    p.add_argument(
        "--iowatt", default="iowatt", help="the iowatt command (default: iowatt on PATH)"
    )
    p.add_argument(
        "--tools", default=",".join(TOOLS),
        help="run only some tools, e.g. --tools filebench to check the FileBench half "
        "(default: both)",
    )  # fmt: skip
    p.add_argument(
        "--keep", type=Path,
        help="copy the generated .f files and each run's raw output into this directory",
    )  # fmt: skip
    p.add_argument(
        "--syscalls", action=argparse.BooleanOptionalAction, default=True,
        help="after each workload's repeats, run each tool twice more under `strace -c -f` "
        f"({TRACE_BASE_S} s and --runtime) and print system calls per operation side by side "
        "(default: on; --smoke traces its first workload only)",
    )  # fmt: skip
    # Small filesets: FileBench's own defaults take longer to lay out than a smoke run lasts.
    a = parse(
        p,
        {"runtime": 1, "repeat": 2},
        argv,
        {"dir": Path("/dev/shm"), "workloads": "fileserver,varmail", "sets": SMOKE_SETS},
    )
    for option in ("dir", "filebench"):
        if getattr(a, option) is None and not (a.smoke and option == "filebench"):
            fail(
                f"`--{option}` is required",
                "pass it, or run `--smoke` (FileBench from PATH if there, tmpfs, seconds)",
            )
    if a.filebench is not None:
        binary: Path | None = Path(str(peer("filebench", a.filebench.expanduser())))
    else:
        found = peer("filebench")
        binary = Path(found) if found else None
    if a.runtime < 1 or a.repeat < 1:
        p.error("--runtime and --repeat must be at least 1")
    tools = [t.strip() for t in a.tools.split(",") if t.strip()]
    if not tools or any(t not in TOOLS for t in tools):
        p.error(f"--tools takes a comma list of {', '.join(TOOLS)}")
    if binary is None:
        tools = [t for t in tools if t != "filebench"]
        if not tools:
            fail("`--tools filebench` without FileBench", "pass `--filebench PATH`")
    sets: dict[str, str] = {}
    for item in a.sets:
        name, eq, value = item.partition("=")
        name = name.strip().lstrip("$")
        if not eq or not _VAR_NAME.fullmatch(name) or not value:
            p.error(f"--set `{item}`: expected NAME=VALUE, e.g. --set nfiles=1000")
        if name in ("dir", "runtime"):
            p.error(f"--set {name}=...: use --{'dir' if name == 'dir' else 'runtime'} instead")
        sets[name] = value
    directory = a.dir.expanduser().resolve()
    if not directory.is_dir():
        p.error(f"--dir {directory} is not a directory")
    wdir = a.workloads_dir or (
        default_workloads_dir(binary.resolve()) if binary else SHIPPED_WORKLOADS
    )
    if a.workloads_dir and not a.workloads_dir.is_dir():
        p.error(f"--workloads-dir {a.workloads_dir} is not a directory")
    specs = [s.strip() for s in a.workloads.split(",") if s.strip()]
    if not specs:
        p.error("--workloads is empty")
    workloads = [load_workload(s, wdir) for s in specs]
    if len({w.name for w in workloads}) != len(workloads):
        p.error("two workloads have the same name")
    iowatt = a.iowatt
    if "iowatt" in tools:
        found = shutil.which(iowatt)
        if not found:
            p.error(f"`{iowatt}` is not on PATH: install iowatt (pip install -e .) or pass "
                    "--iowatt, or use --tools filebench")  # fmt: skip
        iowatt = found
    traced: list[str] = []
    strace = None
    if a.syscalls:
        strace = peer("strace")  # prints `peer missing: strace` if absent
        if strace:
            traced = [w.name for w in workloads][: 1 if a.smoke else None]
    return Settings(
        filebench=binary.resolve() if binary else None,
        iowatt=iowatt,
        dir=directory,
        workdir=directory / WORKDIR_NAME,
        runtime=a.runtime,
        workloads=workloads,
        sets=sets,
        repeat=a.repeat,
        tools=tools,
        as_json=a.json,
        keep=a.keep,
        traced=traced,
        strace=strace,
    )


def main(argv: list[str] | None = None) -> int:
    settings = parse_args(argv)
    # On SIGTERM (e.g. from `timeout`) unwind normally, so the work directory is removed.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    settings.aslr_prefix = aslr_prefix() if "filebench" in settings.tools else []
    settings.drop_caches = os.geteuid() == 0
    settings.subreaper = become_subreaper()
    settings.import_parse, settings.import_error = load_importer()
    meta = machine_info(settings)
    n = len(settings.workloads) * settings.repeat * len(settings.tools)
    short_s, long_s = trace_runtimes(settings)
    traced = len(settings.traced) * len(settings.tools)
    seconds = n * settings.runtime + traced * (short_s + long_s) * TRACE_SLOWDOWN
    print(
        f"{n} runs of {settings.runtime} s"
        + (f" and {2 * traced} under strace" if traced else "")
        + f" (about {seconds / 60:.1f} min plus fileset layout) in {settings.workdir}",
        file=sys.stderr,
        flush=True,
    )
    runs, traces = run_all(settings, meta)
    if settings.as_json:
        print(json.dumps(json_document(settings, meta, runs, traces), indent=2))
        calls = syscall_summary(settings, traces)
        for line in (line for name, s in calls.items() for line in unequal_work(name, s)):
            print(line, file=sys.stderr)
    else:
        print(report(settings, meta, runs, traces))
    missing = None if "filebench" in settings.tools else "filebench"
    for name, w in summarize(settings, runs).items():
        ratio_line(
            f"{name} ops/s iowatt/FileBench",
            w["ratio_ops_s"],
            "≥ 1.0 at equal file-system work",
            missing,
            sys.stderr if settings.as_json else None,
        )
    return 0 if all(r.ok for r in runs) and all(t.ok for t in traces) else 1


if __name__ == "__main__":
    sys.exit(main())
