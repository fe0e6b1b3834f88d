"""The comparison a campaign or a ``bench --repeat`` series prints when it ends."""

from __future__ import annotations

from pathlib import Path

import click

from iowatt.warnings import WarningSink


def show_comparison(
    results: Path, labels: dict[str, str], by: str, control: str | None = None, fmt: str = "text"
) -> None:
    """Compares the runs labelled ``labels`` by label ``by``; prints the table on stdout and
    its warnings on stderr."""
    # The comparison stack (scipy) loads only when a comparison is printed.
    from iowatt.compare.data import Filters, load_rows
    from iowatt.compare.render import render
    from iowatt.compare.table import Settings, compare, comparison_warnings
    from iowatt.histogram import DEFAULT_SLOW_NS

    rows = load_rows(results, Filters(labels), by, DEFAULT_SLOW_NS)
    comparison = compare(rows, Settings(by=by, control=control))
    click.echo(render(comparison, rows, fmt, "long"), nl=False)
    WarningSink().extend(comparison_warnings(comparison))
