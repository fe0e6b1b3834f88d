"""Progress on the terminal, the same for every long verb: a verb passes its counters, this
module decides how they look and when anything is drawn.

A row reads: label, bar, amount (a percentage, ``1,234/5,000 lines`` or ``1.2 GiB/4 GiB``), the
rate the counter moves at, the time left (the time taken once done) and the verb's live text.
Everything goes to stderr, so stdout stays clean for ``--json``. Under ``--quiet`` or ``--json``
nothing is drawn. On a terminal the rows redraw in place; anywhere else (a pipe, a log, a test
capturing stderr) nothing animates and each row that stays is written once, in its final state,
when the verb closes its bars.

rich is imported only when something is drawn, so the CLI starts without it.

    with progress_bar("writing", total, unit="lines", quiet=quiet) as bar:
        for done in work():
            bar.update(done)
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from iowatt.units import format_bytes, format_ns, format_rate

if TYPE_CHECKING:
    from types import TracebackType

    from rich.console import Console
    from rich.progress import Progress as RichProgress
    from rich.progress import TaskID

    from iowatt._engine import Progress
    from iowatt.bench.config import WorkloadConfig

BYTES = "bytes"
# Redraws per second on a terminal: smooth enough to read, cheap over ssh.
REFRESH_PER_S = 10
# A rate is measured over at least this long, so it does not flicker with every update.
RATE_WINDOW_S = 0.5


class Bar:
    """One row. ``unit`` is None for a percentage, ``BYTES`` for sizes, else the noun counted
    (``lines``); ``total`` None while unknown."""

    def __init__(
        self, bars: Bars, label: str, total: float | None, unit: str | None, task: TaskID | None
    ) -> None:
        self.bars = bars
        self.label = label
        self.total = total
        self.unit = unit
        self.completed = 0.0
        self.task = task
        self.rate: float | None = None
        self._started: float | None = None
        self._sample = (0.0, 0.0)

    def update(self, completed: float, total: float | None = None, live: str | None = None) -> None:
        """Moves the bar to ``completed`` (and ``total``, when given); ``live`` replaces the text
        at the end of the row."""
        self.completed = completed
        if total is not None:
            self.total = total
        if self.task is None:
            return
        self._measure()
        fields: dict[str, Any] = {"amount": self._amount(), "rate": self._rate()}
        if live is not None:
            fields["live"] = live
        self.bars.show(self.task, completed=completed, total=total, **fields)

    def advance(self, by: float = 1, live: str | None = None) -> None:
        self.update(self.completed + by, live=live)

    @property
    def finished(self) -> bool:
        return self.total is not None and self.completed >= self.total

    def _measure(self) -> None:
        now = time.monotonic()
        if self._started is None:
            self._started = now
            self._sample = (now, self.completed)
            return
        if self.finished:
            # Done: the rate over the whole bar, the figure worth keeping in a log.
            spent = now - self._started
            self.rate = self.completed / spent if spent > 0 else None
            return
        then, before = self._sample
        if now - then >= RATE_WINDOW_S:
            self.rate = (self.completed - before) / (now - then)
            self._sample = (now, self.completed)

    def _amount(self) -> str:
        done, total = self.completed, self.total
        if self.unit is None:
            return f"{100 * done / total:>3.0f}%" if total else ""
        if self.unit == BYTES:
            if total:
                return f"{format_bytes(done)}/{format_bytes(total)}"
            return format_bytes(done) if done else ""
        return f"{done:,.0f}/{total:,.0f} {self.unit}" if total else f"{done:,.0f} {self.unit}"

    def _rate(self) -> str:
        if self.unit is None or self.rate is None:
            return ""
        if self.unit == BYTES:
            return f"{format_bytes(self.rate)}/s"
        return f"{format_rate(self.rate)} {self.unit}/s"


class Bars:
    """The rows a verb shows on stderr while it runs; drawn from the first update on, so a verb
    refused before it starts shows none. ``transient`` rows vanish when closed (for a verb
    that prints its own results after them). Use as a context manager, or ``close()``."""

    def __init__(
        self, quiet: bool = False, transient: bool = False, console: Console | None = None
    ) -> None:
        self.quiet = quiet
        self.tasks: list[Bar] = []
        self._progress: RichProgress | None = None
        if not quiet:
            self._progress = _rich(transient, console)

    def bar(self, label: str, total: float | None = None, unit: str | None = None) -> Bar:
        """The row labelled ``label``, added the first time it is asked for."""
        for row in self.tasks:
            if row.label == label:
                return row
        task = None
        if self._progress is not None:
            task = self._progress.add_task(label, total=total, amount="", rate="", live="")
        row = Bar(self, label, total, unit, task)
        self.tasks.append(row)
        return row

    def show(self, task: TaskID, **changes: Any) -> None:
        """Redraws a row with its new counts (``Bar.update`` calls it)."""
        assert self._progress is not None
        if not self._progress.live.is_started:
            self._progress.start()
        self._progress.update(task, **changes)

    @property
    def is_terminal(self) -> bool:
        return self._progress is not None and self._progress.console.is_terminal

    def note(self, message: str) -> None:
        """A line on stderr, above the rows."""
        if self._progress is None:
            print(message, file=sys.stderr)
        else:
            # Soft wrap: a long line stays one line in a log, not folded at the width.
            self._progress.console.print(message, markup=False, highlight=False, soft_wrap=True)

    def close(self) -> None:
        if self._progress is not None and self._progress.live.is_started:
            self._progress.stop()

    def __enter__(self) -> Bars:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()


@contextmanager
def progress_bar(
    label: str, total: float | None = None, *, unit: str | None = None, quiet: bool = False
) -> Iterator[Bar]:
    """One row on stderr for the length of the ``with``."""
    with Bars(quiet=quiet) as bars:
        yield bars.bar(label, total, unit)


def _rich(transient: bool, console: Console | None) -> RichProgress:
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(bar_width=30),
        TextColumn("{task.fields[amount]}"),
        TextColumn("{task.fields[rate]}"),
        TimeRemainingColumn(elapsed_when_finished=True),
        TextColumn("{task.fields[live]}"),
        console=console or Console(stderr=True),
        refresh_per_second=REFRESH_PER_S,
        transient=transient,
    )


class RichReporter:
    """A bench's rows: one per workload, over its ramp and measured time, with ops/s and
    MiB/s live."""

    def __init__(self, console: Console | None = None) -> None:
        self.bars = Bars(console=console)
        self.row: Bar | None = None
        self.last: tuple[float, int, int] = (0.0, 0, 0)

    def workload_started(self, wl: WorkloadConfig) -> None:
        self.row = self.bars.bar(wl.name, total=wl.runtime_s + wl.ramp_s)
        self.row.update(0, live="")
        self.last = (time.monotonic(), 0, 0)

    def update(self, wl: WorkloadConfig, progress: Progress) -> None:
        assert self.row is not None
        p = progress
        if p["phase"] == "preparing":
            total = p["prepare_total"] or 1
            live = f"laying out {format_bytes(p['prepared_bytes'])} / {format_bytes(total)}"
            self.row.update(0, live=live)
            return
        now = time.monotonic()
        t0, ops0, bytes0 = self.last
        dt = now - t0
        if dt < RATE_WINDOW_S:
            return
        ops_s = (p["ops"] - ops0) / dt
        mib_s = (p["bytes"] - bytes0) / dt / (1 << 20)
        self.last = (now, p["ops"], p["bytes"])
        start = p["measure_start_ns"] - wl.ramp_s * 1e9
        elapsed = max(0.0, (time.monotonic_ns() - start) / 1e9)
        phase = "ramp " if p["phase"] == "ramp" else ""
        self.row.update(elapsed, live=f"{phase}{format_rate(ops_s)} ops/s  {mib_s:,.1f} MiB/s")

    def workload_finished(self, wl: WorkloadConfig, summary: dict[str, Any]) -> None:
        assert self.row is not None
        lat = summary["latency_ns"]
        live = f"{_rate(summary)}  {summary['mib_s']:,.1f} MiB/s  p99 {format_ns(lat['p99'])}"
        done = wl.runtime_s + wl.ramp_s
        if summary["status"] != "complete":
            # The bar stays where the run stopped: the measured time (a ramp counts if it
            # was passed).
            measured = summary["runtime_s"]
            done = min(done, measured + (wl.ramp_s if measured > 0 else 0.0))
            live = f"{summary['status']} after {measured:.1f} s  {live}"
        self.row.update(done, live=live)

    def note(self, message: str) -> None:
        self.bars.note(message)

    def close(self) -> None:
        self.bars.close()


def _rate(summary: dict[str, Any]) -> str:
    """``101 of 200 ops/s``: the rate, against the requested one when the run kept a schedule."""
    ops_s = format_rate(summary["ops_s"])
    if "requested_rate" not in summary:
        return f"{ops_s} ops/s"
    requested = format_rate(summary["requested_rate"])
    if summary["rate_unit"] == "ops/s":
        return f"{ops_s} of {requested} ops/s"
    return f"{ops_s} ops/s ({format_rate(summary['achieved_rate'])} of {requested} events/s)"
