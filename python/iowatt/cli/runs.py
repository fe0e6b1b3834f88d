"""``iowatt runs``: list and filter the runs in the catalog."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from iowatt.store.catalog import list_runs
from iowatt.store.runs import results_dir
from iowatt.units import format_rate, parse_labels


@click.command()
@click.option("--label", "labels", multiple=True, metavar="KEY=VALUE", help="Only runs with it.")
@click.option("--kind", help="Only runs of this kind (bench …).")
@click.option("--status", type=click.Choice(["complete", "incomplete"]))
@click.option("--limit", type=int, help="At most this many, newest first.")
@click.option("--results", type=click.Path(path_type=Path), help="Results directory.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line.")
def runs(
    labels: tuple[str, ...],
    kind: str | None,
    status: str | None,
    limit: int | None,
    results: Path | None,
    as_json: bool,
) -> None:
    """List runs, newest first."""
    rows = list_runs(
        results_dir(results),
        parse_labels(labels),
        kind,
        status,
        limit,
    )
    if as_json:
        for row in rows:
            click.echo(json.dumps(row, default=str))
        return
    table = Table(box=None, header_style="bold")
    for col in ("run", "kind", "status", "started (UTC)", "workloads", "ops", "labels"):
        table.add_column(col)
    for r in rows:
        status_text = r["status"] if r["status"] == "complete" else f"[red]{r['status']}[/]"
        table.add_row(
            r["run_id"],
            r["kind"],
            status_text,
            str(r["started"])[:19],
            str(r["workloads"]),
            format_rate(r["ops"] or 0),
            " ".join(f"{k}={v}" for k, v in r["labels"].items()),
        )
    Console().print(table)
    if not rows:
        click.echo("no runs match", err=True)
