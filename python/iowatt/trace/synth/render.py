"""Writing requests as log lines, a batch at a time: every field is a column of strings taken
from a small table (addresses, paths, times) and the columns are joined in Arrow, so a line
costs no Python at all.

Layouts (Apache ``mod_log_config``; docs/trace.md):

    common          %h %l %u %t "%r" %>s %b
    combined        %h %l %u %t "%r" %>s %b "%{Referer}i" "%{User-Agent}i"
    vhost_combined  %v:%p %h %l %u %t "%r" %>s %O "%{Referer}i" "%{User-Agent}i"

``%b`` is ``-`` when no body was sent (304, HEAD, an empty file); ``%O`` counts the headers too.
"""

from __future__ import annotations

import datetime as dt
import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING

from iowatt.trace.synth.requests import METHODS, NO_BODY, Batch, wire_bytes

if TYPE_CHECKING:
    import pyarrow as pa

FORMATS = ("common", "combined", "vhost_combined")
MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


@dataclass(frozen=True)
class Tables:
    """The strings lines are made of, as Arrow arrays indexed by the batch's numbers."""

    fmt: str
    vhost: str  # "host:port " for vhost_combined
    addresses: pa.Array
    client_agent: pa.Array  # per client: its user agent
    client_protocol: pa.Array  # per client: "HTTP/1.1" …
    paths: pa.Array
    referers: pa.Array  # quoted, e.g. `"-"`


def clf_time(local: dt.datetime, zone: str) -> str:
    """``[02/Mar/2026:13:05:09 +0100]``: ``local`` is the server's wall-clock time."""
    return (
        f"[{local.day:02d}/{MONTHS[local.month - 1]}/{local.year}:"
        f"{local.hour:02d}:{local.minute:02d}:{local.second:02d} {zone}]"
    )


@functools.lru_cache(maxsize=2)
def _times_of_day(zone: str) -> pa.Array:
    """``hh:mm:ss +zone]`` for every second of a day (built once: a year's log has 366 days)."""
    import pyarrow as pa

    return pa.array(
        [
            f"{h:02d}:{m:02d}:{s:02d} {zone}]"
            for h in range(24)
            for m in range(60)
            for s in range(60)
        ]
    )


def time_column(start: dt.datetime, zone: str, first: int, seconds: int) -> pa.Array:
    """The ``%t`` text of each second from ``first`` to ``first + seconds`` after ``start``."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    # Days from Python, times of day from one table: a week is 7 + 86,400 strings, not 604,800.
    t0 = start + dt.timedelta(seconds=first)
    midnight = t0.replace(hour=0, minute=0, second=0)
    offset = (t0 - midnight).seconds
    days = (offset + seconds + 86399) // 86400
    day_text = pa.array([clf_time(midnight + dt.timedelta(days=d), zone)[:12] for d in range(days)])
    hms = _times_of_day(zone)

    t = offset + np.arange(seconds, dtype=np.int64)
    return pc.binary_join_element_wise(
        day_text.take(pa.array(t // 86400)), ":", hms.take(pa.array(t % 86400)), ""
    )


def lines(batch: Batch, times: pa.Array, first: int, tables: Tables) -> pa.Array:
    """One line per request of ``batch`` (each ending in a newline); ``times`` holds the
    ``%t`` of each second from ``first`` on."""
    import pyarrow as pa
    import pyarrow.compute as pc

    client = pa.array(batch.client)
    t = times.take(pa.array(batch.second - first))
    host = tables.addresses.take(client)
    method = pa.array(METHODS).take(pa.array(batch.method))
    target = tables.paths.take(pa.array(batch.target))
    protocol = tables.client_protocol.take(client)
    status = pc.cast(pa.array(batch.status), pa.string())
    if tables.fmt == "vhost_combined":
        size = pc.cast(pa.array(wire_bytes(batch)), pa.string())
    else:
        body = pa.array(batch.body, mask=batch.body == NO_BODY)
        size = pc.fill_null(pc.cast(body, pa.string()), "-")
    parts: list[pa.Array | str] = [
        host,
        " - - ",
        t,
        ' "',
        method,
        " ",
        target,
        " ",
        protocol,
        '" ',
        status,
        " ",
        size,
    ]
    if tables.fmt != "common":
        referer = tables.referers.take(pa.array(batch.referer))
        parts += [" ", referer, ' "', tables.client_agent.take(client), '"']
    if tables.fmt == "vhost_combined":
        parts.insert(0, tables.vhost)
    return pc.binary_join_element_wise(*parts, "\n", "")
