"""One process that starts a worker's tasks when no CPU cgroup can hold them: it calls setsid
once, so every task it starts shares its session and so one autogroup (the scheduler then
weighs the run's tasks together, as a cgroup would), each in a process group of its own, so a
timeout kills one task's group and no other.

``python -m iowatt.tasks.launcher`` reads one JSON request a line on stdin — ``{"id", "argv",
"stderr"}`` to start a task, ``{"kill": id}`` to kill its group — and answers on stdout with
``{"id", "pid", "start_ns"}`` once started (or ``{"id", "error"}``) and, when the task has
ended, ``{"id", "status", "end_ns", "usage", "io"}``: its wait status, its resource usage and
its ``/proc/PID/io``, read before it was reaped. When stdin closes (iowatt is gone) it kills
the tasks still running and exits. :class:`Launcher` is iowatt's side.
"""

from __future__ import annotations

import atexit
import itertools
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from contextlib import suppress
from typing import Any


def proc_io(pid: int) -> dict[str, int]:
    """``/proc/PID/io``'s counters (none where the kernel keeps no I/O accounting)."""
    out: dict[str, int] = {}
    try:
        with open(f"/proc/{pid}/io") as f:
            text = f.read()
    except OSError:
        return out
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if value.strip().isdigit():
            out[key] = int(value)
    return out


def serve() -> None:
    os.setsid()
    lock = threading.Lock()  # guards `running` and stdout
    running: dict[int, int] = {}  # task id -> pid, until reaped

    def send(msg: dict[str, Any]) -> None:
        with lock:
            sys.stdout.write(json.dumps(msg) + "\n")
            sys.stdout.flush()

    def watch(tid: int, pid: int) -> None:
        os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
        io = proc_io(pid)
        with lock:
            _, status, usage = os.wait4(pid, 0)
            del running[tid]
        usage_out = {
            "cpu_s": usage.ru_utime + usage.ru_stime,
            "inblock": usage.ru_inblock,
            "maxrss_kb": usage.ru_maxrss,
        }
        send({"id": tid, "status": status, "end_ns": time.time_ns(), "usage": usage_out, "io": io})

    for line in sys.stdin:
        req = json.loads(line)
        if "kill" in req:
            with lock:
                pid = running.get(req["kill"])
                if pid is not None:  # not reaped: its group is still its own
                    with suppress(ProcessLookupError):
                        os.killpg(pid, signal.SIGKILL)
            continue
        tid, argv = req["id"], req["argv"]
        start_ns = time.time_ns()
        try:
            with lock:
                pid = os.posix_spawn(
                    argv[0],
                    argv,
                    dict(os.environ),
                    setpgroup=0,
                    file_actions=[
                        (os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0),
                        (os.POSIX_SPAWN_OPEN, 1, "/dev/null", os.O_WRONLY, 0),
                        (
                            os.POSIX_SPAWN_OPEN,
                            2,
                            req["stderr"],
                            os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
                            0o644,
                        ),
                    ],
                )
                running[tid] = pid
        except OSError as e:
            send({"id": tid, "error": f"cannot start `{argv[0]}`: {e.strerror}"})
            continue
        send({"id": tid, "pid": pid, "start_ns": start_ns})
        threading.Thread(target=watch, args=(tid, pid), daemon=True).start()
    with lock:
        for pid in running.values():
            with suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)


class Launcher:
    """iowatt's side of a launcher process: started once per worker process, used by every
    worker thread at once."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "iowatt.tasks.launcher"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self._lock = threading.Lock()
        self._ids = itertools.count()
        self._waiting: dict[int, queue.Queue[dict[str, Any]]] = {}
        threading.Thread(target=self._read, daemon=True).start()
        atexit.register(self.close)

    def start(self, argv: list[str], stderr: str) -> tuple[int, queue.Queue[dict[str, Any]]]:
        """Starts a task: its id, and the queue its answers arrive on (started, then ended)."""
        tid = next(self._ids)
        answers: queue.Queue[dict[str, Any]] = queue.Queue()
        self._waiting[tid] = answers
        self._send({"id": tid, "argv": argv, "stderr": stderr})
        return tid, answers

    def kill(self, tid: int) -> None:
        self._send({"kill": tid})

    def done(self, tid: int) -> None:
        self._waiting.pop(tid, None)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        """Closes its stdin: it kills what still runs and exits."""
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            with suppress(OSError):
                self.proc.stdin.close()
        with suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()

    def _send(self, msg: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        with self._lock:
            self.proc.stdin.write(json.dumps(msg) + "\n")
            self.proc.stdin.flush()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        with suppress(ValueError, OSError):  # closed at exit
            for line in self.proc.stdout:
                msg = json.loads(line)
                answers = self._waiting.get(msg["id"])
                if answers is not None:
                    answers.put(msg)
        for answers in list(self._waiting.values()):
            answers.put({"error": "the task launcher ended"})


_LAUNCHER: Launcher | None = None
_LAUNCHER_LOCK = threading.Lock()


def launcher() -> Launcher:
    """This process's launcher, started at first use (again if it died)."""
    global _LAUNCHER
    with _LAUNCHER_LOCK:
        if _LAUNCHER is None or not _LAUNCHER.alive():
            _LAUNCHER = Launcher()
        return _LAUNCHER


if __name__ == "__main__":
    serve()
