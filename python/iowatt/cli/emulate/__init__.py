"""``iowatt emulate``: a disk model served as a mounted directory, and taking one down; one
module per sub-verb, imported when it runs."""

from __future__ import annotations

import click

from iowatt.cli import LazyGroup

SUBVERBS: dict[str, str] = {
    "mount": "mount:mount",
    "set": "set:set_",
    "unmount": "unmount:unmount",
}


@click.group(cls=LazyGroup, verbs=SUBVERBS, package=__name__)
def emulate() -> None:
    """An emulated disk: a directory whose I/O takes the time, and whose power states cost the
    energy, that a datasheet's disk model gives."""
