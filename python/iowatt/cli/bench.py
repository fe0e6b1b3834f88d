"""``iowatt bench``: run a FileIO personality, a suite workload, a workload file or a suite."""

from __future__ import annotations

import json
from pathlib import Path

import click

from iowatt.bench import Options, plan
from iowatt.bench.config import MAX_RUNS, BenchConfig, Reporter, SilentReporter
from iowatt.bench.fileio import PERSONALITIES, SUITES
from iowatt.bench.filemacro import SUITE, messages
from iowatt.cli.comparison import show_comparison
from iowatt.cli.fleet_options import BenchRunner, bench_runner, fleet_options
from iowatt.cli.hosts import show_hosts
from iowatt.cli.progress import RichReporter
from iowatt.cli.run_options import power_and_output
from iowatt.cli.serve_options import served
from iowatt.errors import ConfigError
from iowatt.measured import measured
from iowatt.store.runs import read_manifest, read_summary, results_dir
from iowatt.units import U64_MAX, check_int, parse_labels

HELP = f"""Run FileBench FileIO workloads and store the run.

WORKLOAD is a personality ({", ".join(PERSONALITIES)}), a suite workload such as randomread8k,
a FileBench workload file (FILE.f) run unchanged, or one of the FileMacro suite by name.
--suite filemacro runs fileserver, varmail, webproxy, webserver and oltp. With no WORKLOAD and
no --suite, runs a short FileIO suite (2 s each, 64 MiB file) in a temporary directory.
"""


@click.command(help=HELP)
@click.argument("workload", required=False)
@click.option(
    "--suite", help=f"Run a whole suite ({', '.join((*SUITES, SUITE))}) with its full settings."
)
@click.option(
    "--target",
    "targets",
    multiple=True,
    metavar="[HOST=]PATH",
    help="Directory or block device; with --cluster, HOST=PATH for one host.",
)
@click.option("--cluster", help="Run on every host of a Dask cluster: ADDRESS, local:N, FILE.")
@click.option("--hosts", help="With --cluster: the hosts that run, e.g. local-0,local-2.")
@click.option("--iosize", help="I/O size, e.g. 4k, 1m.")
@click.option("--filesize", help="File size, e.g. 256m, 10g.")
@click.option("--nthreads", type=int, help="Threads per random workload.")
@click.option("--runtime", help="Measured time per workload, e.g. 30s.")
@click.option("--ramp", help="Warm-up excluded from results, e.g. 5s.")
@click.option("--engine", help="psync (default) or io_uring.")
@click.option("--iodepth", type=int, help="Operations in flight per thread (io_uring; default 32).")
@click.option("--directio/--buffered", default=None, help="O_DIRECT, or through the page cache.")
@click.option("--dsync", is_flag=True, help="Open files with O_DSYNC.")
@click.option("--rate", type=float, help="Open-loop rate limit in ops/s across all threads.")
@click.option(
    "--drain",
    help="With a schedule (--rate, a file's eventgen): how long operations in flight at the "
    "end are waited for [10s].",
)
@click.option("--seed", type=int, help="Seed for offsets and data (recorded in the run).")
@click.option("--slow", help="Count operations above these latencies each second [100ms,200ms].")
@click.option(
    "--set",
    "sets",
    multiple=True,
    metavar="NAME=VALUE",
    help="Set a workload file's $variable, e.g. --set nthreads=32.",
)
@click.option(
    "--no-system", is_flag=True, help="Refuse a workload file that runs shell commands (`system`)."
)
@click.option(
    "--check",
    is_flag=True,
    help="Read a workload file and list its variables, filesets, commands and "
    "notices; run nothing.",
)
@click.option("--label", "labels", multiple=True, metavar="KEY=VALUE", help="Label the run.")
@click.option("--repeat", type=int, default=1, help="Run it N times and summarise the series.")
@click.option("--results", type=click.Path(path_type=Path), help="Results directory.")
@click.option("--destroy-data", is_flag=True, help="Allow writing over a device with data on it.")
@power_and_output
@served
def bench(
    workload: str | None,
    suite: str | None,
    targets: tuple[str, ...],
    cluster: str | None,
    hosts: str | None,
    labels: tuple[str, ...],
    results: Path | None,
    destroy_data: bool,
    power: tuple[str, ...],
    power_hz: float,
    idle: str | None,
    no_report: bool,
    repeat: int,
    quiet: bool,
    as_json: bool,
    check: bool,
    **opts: object,
) -> None:
    if check:
        from iowatt.cli.wml_check import check_workloads

        check_workloads(workload, suite, Options(**opts), as_json)  # type: ignore[arg-type]
        return
    check_int(repeat, "--repeat", 1, MAX_RUNS, "--repeat 10")
    fleet = fleet_options(cluster, hosts, targets)
    if fleet and power:
        raise ConfigError(
            "--power is not supported with --cluster yet",
            "record each host's power with `iowatt power record` there",
        )
    target = None if fleet else (Path(targets[0]) if targets else None)
    config = plan(
        workload,
        Options(**opts),  # type: ignore[arg-type]
        suite=suite,
        target=target,
        results=results_dir(results),
        labels=parse_labels(labels),
        destroy_data=destroy_data,
        power=power,
        power_hz=power_hz,
        idle=idle,
        report=not no_report,
    )
    if not quiet:
        for wl in config.workloads:
            if wl.wml:
                for line in messages(wl):
                    click.echo(line, err=True)
    if repeat != 1:
        # Repetition n runs with seed + n − 1, which the engine takes as a u64.
        check_int(config.seed, "--seed", 0, U64_MAX - repeat + 1, "--seed 42")
        _repeat(config, repeat, quiet or as_json, as_json, bench_runner(fleet))
        return
    reporter = SilentReporter() if quiet or as_json else RichReporter()
    try:
        run_dir = bench_runner(fleet)(config, reporter)
    finally:
        if isinstance(reporter, RichReporter):
            reporter.close()
    if as_json:
        click.echo(json.dumps(read_summary(run_dir), indent=2))
        return
    if not quiet:
        _filebench_lines(config, run_dir)
        if fleet:
            show_hosts(run_dir)
        click.echo(f"run {run_dir.name} written to {run_dir}")
        _what_next(config, run_dir, bool(fleet))


def _what_next(config: BenchConfig, run_dir: Path, fleet: bool) -> None:
    """What was measured — the target, and whether through the page cache — the report, and
    the step a user takes next."""
    what = measured(read_manifest(run_dir))
    report = run_dir / "report.html"
    shown = f"; report: {report}" if report.exists() else ""
    if what is not None:
        click.echo(f"measured {what.line()}{shown}")
    elif shown:
        click.echo(shown.removeprefix("; "))
    if fleet:
        hint = "repeat the run (--repeat 5), then `iowatt compare --by host` compares the hosts"
    elif config.target is None or (what is not None and what.in_memory):
        hint = "measure a disk with --target DIR (a directory on it) or --target /dev/DEVICE"
    elif what is not None and what.cached:
        hint = "--directio measures the device without the page cache; `iowatt runs` lists runs"
    else:
        hint = "`iowatt runs` lists runs; label runs (--label env=NAME) and `iowatt compare` them"
    click.echo(f"next: {hint}")


def _filebench_lines(config: BenchConfig, run_dir: Path) -> None:
    """FileBench's per-operation lines and IO Summary after each workload file's run."""
    from iowatt.cli.io_summary import io_summary

    summary = read_summary(run_dir)
    for wl in config.workloads:
        if wl.wml and wl.name in summary["workloads"]:
            elapsed = summary["workloads"][wl.name]["runtime_s"] + wl.ramp_s
            click.echo("\n".join(io_summary(summary["workloads"][wl.name], elapsed)))


def _repeat(
    config: BenchConfig, times: int, quiet: bool, as_json: bool, runner: BenchRunner
) -> None:
    """The quick form of a campaign: one environment, N runs, then the series' statistics."""
    from iowatt import campaign

    bars: list[RichReporter] = []

    def reporter(rep: int) -> Reporter:
        for b in bars:
            b.close()
        if quiet:
            return SilentReporter()
        click.echo(f"run {rep} of {times}", err=True)
        bars.append(RichReporter())
        return bars[-1]

    try:
        series, _ = campaign.repeat(config, times, reporter, runner)
    finally:
        for b in bars:
            b.close()
    show_comparison(config.results, {"series": series}, "series", fmt="json" if as_json else "text")
