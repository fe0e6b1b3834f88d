"""What a Dask worker does with one task: start its process, wait for it (or for its timeout,
or for the run to stop), and return what it cost — start and end, CPU time, bytes read from the
block layer, bytes and calls read on any file system (``rchar``, ``syscr``), peak memory — and
how it ended.

The process is in the run's cgroups (``cgroup_procs``; :mod:`iowatt.tasks.cgroup`) and gets a
session of its own — or, where no CPU cgroup could be made (``launcher``), is started by this
worker process's launcher (:mod:`iowatt.tasks.launcher`), in the launcher's session and a
process group of its own. Either way a Ctrl-C at the terminal reaches iowatt and not the tasks;
iowatt then sets the run's stop event and every waiting worker kills its task's process group.
The wait is on a pidfd (or the launcher's answer), so a task's end is seen at once (no polling
delay to add to the makespan). Before ``wait4`` reaps it (and gives its resource usage),
``waitid`` with ``WNOWAIT`` waits for it to have ended while its ``/proc/PID/io`` is still
there to read: a shell's figures include those of the children it reaped.
"""

from __future__ import annotations

import os
import queue
import select
import signal
import sys
import time
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from iowatt.tasks.launcher import launcher, proc_io

# How often a waiting worker checks the stop event and the timeout.
CHECK_S = 0.5
# How a SIGKILL shows: the process's own status, or a shell's exit code for its child's.
KILLED = (-signal.SIGKILL, 128 + signal.SIGKILL)
# Kept of a failed task's standard error.
ERR_TAIL = 2000
# `sh -c ENTER N PROCS... ARGV...`: writes its pid to the N cgroup.procs files, then execs ARGV.
ENTER = (
    'n=$0; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 126; shift; n=$((n - 1)); done; '
    'exec "$@"'
)


def command_argv(spec: dict[str, Any]) -> list[str]:
    """The task's argv: the synthetic task, or the user's command through the shell."""
    if spec["command"] is None:
        argv = [
            sys.executable,
            "-m",
            "iowatt.tasks.synthetic",
            "--cpu-s",
            repr(spec["cpu_s"]),
            "--output",
            spec["output"],
            "--chunk",
            str(spec["chunk"]),
        ]
        if spec["input"]:
            argv += ["--input", spec["input"]]
        else:
            argv += ["--memory", str(spec["memory"])]
        return argv
    fields = {k: spec[k] for k in ("input", "output", "cpu_s", "memory", "index")}
    return ["/bin/sh", "-c", spec["command"].format(**fields)]


def run_task(spec: dict[str, Any], stop: str | None = None) -> dict[str, Any]:
    """Runs one task; ``stop`` names the Dask event that ends the run early."""
    argv = command_argv(spec)
    procs = spec.get("cgroup_procs") or []
    if procs:
        # Enter the cgroups before exec, so the task's every page and CPU second is theirs.
        argv = ["/bin/sh", "-c", ENTER, str(len(procs)), *procs, *argv]
    err = Path(spec["stderr"])
    event = _event(stop)
    oom_before = _oom_kills(spec.get("oom_counter"))
    deadline = None if spec.get("timeout_s") is None else time.monotonic() + spec["timeout_s"]
    run = _launched if spec.get("launcher") else _spawned
    ended = run(argv, str(err), deadline, event)
    code = os.waitstatus_to_exitcode(ended.status)
    ended_by = ended.reason
    if ended_by is None:
        if code == 0:
            ended_by = "ok"
        elif code in KILLED and _oom_kills(spec.get("oom_counter")) > oom_before:
            ended_by = "out-of-memory"
        else:
            ended_by = "killed" if code < 0 else "failed"
    return {
        "index": spec["index"],
        "type": spec["type"],
        "batch": spec["batch"],
        "status": ended_by,
        "exit_code": code,
        "start_ns": ended.start_ns,
        "end_ns": ended.end_ns,
        "cpu_s": ended.cpu_s,
        "bytes_read": ended.inblock * 512,
        "rchar": ended.io.get("rchar"),
        "syscr": ended.io.get("syscr"),
        "max_rss_bytes": ended.maxrss_kb * 1024,
        "host": os.uname().nodename,
        "error": ended.error or (None if ended_by == "ok" else _tail(err)),
        "summary": _read(spec["output"]),
    }


@dataclass
class _Ended:
    """How a task's process ended (``reason``: why iowatt killed it, if it did) and what it
    cost."""

    reason: str | None
    status: int
    start_ns: int
    end_ns: int
    cpu_s: float = 0.0
    inblock: int = 0
    maxrss_kb: int = 0
    io: dict[str, int] = field(default_factory=dict)
    error: str | None = None


def _spawned(argv: list[str], err: str, deadline: float | None, event: Any) -> _Ended:
    """Started here, in a session of its own."""
    start_ns = time.time_ns()
    pid = os.posix_spawn(
        argv[0],
        argv,
        dict(os.environ),
        setsid=True,
        file_actions=[
            (os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0),
            (os.POSIX_SPAWN_OPEN, 1, "/dev/null", os.O_WRONLY, 0),
            (os.POSIX_SPAWN_OPEN, 2, err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644),
        ],
    )
    reason = _wait(pid, deadline, event)
    # Ended, not yet reaped: its /proc entry still holds what it (and the children it reaped)
    # read through read(2) and friends, on any file system.
    os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
    io = proc_io(pid)
    _, status, usage = os.wait4(pid, 0)
    return _Ended(
        reason,
        status,
        start_ns,
        time.time_ns(),
        usage.ru_utime + usage.ru_stime,
        usage.ru_inblock,
        usage.ru_maxrss,
        io,
    )


def _launched(argv: list[str], err: str, deadline: float | None, event: Any) -> _Ended:
    """Started by this process's launcher: in its session, in a process group of its own."""
    starter = launcher()
    tid, answers = starter.start(argv, err)
    try:
        started = answers.get()
        if "error" in started:
            now = time.time_ns()
            return _Ended(None, 127 << 8, now, now, error=started["error"])
        reason = None
        while True:
            try:
                ended = answers.get(timeout=CHECK_S if reason else _check_s(deadline))
                break
            except queue.Empty:
                pass
            if reason is None:
                reason = _stop_reason(deadline, event)
                if reason is not None:
                    starter.kill(tid)
        if "error" in ended:
            now = time.time_ns()
            return _Ended(reason, signal.SIGKILL, started["start_ns"], now, error=ended["error"])
        u = ended["usage"]
        return _Ended(
            reason,
            ended["status"],
            started["start_ns"],
            ended["end_ns"],
            u["cpu_s"],
            u["inblock"],
            u["maxrss_kb"],
            ended["io"],
        )
    finally:
        starter.done(tid)


def _check_s(deadline: float | None) -> float:
    """How long to wait before checking the deadline and the stop event again."""
    return max(CHECK_S if deadline is None else min(CHECK_S, deadline - time.monotonic()), 0)


def _stop_reason(deadline: float | None, event: Any) -> str | None:
    if deadline is not None and time.monotonic() >= deadline:
        return "timeout"
    if event is not None and event.is_set():
        return "interrupted"
    return None


def _wait(pid: int, deadline: float | None, event: Any) -> str | None:
    """Waits for the process to end; kills its group on timeout or stop and says which."""
    fd = os.pidfd_open(pid)
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        while True:
            if poller.poll(_check_s(deadline) * 1000):
                return None
            reason = _stop_reason(deadline, event)
            if reason is None:
                continue
            with suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
            return reason
    finally:
        os.close(fd)


def _event(name: str | None) -> Any:
    if name is None:
        return None
    from distributed import Event

    return Event(name)


def _oom_kills(counter: str | None) -> int:
    """Out-of-memory kills so far, from a memory cgroup's ``memory.oom_control`` (v1) or
    ``memory.events`` (v2), or the node's ``/proc/vmstat``."""
    text = _read(counter or "/proc/vmstat") or ""
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if key == "oom_kill" and value.strip().isdigit():
            return int(value)
    return 0


def _read(path: str) -> str | None:
    try:
        with open(path, errors="replace") as f:
            return f.read(10_000)
    except OSError:
        return None


def _tail(path: Path) -> str | None:
    try:
        with path.open("rb") as f:
            f.seek(max(path.stat().st_size - ERR_TAIL, 0))
            return f.read().decode(errors="replace").strip() or None
    except OSError:
        return None
