"""``iowatt runs``: list and filter the runs in the catalog; check and repair the results
directory (``--check``), rebuild the catalog (``--rebuild``)."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from iowatt.errors import RunNotFoundError
from iowatt.store.catalog import list_runs
from iowatt.store.check import Finding
from iowatt.store.runs import results_dir
from iowatt.units import format_rate, parse_labels


@click.command()
@click.option("--label", "labels", multiple=True, metavar="KEY=VALUE", help="Only runs with it.")
@click.option("--kind", help="Only runs of this kind (bench …).")
@click.option("--status", type=click.Choice(["complete", "incomplete"]))
@click.option("--limit", type=int, help="At most this many, newest first.")
@click.option("--results", type=click.Path(path_type=Path), help="Results directory.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line.")
@click.option(
    "--check",
    is_flag=True,
    help="Find and repair what killed runs left: unindexed runs, index rows of deleted runs,"
    " temporary directories, test data in targets.",
)
@click.option("--rebuild", is_flag=True, help="Rebuild the catalog from the run directories.")
def runs(
    labels: tuple[str, ...],
    kind: str | None,
    status: str | None,
    limit: int | None,
    results: Path | None,
    as_json: bool,
    check: bool,
    rebuild: bool,
) -> None:
    """List runs, newest first."""
    root = results_dir(results)
    if check or rebuild:
        _repair(root, check, as_json)
        return
    rows = list_runs(root, parse_labels(labels), kind, status, limit)
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


def _repair(root: Path, check: bool, as_json: bool) -> None:
    from iowatt.store.catalog import refresh
    from iowatt.store.check import check_results

    if not root.is_dir():
        raise RunNotFoundError(f"no results directory `{root}`", "pass --results DIR")
    if check:
        from iowatt.sweep.journal import recover

        findings = check_results(root, recover).findings
    else:
        done = refresh(root, rebuild=True)
        findings = [Finding("broken", name, f"{f}: {why}") for name, f, why in done.broken]
        click.echo(f"catalog rebuilt: {len(done.added) - len(done.broken)} runs", err=as_json)
    for f in findings:
        if as_json:
            click.echo(json.dumps({"action": f.action, "what": f.what, "detail": f.detail}))
        else:
            click.echo(f"{f.action:<12} {f.what}" + (f"  ({f.detail})" if f.detail else ""))
    if check and not findings and not as_json:
        click.echo(f"`{root}` is in order", err=True)
