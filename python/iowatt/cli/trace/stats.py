"""``iowatt trace stats``: requests, bytes, status mix, top targets and the daily profile."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from iowatt.cli.trace.options import filters_from, log_options
from iowatt.trace.log import read_log
from iowatt.trace.stats import TOP, render
from iowatt.trace.stats import stats as log_stats


@click.command("stats")
@click.argument("log", type=click.Path(path_type=Path))
@click.option(
    "--top",
    default=TOP,
    show_default=True,
    type=click.IntRange(1, 10_000),
    help="How many of the most requested targets to list.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the figures as one JSON object.")
@log_options
def stats(log: Path, top: int, as_json: bool, **kwargs: Any) -> None:
    """Summarise LOG (plain or gzip): traffic, status mix, top targets, daily profile."""
    filters = filters_from(kwargs)
    parsed = read_log(log, kwargs["fmt"])
    table, dropped = filters.apply(parsed.table)
    figures = log_stats(table, top)
    counts = parsed.counts() | {"dropped": dropped}
    if as_json:
        click.echo(json.dumps(counts | figures))
        return
    click.echo(render(figures, counts))
