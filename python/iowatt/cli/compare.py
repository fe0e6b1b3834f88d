"""``iowatt compare``: runs grouped by a label (env by default), against a control group."""

from __future__ import annotations

import math
from pathlib import Path

import click

from iowatt.compare.data import METRICS, Filters, load_rows
from iowatt.compare.render import FORMATS, LAYOUTS, render
from iowatt.compare.stats import TESTS
from iowatt.compare.table import Settings, compare, comparison_warnings
from iowatt.errors import ConfigError
from iowatt.histogram import DEFAULT_SLOW_NS
from iowatt.store.runs import results_dir
from iowatt.store.writer import check_output
from iowatt.units import parse_labels, parse_thresholds
from iowatt.warnings import WarningSink


@click.command("compare")
@click.argument("runs", nargs=-1)
@click.option("--by", default="env", show_default=True, help="The label whose values are compared.")
@click.option("--control", help="The group the others are compared against [earliest group].")
@click.option("--label", "labels", multiple=True, metavar="KEY=VALUE", help="Only runs with it.")
@click.option("--workload", "workloads", multiple=True, help="Only this workload (repeatable).")
@click.option("--metric", type=click.Choice(list(METRICS)), default="ops_s", show_default=True)
@click.option(
    "--layout",
    type=click.Choice(LAYOUTS),
    default="long",
    show_default=True,
    help="study: workloads as rows, groups as columns, % difference beside.",
)
@click.option(
    "--format", "fmt", type=click.Choice((*FORMATS, "html")), default="text", show_default=True
)
@click.option("--output", "-o", type=click.Path(path_type=Path), help="Write to a file.")
@click.option("--slow", help="Latency thresholds for the tail fractions [100ms,200ms].")
@click.option("--test", type=click.Choice(TESTS), default="mann-whitney", show_default=True)
@click.option("--alpha", type=float, default=0.05, show_default=True)
@click.option(
    "--noise",
    default="2%",
    show_default=True,
    help="A difference is real only when its CI also clears ±this band.",
)
@click.option(
    "--detect",
    metavar="PCT",
    help="Also give the runs per group that would detect this difference (e.g. 5%).",
)
@click.option(
    "--resamples",
    type=int,
    default=2000,
    show_default=True,
    help="Bootstrap draws (and the permutation test's least random splits past 100,000).",
)
@click.option(
    "--seed", type=int, default=0, show_default=True, help="Seed of the bootstrap and power."
)
@click.option("--include-incomplete", is_flag=True, help="Also use runs that stopped early.")
@click.option("--results", type=click.Path(path_type=Path), help="Results directory.")
def compare_cmd(
    runs: tuple[str, ...],
    by: str,
    control: str | None,
    labels: tuple[str, ...],
    workloads: tuple[str, ...],
    metric: str,
    layout: str,
    fmt: str,
    output: Path | None,
    slow: str | None,
    test: str,
    alpha: float,
    noise: str,
    detect: str | None,
    resamples: int,
    seed: int,
    include_incomplete: bool,
    results: Path | None,
) -> None:
    """Compare runs across environments: median, spread, confidence intervals, the difference
    to a control and whether it is real, tail fractions and equilibrium warnings.

    RUNS are optional run ids (or prefixes) to restrict the comparison to.
    """
    if not 0 < alpha < 1:
        raise ConfigError(f"--alpha `{alpha}` must be between 0 and 1", "e.g. --alpha 0.05")
    if resamples < 100:
        raise ConfigError(f"--resamples `{resamples}` is too few", "use at least 1000")
    noise_pct = _noise(noise)
    detect_pct = None if detect is None else _detect(detect, noise_pct)
    if output is not None:
        check_output(output, "--output")
    filters = Filters(parse_labels(labels), runs, workloads, include_incomplete)
    thresholds = parse_thresholds(slow) if slow else DEFAULT_SLOW_NS
    rows = load_rows(results_dir(results), filters, by, thresholds)
    settings = Settings(
        by, control, metric, test, alpha, 0.95, resamples, seed, noise_pct, detect_pct
    )
    comparison = compare(rows, settings)
    if fmt == "html":
        from iowatt.report.compare_page import compare_page  # matplotlib: only for a page

        text = compare_page(comparison, rows, layout)
    else:
        text = render(comparison, rows, fmt, layout)
    if output is not None:
        output.write_text(text)
        click.echo(f"comparison written to {output}", err=True)
    else:
        click.echo(text, nl=False)
    if fmt in ("text", "markdown") or output is not None:
        for note in comparison.notes:
            click.echo(f"note: {note}", err=True)
        WarningSink().extend(comparison_warnings(comparison))


def _noise(text: str) -> float:
    """``2%`` (or ``2``) → 2.0 percent."""
    try:
        value = float(text.strip().removesuffix("%"))
    except ValueError:
        value = math.nan
    if not 0 <= value < 100:
        raise ConfigError(f"--noise `{text}` is not a percentage from 0 to 100", "e.g. --noise 2%")
    return value


def _detect(text: str, noise_pct: float) -> float:
    """``5%`` (or ``5``) → 5.0 percent, a difference beyond the noise band."""
    try:
        value = float(text.strip().removesuffix("%"))
    except ValueError:
        value = math.nan
    if not 0 < value < 100:
        raise ConfigError(
            f"--detect `{text}` is not a percentage between 0 and 100", "e.g. --detect 5%"
        )
    if value <= noise_pct:
        raise ConfigError(
            f"--detect `{text}` is within the ±{noise_pct:g}% noise band: no number of runs "
            "calls it real",
            f"ask for more than {noise_pct:g}% (--detect {2 * noise_pct:g}%), or narrow --noise",
        )
    return value
