"""``iowatt import``: store fio JSON or FileBench output as runs, next to iowatt's own."""

from __future__ import annotations

import json
from pathlib import Path

import click

from iowatt.imports import FORMATS, import_files
from iowatt.store.runs import read_manifest, read_summary
from iowatt.units import parse_labels


@click.command("import")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default="auto",
    show_default=True,
    help="What the files are; auto tells fio JSON from FileBench text by their content.",
)
@click.option("--label", "labels", multiple=True, metavar="KEY=VALUE", help="Label the runs.")
@click.option(
    "--workload",
    metavar="NAME",
    help="Workload name (default: fio's job name, "
    "or the file's name without extension for FileBench).",
)
@click.option("--results", type=click.Path(path_type=Path), help="Results directory.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per run, per line.")
def import_cmd(
    files: tuple[Path, ...],
    fmt: str,
    labels: tuple[str, ...],
    workload: str | None,
    results: Path | None,
    as_json: bool,
) -> None:
    """Import result files of other tools, one run each (all files or none)."""
    run_dirs = import_files(
        files,
        fmt=fmt,
        labels=parse_labels(labels),
        workload_name=workload,
        results=results,
    )
    for file, run_dir in zip(files, run_dirs, strict=True):
        manifest = read_manifest(run_dir)
        names = list(read_summary(run_dir)["workloads"])
        if as_json:
            row = {
                "file": manifest["config"]["file"],
                "source": manifest["config"]["source"],
                "run_id": manifest["run_id"],
                "path": str(run_dir),
                "workloads": names,
                "labels": manifest["labels"],
            }
            click.echo(json.dumps(row))
        else:
            count = f"{len(names)} workload" + ("" if len(names) == 1 else "s")
            click.echo(f"imported {file} as run {manifest['run_id']} ({count})")
