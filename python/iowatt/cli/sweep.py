"""``iowatt sweep``: a disk-by-disk throughput curve against fan duty or vibration."""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Any

import click

from iowatt.cli.serve_options import served
from iowatt.power.sources import SOURCE_HELP
from iowatt.store.runs import read_summary, results_dir
from iowatt.sweep.plan import DRIVERS, Request, plan
from iowatt.sweep.stimulus import KINDS, ORDERS
from iowatt.units import parse_labels


class LineReporter:
    """One line per step on stderr: what is set, then each disk's MiB/s and the hottest °C."""

    def step_started(self, pass_no: int, step: int, total: int, text: str) -> None:
        click.echo(f"pass {pass_no}, step {step + 1}: {text} …", err=True)

    def step_finished(self, rows: list[dict[str, Any]], temps: dict[str, float]) -> None:
        disks = ", ".join(f"{r['disk']} {r['mib_s']:.1f} MiB/s" for r in rows)
        hottest = f"; hottest {max(temps.values()):g} °C" if temps else ""
        click.echo(f"  {disks}{hottest}", err=True)

    def note(self, message: str) -> None:
        click.echo(message, err=True)


@click.command()
@click.option(
    "--stimulus",
    type=click.Choice(KINDS),
    default="fan",
    show_default=True,
    help="What is stepped: fan duty (% PWM), vibration amplitude (grms), frequency (Hz).",
)
@click.option("--from", "start", type=float, help="First value, e.g. 100.")
@click.option("--to", "stop", type=float, help="Last value, e.g. 0.")
@click.option(
    "--step", type=float, help="Step between values (positive; it must divide the range)."
)
@click.option("--steps", help="Explicit values instead, e.g. 100,80,60,50,40.")
@click.option("--band", help="Amplitude sweeps: the random vibration's band in Hz, e.g. 20-800.")
@click.option("--amplitude", type=float, help="Frequency sweeps: the fixed amplitude in g.")
@click.option(
    "--settle",
    default="20s",
    show_default=True,
    help="After each change: time the disks run but are not measured.",
)
@click.option("--hold", default="30s", show_default=True, help="Measured time of each step.")
@click.option("--passes", type=int, default=1, show_default=True, help="Repeat the sweep.")
@click.option(
    "--order",
    type=click.Choice(ORDERS),
    default="as-given",
    show_default=True,
    help="Order of each pass; alternate reverses every other pass (hysteresis).",
)
@click.option(
    "--disk",
    "disks",
    multiple=True,
    metavar="[HOST:]PATH[=PROFILE]",
    required=True,
    help="A disk under test (block device or directory); repeat for each. With "
    "--driver emulated, its profile, e.g. /dev/loop3=hit-sata; with --cluster, its host first.",
)
@click.option(
    "--driver",
    type=click.Choice(DRIVERS),
    help="How the stimulus is set [default: ipmi for fan, cmd otherwise].",
)
@click.option("--vendor", help="ipmi: dell, supermicro, or generic (with --set).")
@click.option(
    "--bmc",
    metavar="OPTIONS",
    help="ipmi: the BMC, as for an ipmi power source, e.g. "
    "host=10.0.0.5,user=admin,password-env=BMC_PW [default: the local BMC].",
)
@click.option(
    "--set",
    "set_template",
    metavar="TEMPLATE",
    help="cmd: the command setting a value; ipmi: ipmitool arguments. {value} is the "
    "value ({value:#04x} as a hex byte).",
)
@click.option("--reset", help="Command putting the stimulus back at the end.")
@click.option("--safe", help="cmd: command for the safe setting [fan: --set with 100].")
@click.option(
    "--profiles",
    type=click.Path(path_type=Path, exists=True, dir_okay=False),
    help="emulated: a TOML file of extra disk profiles.",
)
@click.option("--iosize", default="128k", show_default=True, help="Write size.")
@click.option("--iodepth", type=int, default=16, show_default=True, help="Writes in flight.")
@click.option("--engine", default="io_uring", show_default=True, help="io_uring or psync.")
@click.option("--nthreads", type=int, default=1, show_default=True, help="Threads per disk.")
@click.option(
    "--size",
    default="1g",
    show_default=True,
    help="Directories: size of the file written (devices: the whole device).",
)
@click.option(
    "--sensor",
    "sensors",
    multiple=True,
    metavar="SOURCE",
    help="Also record this source (temperatures, rpm, watts). " + SOURCE_HELP,
)
@click.option(
    "--sensor-hz", type=float, default=1.0, show_default=True, help="Sensor samples per second."
)
@click.option(
    "--max-temp",
    type=float,
    default=85.0,
    show_default=True,
    help="Fan sweeps: any temperature at or above this (°C) stops the sweep, fans full.",
)
@click.option(
    "--stale",
    default="10s",
    show_default=True,
    help="Fan sweeps: temperatures silent this long stop the sweep, fans full.",
)
@click.option("--no-watchdog", is_flag=True, help="Fan sweeps without temperature readings.")
@click.option("--destroy-data", is_flag=True, help="Allow writing over a device with data on it.")
@click.option(
    "--allow-boot-disk", is_flag=True, help="Allow a directory on the disk the system boots from."
)
@click.option("--cluster", help="Disks on many hosts (--disk HOST:PATH): ADDRESS, local:N, FILE.")
@click.option("--seed", type=int, help="Seed for offsets and data.")
@click.option("--label", "labels", multiple=True, metavar="KEY=VALUE", help="Label the run.")
@click.option("--results", type=click.Path(path_type=Path), help="Results directory.")
@click.option("--no-report", is_flag=True, help="Do not write report.html.")
@click.option("--quiet", "-q", is_flag=True, help="No progress output.")
@click.option("--json", "as_json", is_flag=True, help="Print the run's summary.json to stdout.")
@served
def sweep(
    labels: tuple[str, ...],
    results: Path | None,
    seed: int | None,
    no_report: bool,
    quiet: bool,
    as_json: bool,
    **options: Any,
) -> None:
    """Step a stimulus while every disk is saturated with random writes; record each disk's
    throughput curve (docs/sweep.md).

    \b
    For each pass and value: set the stimulus, let the disks run --settle unmeasured, then
    measure --hold. Fan sweeps are watched: a temperature at --max-temp, or sensors silent for
    --stale, sets the fans to full and stops. The stimulus is restored at the end, on errors,
    Ctrl-C and SIGTERM, and by a guardian process if iowatt is killed.
    """
    from iowatt.sweep.runner import SilentReporter, run

    config = plan(
        Request(**options),
        results_dir(results),
        parse_labels(labels),
        seed if seed is not None else secrets.randbits(32),
    )
    config.report = not no_report
    run_dir = run(config, SilentReporter() if quiet or as_json else LineReporter())
    if as_json:
        click.echo(json.dumps(read_summary(run_dir), indent=2))
        return
    if not quiet:
        click.echo(f"run {run_dir.name} written to {run_dir}")
        for disk in read_summary(run_dir)["disks"].values():
            click.echo(f"curve: {run_dir / disk['curve']}")
        if (run_dir / "report.html").exists():
            click.echo(f"report: {run_dir / 'report.html'}")
