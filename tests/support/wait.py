"""Waiting for a process to be ready: poll a condition it makes true (a file it writes, a line
it logs), with a deadline, never a fixed sleep."""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Callable

import pytest


def wait_for(
    condition: Callable[[], bool],
    proc: subprocess.Popen[str] | None = None,
    *,
    what: str = "the process to be ready",
    timeout_s: float = 60.0,
) -> None:
    """Returns once ``condition()`` holds; fails the test with ``proc``'s output if it exits
    first, or when ``timeout_s`` passes."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if proc is not None and proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"exited ({proc.returncode}) before {what}:\n{out}\n{err}")
        if time.monotonic() > deadline:
            if proc is not None:
                proc.kill()
                out, err = proc.communicate()
                pytest.fail(f"timed out waiting for {what}:\n{out}\n{err}")
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.02)


def stderr_lines(proc: subprocess.Popen[str]) -> tuple[list[str], threading.Thread]:
    """``proc``'s stderr lines as they arrive, read on a thread of their own (a full pipe would
    stall the process), and that thread, to join once the process has ended."""
    lines: list[str] = []

    def read() -> None:
        assert proc.stderr is not None
        lines.extend(proc.stderr)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return lines, reader
