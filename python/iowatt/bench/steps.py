"""A workload file's commands around its run — ``system`` commands, pauses, messages, FileBench's
statistics commands — each where the file puts it (:mod:`iowatt.wml.script`).

A ``system`` command runs through ``/bin/sh`` in the directory of the ``.f`` file (where the
helper scripts it names live), with ``$dir`` already replaced by iowatt's work directory. Its
exit status, duration and output are events of the run. A command that fails stops the run
with its line, as a script run with ``sh -e`` would; ``|| true`` in the command goes on.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from iowatt.errors import IowattError

if TYPE_CHECKING:
    # Importing any of iowatt.wml loads its parser; every bench imports this module for
    # StepFailed, and only a workload file's run has steps.
    from iowatt.wml import Program
    from iowatt.wml.script import Phase, Step

# A command's output kept in its event: enough for an error message or a `cat` of a setting.
OUTPUT_KEPT = 4096
# How a command can fail other than by its exit status: the shell missing or the limit passed.
SYSTEM_TIMEOUT_S = 24 * 3600.0

Record = Callable[[str, str], None]  # (event kind, message)


class StepFailed(IowattError):
    """A ``system`` command of the file failed: the run stops there."""


class Steps:
    """Runs a program's steps in order, as the run reaches each one's phase and time."""

    def __init__(
        self, program: Program, cwd: Path, note: Callable[[str], None], record: Record
    ) -> None:
        self.program, self.cwd, self.note, self.record = program, cwd, note, record
        self.pending = list(program.steps)
        self.failed: StepFailed | None = None

    def has(self, phase: Phase) -> bool:
        return any(st.phase == phase for st in self.pending)

    def through(self, phase: Phase) -> None:
        """Runs the steps of ``phase`` and of every phase before it; raises :class:`StepFailed`
        when a command fails."""
        from iowatt.wml.script import PHASES

        last = PHASES.index(phase)
        while self.pending and PHASES.index(self.pending[0].phase) <= last:
            self._run(self.pending.pop(0))
            if self.failed is not None:
                raise self.failed

    def due(self, running_s: float) -> bool:
        """Runs the steps of the running processes due ``running_s`` seconds after they started;
        false once one failed (the run must stop)."""
        while (
            self.failed is None
            and self.pending
            and self.pending[0].phase == "running"
            and self.pending[0].at_s <= running_s
        ):
            self._run(self.pending.pop(0))
        return self.failed is None

    def _run(self, st: Step) -> None:
        where = f"{self.program.source}:{st.line}"
        if st.kind == "echo":
            self.note(st.text)
        elif st.kind == "sleep":
            self.note(f"{where}: sleep {st.text} s")
            time.sleep(st.seconds)
        elif st.kind == "stats":
            self.record("stats", f"{where}: stats {st.text}")
        else:
            self._system(st, where)

    def _system(self, st: Step, where: str) -> None:
        self.note(f"{where}: system {st.text}")
        t0 = time.monotonic()
        try:
            done = subprocess.run(
                ["/bin/sh", "-c", st.text],
                cwd=self.cwd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                timeout=SYSTEM_TIMEOUT_S,
                check=False,
            )
            status, output = done.returncode, done.stdout
        except (OSError, subprocess.TimeoutExpired) as e:
            status, output = -1, str(e).encode()
        took = time.monotonic() - t0
        text = output[-OUTPUT_KEPT:].decode("utf-8", "replace").rstrip()
        self.record(
            "system",
            f"{where}: `{st.text}` exited with status {status} after {took:.3f} s"
            + (f"\n{text}" if text else ""),
        )
        if status != 0:
            last = text.splitlines()[-1] if text else "no output"
            self.failed = StepFailed(
                f"{where}: system `{st.text}` exited with status {status} ({last})",
                "the run stops when a command of the file fails; end the command with "
                "`|| true` to go on",
            )
