"""What a Dask worker does with one task: start its process, wait for it (or for its timeout,
or for the run to stop), and return what it cost — start and end, CPU time, bytes read from the
block layer, bytes and calls read on any file system (``rchar``, ``syscr``), peak memory — and
how it ended.

The process gets a session of its own, so a Ctrl-C at the terminal reaches iowatt and not the
tasks; iowatt then sets the run's stop event and every waiting worker kills its task's process
group. The wait is on a pidfd, so a task's end is seen at once (no polling delay to add to the
makespan). Before ``wait4`` reaps it (and gives its resource usage), ``waitid`` with
``WNOWAIT`` waits for it to have ended while its ``/proc/PID/io`` is still there to read: a
shell's figures include those of the children it reaped.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import time
from contextlib import suppress
from pathlib import Path
from typing import Any

# How often a waiting worker checks the stop event and the timeout.
CHECK_S = 0.5
# How a SIGKILL shows: the process's own status, or a shell's exit code for its child's.
KILLED = (-signal.SIGKILL, 128 + signal.SIGKILL)
# Kept of a failed task's standard error.
ERR_TAIL = 2000


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
    if spec.get("cgroup_procs"):
        # Enter the memory cgroup before exec, so the task's every page is charged to it.
        argv = ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', spec["cgroup_procs"], *argv]
    err = Path(spec["stderr"])
    event = _event(stop)
    oom_before = _oom_kills(spec.get("oom_counter"))
    start_ns = time.time_ns()
    pid = os.posix_spawn(
        argv[0],
        argv,
        dict(os.environ),
        setsid=True,
        file_actions=[
            (os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0),
            (os.POSIX_SPAWN_OPEN, 1, "/dev/null", os.O_WRONLY, 0),
            (os.POSIX_SPAWN_OPEN, 2, str(err), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644),
        ],
    )
    ended_by = _wait(pid, spec.get("timeout_s"), event)
    # Ended, not yet reaped: its /proc entry still holds what it (and the children it reaped)
    # read through read(2) and friends, on any file system.
    os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
    io = _proc_io(pid)
    _, status, usage = os.wait4(pid, 0)
    end_ns = time.time_ns()
    code = os.waitstatus_to_exitcode(status)
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
        "start_ns": start_ns,
        "end_ns": end_ns,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "bytes_read": usage.ru_inblock * 512,
        "rchar": io.get("rchar"),
        "syscr": io.get("syscr"),
        "max_rss_bytes": usage.ru_maxrss * 1024,
        "host": os.uname().nodename,
        "error": None if ended_by == "ok" else _tail(err),
        "summary": _read(spec["output"]),
    }


def _wait(pid: int, timeout_s: float | None, event: Any) -> str | None:
    """Waits for the process to end; kills its group on timeout or stop and says which."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    fd = os.pidfd_open(pid)
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        while True:
            wait_s = CHECK_S if deadline is None else min(CHECK_S, deadline - time.monotonic())
            if poller.poll(max(wait_s, 0) * 1000):
                return None
            if deadline is not None and time.monotonic() >= deadline:
                reason = "timeout"
            elif event is not None and event.is_set():
                reason = "interrupted"
            else:
                continue
            with suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
            return reason
    finally:
        os.close(fd)


def _proc_io(pid: int) -> dict[str, int]:
    """``/proc/PID/io``'s counters (none where the kernel keeps no I/O accounting)."""
    out = {}
    for line in (_read(f"/proc/{pid}/io") or "").splitlines():
        key, _, value = line.partition(":")
        if value.strip().isdigit():
            out[key] = int(value)
    return out


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
