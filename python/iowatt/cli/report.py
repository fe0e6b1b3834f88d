"""``iowatt report``: one self-contained HTML file for one or more runs."""

from __future__ import annotations

from pathlib import Path

import click

from iowatt.report import write_report
from iowatt.store import resolve_run, results_dir


@click.command()
@click.argument("runs", nargs=-1, required=True)
@click.option("-o", "--output", type=click.Path(path_type=Path), help="HTML file to write.")
@click.option("--results", type=click.Path(path_type=Path), help="Results directory.")
def report(runs: tuple[str, ...], output: Path | None, results: Path | None) -> None:
    """Write an HTML report of RUNS (run ids, id prefixes, paths, or `latest`)."""
    root = results_dir(results)
    run_dirs = [resolve_run(root, ref) for ref in runs]
    out = output or (run_dirs[0] / "report.html" if len(run_dirs) == 1 else Path("report.html"))
    click.echo(write_report(run_dirs, out))
