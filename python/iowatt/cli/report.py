"""``iowatt report``: one self-contained HTML file for one or more runs."""

from __future__ import annotations

from pathlib import Path

import click

from iowatt.errors import ConfigError
from iowatt.store.catalog import list_runs
from iowatt.store.runs import resolve_run, results_dir
from iowatt.store.writer import check_output
from iowatt.units import parse_labels


@click.command()
@click.argument("runs", nargs=-1)
@click.option(
    "--label",
    "labels",
    multiple=True,
    metavar="KEY=VALUE",
    help="Also every run with this label, e.g. campaign=rack-test.",
)
@click.option("-o", "--output", type=click.Path(path_type=Path), help="HTML file to write.")
@click.option("--results", type=click.Path(path_type=Path), help="Results directory.")
def report(
    runs: tuple[str, ...], labels: tuple[str, ...], output: Path | None, results: Path | None
) -> None:
    """Write an HTML report of RUNS (run ids, id prefixes, paths, or `latest`) and of the runs
    matching every --label, oldest first."""
    root = results_dir(results)
    if output is not None:
        check_output(output, "-o")
    if not runs and not labels:
        raise ConfigError("no runs given", "name runs (e.g. `latest`) or select them with --label")
    run_dirs = [resolve_run(root, ref) for ref in runs]
    if labels:
        matching = list_runs(root, parse_labels(labels))
        if not matching:
            raise ConfigError(
                f"no runs with {' '.join(labels)} in `{root}`", "list runs with `iowatt runs`"
            )
        run_dirs += [Path(r["path"]) for r in reversed(matching)]
    run_dirs = list(dict.fromkeys(run_dirs))
    out = output or (run_dirs[0] / "report.html" if len(run_dirs) == 1 else Path("report.html"))
    from iowatt.report import write_report  # matplotlib: only when a report is written

    click.echo(write_report(run_dirs, out))
