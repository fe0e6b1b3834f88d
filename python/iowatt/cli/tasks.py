"""``iowatt tasks``: run a task set k per core on Dask and measure jobs/h, watts and Wh/job."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from iowatt.cli.cells import cell, pct_cell
from iowatt.cli.progress import Bars
from iowatt.cli.serve_options import served
from iowatt.power.sources import DEFAULT_HZ, SOURCE_HELP
from iowatt.store.runs import results_dir
from iowatt.units import format_bytes, format_duration, parse_labels

if TYPE_CHECKING:
    from iowatt.tasks.plan import RunSpec
    from iowatt.tasks.run import Outcome
    from iowatt.warnings import RunWarning

HELP = """Run a set of independent tasks, k per core, and measure jobs per hour, watts and Wh/job.

SET is a shipped set (io, cpu, mixed, io-then-cpu: the high-throughput computing study's, as
built-in synthetic tasks — use --scale to shrink them) or a TOML file of task types and sets
(docs/tasks.md). Every (repetition, set, --data location, k) is one run in the store, labelled
set=, disk=, per_core=, env=DISK-kK and rep=, with k × cores tasks in flight, fresh input data
and the node's CPU, disk and memory sampled. Power is measured with --power (RAPL by default
where the machine has it) or else modelled, and labelled so. Running the same command again
skips the runs already done and finishes an interrupted one (finished tasks are not rerun).
"""


@click.command(help=HELP)
@click.argument("set_ref", metavar="SET")
@click.option("--per-core", default="1", show_default=True, help="Tasks per core, k (a list).")
@click.option(
    "--data",
    "data_dirs",
    multiple=True,
    metavar="NAME=DIR",
    help="Where the input goes (repeatable), e.g. hdd=/mnt/a.",
)
@click.option("--repeat", type=int, default=1, show_default=True, help="Repetitions of each run.")
@click.option("--rounds", type=int, help="Rounds of each set, instead of its own (the study's 50).")
@click.option(
    "--scale",
    type=float,
    default=1.0,
    show_default=True,
    help="Scale the synthetic tasks' CPU time and input (0.01: a hundredth).",
)
@click.option("--cores", type=int, help="Cores k multiplies [this machine's].")
@click.option("--memory", help="The node's memory, enforced with a memory cgroup [all of RAM].")
@click.option("--timeout", help="A task's time limit, e.g. 1h.")
@click.option("--drop-caches", is_flag=True, help="Drop the page cache before every run (root).")
@click.option("--power", "power", multiple=True, metavar="SOURCE", help=SOURCE_HELP)
@click.option("--power-hz", type=float, default=DEFAULT_HZ, show_default=True)
@click.option(
    "--power-model",
    type=click.Path(path_type=Path),
    help="Without a power source: TOML overriding the modelled node (node.toml).",
)
@click.option("--cluster", help="A Dask address, local:N or a cluster file [threads here].")
@click.option("--no-resume", is_flag=True, help="Run everything again, even runs already done.")
@click.option(
    "--job-script",
    type=click.Choice(["sge", "slurm", "pbs"]),
    help="Print the batch job that starts a Dask worker for this k, and exit.",
)
@click.option("--label", "labels", multiple=True, metavar="KEY=VALUE", help="Label the runs.")
@click.option("--results", type=click.Path(path_type=Path), help="Results directory.")
@click.option("--quiet", "-q", is_flag=True, help="No progress output.")
@click.option("--json", "as_json", is_flag=True, help="One object per run, as JSON.")
@served
def tasks(
    set_ref: str,
    labels: tuple[str, ...],
    results: Path | None,
    quiet: bool,
    as_json: bool,
    job_script: str | None,
    no_resume: bool,
    **opts: Any,
) -> None:
    from iowatt.tasks.plan import plan
    from iowatt.tasks.run import Progress, execute
    from iowatt.tasks.table import baseline_disk, study_table

    if job_script:
        from iowatt.tasks.jobscript import job_script as script

        click.echo(
            script(
                job_script,
                opts["per_core"],
                opts["cores"],
                opts["memory"],
                opts["timeout"],
                opts["cluster"],
            )
        )
        return
    config = plan(
        set_ref,
        results=results_dir(results),
        labels=parse_labels(labels),
        resume=not no_resume,
        **opts,
    )
    shown = _Shown()
    progress = (
        Progress()
        if quiet
        else Progress(shown.note, shown.started, shown.task_done, shown.ended, shown.warn)
    )
    outcomes: list[Outcome] = execute(config, progress)
    rows = [
        {
            **o.row,
            "status": o.status,
            "run_id": o.run_dir.name if o.run_dir else None,
            "reason": o.reason,
        }
        for o in outcomes
    ]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    names = [loc.name for loc in config.locations]
    base = baseline_disk(names)
    table = study_table(rows, names)
    if table:
        click.echo(_format(table, base))
    control = f"{base}-k{min(config.per_core)}"
    click.echo(
        f"{sum(o.run_dir is not None for o in outcomes)} runs in {config.results}; with "
        f"intervals and tests: iowatt compare --by env --control {control} --metric jobs_per_h"
    )


class _Shown:
    """What runs show on stderr: a line as each starts, one per failed task, a bar while its
    tasks go, its figures when it ends, and its warnings."""

    def __init__(self) -> None:
        from iowatt.warnings import WarningSink

        self.bars: Bars | None = None
        self.sink = WarningSink(self.say)

    def say(self, text: str) -> None:
        if self.bars is not None:
            self.bars.note(text)  # above the bar, which stays whole
        else:
            click.echo(text, err=True)

    def note(self, text: str) -> None:
        if text:
            self.say(text)

    def warn(self, warning: RunWarning) -> None:
        self.sink.warn(warning)

    def started(self, spec: RunSpec, n: int) -> None:
        self.say(
            f"{spec.taskset.name} on {spec.location.name}, k={spec.per_core}, "
            f"rep {spec.rep}: {n} tasks, {spec.per_core} × cores in flight"
        )
        self.bars = Bars()
        self.bars.bar("running", n, unit="tasks").update(0)

    def task_done(self, rec: dict[str, Any]) -> None:
        if rec["status"] != "ok":
            self.say(
                f"  task {rec['index']} ({rec['type']}): {rec['status']}"
                + (f": {rec['error'].splitlines()[-1]}" if rec.get("error") else "")
            )
        if self.bars is not None:
            self.bars.bar("running").advance()

    def ended(self, o: Outcome) -> None:
        if self.bars is not None:
            self.bars.close()
            self.bars = None
        s, r = o.spec, o.row
        head = f"{s.taskset.name} on {s.location.name}, k={s.per_core}, rep {s.rep}"
        if o.status == "refused":
            self.say(f"{head}: refused — {o.reason}")
        elif o.status == "skipped":
            self.say(f"{head}: done before, run {o.run_dir.name if o.run_dir else '?'}")
        else:
            self.say(
                f"{head}: {r['done']}/{r['tasks']} tasks in "
                f"{format_duration(r['makespan_s'])}, {cell(r['jobs_per_h'], '.1f')} jobs/h, "
                f"{cell(r['avg_w'], '.1f')} W ({r['power']}), "
                f"{cell(r['wh_per_job'], '.3f')} Wh/job{_reads(r)}{_failed(r)} → {o.run_dir}"
            )


def _reads(row: dict[str, Any]) -> str:
    """What the tasks read, e.g. `, read 24 MB in 4 MiB reads`."""
    if not row.get("rchar") or not row.get("mean_read_b"):
        return ""
    return f", read {format_bytes(row['rchar'])} in {format_bytes(row['mean_read_b'])} reads"


def _failed(row: dict[str, Any]) -> str:
    """The run's failed tasks by kind, e.g. `; failed tasks: 1 failed, 2 timeout`."""
    failed = row.get("failed_tasks")
    if not failed:
        return ""
    kinds = failed.get("kinds") or {"not ok": failed["count"]}
    return "; failed tasks: " + ", ".join(f"{n} {kind}" for kind, n in kinds.items())


def _format(table: list[dict[str, Any]], base: str | None) -> str:
    head = (
        f"{'set':<12} {'disk':<6} {'k':>2} {'runs':>4} {'jobs/h':>9} {'± 95%':>7} "
        f"{'Wh/job':>8} {'avg W':>7}  {'jobs/h':>7} {'Wh/job':>7} {'avg W':>7}"
    )
    lines = [f"{'':58}vs 1 per core on {base}", head]
    for e in table:
        mark = ("!" if e["runs_with_failed_tasks"] else "") + (
            "*" if e["runs_with_other_load"] else ""
        )
        runs = f"{e['runs']}{mark}"
        lines.append(
            f"{e['set']:<12} {e['disk']:<6} {e['per_core']:>2} {runs:>4} "
            f"{cell(e['jobs_per_h'], '9.1f')} {cell(e['jobs_per_h_ci'], '7.1f')} "
            f"{cell(e['wh_per_job'], '8.3f')} {cell(e['avg_w'], '7.1f')}  "
            f"{pct_cell(e['jobs_per_h_vs_base'])} {pct_cell(e['wh_per_job_vs_base'])} "
            f"{pct_cell(e['avg_w_vs_base'])}"
        )
    flagged = sum(e["runs_with_failed_tasks"] for e in table)
    if flagged:
        lines.append(
            f"!: {flagged} of the runs had failed tasks (jobs/h counts the tasks that succeeded)"
        )
    loaded = sum(e["runs_with_other_load"] for e in table)
    if loaded:
        worst = max(e["other_cpu_share"] or 0.0 for e in table)
        lines.append(
            f"*: {loaded} of the runs shared the node with other load above 5 % of its CPU "
            f"(up to {worst * 100:.0f} %; modelled watts leave it out)"
        )
    return "\n".join(lines)
