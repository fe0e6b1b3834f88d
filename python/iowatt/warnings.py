"""Warnings iowatt gives: typed, shown once on stderr, and recorded in the run's events.

A warning says what is off and what it means for the results ("the target is on tmpfs: results
measure memory, not a storage device"). Each kind is a :class:`Kind`; code that finds something
makes a :class:`RunWarning` and hands it to the run's :class:`WarningSink`, which prints it once —
on stderr, so ``--json`` output on stdout stays pure — and keeps it for ``events.parquet``
(``source = "iowatt"``, ``kind = "warning"``, the message prefixed with the warning's kind).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import Enum
from typing import Any


class Kind(str, Enum):
    TMPFS_TARGET = "tmpfs-target"  # the target is in memory
    POWER_GAP = "power-gap"  # a power channel stopped reporting during the work
    METER_LINES = "meter-lines"  # malformed, missing or out-of-order meter log lines
    SOURCE_FAILING = "source-failing"  # a power source's polls or readings failed
    WML_IGNORED = "wml-ignored"  # a `.f` setting iowatt accepts but does not apply
    COMPARISON = "comparison"  # a series drifts, oscillates, carries over, or has too few runs
    RESTORE_FAILED = "restore-failed"  # a sweep could not give its stimulus back
    AGING = "aging"  # `iowatt age` could not do all it was asked
    CATALOG = "catalog"  # the catalog was rebuilt, could not be updated, or left a run out
    RATE_NOT_HELD = "rate-not-held"  # a run with a schedule fell more than 1 % short of it
    OTHER_LOAD = "other-load"  # processes outside a tasks run took over 5 % of the node's CPU


@dataclass(frozen=True)
class RunWarning:
    kind: Kind
    message: str


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


class WarningSink:
    """Where a run's warnings go: each shown once, all kept with their time."""

    def __init__(self, show: Callable[[str], None] | None = _stderr) -> None:
        self._show = show
        self._seen: set[RunWarning] = set()
        self.recorded: list[tuple[int, RunWarning]] = []  # (CLOCK_MONOTONIC ns, warning)
        self.other: list[dict[str, Any]] = []  # events that are not warnings

    def warn(self, warning: RunWarning) -> None:
        if warning in self._seen:
            return
        self._seen.add(warning)
        self.recorded.append((time.monotonic_ns(), warning))
        if self._show is not None:
            self._show(f"warning: {warning.message}")

    def extend(self, warnings: Iterable[RunWarning]) -> None:
        for w in warnings:
            self.warn(w)

    def event(self, source: str, kind: str, message: str) -> None:
        """Keeps an event of the run that is not a warning (a workload file's command...)."""
        self.other.append(
            {"mono_ns": time.monotonic_ns(), "source": source, "kind": kind, "message": message}
        )

    def events(self) -> list[dict[str, Any]]:
        """Rows for the run's events table, in time order."""
        warnings = [
            {
                "mono_ns": t,
                "source": "iowatt",
                "kind": "warning",
                "message": f"{w.kind.value}: {w.message}",
            }
            for t, w in self.recorded
        ]
        return sorted(warnings + self.other, key=lambda e: e["mono_ns"])
