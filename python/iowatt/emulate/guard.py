"""The emulated disk's guardian: a separate process that takes the mount down and commits the
journaled run if ``iowatt emulate mount`` is killed outright (SIGKILL, the OOM killer).

A killed FUSE server leaves its mount point stale: every access fails with "Transport endpoint
is not connected" until someone unmounts it. The mount process starts ``python -m
iowatt.emulate.guard`` in its own session and keeps a pipe to it open; ``done`` on the pipe
means it ended normally. If the pipe closes without that, the guardian unmounts (lazily, if
files are open) and commits the counters the mount process journaled as an incomplete run.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from iowatt import guardian

JOURNAL = "journal.json"
DIED = "the emulated disk's process died before it unmounted"


class Guardian(guardian.Guardian):
    """The mount process's handle on its guardian."""

    def __init__(self, tmp: Path, run_id: str, mount: Path, report: bool) -> None:
        flags = [] if report else ["--no-report"]
        super().__init__("iowatt.emulate.guard", str(tmp), run_id, str(mount), *flags)


def main(argv: list[str]) -> int:
    tmp, run_id, mount = Path(argv[0]), argv[1], Path(argv[2])
    report = "--no-report" not in argv
    # Once the mount process is gone without saying it was done, whatever mount of iowatt's
    # is left at MOUNT, live or stale, is taken down.
    if guardian.parent_lines() is None:
        return 0
    from iowatt.emulate import mounts

    if mounts.is_emulated(mount) or mounts.is_stale(mount):
        try:
            lazy = mounts.unmount(mount)
            say(f"{DIED}; unmounted {mount}" + (" (lazily: files were open)" if lazy else ""))
        except OSError as e:
            say(f"{DIED}; could not unmount {mount} ({e.strerror}): iowatt emulate unmount {mount}")
    if tmp.is_dir():
        run_dir = commit(tmp, run_id, report)
        say(f"what it counted is in {run_dir}")
    return 0


def commit(tmp: Path, run_id: str, report: bool) -> Path:
    """The journal's counters as an incomplete ``emulate`` run."""
    from iowatt.store.catalog import publish
    from iowatt.store.writer import RunWriter

    journal = tmp / JOURNAL
    j = json.loads(journal.read_text()) if journal.exists() else {}
    journal.unlink(missing_ok=True)
    writer = RunWriter.resume(tmp, run_id)
    counters = j.get("counters")
    writer.finish(
        "emulate",
        DIED,
        started_ns=j.get("started_ns", 0),
        seed=j.get("seed"),
        labels=j.get("labels", {}),
        config=j.get("config", {}),
        summary={} if counters is None else {"counters": counters},
        clock_anchor=j.get("clock_anchor"),
    )
    run_dir = publish(writer)
    if report:
        from iowatt.report import write_report

        write_report([run_dir], run_dir / "report.html")
    return run_dir


def say(message: str) -> None:
    print(f"iowatt emulate guardian: {message}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
