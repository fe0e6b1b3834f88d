"""``iowatt emulate mount``: BACKING served at MOUNT as a disk model, until Ctrl-C."""

from __future__ import annotations

import json
from pathlib import Path

import click

from iowatt.cli.serve_options import served
from iowatt.units import format_duration, format_joules, parse_duration, parse_labels


@click.command("mount")
@click.argument("backing", type=click.Path(path_type=Path))
@click.argument("mount", type=click.Path(path_type=Path))
@click.option(
    "--disk-model",
    default="ultrastar-36z15",
    show_default=True,
    metavar="NAME",
    help="A disk model, as `iowatt sim raid` names them (python/iowatt/sim/disks.toml).",
)
@click.option("--disk-models", type=click.Path(path_type=Path), help="TOML adding disk models.")
@click.option(
    "--spin-down",
    metavar="AFTER",
    help="Spin the idle disk down after this long, e.g. 10s  [default: never]",
)
@click.option(
    "--seed",
    type=click.IntRange(0, 2**63 - 1),
    default=1,
    show_default=True,
    help="Seed of the rotational positions (sim raid's disk 0 of the same seed).",
)
@click.option(
    "--page-cache",
    is_flag=True,
    help="Let the kernel cache pages above the disk (cached reads never reach it).",
)
@click.option("--label", "labels", multiple=True, metavar="KEY=VALUE", help="Label the run.")
@click.option("--results", type=click.Path(path_type=Path), help="Results directory.")
@click.option("--no-report", is_flag=True, help="Do not write report.html.")
@click.option("--json", "as_json", is_flag=True, help="Print the run's summary.json at the end.")
@served
def mount(
    backing: Path,
    mount: Path,
    disk_model: str,
    disk_models: Path | None,
    spin_down: str | None,
    seed: int,
    page_cache: bool,
    labels: tuple[str, ...],
    results: Path | None,
    no_report: bool,
    as_json: bool,
) -> None:
    """Serve the files of BACKING at MOUNT (an empty directory) as a disk: each read and
    write is answered when the model's disk would have finished it (seek, rotation, transfer,
    queueing), idle disks spin down after --spin-down, and MOUNT/.iowatt/ counts operations,
    states and energy (energy_uj, as RAPL's). Runs in the foreground; Ctrl-C, SIGTERM or
    SIGHUP answers what is queued, unmounts and writes an `emulate` run.

    \b
      iowatt emulate mount /srv/data /mnt/hdd --disk-model ultrastar-36z15 --spin-down 10s
      iowatt bench randomread --directio --target /mnt/hdd --power emulated:path=/mnt/hdd
    """
    from iowatt.emulate.mount import MountConfig, serve
    from iowatt.store.runs import results_dir
    from iowatt.warnings import WarningSink

    config = MountConfig(
        backing=backing,
        mount=mount,
        model_name=disk_model,
        disk_models=disk_models,
        spin_down_s=None if spin_down is None else parse_duration(spin_down, "--spin-down"),
        seed=seed,
        page_cache=page_cache,
        results=results_dir(results),
        labels=parse_labels(labels),
        report=not no_report,
    )
    run_dir = serve(config, lambda line: click.echo(line, err=True), WarningSink())
    summary = json.loads((run_dir / "summary.json").read_text())
    if as_json:
        click.echo(json.dumps(summary, indent=2))
        return
    d = summary["disk"]
    click.echo(
        f"{d['requests']:,} requests in {format_duration(d['seconds'])}, "
        f"{d['ops_s']:.1f} ops/s, mean latency {d['latency_ns']['mean'] / 1e6:.2f} ms, "
        f"{format_joules(d['energy_j'])}, {d['spin_cycles']} spin cycles"
    )
    click.echo(f"run: {run_dir}")
