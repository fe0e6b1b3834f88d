"""``iowatt campaign FILE.toml``: run a matrix of workloads × environments × repetitions."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import click

from iowatt import campaign as campaign_lib
from iowatt.bench.config import BenchConfig, Reporter, SilentReporter
from iowatt.campaign import Campaign, PlannedRun
from iowatt.cli.comparison import show_comparison
from iowatt.cli.fleet_options import FleetOptions, fleet_options
from iowatt.cli.progress import RichReporter
from iowatt.cli.serve_options import served
from iowatt.errors import ConfigError
from iowatt.fleet.hosts import Targets
from iowatt.store.runs import read_summary, results_dir
from iowatt.units import format_ns, format_rate


class LineReporter:
    """One line per finished run on stderr; the bench's own bars unless ``--quiet``."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.bars: RichReporter | None = None

    def started(self, campaign: Campaign, total: int, done: int) -> None:
        envs = ", ".join(e.name for e in campaign.envs)
        text = f"campaign {campaign.name}: {total} runs ({campaign.order}; envs {envs})"
        if done:
            text += f", {done} already finished: resuming"
        click.echo(text, err=True)

    def run_started(self, run: PlannedRun, total: int) -> Reporter:
        self.close()
        if self.quiet:
            return SilentReporter()
        title = f"[{run.index}/{total}] {run.env.name} rep {run.rep}: {run.entry.title}"
        click.echo(title, err=True)
        self.bars = RichReporter()
        return self.bars

    def run_finished(self, run: PlannedRun, total: int, run_dir: Path) -> None:
        self.close()
        if self.quiet:
            return
        for name, w in read_summary(run_dir).get("workloads", {}).items():
            click.echo(
                f"[{run.index}/{total}] {run.env.name} rep {run.rep}: {name} "
                f"{format_rate(w['ops_s'])} ops/s, {w['mib_s']:,.2f} MiB/s, "
                f"p99 {format_ns(w['latency_ns']['p99'])} (run {run_dir.name})",
                err=True,
            )

    def note(self, message: str) -> None:
        if not self.quiet:
            click.echo(message, err=True)

    def close(self) -> None:
        if self.bars is not None:
            self.bars.close()
            self.bars = None


@click.command("campaign")
@click.argument("file", type=click.Path(path_type=Path))
@click.option(
    "--target",
    "targets",
    multiple=True,
    metavar="[HOST=]PATH",
    help="Overrides the file's target; with --cluster, HOST=PATH for one host.",
)
@click.option(
    "--cluster", help="Every run on every host of a Dask cluster: ADDRESS, local:N, FILE."
)
@click.option("--hosts", help="With --cluster: the hosts that run, e.g. local-0,local-2.")
@click.option("--destroy-data", is_flag=True, help="Allow writing over a device with data on it.")
@click.option("--results", type=click.Path(path_type=Path), help="Results directory.")
@click.option("--dry-run", is_flag=True, help="Print the runs in order and stop.")
@click.option("--no-report", is_flag=True, help="Do not write the campaign's HTML report.")
@click.option("--quiet", "-q", is_flag=True, help="Only the final table.")
@served
def campaign_cmd(
    file: Path,
    targets: tuple[str, ...],
    cluster: str | None,
    hosts: str | None,
    destroy_data: bool,
    results: Path | None,
    dry_run: bool,
    no_report: bool,
    quiet: bool,
) -> None:
    """Run a campaign file: every workload in every environment, repeated, interleaved.

    With --cluster, every run is a fleet run: each bench on every host at once (docs/fleets.md).

    Finished runs are kept: running the same file again does only what is missing. At the
    end, the comparison of the environments against the first one is printed, and a report of
    every run (series run by run, slow operations) is written beside the runs.
    """
    fleet = fleet_options(cluster, hosts, targets)
    target = None if fleet or not targets else Path(targets[0])
    campaign = campaign_lib.load(file, target=target, destroy_data=destroy_data)
    if fleet:
        # The file's target is every host's, unless --target gives one for all.
        spec, names, per_host = fleet
        default = per_host.default or campaign.target
        fleet = (spec, names, Targets(default, per_host.per_host))
        campaign.fleet = spec.text
    where = results_dir(results)
    if dry_run:
        done = campaign_lib.finished_runs(campaign, where)
        for p in campaign_lib.schedule(campaign):
            mark = "done" if p.key in done else "todo"
            click.echo(f"{p.index:>4}  {mark}  env={p.env.name}  rep={p.rep}  {p.entry.title}")
        return
    if not fleet and any(e.hosts for e in campaign.envs):
        env = next(e for e in campaign.envs if e.hosts)
        raise ConfigError(
            f"{file.name}: env `{env.name}` names hosts, which need --cluster",
            "run it with --cluster, or drop the env's hosts",
        )
    reporter = LineReporter(quiet)
    try:
        if fleet:
            run_dirs = _on_fleet(campaign, where, reporter, fleet)
        else:
            run_dirs = campaign_lib.run(campaign, where, reporter)
    finally:
        reporter.close()
    if not no_report:
        from iowatt.report import write_report  # matplotlib is slow to import; only when needed

        out = write_report(run_dirs, where / f"campaign-{campaign.name}.html")
        click.echo(f"report: {out}", err=True)
    show_comparison(where, {"campaign": campaign.name}, "env", control=campaign.envs[0].name)


def _on_fleet(
    campaign: Campaign, where: Path, reporter: LineReporter, fleet: FleetOptions
) -> list[Path]:
    """Every run on the fleet, through one client (environments on disjoint hosts at once)."""
    from iowatt import pagecache
    from iowatt.bench.fleet import run_fleet
    from iowatt.fleet.cluster import connect
    from iowatt.fleet.hosts import pick

    spec, names, targets = fleet
    with connect(spec, 1, reporter.note) as client:

        def one(
            config: BenchConfig,
            progress: Reporter,
            hosts: tuple[str, ...] | None,
            stop: Callable[[], bool] | None,
        ) -> Path:
            chosen = list(hosts) if hosts else names
            return run_fleet(config, spec, chosen, targets, progress, client=client, stop=stop)

        def drop(hosts: tuple[str, ...] | None) -> None:
            """The page cache of the hosts the next run reads on."""
            workers = pick(
                client.scheduler_info()["workers"], list(hosts or names or []) or None, Targets()
            )
            client.run(pagecache.drop, workers=list(workers))

        return campaign_lib.run(campaign, where, reporter, one, drop)
