"""File locks that die with their process: the catalog's writer lock and a run's owner lock.

Both are ``flock`` locks, which the kernel drops when the process holding them dies however it
dies (SIGKILL, the OOM killer), so a lock that can be taken belongs to nobody alive.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from iowatt.errors import StoreError

WRITER_LOCK = ".catalog.lock"
CATALOG = "catalog.duckdb"
# Writers hold the lock for tens of milliseconds; a minute of waiting means one is stuck.
WRITER_WAIT_S = 60.0


@contextmanager
def writer_lock(
    results: Path, served: Callable[[], bool] | None = None, wait_s: float = WRITER_WAIT_S
) -> Iterator[bool]:
    """Serialises the processes that replace the catalog. Readers never take it: they read
    the catalog file in place, which a writer never changes (it renames a new one over it).

    Yields True with the lock held, or False without it when ``served()`` came true while
    waiting (another writer did the work: it is asked each time the catalog is replaced)."""
    fd = os.open(results / WRITER_LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        deadline = time.monotonic() + wait_s
        seen = _identity(results / CATALOG)
        while not try_lock(fd):
            now = _identity(results / CATALOG)
            if served is not None and now != seen:
                seen = now
                if served():
                    yield False
                    return
            if time.monotonic() > deadline:
                raise StoreError(
                    f"another iowatt process has held `{results / WRITER_LOCK}` for over"
                    f" {wait_s:.0f} s",
                    "the runs are committed and will be indexed by the next `iowatt runs`;"
                    " look for a stopped iowatt process (`fuser` on the lock file)",
                )
            time.sleep(0.005)
        yield True
    finally:
        os.close(fd)  # closing drops the lock


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return st.st_ino, st.st_mtime_ns


def try_lock(fd: int) -> bool:
    """Takes an exclusive lock on ``fd`` if nobody holds one."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def is_held(path: Path) -> bool:
    """Whether a live process holds the lock on ``path`` (a missing file is not held)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        return not try_lock(fd)
    finally:
        os.close(fd)
