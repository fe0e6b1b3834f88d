"""``iowatt energy compare``: time and energy saved by one run against another."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from iowatt.power.compare import check_options, compare_runs
from iowatt.store.runs import resolve_run, results_dir
from iowatt.units import format_duration, format_joules, format_watts


@click.group()
def energy() -> None:
    """Energy arithmetic on recorded runs."""


@energy.command("compare")
@click.argument("baseline")
@click.argument("candidate")
@click.option(
    "--pue",
    type=float,
    default=1.0,
    show_default=True,
    help="Power usage effectiveness of the facility, e.g. 1.6.",
)
@click.option("--channel", help="Power channel to compare (default: the widest recorded).")
@click.option("--idle-watts", type=float, help="Idle power, when the runs have no --idle baseline.")
@click.option("--results", type=click.Path(path_type=Path), help="Results directory.")
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
def compare(
    baseline: str,
    candidate: str,
    pue: float,
    channel: str | None,
    idle_watts: float | None,
    results: Path | None,
    as_json: bool,
) -> None:
    """Time saved, energy saved and the PUE-adjusted saving of CANDIDATE over BASELINE.

    Example: iowatt energy compare hdd-run ssd-run --pue 1.6
    """
    check_options(pue, idle_watts)
    root = results_dir(results)
    out = compare_runs(
        resolve_run(root, baseline), resolve_run(root, candidate), pue, channel, idle_watts
    )
    if as_json:
        click.echo(json.dumps(out, indent=2))
        return
    _print(out)


def _print(c: dict[str, Any]) -> None:
    console = Console()
    b, k = c["baseline"], c["candidate"]
    table = Table(box=None, header_style="bold", title=f"channel {c['channel']}")
    for col in ("", "baseline", "candidate"):
        table.add_column(col, justify="left" if not col else "right")
    table.add_row("run", b["run_id"], k["run_id"])
    table.add_row("time", format_duration(b["seconds"]), format_duration(k["seconds"]))
    table.add_row("energy", format_joules(b["energy_j"]), format_joules(k["energy_j"]))
    table.add_row("average power", format_watts(b["avg_w"]), format_watts(k["avg_w"]))
    table.add_row("idle power", format_watts(b["idle_w"]), format_watts(k["idle_w"]))
    console.print(table)
    if c["normalised_to_baseline_ops"]:
        console.print(f"candidate normalised to the baseline's {b['ops']:,} operations")
    pct = c["energy_saved_pct"]
    console.print(
        f"time saved {format_duration(c['time_saved_s'])}"
        f"   energy saved {format_joules(c['energy_saved_j'])}"
        + (f" ({pct:.1f}%)" if pct is not None else "")
        + f"   at the facility (PUE {c['pue']:g}) {format_joules(c['facility_energy_saved_j'])}",
        highlight=False,
    )
    if c["estimated_saving_j"] is not None:
        console.print(
            "estimate: time saved × (running − idle power) × PUE = "
            f"{format_joules(c['estimated_saving_j'])}",
            highlight=False,
        )
    else:
        console.print("no idle baseline: record with --idle or give --idle-watts for the estimate")
    if c["faster_drew_more_power"]:
        outcome = (
            "it saved energy only by finishing sooner"
            if c["energy_saved_j"] > 0
            else "it used more energy despite finishing sooner"
        )
        console.print(
            f"[yellow]note:[/] the faster run drew {format_watts(c['power_change_w'])} more "
            f"on average; {outcome}",
            highlight=False,
        )
