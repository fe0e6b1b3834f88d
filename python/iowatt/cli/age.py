"""``iowatt age``: fill a file system and delete a random share of the files, as the
storage-workloads study did, so benchmarks run on aged free space (see docs/age.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from iowatt import age as age_lib
from iowatt.cli.progress import BYTES, Bars
from iowatt.errors import ConfigError
from iowatt.store.writer import check_output
from iowatt.units import format_bytes
from iowatt.warnings import Kind, RunWarning, WarningSink


@click.command("age")
@click.argument("directory", metavar="DIR", type=click.Path(path_type=Path))
@click.option(
    "--fill",
    metavar="PCT%|SIZE",
    help="How full to make DIR's file system: a share of its size (`90%`), or a size "
    "of data to write (`20g`).",
)
@click.option(
    "--sizes",
    metavar="MIN..MAX",
    help=f"File sizes  [default: {age_lib.DEFAULT_SIZES}, the study's]",
)
@click.option(
    "--dist",
    type=click.Choice(age_lib.DISTS),
    help="How sizes are drawn: loguniform (most files small, a few huge) or uniform  "
    "[default: loguniform]",
)
@click.option(
    "--delete",
    metavar="PCT%|SIZE",
    help="Then delete random files until this share of the bytes written (or this "
    f"size) is freed  [default: {age_lib.DEFAULT_DELETE}]",
)
@click.option(
    "--delete-sizes",
    metavar="MIN..MAX",
    help="Delete only files of these sizes (the study: 50k..1g)  [default: any]",
)
@click.option("--seed", metavar="N", help="Seed of sizes, data and deletions (recorded).")
@click.option(
    "--manifest",
    "copy_to",
    metavar="PATH",
    type=click.Path(path_type=Path),
    help="Keep a copy of the manifest at PATH too (it survives --cleanup).",
)
@click.option(
    "--recreate",
    metavar="MANIFEST",
    type=click.Path(path_type=Path),
    help="Recreate the aging a manifest describes: the same files, sizes and deletions.",
)
@click.option(
    "--cleanup",
    is_flag=True,
    help="Delete what iowatt age made in DIR: only what its manifest lists.",
)
@click.option("--status", is_flag=True, help="Show the aging in DIR.")
@click.option("--dry-run", is_flag=True, help="Show what would be written or removed; do nothing.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar and no summary.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def age(
    directory: Path,
    fill: str | None,
    sizes: str | None,
    dist: str | None,
    delete: str | None,
    delete_sizes: str | None,
    seed: str | None,
    copy_to: Path | None,
    recreate: Path | None,
    cleanup: bool,
    status: bool,
    dry_run: bool,
    quiet: bool,
    as_json: bool,
) -> None:
    """Age the file system holding DIR: fill it with files of random sizes under
    DIR/iowatt-age, then delete a random share of them, keeping a manifest of every file.

    \b
      iowatt age /mnt/disk --fill 90% --sizes 1k..75g --delete 7% --seed 1
      iowatt age /mnt/disk --status
      iowatt age /mnt/disk --cleanup
    """
    modes = [
        name
        for name, on in (("--recreate", recreate), ("--cleanup", cleanup), ("--status", status))
        if on
    ]
    if len(modes) > 1:
        raise ConfigError(f"{modes[0]} and {modes[1]} cannot be combined", "give one of them")
    mode = modes[0] if modes else None
    if copy_to is not None and mode is None:
        check_output(copy_to, "--manifest")
    given: dict[str, object] = {
        "--fill": fill,
        "--sizes": sizes,
        "--dist": dist,
        "--delete": delete,
        "--delete-sizes": delete_sizes,
        "--seed": seed,
    }
    if mode is not None:
        if mode != "--recreate":
            given["--manifest"] = copy_to
        if mode == "--status":
            given["--dry-run"] = dry_run or None
        for option, value in given.items():
            if value is not None:
                raise ConfigError(
                    f"{option} does not apply to {mode}",
                    hint=f"{mode} takes its parameters from the manifest",
                )
    elif fill is None:
        raise ConfigError(
            "--fill is missing: how full to make the file system",
            hint=f"e.g. `iowatt age {directory} --fill 90%`, or --status, --cleanup, --recreate",
        )

    if status:
        _show(age_lib.status(directory), as_json, quiet=False)
        return
    if cleanup:
        _cleaned(age_lib.cleanup(directory, dry_run=dry_run), as_json, quiet)
        return
    with Bars(quiet=quiet or as_json or dry_run) as bars:

        def progress(phase: str, done: int, total: int) -> None:
            bars.bar(phase, unit=BYTES).update(done, total or None)

        if recreate is not None:
            out = age_lib.recreate(directory, recreate, progress, copy_to, dry_run=dry_run)
        else:
            assert fill is not None
            config = age_lib.AgeConfig.parse(
                fill,
                sizes or age_lib.DEFAULT_SIZES,
                delete or age_lib.DEFAULT_DELETE,
                delete_sizes,
                dist or "loguniform",
                seed,
            )
            if dry_run:
                out = age_lib.plan(directory, config).as_dict()
            else:
                out = age_lib.run(directory, config, progress, copy_to)
    if dry_run:
        _planned(out, as_json)
    else:
        _show(out, as_json, quiet)


def _n(count: int, noun: str, nouns: str | None = None) -> str:
    return f"{count:,} {noun if count == 1 else nouns or noun + 's'}"


def _pct(value: float | None) -> str:
    return "?" if value is None else f"{value:.1f}%"


def _show(s: dict[str, Any], as_json: bool, quiet: bool) -> None:
    WarningSink().extend(RunWarning(Kind.AGING, w) for w in s["warnings"])
    if as_json:
        click.echo(json.dumps(s, indent=2))
        return
    if quiet:
        return
    done = s["status"] == "complete"
    state = f"aged {s['dir']}" if done else f"aging of {s['dir']} incomplete ({s['reason']})"
    fs = s["fs"]
    click.echo(
        f"{state}: {_n(s['files'], 'file')} written "
        f"({format_bytes(s['bytes_written'])}), {s['files_deleted']:,} deleted "
        f"({format_bytes(s['bytes_deleted'])})"
    )
    line = (
        f"{fs['type'] or 'file system'} of {format_bytes(fs['size'])}: "
        f"{_pct(fs['fill_before'])} used before, {_pct(fs['fill_after'])} after"
    )
    if "fill_now" in fs:
        line += f", {_pct(fs['fill_now'])} now"
    click.echo(line)
    click.echo(f"manifest: {s['manifest']} (seed {s['seed']})")


def _planned(p: dict[str, Any], as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(p, indent=2))
        return
    fs = p["fs"]
    target = f" to reach {_pct(p['fill_target'])}" if p.get("fill_target") else ""
    click.echo(
        f"would write {format_bytes(p['bytes_to_write'])} in {_n(p['files'], 'file')}{target} "
        f"and delete {format_bytes(p['bytes_to_delete'])} (seed {p['seed']})"
    )
    click.echo(
        f"{fs['type'] or 'file system'} of {format_bytes(fs['size'])} at {p['dir']}: "
        f"{_pct(fs['fill_now'])} used, {format_bytes(fs['available'])} available"
    )


def _cleaned(c: dict[str, Any], as_json: bool, quiet: bool) -> None:
    WarningSink().extend(
        RunWarning(Kind.AGING, f"kept `{path}`: it is or holds what iowatt did not make")
        for path in c["kept"]
    )
    if as_json:
        click.echo(json.dumps(c, indent=2))
        return
    if quiet:
        return
    verb = "would remove" if c["dry_run"] else "removed"
    click.echo(
        f"{verb} {_n(c['files_removed'], 'file')} ({format_bytes(c['bytes_removed'])}) and "
        f"{_n(c['dirs_removed'], 'directory', 'directories')} from "
        f"{c['dir']}"
    )
