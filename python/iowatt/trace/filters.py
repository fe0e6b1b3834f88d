"""Which requests of a log to keep: a time window, methods, status classes, targets that are
not dynamic content, days that are not excluded (the study dropped attack days and dynamic
pages). Every request dropped is counted under the filter that dropped it."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from iowatt.errors import ConfigError

if TYPE_CHECKING:
    import pyarrow as pa

STATUS_CLASSES = ("1xx", "2xx", "3xx", "4xx", "5xx")


@dataclass(frozen=True)
class Filters:
    start: dt.datetime | None = None  # aware; naive times are given the log's first zone
    end: dt.datetime | None = None
    methods: tuple[str, ...] = ()
    status: tuple[str, ...] = ()  # classes such as "2xx", or codes such as "404"
    exclude: tuple[str, ...] = ()  # regular expressions matched anywhere in the target
    exclude_days: tuple[dt.date, ...] = ()  # in each line's own local time

    def describe(self) -> dict[str, Any]:
        return {
            "from": self.start.isoformat() if self.start else None,
            "until": self.end.isoformat() if self.end else None,
            "methods": list(self.methods),
            "status": list(self.status),
            "exclude": list(self.exclude),
            "exclude_days": [d.isoformat() for d in self.exclude_days],
        }

    def apply(self, table: pa.Table) -> tuple[pa.Table, dict[str, int]]:
        """The rows kept, and how many each filter dropped (in the order they are applied)."""
        import pyarrow.compute as pc

        dropped: dict[str, int] = {}
        zone = _first_zone(table)

        def keep(name: str, mask: pa.Array) -> None:
            nonlocal table
            before = table.num_rows
            table = table.filter(mask)
            if before - table.num_rows:
                dropped[name] = before - table.num_rows

        if self.start is not None:
            keep("before --from", pc.greater_equal(table["time_s"], _epoch(self.start, zone)))
        if self.end is not None:
            keep("after --until", pc.less(table["time_s"], _epoch(self.end, zone)))
        if self.methods:
            keep("method", pc.is_in(table["method"], value_set=_strings(self.methods)))
        if self.status:
            keep("status", _status_mask(table["status"], self.status))
        for pattern in self.exclude:
            matched = pc.match_substring_regex(table["target"], pattern=pattern)
            keep(f"--exclude {pattern}", pc.invert(matched))
        if self.exclude_days:
            days = [(d - dt.date(1970, 1, 1)).days for d in self.exclude_days]
            keep("--exclude-day", pc.invert(pc.is_in(local_days(table), value_set=_ints(days))))
        return table, dropped


def parse_filters(
    start: str | None,
    end: str | None,
    methods: tuple[str, ...],
    status: tuple[str, ...],
    exclude: tuple[str, ...],
    exclude_days: tuple[str, ...],
) -> Filters:
    """The filters from the command line's text, each value checked."""
    codes = tuple(s.strip().lower() for part in status for s in part.split(",") if s.strip())
    for code in codes:
        if code not in STATUS_CLASSES and not (code.isdigit() and 100 <= int(code) <= 999):
            raise ConfigError(
                f"--status `{code}` is neither a status class nor a status code",
                f"use {', '.join(STATUS_CLASSES)} or a code such as 404",
            )
    for pattern in exclude:
        try:
            re.compile(pattern)
        except re.error as e:
            raise ConfigError(
                f"--exclude `{pattern}` is not a regular expression: {e}",
                r"e.g. --exclude '\?|\.php$|^/cgi-bin/' drops dynamic content",
            ) from None
    ms = tuple(m.strip().upper() for part in methods for m in part.split(",") if m.strip())
    return Filters(
        start=_time(start, "--from"),
        end=_time(end, "--until"),
        methods=ms,
        status=codes,
        exclude=exclude,
        exclude_days=tuple(_day(d) for d in exclude_days),
    )


def _time(text: str | None, option: str) -> dt.datetime | None:
    if text is None:
        return None
    try:
        return dt.datetime.fromisoformat(text)
    except ValueError:
        raise ConfigError(
            f"{option} `{text}` is not a date and time",
            "use ISO 8601, e.g. 2026-03-02T06:00 (the log's zone) or 2026-03-02T06:00+01:00",
        ) from None


def _day(text: str) -> dt.date:
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise ConfigError(
            f"--exclude-day `{text}` is not a date", "use ISO 8601, e.g. 2026-03-04"
        ) from None


def _first_zone(table: pa.Table) -> dt.timezone:
    seconds = int(table["zone_s"][0].as_py()) if table.num_rows else 0
    return dt.timezone(dt.timedelta(seconds=seconds))


def _epoch(t: dt.datetime, zone: dt.timezone) -> int:
    return int((t if t.tzinfo else t.replace(tzinfo=zone)).timestamp())


def _status_mask(status: pa.ChunkedArray, codes: tuple[str, ...]) -> pa.Array:
    import pyarrow.compute as pc

    classes = [int(c[0]) for c in codes if c in STATUS_CLASSES]
    exact = [int(c) for c in codes if c not in STATUS_CLASSES]
    code = pc.cast(status, "int64")
    in_class = pc.is_in(pc.divide(code, 100), value_set=_ints(classes))  # whole division
    return pc.or_(in_class, pc.is_in(code, value_set=_ints(exact)))


def local_days(table: pa.Table) -> pa.Array:
    """Each request's day in its own local time, as days since 1970-01-01."""
    import pyarrow.compute as pc

    local = pc.add(table["time_s"], pc.cast(table["zone_s"], "int64"))
    # Floor, not truncation: a time before 1970 belongs to the day before.
    return pc.cast(pc.floor(pc.divide(pc.cast(local, "float64"), 86400.0)), "int64")


def _strings(values: tuple[str, ...]) -> pa.Array:
    import pyarrow as pa

    return pa.array(values, pa.large_string())


def _ints(values: list[int]) -> pa.Array:
    import pyarrow as pa

    return pa.array(values, pa.int64())
