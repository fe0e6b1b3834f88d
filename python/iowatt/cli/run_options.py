"""The options every measuring verb shares (bench, replay): power beside the run, and what is
printed and written at its end."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import click

from iowatt.power.sources import DEFAULT_HZ, SOURCE_HELP

F = TypeVar("F", bound=Callable[..., object])


def power_and_output(f: F) -> F:
    """``--power``, ``--power-hz``, ``--idle``, ``--no-report``, ``--quiet``, ``--json``."""
    for option in reversed(
        [
            click.option("--power", "power", multiple=True, metavar="SOURCE", help=SOURCE_HELP),
            click.option(
                "--power-hz",
                type=float,
                default=DEFAULT_HZ,
                show_default=True,
                help="Power samples per second.",
            ),
            click.option(
                "--idle", help="With --power: measure idle power this long first, e.g. 30s."
            ),
            click.option("--no-report", is_flag=True, help="Do not write report.html."),
            click.option("--quiet", "-q", is_flag=True, help="No progress output."),
            click.option(
                "--json", "as_json", is_flag=True, help="Print the run's summary.json to stdout."
            ),
        ]
    ):
        f = option(f)
    return f
