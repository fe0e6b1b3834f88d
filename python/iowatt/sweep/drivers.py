"""Stimulus drivers: what sets a fan duty, a shaker's amplitude or frequency, and undoes it.

Every driver follows :class:`Driver`. The sweep calls ``prepare`` once (remember the original
state, take control), ``apply`` at every step, and ``restore`` at the end whatever happened;
the watchdog calls ``safe`` (from its own thread) when temperatures cross the limit. A process
that dies cannot restore anything, so each driver also describes, as plain commands, what the
guardian process (:mod:`iowatt.sweep.guard`) must do in its place: :meth:`Driver.guard_plan`.

This module holds the protocol and the two simple drivers (``cmd`` and ``manual``); IPMI fan
control is :mod:`iowatt.sweep.ipmi_fan`, the blkio emulation :mod:`iowatt.sweep.emulated`.
"""

from __future__ import annotations

import os
import select
import shlex
import string
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, TextIO

from iowatt.errors import ConfigError, SafetyStop
from iowatt.power.sources import SourceSpec

COMMAND_TIMEOUT_S = 30.0
# How long ``safe`` keeps trying before it gives up and says so (a BMC may be rebooting).
SAFE_RETRY_S = 120.0
SAFE_RETRY_PAUSE_S = 1.0


class DriverError(SafetyStop):
    """A stimulus could not be applied (a command failed, a BMC refused); the sweep stops."""


@dataclass
class GuardPlan:
    """What the guardian does if the sweep process dies without restoring its stimulus."""

    # Commands run in order (each retried until ``retry_s`` has passed), e.g. "fans to auto".
    restore: list[list[str]] = field(default_factory=list)
    timeout_s: float = COMMAND_TIMEOUT_S
    retry_s: float = SAFE_RETRY_S
    # Empty directories to remove once this process is gone (a blkio cgroup).
    rmdirs: list[str] = field(default_factory=list)
    # Printed when nothing can be done automatically (the manual driver).
    message: str | None = None
    # Extra environment for the commands (``IPMI_PASSWORD``); handed over in the environment,
    # never written anywhere.
    env: dict[str, str] = field(default_factory=dict)


class Driver(Protocol):
    """Applies a stimulus; see the module docstring for who calls what, and when."""

    name: str

    def describe(self) -> dict[str, Any]:
        """The driver's settings for the manifest (never a password)."""
        ...

    def sensor_sources(self) -> list[SourceSpec]:
        """Sensor sources this driver brings (the IPMI driver reads its BMC's SDR)."""
        ...

    def prepare(self) -> None:
        """Remember the original state and take control of the stimulus."""
        ...

    def apply(self, value: float) -> None:
        """Set the stimulus to ``value``; raises :class:`DriverError` when it cannot."""
        ...

    def safe(self) -> None:
        """Set the safe setting at once (fans to full), retrying; called from any thread."""
        ...

    def restore(self) -> None:
        """Put back the original state (called once, at the end, whatever happened)."""
        ...

    def guard_plan(self) -> GuardPlan:
        """What the guardian does in this driver's place if the sweep process dies."""
        ...


# --- command templates ----------------------------------------------------------------------


def check_template(template: str, option: str) -> list[str]:
    """Split a command template and check it names ``{value}`` (a format spec is allowed, e.g.
    ``{value:#04x}`` for a hex byte); returns the argv template."""
    try:
        argv = shlex.split(template)
        fields = [f for arg in argv for _, f, _, _ in string.Formatter().parse(arg) if f]
    except ValueError as e:
        raise ConfigError(f"{option} `{template}` does not parse: {e}", _TEMPLATE_HINT) from e
    if not argv:
        raise ConfigError(f"{option} is empty", _TEMPLATE_HINT)
    if "value" not in fields:
        raise ConfigError(f"{option} `{template}` has no {{value}}", _TEMPLATE_HINT)
    unknown = sorted(set(fields) - {"value"})
    if unknown:
        raise ConfigError(
            f"{option} `{template}` names {{{unknown[0]}}}; only {{value}} is filled in",
            _TEMPLATE_HINT,
        )
    check_fills(argv, [SAMPLE_VALUE], template, option)
    return argv


# What a template is first tried with: a fan duty, a byte and a whole number of Hz alike.
SAMPLE_VALUE = 50.0


def check_fills(argv: list[str], values: list[float], template: str, option: str) -> None:
    """Fills the template with every value the sweep will set, so a format it cannot take
    (``{value:zz}``, ``{value:#04x}`` with 0.5, a stray ``{}``) is refused before anything
    changes rather than at the step that needs it."""
    for value in dict.fromkeys(values):
        try:
            fill(argv, value)
        except (ValueError, TypeError, IndexError, KeyError, AttributeError) as e:
            raise ConfigError(
                f"{option} `{template}` cannot format the value {value:g}: {e}", _TEMPLATE_HINT
            ) from None


def split_command(text: str, option: str) -> list[str]:
    """A command line as its words; a ConfigError for unbalanced quotes or nothing at all."""
    try:
        argv = shlex.split(text)
    except ValueError as e:
        raise ConfigError(f"{option} `{text}` does not parse: {e}", "check its quotes") from None
    if not argv:
        raise ConfigError(f"{option} is empty", f"give the command to run, or leave {option} out")
    return argv


_TEMPLATE_HINT = "e.g. --set 'shaker-ctl --grms {value}' or, as a hex byte, '{value:#04x}'"


def fill(argv: list[str], value: float) -> list[str]:
    """The template with ``{value}`` filled in; integral values are formatted as integers so
    ``{value:#04x}`` and ``--pwm {value}`` give ``0x3c`` and ``--pwm 60``."""
    v: float | int = int(value) if float(value).is_integer() else value
    return [arg.format(value=v) for arg in argv]


def run_command(
    argv: list[str], timeout_s: float = COMMAND_TIMEOUT_S, env: dict[str, str] | None = None
) -> str:
    """Run ``argv``; returns its stdout, raises :class:`DriverError` on failure or timeout."""
    try:
        done = subprocess.run(
            argv,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
            start_new_session=True,  # Ctrl-C is for iowatt, which then restores the stimulus
        )
    except FileNotFoundError as e:
        raise DriverError(f"command `{argv[0]}` not found", "check its name or path") from e
    except subprocess.TimeoutExpired as e:
        raise DriverError(
            f"`{shlex.join(argv)}` did not finish within {timeout_s:g} s",
            "check the device it talks to",
        ) from e
    if done.returncode != 0:
        last = (done.stderr.strip() or done.stdout.strip()).splitlines()[-1:] or ["no output"]
        raise DriverError(
            f"`{shlex.join(argv)}` exited with {done.returncode}: {last[0]}",
            "run it by hand to see why",
        )
    return done.stdout


def retry(action: Callable[[], object], what: str, retry_s: float = SAFE_RETRY_S) -> None:
    """Run ``action`` until it succeeds or ``retry_s`` has passed (then raise its error)."""
    deadline = time.monotonic() + retry_s
    while True:
        try:
            action()
            return
        except DriverError as e:
            if time.monotonic() >= deadline:
                raise DriverError(f"{what} failed for {retry_s:g} s: {e.message}", e.hint) from e
            time.sleep(SAFE_RETRY_PAUSE_S)


# --- cmd ------------------------------------------------------------------------------------


class CmdDriver:
    """Any command: ``--set 'shaker-ctl --grms {value}'``, ``--reset`` and ``--safe``.

    For a fan stimulus without ``--safe``, the safe setting is ``--set`` with 100 (%); without
    ``--reset`` the original state is the safe setting too, so fans never stay low.
    """

    name = "cmd"

    def __init__(
        self,
        set_template: str,
        reset: str | None = None,
        safe: str | None = None,
        *,
        fan: bool = False,
        timeout_s: float = COMMAND_TIMEOUT_S,
    ) -> None:
        self.set_argv = check_template(set_template, "--set")
        self.reset_argv = split_command(reset, "--reset") if reset else None
        if safe:
            self.safe_argv: list[str] | None = split_command(safe, "--safe")
        elif fan:
            check_fills(self.set_argv, [100], set_template, "--set")
            self.safe_argv = fill(self.set_argv, 100)
        else:
            self.safe_argv = None
        if self.reset_argv is None and fan:
            self.reset_argv = self.safe_argv
        self.timeout_s = timeout_s
        self._lock = threading.Lock()
        self._safe = False

    def describe(self) -> dict[str, Any]:
        return {
            "driver": self.name,
            "set": shlex.join(self.set_argv),
            "reset": shlex.join(self.reset_argv) if self.reset_argv else None,
            "safe": shlex.join(self.safe_argv) if self.safe_argv else None,
        }

    def sensor_sources(self) -> list[SourceSpec]:
        return []

    def prepare(self) -> None:
        pass

    def apply(self, value: float) -> None:
        with self._lock:
            if self._safe:
                raise DriverError("the stimulus is held at its safe setting", None)
            run_command(fill(self.set_argv, value), self.timeout_s)

    def safe(self) -> None:
        with self._lock:
            self._safe = True
            argv = self.safe_argv
            if argv is not None:
                retry(lambda: run_command(argv, self.timeout_s), "the safe setting")

    def restore(self) -> None:
        if self.reset_argv is not None and not self._safe:
            argv = self.reset_argv
            retry(lambda: run_command(argv, self.timeout_s), "--reset")

    def guard_plan(self) -> GuardPlan:
        return GuardPlan(restore=[self.reset_argv] if self.reset_argv else [])


# --- manual ---------------------------------------------------------------------------------


class ManualDriver:
    """Asks the operator to set each value and waits for Enter."""

    name = "manual"

    def __init__(self, describe_value: Callable[[float], str], stdin: TextIO | None = None) -> None:
        self.describe_value = describe_value
        self.stdin = stdin or sys.stdin
        self.stopping = threading.Event()  # set by the watchdog: stop waiting for Enter

    def describe(self) -> dict[str, Any]:
        return {"driver": self.name}

    def sensor_sources(self) -> list[SourceSpec]:
        return []

    def prepare(self) -> None:
        pass

    def apply(self, value: float) -> None:
        self._ask(f"set {self.describe_value(value)}, then press Enter")

    def safe(self) -> None:
        self.stopping.set()
        print(
            "\a*** iowatt: SET THE STIMULUS TO ITS SAFE SETTING NOW (fans to full) ***",
            file=sys.stderr,
            flush=True,
        )

    def restore(self) -> None:
        if not self.stopping.is_set():
            print("iowatt: the sweep is over; put the stimulus back as it was", file=sys.stderr)

    def guard_plan(self) -> GuardPlan:
        return GuardPlan(message="the sweep died: put the stimulus back to its safe setting")

    def _ask(self, prompt: str) -> None:
        print(f"iowatt: {prompt}", file=sys.stderr, flush=True)
        fd = self.stdin.fileno()
        while not self.stopping.is_set():
            ready, _, _ = select.select([fd], [], [], 0.2)
            if not ready:
                continue
            # One byte at a time: an Enter typed ahead belongs to the next step.
            byte = os.read(fd, 1)
            if not byte:
                raise DriverError(
                    "standard input closed while waiting for the operator",
                    "run the manual driver in a terminal",
                )
            if byte == b"\n":
                return
        raise DriverError("the watchdog stopped the sweep", None)
