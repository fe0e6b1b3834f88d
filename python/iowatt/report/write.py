"""The HTML report of runs: what each section shows, rendered with ``template.html``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import jinja2

from iowatt import __version__
from iowatt.measured import measured
from iowatt.report.context import (
    PERCENTILES,
    build_plots,
    energy_rows,
    power_plots,
    run_view,
    short_labels,
    styles,
    workload_row,
)
from iowatt.report.emulate_array import emulated_view
from iowatt.report.flowops import flowop_tables
from iowatt.report.heatmap import heatmaps
from iowatt.report.hosts import host_views
from iowatt.report.load import load_runs
from iowatt.report.pool import SUMMARY_AFTER, pooled_runs
from iowatt.report.raid_replay import raid_replay_view
from iowatt.report.replay import replay_view
from iowatt.report.series import code_spans, consecutive_runs
from iowatt.report.sim_raid import raid_view
from iowatt.report.sim_server import sim_view
from iowatt.report.sweep import sweep_views
from iowatt.report.tails import report_thresholds, slow_section, threshold_label
from iowatt.report.verdict import verdict
from iowatt.store.runs import DamagedRun, read_manifest


def templates(directory: Path) -> jinja2.Environment:
    """The HTML templates in ``directory``, escaped, and strict about missing values."""
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(directory),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


_ENV = templates(Path(__file__).parent)
_ENV.filters["code_spans"] = code_spans

# Simulations (and the emulated disk's runs) are reported on their own page, or beside measured
# runs, which they cannot be compared with: kind → (page, its sections, view of one run).
_SIMULATIONS: dict[str, tuple[str, str, Callable[[Path], Any]]] = {
    "sim-server": ("sim_server.html", "sim_server_body.html", sim_view),
    "sim-raid": ("sim_raid.html", "sim_raid_body.html", raid_view),
    "emulate": ("emulate.html", "emulate_body.html", emulated_view),
}


def _kind(run_dir: Path) -> str | None:
    try:
        return read_manifest(run_dir).get("kind")
    except DamagedRun:
        return None  # load_run names what is wrong with it


def write_report(run_dirs: Sequence[Path], out: Path) -> Path:
    """Write one self-contained HTML report of the runs in ``run_dirs`` to ``out``.

    Each run directory is read as described in docs/run-store.md; a run without a manifest
    raises :class:`iowatt.errors.RunNotFoundError`. Returns ``out``.
    """
    if not run_dirs:
        raise ValueError("write_report needs at least one run directory")
    kinds = {_kind(Path(d)) for d in run_dirs}
    sims: list[Path] = []
    emulates: list[Path] = []
    if "sim-raid" in kinds and "replay" in kinds and kinds <= {"sim-raid", "replay", "emulate"}:
        # A replay and the simulation of its trace (and the emulated array it read): one
        # report, the comparison and the simulation after.
        sims = [Path(d) for d in run_dirs if _kind(Path(d)) == "sim-raid"]
        emulates = [Path(d) for d in run_dirs if _kind(Path(d)) == "emulate"]
        run_dirs = [d for d in run_dirs if _kind(Path(d)) == "replay"]
        kinds = {"replay"}
    aside = []
    for kind, (page, body, view) in _SIMULATIONS.items():
        if kind not in kinds:
            continue
        if kinds == {kind}:
            html = _ENV.get_template(page).render(
                sims=[view(Path(d)) for d in run_dirs], version=__version__
            )
            out.write_text(html, encoding="utf-8")
            return out
        aside.append((body, [view(Path(d)) for d in run_dirs if _kind(Path(d)) == kind]))
        run_dirs = [d for d in run_dirs if _kind(Path(d)) != kind]
    apart = sorted(k for k in kinds if k in _SIMULATIONS) if aside else []
    # Past SUMMARY_AFTER runs, tables and bars show each environment's runs pooled, and no
    # run's slow seconds or heatmap is drawn (so not read).
    summary = len(run_dirs) > SUMMARY_AFTER
    runs = load_runs([Path(d) for d in run_dirs], detail=not summary)
    thresholds = report_thresholds(runs)
    names = short_labels(runs)
    views = [run_view(run, names[run.run_id]) for run in runs]
    shown = pooled_runs(runs) if summary else runs
    style = styles(shown)
    # What tables and bars call each of the shown runs (a pooled one is its environment).
    short = {p.run_id: p.run_id for p in shown} if summary else names
    answer = verdict(runs, thresholds)
    html = _ENV.get_template("template.html").render(
        runs=views,
        verdict=answer,
        fact_names=list(dict.fromkeys(name for r in views for name, _ in r.facts)),
        measured=list(dict.fromkeys(m.line() for r in runs if (m := measured(r.manifest)))),
        hosts=host_views(runs),
        sweeps=sweep_views(runs),
        replay=replay_view(runs),
        # Sweep runs have no workloads; a report of sweeps only leaves the bench sections out.
        show_bench=any(run.sweep is None and run.kind != "power" for run in runs),
        summary=summary and len(runs),
        summary_after=SUMMARY_AFTER,
        rows=[
            workload_row(run, w, style[run.run_id, w], thresholds, short[run.run_id])
            for run in shown
            for w in run.workloads
        ],
        plots={plot.name: plot for plot in build_plots(runs, style, short, shown)},
        percentiles=[f"p{p:g}" if p < 100 else "max" for p in PERCENTILES],
        thresholds=[(threshold_label(t), t) for t in thresholds],
        flowops=[] if summary else flowop_tables(runs, style),
        slow=slow_section([] if summary else runs, style),
        heat=[] if summary else heatmaps(runs, names),
        series=consecutive_runs(runs, answer.findings if answer else None),
        energy=energy_rows(runs),
        power_plots=power_plots(runs),
        raid_sims=[raid_view(d) for d in sims],
        beside=raid_replay_view(runs, sims, emulates) if sims else None,
        emulated=[emulated_view(d) for d in emulates],
        # Simulations among measured runs: said at the top, reported side by side at the end.
        apart=apart,
        measured_kinds=sorted({str(k) for k in kinds} - set(apart)),
        aside=aside,
        version=__version__,
    )
    out.write_text(html, encoding="utf-8")
    return out
