"""What every simulator's run does the same way: commit what it simulated — or, when nothing
was, abandon the run. (Its manifest and summary are
:meth:`iowatt.store.writer.RunWriter.finish`'s.)"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from iowatt.errors import IowattError, RunInterrupted


def commit(
    writer: Any, simulated: bool, failure: IowattError | None, write: Callable[[], Path]
) -> Path:
    """Writes the run with ``write`` when anything was ``simulated`` (marked incomplete by the
    caller when ``failure``), else abandons it; raises ``failure`` once the run is written."""
    if not simulated:
        writer.abandon()
        raise failure or RunInterrupted("interrupted")
    run_dir = write()
    if failure is not None:
        raise failure
    return run_dir
