"""``iowatt tree snapshot``: the metadata of a directory tree, names hashed with a key file,
into a Parquet manifest."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from iowatt.keys import load_keys
from iowatt.store.writer import check_output
from iowatt.units import format_bytes


@click.command("snapshot")
@click.argument("directory", metavar="DIR", type=click.Path(path_type=Path))
@click.option(
    "--key-file",
    required=True,
    type=click.Path(path_type=Path),
    help="Secret of at least 32 bytes: names are hashed with keys derived from "
    "it (the same file hashes access logs the same way).",
)
@click.option(
    "-o",
    "--output",
    "out",
    required=True,
    type=click.Path(path_type=Path),
    help="The manifest to write (Parquet).",
)
@click.option(
    "--keep-extensions",
    is_flag=True,
    help="Keep short extensions (`.html`) after the hashed names.",
)
@click.option(
    "--cross-mounts",
    is_flag=True,
    help="Descend into file systems mounted under DIR (by default their mount "
    "points are recorded as empty directories).",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress and no summary.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def snapshot(
    directory: Path,
    key_file: Path,
    out: Path,
    keep_extensions: bool,
    cross_mounts: bool,
    quiet: bool,
    as_json: bool,
) -> None:
    """Record every directory, file and symlink under DIR — sizes, modes, times, link targets
    — with every name replaced by its keyed hash.

    \b
      head -c 32 /dev/urandom > tree.key
      iowatt tree snapshot /var/www --key-file tree.key -o www.parquet
    """
    from iowatt.tree.snapshot import snapshot as take

    keys = load_keys(key_file)
    check_output(out, "-o")
    live = not (quiet or as_json) and sys.stderr.isatty()

    def progress(entries: int) -> None:
        click.echo(f"\rscanned {entries:,} entries", err=True, nl=False)

    s = take(
        directory,
        keys,
        out,
        keep_extensions=keep_extensions,
        cross_mounts=cross_mounts,
        on_progress=progress if live else None,
    )
    if live:
        click.echo("\r\033[K", err=True, nl=False)
    if as_json:
        click.echo(json.dumps(s, indent=2))
        return
    if quiet:
        return
    click.echo(
        f"{s['dirs']:,} dirs, {s['files']:,} files, {s['links']:,} links, "
        f"{format_bytes(s['bytes'])} → {out} (key {s['key_id']})"
    )
    notes = []
    if s["skipped_special"]:
        notes.append(f"{s['skipped_special']:,} sockets, FIFOs or devices left out")
    if s["mounts_not_crossed"]:
        shown = ", ".join(s["mount_points"])
        notes.append(f"{s['mounts_not_crossed']:,} mount points not crossed ({shown})")
    if s["unreadable"]:
        shown = ", ".join(s["unreadable_paths"])
        more = "…" if s["unreadable"] > len(s["unreadable_paths"]) else ""
        notes.append(f"{s['unreadable']:,} entries could not be read ({shown}{more})")
    for note in notes:
        click.echo(f"warning: {note}", err=True)
