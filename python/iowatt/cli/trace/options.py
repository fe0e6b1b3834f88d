"""Options shared by the trace sub-verbs that read a log: its format and the filters."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from iowatt.trace.filters import Filters, parse_filters

F = TypeVar("F", bound=Callable[..., Any])


def log_options(f: F) -> F:
    """--format and the filters (--from, --until, --method, --status, --exclude, --exclude-day)."""
    options = [
        click.option(
            "--format",
            "fmt",
            default="combined",
            show_default=True,
            metavar="FMT",
            help="common, combined, vhost_combined, or a format string in Apache's "
            "mod_log_config syntax.",
        ),
        click.option(
            "--from",
            "start",
            metavar="TIME",
            help="Keep requests from this time (ISO 8601; without a zone, the log's).",
        ),
        click.option("--until", "end", metavar="TIME", help="Keep requests before this time."),
        click.option(
            "--method",
            "methods",
            multiple=True,
            metavar="M[,M]",
            help="Keep these methods only, e.g. GET,HEAD.",
        ),
        click.option(
            "--status",
            multiple=True,
            metavar="CLASS[,CODE]",
            help="Keep these status classes or codes only, e.g. 2xx,3xx or 200,304.",
        ),
        click.option(
            "--exclude",
            multiple=True,
            metavar="REGEX",
            help=r"Drop targets matching this pattern (dynamic content: '\?|\.php$').",
        ),
        click.option(
            "--exclude-day",
            "exclude_days",
            multiple=True,
            metavar="DATE",
            help="Drop this day (local time), e.g. one with an attack. Repeatable.",
        ),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def filters_from(kwargs: dict[str, Any]) -> Filters:
    """The filters named by :func:`log_options`, taken out of a command's keyword arguments."""
    return parse_filters(
        kwargs.pop("start"),
        kwargs.pop("end"),
        kwargs.pop("methods"),
        kwargs.pop("status"),
        kwargs.pop("exclude"),
        kwargs.pop("exclude_days"),
    )
