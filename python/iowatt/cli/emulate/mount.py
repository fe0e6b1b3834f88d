"""``iowatt emulate mount``: BACKING served at MOUNT as a disk model, until Ctrl-C."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from iowatt.cli.serve_options import served
from iowatt.units import format_duration, format_joules, parse_duration, parse_labels

if TYPE_CHECKING:
    from iowatt.emulate.bmc import BmcFollow
    from iowatt.emulate.tails import Tails


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
    "--array",
    metavar="raid0|lru|paraid",
    help="Serve from an array of --disks disks under this RAID personality: `iowatt sim raid`'s"
    " own engine and raid.toml.",
)
@click.option(
    "--disks",
    type=int,
    default=4,
    show_default=True,
    help="With --array: how many disks (PARAID's top gear).",
)
@click.option(
    "--params",
    type=click.Path(path_type=Path),
    metavar="FILE",
    help="With --array: a TOML file overriding raid.toml's values, as `iowatt sim raid` takes it.",
)
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
@click.option(
    "--scheduler",
    default="fifo",
    show_default=True,
    metavar="fifo|elevator|cfq",
    help="How the disk picks its next request: arrival order, by position (C-LOOK), or one"
    " process at a time for --slice, idling --idle-window for its next request (CFQ).",
)
@click.option(
    "--slice",
    "slice_",
    default="100ms",
    show_default=True,
    metavar="DURATION",
    help="With --scheduler cfq: how long one process has the disk.",
)
@click.option(
    "--idle-window",
    default="8ms",
    show_default=True,
    metavar="DURATION",
    help="With --scheduler cfq: how long the disk waits for the process's next request"
    " (CFQ's slice_idle).",
)
@click.option(
    "--curve",
    metavar="REF",
    help="Slow the disk by a throughput curve: a curve file, a sweep run (RUN, RUN:DISK,"
    " `latest`) or a disk profile (its fan curve unless --stimulus).",
)
@click.option(
    "--stimulus",
    metavar="fan|amplitude|frequency",
    help="Which curve of a profile to follow (as `iowatt sweep` spells it)  [default: fan]",
)
@click.option("--band", metavar="LO-HI", help="The band of an amplitude curve, e.g. 20-800.")
@click.option(
    "--at", "at", type=float, metavar="VALUE", help="The stimulus, fixed (PWM %, grms, Hz)."
)
@click.option(
    "--schedule",
    metavar="FILE|RUN",
    help="Stimulus over time: a CSV of time,value (seconds or ISO 8601), or a sweep run's steps.",
)
@click.option(
    "--speedup",
    type=float,
    default=1.0,
    show_default=True,
    help="Replay the --schedule this many times faster.",
)
@click.option(
    "--at-from",
    metavar="bmc",
    help="Follow a source's stimulus: `bmc`, the fan duty a BMC runs at (--bmc, --vendor).",
)
@click.option(
    "--bmc",
    metavar="OPTIONS",
    help="--at-from bmc: the BMC, as `iowatt sweep` takes it, e.g."
    " host=10.0.0.5,user=admin,password-env=BMC_PW.",
)
@click.option(
    "--vendor",
    metavar="dell|supermicro|generic",
    help="--at-from bmc: supermicro reads zone 0's duty back; the others need --fan-rpm.",
)
@click.option(
    "--fan-rpm",
    metavar="SENSOR=LOW..HIGH",
    help="--at-from bmc: read the duty from this SDR tachometer, LOW rpm at 0 %, HIGH at 100 %,"
    " e.g. FAN1=600..10200.",
)
@click.option(
    "--poll",
    default="1s",
    show_default=True,
    metavar="DURATION",
    help="--at-from bmc: how often the BMC is asked.",
)
@click.option(
    "--stale",
    default="10s",
    show_default=True,
    metavar="DURATION",
    help="--at-from bmc: a BMC silent this long is said to be; the last value holds.",
)
@click.option(
    "--stall-cap",
    default="30s",
    show_default=True,
    metavar="DURATION",
    help="How long a stall (r = 0) holds a request before it fails with EIO.",
)
@click.option(
    "--tails",
    is_flag=True,
    help="With a sweep run's --curve: draw each slowed request's added time from the measured"
    " latency tail of its step (mean kept on the curve), not the constant S / r − S.",
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
    array: str | None,
    disks: int,
    params: Path | None,
    spin_down: str | None,
    seed: int,
    page_cache: bool,
    scheduler: str,
    slice_: str,
    idle_window: str,
    curve: str | None,
    stimulus: str | None,
    band: str | None,
    at: float | None,
    schedule: str | None,
    speedup: float,
    at_from: str | None,
    bmc: str | None,
    vendor: str | None,
    fan_rpm: str | None,
    poll: str,
    stale: str,
    stall_cap: str,
    tails: bool,
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

    With --curve each request takes S / r, r the curve's value at the stimulus in force when it
    starts: --at VALUE, a --schedule, `iowatt emulate set MOUNT VALUE` while mounted, or
    --at-from bmc: the fan duty a BMC runs at, read every --poll (read only: no fan is set).

    With --array the files are striped over --disks such disks under RAID-0, LRU spin-down or
    PARAID, served by `iowatt sim raid`'s own engine with raid.toml (--params): its file system
    model charges lookups and access times, and MOUNT/.iowatt/disk<N>/ counts each disk.

    \b
      iowatt emulate mount /srv/data /mnt/hdd --disk-model ultrastar-36z15 --spin-down 10s
      iowatt bench randomread --directio --target /mnt/hdd --power emulated:path=/mnt/hdd
      iowatt emulate mount /srv/data /mnt/array --array paraid --disks 4
      iowatt emulate mount /srv/data /mnt/hdd --curve latest --at 80
      iowatt emulate mount /srv/data /mnt/hdd --curve hit-sata --schedule fans.csv --speedup 24
      iowatt emulate mount /srv/data /mnt/hdd --curve hit-sata --at-from bmc \\
          --bmc host=10.0.0.5,user=admin,password-env=BMC_PW --vendor supermicro
    """
    from iowatt.emulate.array import ArraySetup
    from iowatt.emulate.mount import MountConfig, serve
    from iowatt.errors import ConfigError
    from iowatt.store.runs import results_dir
    from iowatt.warnings import WarningSink

    store = results_dir(results)
    follow = _follow(at_from, bmc, vendor, fan_rpm, poll, stale)
    sources = [f for f, v in (("--at", at), ("--schedule", schedule), ("--at-from bmc", follow))
               if v is not None]  # fmt: skip
    if len(sources) > 1:
        raise ConfigError(
            f"{' and '.join(sources)} are {('two', 'three')[len(sources) - 2]} stimulus sources;"
            " the disk follows one",
            "give --at VALUE, --schedule FILE|RUN or --at-from bmc",
        )
    if sources and curve is None:
        raise ConfigError(f"{sources[0]} needs a curve to follow", "add --curve REF")
    vibration = _vibration(store, curve, stimulus, band, at, schedule)
    if tails:
        vibration["tails"] = _tails(store, curve, stimulus)
    config = MountConfig(
        backing=backing,
        mount=mount,
        model_name=disk_model,
        disk_models=disk_models,
        spin_down_s=None if spin_down is None else parse_duration(spin_down, "--spin-down"),
        seed=seed,
        page_cache=page_cache,
        results=store,
        labels=parse_labels(labels),
        report=not no_report,
        scheduler=scheduler,
        slice_s=parse_duration(slice_, "--slice"),
        idle_window_s=parse_duration(idle_window, "--idle-window"),
        speedup=speedup,
        stall_cap_s=parse_duration(stall_cap, "--stall-cap"),
        bmc=follow,
        array=None if array is None else ArraySetup(array.lower(), disks, params),
        **vibration,
    )
    run_dir = serve(config, lambda line: click.echo(line, err=True), WarningSink())
    summary = json.loads((run_dir / "summary.json").read_text())
    if as_json:
        click.echo(json.dumps(summary, indent=2))
        return
    if "array" in summary:
        a = summary["array"]
        click.echo(
            f"{a['personality']} over {a['disks']} disks: {a['requests']:,} requests and"
            f" {a['lookups']:,} lookups in {format_duration(a['seconds'])},"
            f" {format_joules(a['energy_j'])}, {sum(a['spin_cycles']):g} spin cycles,"
            f" {a['gear_shifts']} gear shifts"
        )
        click.echo(f"run: {run_dir}")
        return
    d = summary["disk"]
    click.echo(
        f"{d['requests']:,} requests in {format_duration(d['seconds'])}, "
        f"{d['ops_s']:.1f} ops/s, mean latency {d['latency_ns']['mean'] / 1e6:.2f} ms, "
        f"{format_joules(d['energy_j'])}, {d['spin_cycles']} spin cycles"
    )
    click.echo(f"run: {run_dir}")


def _vibration(
    store: Path,
    curve: str | None,
    stimulus: str | None,
    band: str | None,
    at: float | None,
    schedule: str | None,
) -> dict[str, Any]:
    """The curve and the stimulus source the options name (checked against each other and
    the curve's range when the mount is checked)."""
    from iowatt.emulate.vibration import load_schedule, resolve_curve
    from iowatt.errors import ConfigError
    from iowatt.sweep.stimulus import KINDS

    if curve is None:
        given = [f for f, v in (("--stimulus", stimulus), ("--band", band)) if v is not None]
        if given:
            raise ConfigError(f"{given[0]} needs a curve to follow", "add --curve REF")
        return {}
    if stimulus is not None and stimulus not in KINDS:
        raise ConfigError(
            f"--stimulus `{stimulus}` is not a stimulus", f"stimuli: {', '.join(KINDS)}"
        )
    found = resolve_curve(curve, store, stimulus, band)
    return {
        "curve": found,
        "at": at,
        "schedule": None if schedule is None else load_schedule(schedule, store, found),
    }


def _tails(store: Path, curve: str | None, stimulus: str | None) -> Tails:
    """``--tails``: the measured tails of the sweep run ``--curve`` names."""
    from iowatt.emulate.tails import resolve_tails
    from iowatt.errors import ConfigError

    found = None if curve is None else resolve_tails(curve, store, stimulus)
    if found is None:
        raise ConfigError(
            "--tails needs a sweep run's curve: its latency histograms are the tails"
            + ("" if curve is None else f" (`{curve}` has none)"),
            "give --curve RUN, RUN:DISK or latest (a curve file or a profile has no tails)",
        )
    return found


def _follow(
    at_from: str | None,
    bmc: str | None,
    vendor: str | None,
    fan_rpm: str | None,
    poll: str,
    stale: str,
) -> BmcFollow | None:
    """``--at-from bmc`` and its options (checked against the curve with the mount)."""
    from iowatt.emulate.bmc import SOURCES, BmcFollow, parse_bmc, parse_fan_rpm
    from iowatt.errors import ConfigError

    if at_from is None:
        given = [f for f, v in (("--bmc", bmc), ("--vendor", vendor), ("--fan-rpm", fan_rpm))
                 if v is not None]  # fmt: skip
        if given:
            raise ConfigError(f"{given[0]} belongs to --at-from bmc", "add --at-from bmc")
        return None
    if at_from not in SOURCES:
        raise ConfigError(
            f"--at-from `{at_from}` is not a source to follow",
            f"sources: {', '.join(SOURCES)} (--at VALUE or --schedule FILE|RUN for the others)",
        )
    if bmc is None:
        raise ConfigError(
            "--at-from bmc needs --bmc", "e.g. --bmc host=10.0.0.5,user=admin,password-env=BMC_PW"
        )
    rpm = None if fan_rpm is None else parse_fan_rpm(fan_rpm)
    if vendor is None:
        if rpm is None:
            raise ConfigError(
                "--at-from bmc needs --vendor (supermicro reads the duty back) or --fan-rpm",
                "e.g. --vendor supermicro, or --vendor dell --fan-rpm FAN1=600..10200",
            )
        vendor = "generic"
    follow = BmcFollow(
        bmc=parse_bmc(bmc),
        vendor=vendor,
        poll_s=parse_duration(poll, "--poll"),
        stale_s=parse_duration(stale, "--stale"),
        fan_rpm=rpm,
    )
    follow.check()
    return follow
