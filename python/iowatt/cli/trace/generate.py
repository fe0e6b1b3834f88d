"""``iowatt trace generate``: a synthetic access log with a realistic daily load (see
docs/trace.md, "Generating a log")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from iowatt.cli.progress import progress_bar
from iowatt.trace.synth import params as p
from iowatt.units import format_bytes, format_duration


@click.command("generate")
@click.option(
    "-o",
    "--output",
    "out",
    required=True,
    metavar="OUT.log[.gz]",
    type=click.Path(path_type=Path),
    help="The log to write (gzip if it ends in .gz); "
    "its parameters and summary go to OUT.log.json.",
)
@click.option(
    "--preset",
    metavar="NAME",
    help="Defaults of a known workload; options given still override them. study-web: the "
    "power-and-performance study's web trace, about 17,000 requests a day over 30 h from a "
    "Monday 18:00, small files the popular ones (about 450 MB a day), on a tree of 509,000 "
    "files (about 47 GB) written to OUT.tree.parquet unless --tree is given",
)
@click.option(
    "--scale",
    metavar="X",
    help="Multiply the requests and the built-in site's files (and so its bytes) by X, "
    "0 < X ≤ 1  [default: 1]",
)
@click.option(
    "--format",
    "fmt",
    metavar="NAME",
    help=f"common, combined or vhost_combined  [default: {p.DEFAULT_FORMAT}]",
)
@click.option(
    "--start",
    metavar="TIME",
    help=f"The first second, local time (ISO 8601)  [default: {p.DEFAULT_START}, a Monday]",
)
@click.option("--tz", metavar="±HHMM", help="The server's zone offset  [default: +0000]")
@click.option(
    "--duration",
    metavar="TIME",
    help=f"How long the log spans (7d, 6h, 90m)  [default: {p.DEFAULT_DURATION}]",
)
@click.option(
    "--rate", metavar="R", help=f"Mean requests per second  [default: {p.DEFAULT_RATE:g}]"
)
@click.option("--requests", metavar="N", help="Exactly N requests in all (instead of --rate).")
@click.option(
    "--peak-ratio",
    metavar="X",
    help=f"Busiest hour ÷ quietest hour  [default: {p.DEFAULT_PEAK_RATIO:g}]",
)
@click.option(
    "--weekend",
    metavar="X",
    help=f"A weekend day's volume ÷ a weekday's  [default: {p.DEFAULT_WEEKEND:g}]",
)
@click.option(
    "--zipf",
    metavar="ALPHA",
    help=f"Zipf exponent of file popularity  [default: {p.DEFAULT_ZIPF:g}]",
)
@click.option(
    "--tree",
    metavar="DIR|MANIFEST",
    help="Request the files of a directory or of an `iowatt tree snapshot` manifest  "
    "[default: a built-in site]",
)
@click.option(
    "--files", metavar="N", help=f"Files of the built-in site  [default: {p.DEFAULT_FILES:,}]"
)
@click.option(
    "--not-found",
    metavar="SHARE",
    help=f"Share of requests for missing paths (404)  [default: {p.DEFAULT_NOT_FOUND:g}]",
)
@click.option(
    "--slow-path",
    metavar="PATH",
    help=f"A slow endpoint a replay server can delay  [default: {p.DEFAULT_SLOW_PATH}]",
)
@click.option(
    "--slow-share",
    metavar="SHARE",
    help=f"Share of requests for it  [default: {p.DEFAULT_SLOW_SHARE:g}]",
)
@click.option(
    "--not-modified",
    metavar="SHARE",
    help=f"Share of GETs for files answered 304  [default: {p.DEFAULT_NOT_MODIFIED:g}]",
)
@click.option(
    "--clients", metavar="N", help=f"Client addresses in the pool  [default: {p.DEFAULT_CLIENTS:,}]"
)
@click.option(
    "--host", metavar="NAME", help=f"The site's name (referers, vhost)  [default: {p.DEFAULT_HOST}]"
)
@click.option("--seed", metavar="N", help=f"Seed of everything random  [default: {p.DEFAULT_SEED}]")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar and no summary.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def generate(out: Path, quiet: bool, as_json: bool, **options: Any) -> None:
    """Write a synthetic web access log: Poisson arrivals with busy middays, quiet nights and
    lighter weekends; Zipf-popular files; 404s, 304s, HEADs and a slow endpoint.

    \b
      iowatt trace generate -o access.log --duration 7d --rate 5
      iowatt trace generate -o access.log.gz --tree tree.parquet --requests 1000000
      iowatt trace generate -o day.log --preset study-web --scale 0.1
    """
    from iowatt.trace import generate as gen

    config = gen.GenerateConfig.parse(**options)
    with progress_bar("generating", unit="lines", quiet=quiet or as_json) as bar:
        s = gen.generate(config, out, bar.update)
    if as_json:
        click.echo(json.dumps(s, indent=2))
    elif not quiet:
        click.echo(_summary(s))
        click.echo(f"parameters in {s['sidecar']}; the same log again: {s['command']}")


def _summary(s: dict[str, Any]) -> str:
    lines = s["lines"]
    mix = (
        ", ".join(f"{code} {100 * n / lines:.1f}%" for code, n in s["status"].items())
        if lines
        else "no requests"
    )
    span = f"{s['first']} – {s['last']}" if lines else "empty"
    text = (
        f"wrote {lines:,} lines ({format_bytes(s['bytes'])}) to {s['path']} in "
        f"{format_duration(s['elapsed_s'])}: {span}; {mix}"
    )
    if s.get("manifest"):
        site = s["site"]
        text += (
            f"\nwrote the tree it requests ({site['files']:,} files, "
            f"{format_bytes(site['bytes'])}) to {s['manifest']}"
        )
    return text
