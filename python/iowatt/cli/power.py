"""``iowatt power``: record power and energy around any command, or import a meter log."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from iowatt.cli.serve_options import served
from iowatt.errors import ConfigError
from iowatt.power import record as power_record
from iowatt.power.merge import import_logs
from iowatt.power.sources import DEFAULT_HZ, SOURCE_HELP, parse_source
from iowatt.store.runs import resolve_run, results_dir
from iowatt.units import format_duration, format_joules, format_watts, parse_duration, parse_labels


@click.group()
def power() -> None:
    """Record power and energy."""


@power.command(context_settings={"ignore_unknown_options": True})
@click.option("--source", "sources", multiple=True, required=True, help=SOURCE_HELP)
@click.option("--hz", type=float, default=DEFAULT_HZ, show_default=True, help="Samples/s.")
@click.option("--idle", help="Measure an idle baseline this long before the command, e.g. 30s.")
@click.option("--label", "labels", multiple=True, metavar="KEY=VALUE", help="Label the run.")
@click.option("--results", type=click.Path(path_type=Path), help="Results directory.")
@click.option("--no-report", is_flag=True, help="Do not write report.html.")
@click.option("--json", "as_json", is_flag=True, help="Print the run's summary.json to stdout.")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
@served
def record(
    sources: tuple[str, ...],
    hz: float,
    idle: str | None,
    labels: tuple[str, ...],
    results: Path | None,
    no_report: bool,
    as_json: bool,
    command: tuple[str, ...],
) -> None:
    """Run COMMAND while recording power, like `perf stat`; exits with COMMAND's status.

    Example: iowatt power record --source rapl --source ipmi --hz 10 -- make -j8
    """
    if hz <= 0:
        raise ConfigError(f"--hz `{hz:g}` must be positive", "e.g. --hz 10")
    config = power_record.RecordConfig(
        command=list(command),
        sources=[parse_source(s) for s in sources],
        results=results_dir(results),
        hz=hz,
        idle_s=parse_duration(idle, "--idle") if idle else 0.0,
        labels=parse_labels(labels),
        report=not no_report,
    )
    out = power_record.record(config, on_phase=None if as_json else _say)
    if as_json:
        click.echo(json.dumps(out.summary, indent=2))
    else:
        _print_summary(out.summary, out.run_dir)
    sys.exit(out.exit_code)


@power.command("import")
@click.argument("run")
@click.option(
    "--source",
    "sources",
    multiple=True,
    required=True,
    help="A meter log, repeatable: meter:path=LOG[,map=MAP.toml,time-column=...].",
)
@click.option("--results", type=click.Path(path_type=Path), help="Results directory.")
def import_(run: str, sources: tuple[str, ...], results: Path | None) -> None:
    """Add a meter log recorded beside RUN to it, on the run's own clock.

    Example: iowatt power import latest --source meter:path=meter.csv,map=disks.toml
    """
    root = results_dir(results)
    run_dir = resolve_run(root, run)
    power = import_logs(run_dir, [parse_source(s) for s in sources], root)
    Console(stderr=True).print(energy_table(power, "work"))
    click.echo(f"run {run_dir.name} updated")


def _say(message: str) -> None:
    click.echo(f"iowatt: {message}", err=True)


def _print_summary(summary: dict[str, Any], run_dir: Path) -> None:
    # stderr, as perf stat does: the wrapped command owns stdout.
    console = Console(stderr=True)
    cmd = summary["command"]
    console.print(
        f"\n energy of `{' '.join(cmd['argv'])}`: {format_duration(cmd['seconds'])}, "
        f"exit {cmd['exit_code']}\n",
        markup=False,
        highlight=False,
    )
    console.print(energy_table(summary["power"], "work"))
    console.print(f"\n run {run_dir.name} written to {run_dir}", markup=False, highlight=False)


def energy_table(power: dict[str, Any], window: str) -> Table:
    """Channels of one window: average and peak power, energy, Wh and energy above idle."""
    table = Table(box=None, header_style="bold")
    for col in ("channel", "avg", "peak", "energy", "Wh", "above idle", "gaps"):
        table.add_column(col, justify="left" if col == "channel" else "right")
    for key, e in power[window].items():
        table.add_row(
            key + (" *" if key == power.get("headline") else ""),
            format_watts(e["avg_w"]),
            format_watts(e["peak_w"]),
            format_joules(e["energy_j"]),
            f"{e['wh']:.4g}",
            format_joules(e["dynamic_j"]),
            format_duration(e["gap_s"]) if e["gap_s"] else "",
        )
    return table
