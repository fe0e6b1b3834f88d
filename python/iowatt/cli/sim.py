"""``iowatt sim``: the simulators of the "decide" step, one subcommand each."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from iowatt.cli.cells import cell, pct_cell
from iowatt.cli.progress import Bars
from iowatt.cli.trace.options import filters_from, log_options
from iowatt.store.runs import read_summary, results_dir
from iowatt.units import format_duration, format_joules, format_ns, parse_labels

F = TypeVar("F", bound=Callable[..., Any])


def stored(json_help: str, report: bool = True) -> Callable[[F], F]:
    """The options of a simulation's run: labels, the results directory, and how it is shown
    (with ``report``: --no-report and --quiet too; always --json)."""
    options = [
        click.option(
            "--label", "labels", multiple=True, metavar="KEY=VALUE", help="Label the run."
        ),
        click.option("--results", type=click.Path(path_type=Path), help="Results directory."),
    ]
    if report:
        options += [
            click.option("--no-report", is_flag=True, help="Do not write report.html."),
            click.option("--quiet", "-q", is_flag=True, help="Print only the run directory."),
        ]
    options.append(click.option("--json", "as_json", is_flag=True, help=json_help))

    def apply(f: F) -> F:
        for option in reversed(options):
            f = option(f)
        return f

    return apply


def seed_options(f: F) -> F:
    """--seed LIST and --seeds N, spelled alike by every simulator (iowatt.units.parse_seeds)."""
    f = click.option("--seeds", type=int, help="Replications: this many seeds from --seed.")(f)
    return click.option("--seed", default="1", show_default=True, help="Seed, or a list of seeds.")(
        f
    )


def grid_options(example: str) -> Callable[[F], F]:
    """--grid and --cluster: the model's parameters over a grid, the points on Dask."""

    def apply(f: F) -> F:
        f = click.option(
            "--cluster",
            help="With --grid: where the points run (ADDRESS, "
            "local:N, FILE) [local: a process per core].",
        )(f)
        return click.option(
            "--grid",
            "grids",
            multiple=True,
            metavar="KEY=A..B:STEP",
            help="Simulate each value of a model parameter, a dotted path into "
            f"the model file (repeat: every combination), e.g. --grid {example}.",
        )(f)

    return apply


# Per simulator: what a grid's row is named by, and the figures its table shows.
_GRID_COLUMNS: dict[str, tuple[tuple[str, ...], tuple[tuple[str, str, str], ...]]] = {
    "server": (
        ("workload", "policy"),
        (
            ("speedup_vs_dlb", "speed-up", "pct"),
            ("energy_saving_vs_dlb_total", "energy", "pct"),
            ("peak_temp_c", "peak °C", ".1f"),
        ),
    ),
    "raid": (
        ("personality",),
        (
            ("energy_saving_vs_raid0", "saving", "pct"),
            ("latency_s_p99", "p99 s", ".3g"),
            ("success_rate", "success", "pct100"),
        ),
    ),
    "tasks": (
        ("set", "disk", "per_core"),
        (
            ("jobs_per_h", "jobs/h", ".2f"),
            ("wh_per_job", "Wh/job", ".3f"),
            ("avg_w", "avg W", ".1f"),
        ),
    ),
}


def _grid(
    simulator: str,
    plan: Any,
    model: dict[str, Any],
    fn: Callable[[Any, dict[str, Any]], list[dict[str, Any]]],
    grids: tuple[str, ...],
    cluster: str | None,
    labels: tuple[str, ...],
    as_json: bool,
    quiet: bool = False,
) -> None:
    from iowatt.fleet.spec import parse
    from iowatt.sim.grid import parse_grid
    from iowatt.sim.grid_run import run_grid

    axes = parse_grid(grids, model)
    quietly = quiet or as_json
    run_dir, rows = run_grid(
        simulator,
        plan,
        model,
        axes,
        fn,
        cluster=parse(cluster) if cluster else None,
        results=plan.results,
        labels=parse_labels(labels),
        note=lambda m: None if quietly else click.echo(m, err=True),
    )
    if _shown_plainly(rows, run_dir, as_json, quiet):
        return
    names, figures = _GRID_COLUMNS[simulator]
    keys = [a.key for a in axes]
    widths = {k: max(14, len(k)) for k in keys}
    click.echo(
        "  ".join(
            [
                *(f"{k:>{widths[k]}}" for k in keys),
                *(f"{n:<12}" for n in names),
                *(f"{label:>9}" for _, label, _ in figures),
            ]
        )
    )
    for r in rows:
        cells = [
            *(f"{r[k]:>{widths[k]}g}" for k in keys),
            *(f"{r.get(n, '–')!s:<12}" for n in names),
        ]
        if r["error"]:
            click.echo("  ".join([*cells, f"failed: {r['error']}"]))
            continue
        for col, _, fmt in figures:
            v = r.get(col)
            if fmt == "pct":
                cells.append(f"{pct_cell(None if v is None else 100 * v):>9}")
            elif fmt == "pct100":
                cells.append(f"{cell(None if v is None else 100 * v, '8.2f')}%")
            else:
                cells.append(f"{cell(v, '9' + fmt)}")
        click.echo("  ".join(cells))
    click.echo(
        f"grid of {len({r['point'] for r in rows})} points: run {run_dir.name} written to {run_dir}"
    )


def _shown_plainly(rows: list[dict[str, Any]], run_dir: Path, as_json: bool, quiet: bool) -> bool:
    """--json prints the rows, --quiet the run directory; True when one of them did."""
    if as_json:
        click.echo(json.dumps(rows, indent=2))
    elif quiet:
        click.echo(run_dir)
    return as_json or quiet


@click.group(help="Simulate before deploying: server cooling, RAID power modes, task packing.")
def sim() -> None:
    pass


SERVER_HELP = """Compare thermal and cooling policies on a simulated server fed by a fan–disk curve.

Simulates the server vibration study's server (one 8-core socket, 8 DIMMs, 6 fans, SATA disks
that slow as the fans speed up, an SSD) running each workload set (W1–W10: SPEC-like batch jobs
plus a TPC-H query) under each policy — DLB, JETC, App-Oracle, FSTM, FSTM-NoSSD — and reports
the query's speed-up, the batch jobs' slowdown and the energy by component, all against DLB.
--curve takes a sweep run (an id, or `latest` for the last fan sweep), a curve file or a disk
profile, several combined by their slowest; without it, the built-in SATA profiles. Lists and
ranges (`W1..W10`, `1,2,3`, `1..4`, `a..b:step`) work in --workloads, --policies and --seed.
"""


@sim.command(help=SERVER_HELP)
@click.option("--policies", default="all", show_default=True, help="Policies to compare.")
@click.option("--workloads", default="W1..W10", show_default=True, help="Workload sets.")
@click.option(
    "--curve",
    "curve",
    multiple=True,
    help="RUN, `latest`, a curve file or a disk profile [built-in SATA].",
)
@click.option("--model", type=click.Path(path_type=Path), help="TOML overriding server.toml.")
@click.option("--jobs", type=click.Path(path_type=Path), help="TOML adding jobs and sets.")
@seed_options
@click.option(
    "--resolution", default="1s", show_default=True, help="Time series bin (simulated time)."
)
@click.option("--focus", help="The workload whose time series the report draws [the first].")
@click.option("--threads", type=int, help="Simulations at once [the machine's cores].")
@grid_options("fans.max_cfm=100..160:20")
@stored("Print the policy table as JSON.")
def server(
    labels: tuple[str, ...],
    results: Path | None,
    no_report: bool,
    quiet: bool,
    as_json: bool,
    curve: tuple[str, ...],
    grids: tuple[str, ...],
    cluster: str | None,
    **opts: Any,
) -> None:
    from iowatt.sim.server import grid_rows, plan, run

    store = results_dir(results)
    config = plan(
        curve=curve, results=store, labels=parse_labels(labels), report=not no_report, **opts
    )
    if grids:
        _grid("server", config, config.model, grid_rows, grids, cluster, labels, as_json, quiet)
        return
    with Bars(quiet=quiet or as_json, transient=True) as bars:
        run_dir = run(config, _Live(bars), note=lambda m: bars.note(f"note: {m}"))
    rows = read_summary(run_dir)["policies"]
    if _shown_plainly(rows, run_dir, as_json, quiet):
        return
    _print_table(rows, config.curve["source"])
    click.echo(f"run {run_dir.name} written to {run_dir}")
    if (run_dir / "report.html").exists():
        click.echo(f"report: {run_dir / 'report.html'}")


def _pct(v: float | None) -> str:
    return "–" if v is None else f"{v:+.1%}"


def _print_table(rows: list[dict[str, Any]], source: str) -> None:
    click.echo(f"curve: {source}")
    head = ("workload", "policy", "service", "speed-up", "batch", "energy", "fans", "peak")
    click.echo("{:<9} {:<11} {:>9} {:>9} {:>7} {:>8} {:>8} {:>7}".format(*head))
    for r in rows:
        saving = r["energy_saving_vs_dlb"]
        click.echo(
            f"{r['workload']:<9} {r['policy']:<11} {r['service_time_s']:>8.0f}s "
            f"{_pct(r['speedup_vs_dlb']):>9} {_pct(r['batch_slowdown']):>7} "
            f"{_pct(saving['total']):>8} {_pct(saving['fans']):>8} {r['peak_temp_c']:>6.1f}°"
        )
    click.echo("speed-up: T_DLB / T − 1; batch: slowdown; energy, fans: saving against DLB")


class _Live:
    """Runs done and simulated time on stderr: a bar on a terminal, else a line per run done
    (for logs, as the bar leaves nothing behind)."""

    def __init__(self, bars: Bars) -> None:
        self.bars = bars
        self.done = 0

    def __call__(self, p: dict[str, Any]) -> None:
        hours = p["simulated_s"] / 3600
        live = f"{p['runs_done']}/{p['runs']} runs, {hours:.1f} h simulated"
        if self.bars.quiet:
            return
        if not self.bars.is_terminal:
            if p["runs_done"] > self.done:
                self.done = p["runs_done"]
                self.bars.note(live)
            return
        self.bars.bar("simulating").update(p["runs_done"], p["runs"], live)


RAID_HELP = """Serve a trace with a disk array under RAID-0, LRU spin-down and PARAID, simulated.

TRACE is a web access log (any --format `iowatt trace` reads, through its filters; a `trace
split` directory or a replay run: files laid out on the array by the log's sizes, or by
--tree's manifest), an MSR-Cambridge CSV block trace or blkparse text. Every personality sees
the same requests at the same times (÷ --speedup); a request slower than --timeout fails, as a
web server's client gives up. Prints
energy, its saving against RAID-0, latency and completion percentiles, success rate and spin
cycles per personality; the disk models and their sources are in docs/sim-raid.md.
"""


@sim.command(help=RAID_HELP)
@click.argument("trace", type=click.Path(path_type=Path))
@click.option(
    "--personalities",
    default="raid0,lru,paraid",
    show_default=True,
    help="Any of raid0, lru, paraid.",
)
@click.option("--disks", type=int, default=4, show_default=True, help="Disks in the array.")
@click.option(
    "--disk-model",
    "disk_model_name",
    default="ultrastar-36z15",
    show_default=True,
    help="A shipped or --disk-models model.",
)
@click.option("--disk-models", type=click.Path(path_type=Path), help="TOML adding disk models.")
@click.option(
    "--params",
    type=click.Path(path_type=Path),
    help="TOML overriding raid.toml ([array], [lru], [paraid], [fs]: docs/sim-raid.md).",
)
@log_options
@click.option(
    "--tree", type=click.Path(path_type=Path), help="A tree manifest laying the log's files out."
)
@click.option(
    "--speedup",
    type=float,
    help="Serve the trace this many times faster  [default: a replay run's own, else 1]",
)
@click.option(
    "--arrival-jitter",
    default="uniform",
    show_default=True,
    help="A web log's requests within their second: uniform (seeded) or none (its start).",
)
@click.option(
    "--max-bad",
    type=int,
    default=0,
    show_default=True,
    help="Unreadable lines a block trace may have (counted in the run).",
)
@click.option("--timeout", default="30s", show_default=True, help="A client's timeout.")
@click.option("--cache", default="0", show_default=True, help="Page cache size, e.g. 1g.")
@seed_options
@grid_options("lru.timeout_s=5,10,30,60")
@stored("Print one object per personality.")
def raid(
    trace: Path,
    labels: tuple[str, ...],
    results: Path | None,
    no_report: bool,
    quiet: bool,
    as_json: bool,
    grids: tuple[str, ...],
    cluster: str | None,
    **opts: Any,
) -> None:
    from iowatt.sim.raid import grid_model, grid_rows, plan, run

    filters = filters_from(opts)
    config = plan(
        trace,
        results=results_dir(results),
        labels=parse_labels(labels),
        report=not no_report,
        filters=filters,
        **opts,
    )
    if grids:
        model = grid_model(config)
        _grid("raid", config, model, grid_rows, grids, cluster, labels, as_json, quiet)
        return
    quietly = quiet or as_json
    run_dir = run(config, note=lambda m: None if quietly else click.echo(m, err=True))
    rows = read_summary(run_dir)["raid"]
    if _shown_plainly(rows, run_dir, as_json, quiet):
        return
    click.echo(f"{len(config.requests):,} requests on {config.disks} × {config.model_name}")
    head = (
        "personality",
        "energy",
        "saving",
        "mean W",
        "lat p50",
        "p99",
        "max",
        "done p99",
        "success",
        "spin cycles",
    )
    click.echo("{:<12} {:>9} {:>7} {:>7} {:>8} {:>8} {:>8} {:>9} {:>8}  {}".format(*head))
    for r in rows:
        lat, comp = r["latency_s"], r["completion_s"]
        click.echo(
            f"{r['personality']:<12} {format_joules(r['energy_j']):>9} "
            f"{_pct(r['energy_saving_vs_raid0']):>7} {r['mean_w']:>7.1f} "
            f"{format_ns(lat['p50'] * 1e9):>8} {format_ns(lat['p99'] * 1e9):>8} "
            f"{format_ns(lat['max'] * 1e9):>8} {format_ns(comp['p99'] * 1e9):>9} "
            f"{r['success_rate']:>8.2%}  {' '.join(f'{c:g}' for c in r['spin_cycles'])}"
        )
    spun = [r for r in rows if any(r["most_cycles_a_day"])]
    if spun:
        most = "; ".join(
            f"{r['personality']} {' '.join(str(c) for c in r['most_cycles_a_day'])}" for r in spun
        )
        click.echo(
            f"most spin-downs in a day per disk: {most} "
            f"(the rating allows {rows[0]['rated_cycles_per_day']:.1f} a day over five years)"
        )
    click.echo(f"run {run_dir.name} written to {run_dir}")
    if (run_dir / "report.html").exists():
        click.echo(f"report: {run_dir / 'report.html'}")


TASKS_HELP = """Predict how a node finishes a set of tasks, k per core, on a hard disk or an SSD.

SET is a shipped set (io, cpu, mixed, io-then-cpu: the high-throughput computing study's, or a
list of them) or a TOML file of task types and sets (each set it defines is simulated). Each task
draws its CPU time and input around its type's (--task-spread), seeded; the disk serves the
tasks' reads request by request under the node's I/O scheduler. Prints per set, disk and k the
makespan, jobs (set instances) and tasks per hour, average watts and Wh per job, each the mean
over the seeds with its 95 % interval; a k whose tasks would not fit in the node's memory is
reported as out of memory. docs/sim-tasks.md gives the node model (--model overrides it) and
each value's source.
"""


@sim.command(help=TASKS_HELP)
@click.argument("set_ref", metavar="SET", required=False)
@click.option("--per-core", default="1,2", show_default=True, help="Tasks per core (a list).")
@click.option(
    "--disk", default="hdd,ssd", show_default=True, help="The node's disks (node.toml) to use."
)
@click.option(
    "--nodes", type=int, default=1, show_default=True, help="Nodes fed by one batch queue."
)
@click.option("--model", type=click.Path(path_type=Path), help="TOML overriding node.toml.")
@click.option("--disk-model", help="The hdd's disk model [node.toml: barracuda-es2].")
@click.option("--disk-models", type=click.Path(path_type=Path), help="TOML adding disk models.")
@click.option(
    "--task-spread",
    type=float,
    default=0.1,
    show_default=True,
    help="Each task's CPU time and input: its type's × 1 ± this, drawn uniformly (0: identical).",
)
@seed_options
@click.option(
    "--validate",
    "validate_runs",
    metavar="RUNS",
    help="Calibrate from `iowatt tasks` runs (ids, or all) and predict each of them.",
)
@click.option(
    "--save-model",
    type=click.Path(path_type=Path),
    help="With --validate: write the calibrated node as a --model file.",
)
@grid_options("node.ht_gain=0..0.5:0.1")
@stored("One object per set, disk and k (with --validate: per run).", report=False)
def tasks(
    set_ref: str | None,
    labels: tuple[str, ...],
    results: Path | None,
    as_json: bool,
    validate_runs: str | None,
    save_model: Path | None,
    grids: tuple[str, ...],
    cluster: str | None,
    **opts: Any,
) -> None:
    if validate_runs is not None:
        _validate(validate_runs, results_dir(results), save_model, as_json)
        return
    if set_ref is None:
        raise click.UsageError("give a SET (e.g. io,cpu,mixed), or --validate RUNS")
    from iowatt.sim.tasks import grid_rows, plan, run

    config = plan(set_ref, results=results_dir(results), labels=parse_labels(labels), **opts)
    for note in config.notes:
        click.echo(f"note: {note}", err=True)
    if grids:
        _grid("tasks", config, config.model, grid_rows, grids, cluster, labels, as_json)
        return
    with Bars(quiet=as_json, transient=True) as bars:
        run_dir, rows = run(
            config, lambda done, total: bars.bar("simulating", unit="runs").update(done, total)
        )
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    _print_tasks(rows)
    click.echo(f"run {run_dir.name} written to {run_dir}")


def _pm(value: float, ci: list[float] | None, fmt: str) -> str:
    """A mean and the half-width of its interval: `12.3 ±0.4`."""
    half = "" if ci is None else f" ±{(ci[1] - ci[0]) / 2:{fmt}}"
    return f"{value:{fmt}}{half}"


def _print_tasks(rows: list[dict[str, Any]]) -> None:
    seeds = rows[0]["seeds"] if rows else 1
    head = ("set", "disk", "k", "makespan", "jobs/h", "tasks/h", "avg W", "Wh/job", "disk")
    click.echo("{:<12} {:<4} {:>2} {:>10} {:>14} {:>14} {:>7} {:>13} {:>5}".format(*head))
    for r in rows:
        if r["out_of_memory"]:
            click.echo(f"{r['set']:<12} {r['disk']:<4} {r['per_core']:>2}  out of memory")
            continue
        click.echo(
            f"{r['set']:<12} {r['disk']:<4} {r['per_core']:>2} "
            f"{format_duration(r['makespan_s']):>10} "
            f"{_pm(r['jobs_per_h'], r['jobs_per_h_ci95'], '.2f'):>14} "
            f"{_pm(r['tasks_per_h'], r['tasks_per_h_ci95'], '.1f'):>14} "
            f"{r['avg_w']:>7.1f} {_pm(r['wh_per_job'], r['wh_per_job_ci95'], '.2f'):>13} "
            f"{r['disk_busy']:>5.0%}"
        )
    interval = f"± the 95 % interval over {seeds} seeds; " if seeds > 1 else ""
    click.echo(f"a job is one instance of the set; {interval}disk: the share of time it served")


def _validate(refs: str, results: Path, save_model: Path | None, as_json: bool) -> None:
    from iowatt.tasks.validate import model_toml, validate

    model, rows = validate(results, refs)
    if save_model is not None:
        save_model.write_text(model_toml(model))
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    node = model["node"]
    # A disk is calibrated from a run's probe; a set that reads nothing has none.
    disks = [
        f"{k} {d['seq_mb_s']:.0f} MB/s, switch {d['switch_s'] * 1e3:.1f} ms"
        for k, d in model["disks"].items()
        if "seq_mb_s" in d
    ]
    click.echo(
        f"calibrated from {len(rows)} runs: {node['cores']} cores, ht_gain "
        f"{node['ht_gain']:g}, power {node['idle_w']:.1f} W idle + {node['core_w']:.2f} W "
        f"per busy core; disks: " + (", ".join(disks) or "none (no run read input)")
    )
    click.echo(
        f"{'run':<28} {'set':<12} {'disk':<5} {'k':>2} {'jobs/h meas':>11} "
        f"{'pred':>8} {'err':>7} {'Wh/job meas':>11} {'pred':>7} {'err':>7}"
    )
    for r in rows:
        click.echo(
            f"{r['run_id']:<28} {r['set']:<12} {r['disk']:<5} {r['per_core']:>2} "
            f"{r['jobs_per_h_measured']:>11.1f} {r['jobs_per_h_predicted']:>8.1f} "
            f"{pct_cell(r['jobs_per_h_error_pct'])} {cell(r['wh_per_job_measured'], '11.4f')} "
            f"{r['wh_per_job_predicted']:>7.4f} {pct_cell(r['wh_per_job_error_pct'])}"
        )
    errors = [abs(r["jobs_per_h_error_pct"]) for r in rows if r["jobs_per_h_error_pct"] is not None]
    if errors:
        click.echo(
            f"jobs/h: mean absolute error {sum(errors) / len(errors):.1f} %, "
            f"largest {max(errors):.1f} %"
        )
