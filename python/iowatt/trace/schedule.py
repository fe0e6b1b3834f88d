"""When each request of a log goes out. CLF times have one-second resolution, so a policy
places the requests of one second: all at the second's start (``start``, the study's WebClient:
it issued a second's N requests together), or spread evenly through the second in log order
(``even``: request k of n at k/n s), which avoids a burst at every second's edge."""

from __future__ import annotations

from typing import TYPE_CHECKING

from iowatt.errors import ConfigError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

SPREADS = ("start", "even")
# The longest trace a schedule covers, one row per second (a year of seconds is 32 M rows).
MAX_SPAN_S = 400 * 86400


def check_spread(spread: str) -> str:
    if spread not in SPREADS:
        raise ConfigError(
            f"--spread `{spread}` is not a policy",
            "use `start` (a second's requests all at its start) or `even` (spread through it)",
        )
    return spread


def offsets_ns(time_s: npt.NDArray[np.int64], spread: str) -> npt.NDArray[np.int64]:
    """Each request's time from the first second's start, in ns; ``time_s`` must be sorted."""
    import numpy as np

    if len(time_s) == 0:
        return np.zeros(0, np.int64)
    base = (time_s - time_s[0]) * 1_000_000_000
    if spread == "start":
        return base
    # Rank of each request within its second, and the size of its second.
    _, first, count = np.unique(time_s, return_index=True, return_counts=True)
    rank = np.arange(len(time_s)) - np.repeat(first, count)
    return base + rank * 1_000_000_000 // np.repeat(count, count)


def per_second(
    time_s: npt.NDArray[np.int64],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The master schedule: every second from the first request's to the last's (quiet ones
    included, with 0) and its number of requests."""
    import numpy as np

    if len(time_s) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    span = int(time_s[-1] - time_s[0])
    if span > MAX_SPAN_S:
        raise ConfigError(
            f"the requests span {span / 86400:.0f} days, more than {MAX_SPAN_S // 86400}",
            "pick a window with --from and --until",
        )
    counts = np.bincount(time_s - time_s[0])
    return np.arange(len(counts), dtype=np.int64) + time_s[0], counts.astype(np.int64)
