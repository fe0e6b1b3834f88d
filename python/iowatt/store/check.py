"""``iowatt runs --check``: find what killed processes left in a results directory, and repair it.

- a run directory still under its temporary name whose process is gone: committed if all its
  files were written (the process died just before the rename), otherwise removed together with
  the work directories its owner record names — only those marked as this run's, or empty;
- a sweep's journal whose sweep and guardian are both gone: handed to ``finish_journal``;
- the catalog: rebuilt from the run directories, listing runs it was missing, runs whose
  directory is gone, and runs whose files are damaged (left out, named with the file).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from iowatt.store.catalog import indexed_dirs, refresh
from iowatt.store.lock import is_held
from iowatt.store.manifest import MANIFEST, SUMMARY
from iowatt.store.writer import OWNER, TMP_PREFIX, created, fsync_dir, remove_created

JOURNAL = "sweep.json"  # a sweep's journal (iowatt.sweep.journal.PLAN)
# A run's directory exists for an instant before its process locks it and writes its record.
JUST_MADE_S = 10.0


@dataclass
class Finding:
    action: str  # in-progress, committed, removed, kept, indexed, dropped, broken
    what: str
    detail: str = ""


@dataclass
class CheckReport:
    findings: list[Finding] = field(default_factory=list)

    def add(self, action: str, what: str, detail: str = "") -> None:
        self.findings.append(Finding(action, what, detail))


def check_results(
    results: Path, finish_journal: Callable[[Path], Path] | None = None
) -> CheckReport:
    """Repairs ``results`` and says what it found and did."""
    report = CheckReport()
    with os.scandir(results) as entries:
        temps = sorted(Path(e.path) for e in entries if e.name.startswith(TMP_PREFIX))
    for tmp in temps:
        _settle(tmp, report, finish_journal)
    before = indexed_dirs(results)
    # Rebuilt from nothing, so every run's files are read again: damage since they were
    # indexed is found, and runs set aside earlier get another chance.
    done = refresh(results, rebuild=True)
    broken = {name for name, _, _ in done.broken}
    for name in sorted(set(done.added) - before - broken):
        report.add("indexed", name)
    for name in sorted(before - set(done.added)):
        report.add("dropped", name, "its directory is gone")
    for name, file, reason in done.broken:
        report.add("broken", name, f"{file}: {reason}")
    return report


def _settle(tmp: Path, report: CheckReport, finish_journal: Callable[[Path], Path] | None) -> None:
    owner = tmp / OWNER
    if is_held(tmp) or _just_made(tmp):
        report.add("in-progress", tmp.name, "its process is running")
        return
    run_id = tmp.name.removeprefix(TMP_PREFIX)
    if (tmp / JOURNAL).exists() and finish_journal is not None:
        run_dir = finish_journal(tmp)
        report.add("committed", run_dir.name, "a killed sweep's journal, marked incomplete")
        return
    if not owner.exists() and _complete(tmp):
        final = tmp.parent / run_id
        os.rename(tmp, final)
        fsync_dir(tmp.parent)
        report.add("committed", run_id, "written in full by a process killed before the rename")
        return
    for path in created(tmp):
        _remove_created(Path(path), run_id, report)
    shutil.rmtree(tmp, ignore_errors=True)
    report.add("removed", tmp.name, "a run whose process was killed before it was written")


def _just_made(tmp: Path) -> bool:
    return not any(tmp.iterdir()) and time.time() - tmp.stat().st_mtime < JUST_MADE_S


def _complete(tmp: Path) -> bool:
    try:
        for name in (MANIFEST, SUMMARY):
            json.loads((tmp / name).read_bytes())
    except (OSError, ValueError):
        return False
    return True


def _remove_created(path: Path, run_id: str, report: CheckReport) -> None:
    removed = remove_created(path, run_id)
    if removed:
        report.add("removed", str(path), f"test data of killed run {run_id}")
    elif removed is False:
        report.add("kept", str(path), f"named by run {run_id} but not marked as its own")
