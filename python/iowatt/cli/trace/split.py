"""``iowatt trace split``: a log into the master schedule and the ordered request list."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from iowatt.cli.trace.options import filters_from, log_options
from iowatt.trace.log import read_log
from iowatt.trace.schedule import SPREADS, check_spread
from iowatt.trace.split import check_out_dir
from iowatt.trace.split import split as split_log


@click.command("split")
@click.argument("log", type=click.Path(path_type=Path))
@click.option(
    "-o",
    "--output",
    "out",
    type=click.Path(path_type=Path),
    metavar="DIR",
    help="Directory to write (default: LOG's name with .trace, beside it).",
)
@click.option(
    "--spread",
    default="start",
    show_default=True,
    metavar="|".join(SPREADS),
    help="Where a second's requests go: all at its start, or even through it.",
)
@click.option("--json", "as_json", is_flag=True, help="Print trace.json instead of a summary.")
@log_options
def split(log: Path, out: Path | None, spread: str, as_json: bool, **kwargs: Any) -> None:
    """Split LOG into DIR/schedule.parquet (requests per second) and DIR/requests.parquet."""
    filters = filters_from(kwargs)
    check_spread(spread)
    out = out or log.with_name(log.name.removesuffix(".gz") + ".trace")
    check_out_dir(out)
    parsed = read_log(log, kwargs["fmt"])
    record = split_log(parsed, filters, spread, out)
    if as_json:
        click.echo(json.dumps(record, indent=2))
        return
    read = record["read"]
    dropped = ", ".join(f"{n:,} {why}" for why, n in record["dropped"].items()) or "none"
    click.echo(
        f"{out}: {record['requests']:,} requests over {record['duration_s']:,} s "
        f"(peak {record['peak_per_s']}/s), spread `{spread}`"
    )
    click.echo(
        f"read {read['lines']:,} lines: {read['bad']:,} bad, {read['out_of_order']:,} out of "
        f"order (sorted); dropped by filters: {dropped}"
    )
    for bad in read["bad_lines"][:3]:
        click.echo(f"  line {bad['line']}: {bad['reason']}", err=True)
