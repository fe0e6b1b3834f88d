"""``iowatt trace``: read, split, summarise, generate and anonymise web access logs; one module
per sub-verb, imported when it runs."""

from __future__ import annotations

import click

from iowatt.cli import LazyGroup

SUBVERBS: dict[str, str] = {
    "anonymize": "anonymize:anonymize",
    "generate": "generate:generate",
    "split": "split:split",
    "stats": "stats:stats",
}


@click.group(cls=LazyGroup, verbs=SUBVERBS, package=__name__)
def trace() -> None:
    """Web access logs: read any format, split, summarise, generate, anonymise."""
