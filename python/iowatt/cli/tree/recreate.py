"""``iowatt tree recreate``: a manifest's tree made under a directory, by the Rust engine."""

from __future__ import annotations

import json
from pathlib import Path

import click

from iowatt._engine import TreeProgress
from iowatt.cli.progress import Bar, progress_bar
from iowatt.units import format_bytes


@click.command("recreate")
@click.argument("manifest", type=click.Path(path_type=Path))
@click.argument("dest", metavar="DEST", type=click.Path(path_type=Path))
@click.option(
    "--sparse",
    is_flag=True,
    help="Make sparse files of the recorded sizes instead of writing random data.",
)
@click.option(
    "--resume",
    is_flag=True,
    help="DEST holds an unfinished recreation: keep the entries that match and make the rest.",
)
@click.option(
    "--threads",
    type=int,
    metavar="N",
    help="Threads making entries  [default: 4 per CPU, at most 32]",
)
@click.option(
    "--seed",
    type=click.IntRange(0, 2**63 - 1),
    metavar="N",
    help="Seed of the files' random content (recorded in the summary).",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress and no summary.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def recreate(
    manifest: Path,
    dest: Path,
    sparse: bool,
    resume: bool,
    threads: int | None,
    seed: int | None,
    quiet: bool,
    as_json: bool,
) -> None:
    """Make the tree a manifest describes under DEST (new or empty): the same directories,
    files of the same sizes, symlinks, modes and times.

    \b
      iowatt tree recreate www.parquet /mnt/disk/www
      iowatt tree recreate www.parquet /mnt/disk/www --resume   # after a kill
    """
    from iowatt.tree.recreate import recreate as make

    with progress_bar("recreate", unit="entries", quiet=quiet or as_json) as bar:
        s = make(
            manifest,
            dest,
            sparse=sparse,
            resume=resume,
            threads=threads,
            seed=seed,
            on_tick=lambda p: _tick(bar, p),
        )
    if as_json:
        click.echo(json.dumps(s, indent=2))
        return
    if quiet:
        return
    secs = s["seconds"]
    made = s["files"] + s["dirs"] + s["links"]
    kept = f", {s['skipped']:,} kept" if s["skipped"] else ""
    click.echo(
        f"{s['files']:,} files, {s['dirs']:,} dirs, {s['links']:,} links, "
        f"{format_bytes(s['bytes'])}{kept} in {secs:.1f} s "
        f"({s['files'] / secs if secs else 0:,.0f} files/s, {made / secs if secs else 0:,.0f} "
        f"entries/s) → {s['dest']} (seed {s['seed']})"
    )


def _tick(bar: Bar, p: TreeProgress) -> None:
    live = "setting directory times" if p["phase"] == "finishing" else format_bytes(p["bytes"])
    bar.update(p["entries"], p["total"], live)
