"""Short stretches of work that Ctrl-C and SIGTERM must not cut in half: committing and
indexing a run, giving a stimulus back, tearing an environment down."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

HELD = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def held() -> Iterator[list[int]]:
    """Ctrl-C and SIGTERM wait until the block ends; the signals that arrived meanwhile are
    listed in the yielded list, for the caller to act on after. Off the main thread, where
    Python cannot install handlers, nothing is held."""
    pending: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield pending
        return
    old = {s: signal.signal(s, lambda n, f: pending.append(n)) for s in HELD}
    try:
        yield pending
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
