"""The kernel's page cache, dropped between measurements so that none reads what another
read (campaigns' ``drop_caches``, ``iowatt tasks --drop-caches``). Root only."""

from __future__ import annotations

import os
from pathlib import Path

from iowatt.errors import SourceUnavailableError

DROP_CACHES = Path("/proc/sys/vm/drop_caches")


def can_drop() -> bool:
    return os.access(DROP_CACHES, os.W_OK)


def drop() -> None:
    """Writes dirty pages back, then drops the clean ones, dentries and inodes."""
    os.sync()
    try:
        DROP_CACHES.write_text("3\n")
    except OSError as e:
        raise SourceUnavailableError(f"cannot drop caches: {e.strerror}", "run as root") from None
