"""A guardian: a separate process, in its own session, that undoes what its parent left if the
parent is killed outright (SIGKILL, the OOM killer, a crash in native code) and cannot clean
up itself. The parent keeps a pipe to it open and writes ``done`` when it ended normally; a
pipe that closes without that means the parent died. ``iowatt sweep`` restores the stimulus
this way (iowatt.sweep.guard), ``iowatt emulate mount`` unmounts (iowatt.emulate.guard)."""

from __future__ import annotations

import contextlib
import subprocess
import sys

DONE = "done"


class Guardian:
    """The parent's handle on its guardian, ``python -m MODULE ARGS``."""

    def __init__(self, module: str, *args: str) -> None:
        self._proc = subprocess.Popen(
            [sys.executable, "-m", module, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            text=True,
            # A Ctrl-C in the terminal is for the parent, not for its guardian.
            start_new_session=True,
        )

    def done(self) -> None:
        """The parent undid everything itself: the guardian may go."""
        self.write(DONE)
        if self._proc.stdin is not None:
            with contextlib.suppress(BrokenPipeError):
                self._proc.stdin.close()
        self._proc.wait()

    def write(self, line: str) -> None:
        stdin = self._proc.stdin
        if stdin is None or stdin.closed:
            return
        with contextlib.suppress(BrokenPipeError):
            stdin.write(line + "\n")
            stdin.flush()


def parent_lines() -> list[str] | None:
    """In the guardian: blocks until the parent is done or gone. None when it said it was
    done; else the lines it wrote before it died."""
    lines = sys.stdin.read().splitlines()
    return None if lines[-1:] == [DONE] else lines
