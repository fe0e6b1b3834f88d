"""The open-files limit (RLIMIT_NOFILE): what this process may keep open, and making room.

Any process may raise its own soft limit up to the hard one, unprivileged; only root raises the
hard one. A verb that keeps many descriptors open (a workload's files, a replay's connections)
asks for them here before it starts, so a run that would fail with EMFILE half-way is refused
up front, in the same words whichever verb asks.
"""

from __future__ import annotations

import resource

from iowatt.errors import ConfigError

# An unlimited limit, as a number a need can be compared with.
UNLIMITED = 1 << 62


def open_files_limit() -> tuple[int, int]:
    """This process's (soft, hard) open-files limit; an unlimited one reads as ``UNLIMITED``."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return _finite(soft), _finite(hard)


def raise_open_files_limit(
    want: int, needs: str, fewer: str, limit: tuple[int, int] | None = None
) -> int:
    """Lets this process keep ``want`` descriptors open, raising its soft limit as far as that
    takes, and returns the hard limit.

    Refuses (ConfigError) when the hard limit is below ``want``: ``needs`` says what keeps them
    open (``workload `x` keeps up to 2,560 files open``), ``fewer`` how to ask for less.
    ``limit`` is the (soft, hard) pair the caller checks against, when it has read one.
    """
    soft, hard = open_files_limit() if limit is None else limit
    if want > hard:
        raise ConfigError(
            f"{needs} but the hard limit is {hard:,} (RLIMIT_NOFILE)",
            f"raise the hard limit to {want} (as root: `ulimit -Hn {want}`, or "
            f"/etc/security/limits.conf), or {fewer}",
        )
    if want > soft:
        # Read again rather than trust ``limit``: a raise must never lower what is set now.
        now, top = resource.getrlimit(resource.RLIMIT_NOFILE)
        if want > _finite(now) and want <= _finite(top):
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, top))
    return hard


def _finite(value: int) -> int:
    return UNLIMITED if value == resource.RLIM_INFINITY else value
