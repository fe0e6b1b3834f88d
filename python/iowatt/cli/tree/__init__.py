"""``iowatt tree``: snapshot a file tree's metadata with private names, and recreate it; one
module per sub-verb, imported when it runs."""

from __future__ import annotations

import click

from iowatt.cli import LazyGroup

SUBVERBS: dict[str, str] = {
    "snapshot": "snapshot:snapshot",
    "recreate": "recreate:recreate",
}


@click.group(cls=LazyGroup, verbs=SUBVERBS, package=__name__)
def tree() -> None:
    """File trees shared without their names: snapshot and recreate."""
