"""The order a workload file does things in: the commands around its measured run.

FileBench executes a file top to bottom. 1.5 files define everything and say ``run N``; 1.4
files spell the run out — ``create fileset``, ``create processes``, ``stats clear``, ``sleep
N``, ``stats snap``, ``shutdown processes`` — and many files of either age run ``system``
commands (``sync``, dropping caches) on the way. iowatt keeps that order: each command becomes a
:class:`Step` in one of four phases, and the run's length and unmeasured warm-up come from the
sleeps between the processes' start, ``stats clear`` and ``stats snap`` (or ``shutdown``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from iowatt.wml.errors import at
from iowatt.wml.parser import (
    CompositeDef,
    Create,
    DefineFiles,
    Echo,
    Eventgen,
    ProcessDef,
    Quoted,
    Run,
    SetMode,
    SetVar,
    Shutdown,
    Sleep,
    Statement,
    Stats,
    System,
    Value,
)

Phase = Literal["setup", "laid_out", "running", "after"]
PHASES: tuple[Phase, ...] = ("setup", "laid_out", "running", "after")


@dataclass(frozen=True)
class Step:
    """A command of the file, where it happens: ``setup`` before the filesets are laid out,
    ``laid_out`` after (``create files`` marks it), ``running`` at ``at_s`` seconds after the
    processes started (the warm-up included), ``after`` once they stopped."""

    line: int
    kind: Literal["system", "sleep", "echo", "stats"]
    phase: Phase
    text: str  # the command, the message, or the stats action (and its file)
    at_s: float = 0.0
    seconds: float = 0.0  # a sleep's


@dataclass(frozen=True)
class Script:
    steps: list[Step]
    runtime_s: float | None  # the measured seconds; None: the file never runs its processes
    ramp_s: float  # seconds the processes ran before `stats clear`


def split(statements: list[Statement], source: str) -> tuple[list[Statement], list[Statement]]:
    """The definitions in effect (every ``set`` and ``define`` before the processes stop) and
    the commands in order. A definition after that point never takes effect in FileBench,
    which exits when the run ends: it is an error, not silently dropped."""
    definitions: list[Statement] = []
    commands: list[Statement] = []
    started: Statement | None = None  # the run, or `create processes`
    ended: Statement | None = None
    for st in statements:
        if isinstance(st, Shutdown) and st.command == "quit":
            commands.append(st)
            break  # FileBench stops reading here
        if isinstance(st, SetVar | SetMode | DefineFiles | ProcessDef | CompositeDef | Eventgen):
            if ended is not None:
                raise at(
                    source,
                    st.line,
                    f"`{_keyword(st)}` after the run (line {ended.line}) never takes effect: "
                    "FileBench exits when the run ends",
                    "move it before the run",
                )
            definitions.append(st)
            continue
        if isinstance(st, Run | Create) and (st_is_start := _starts(st)):
            if started is not None:
                raise at(
                    source,
                    st.line,
                    f"a second {st_is_start} (the processes start at line {started.line})",
                    "iowatt runs one run per file; split the file in two",
                )
            started = st
            if isinstance(st, Run):
                ended = st
        elif isinstance(st, Shutdown) and started is not None:
            ended = ended or st
        commands.append(st)
    return definitions, commands


def timeline(
    commands: list[Statement],
    seconds: Callable[[Value, int], float],
    text: Callable[[Quoted, bool], str],
    runtime: Callable[[Run], float],
    source: str,
) -> Script:
    """The steps of ``commands`` with their phase and time; ``seconds``, ``text`` and
    ``runtime`` evaluate a sleep's value, a quoted string (for the shell or not) and a run's
    length."""
    steps: list[Step] = []
    phase: Phase = "setup"
    clock = 0.0  # seconds since the processes started
    cleared, snapped = 0.0, None
    runtime_s: float | None = None
    for st in commands:
        if isinstance(st, Create):
            if st.what == "files" and phase == "setup":
                phase = "laid_out"
            elif st.what == "processes" and phase in ("setup", "laid_out"):
                phase = "running"
        elif isinstance(st, Run):  # split() let one start through, this or create processes
            runtime_s, phase = runtime(st), "after"
        elif isinstance(st, Shutdown):
            if phase == "running":
                snapped = clock if snapped is None else snapped
                phase = "after"
        elif isinstance(st, Sleep):
            s = seconds(st.seconds, st.line)
            if phase == "running":
                clock += s
            else:
                steps.append(Step(st.line, "sleep", phase, f"{s:g}", seconds=s))
        elif isinstance(st, Stats):
            if phase == "running" and st.action == "clear":
                cleared, snapped = clock, None
            elif phase == "running" and st.action == "snap":
                snapped = clock
            what = st.action + (f" {text(st.path, False)}" if st.path is not None else "")
            steps.append(Step(st.line, "stats", phase, what, at_s=_at(phase, clock)))
        elif isinstance(st, System):
            command = text(st.command, True)
            steps.append(Step(st.line, "system", phase, command, at_s=_at(phase, clock)))
        elif isinstance(st, Echo) and st.command == "echo":
            steps.append(Step(st.line, "echo", phase, text(st.text, False), at_s=_at(phase, clock)))
    if runtime_s is None and phase in ("running", "after"):
        # The processes ran from `create processes` until `stats snap`, `shutdown` or the end.
        runtime_s = (clock if snapped is None else snapped) - cleared
    return Script(steps, runtime_s, cleared)


def _at(phase: Phase, clock: float) -> float:
    return clock if phase == "running" else 0.0


def _starts(st: Run | Create) -> str:
    if isinstance(st, Run):
        return f"`{st.command}`"
    return "`create processes`" if st.what == "processes" else ""


def _keyword(st: Statement) -> str:
    if isinstance(st, SetVar | SetMode):
        return "set"
    if isinstance(st, DefineFiles):
        return f"define {st.what}"
    if isinstance(st, ProcessDef):
        return "define process"
    if isinstance(st, CompositeDef):
        return "define flowop"
    return "eventgen"
