"""The comparison table: per workload × group (an environment, by default), the spread over
repeated runs, whether the difference to a control group is real, the smallest difference the
runs could have found, the tail fractions, and whether the runs had reached equilibrium.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from iowatt.compare.data import METRICS, Rows
from iowatt.compare.latent import Finding, analyse_series
from iowatt.compare.power import detectable_effect, fewest_runs, log_noise, runs_to_detect
from iowatt.compare.stats import Difference, Summary, describe, difference
from iowatt.errors import ConfigError
from iowatt.warnings import Kind, RunWarning

# Below this many runs a cell's statistics are flagged: the study's own caveat.
MIN_RUNS = 5


@dataclass(frozen=True)
class Settings:
    """How the statistics are computed (all recorded in the JSON output)."""

    by: str = "env"
    control: str | None = None
    metric: str = "ops_s"
    test: str = "mann-whitney"
    alpha: float = 0.05
    confidence: float = 0.95
    resamples: int = 2000
    seed: int = 0
    # A difference is real only when it is significant and its CI clears ±noise_pct.
    noise_pct: float = 2.0
    # With it, each comparison row also gives the runs per group that detect this % difference.
    detect_pct: float | None = None


@dataclass(frozen=True)
class Cell:
    workload: str
    group: str
    run_ids: tuple[str, ...]
    values: npt.NDArray[np.float64]
    summary: Summary
    # Against the control group; None for the control itself or when there is no control.
    diff: Difference | None
    # Share of the cell's operations above each threshold, pooled over its runs (exact).
    tails: tuple[float, ...]
    findings: tuple[Finding, ...]
    # The run-to-run noise of the comparison (iowatt.compare.power.log_noise: against the
    # control's runs, or the cell's own without a control), the smallest difference the design
    # detects 80 % of the time under both gates (inf: none; nan: unknown, or no comparison), and
    # with --detect the runs per group that detect that difference (None: unknown).
    noise: float = math.nan
    mde_pct: float = math.nan
    runs_to_detect: int | None = None

    @property
    def few(self) -> bool:
        return self.summary.n < MIN_RUNS

    def short_interval(self, settings: Settings) -> bool:
        """Whether the median's interval covers less than the confidence asked (too few runs
        for an interval between order statistics to reach it)."""
        return self.summary.ci_coverage < settings.confidence

    @property
    def at_equilibrium(self) -> bool:
        return not self.findings

    def significant(self, settings: Settings) -> bool:
        """Two gates (STYLE 9): the test finds a difference, and the whole confidence interval
        of the difference lies beyond the noise band, so a tiny if consistent shift is not
        called real."""
        d = self.diff
        if d is None or not d.p_value < settings.alpha:
            return False
        return bool(d.ci_low > settings.noise_pct or d.ci_high < -settings.noise_pct)


@dataclass
class Comparison:
    settings: Settings
    control: str | None
    thresholds_ns: tuple[int, ...]
    workloads: list[str]
    groups: list[str]
    cells: dict[tuple[str, str], Cell]
    notes: list[str] = field(default_factory=list)

    def cell(self, workload: str, group: str) -> Cell | None:
        return self.cells.get((workload, group))

    def warnings(self) -> list[str]:
        """One line per cell whose runs were not at equilibrium, and per thin cell."""
        out = []
        by = self.settings.by
        for (workload, group), cell in self.cells.items():
            for f in cell.findings:
                out.append(f"{workload} [{by}={group}]: {f.message}; not at equilibrium")
        thin = [f"{w} [{by}={g}]" for (w, g), c in self.cells.items() if c.few]
        if thin:
            out.append(
                f"fewer than {MIN_RUNS} runs in {len(thin)} cell(s) ({_some(thin)}"
                "): their confidence intervals and tests are weak"
            )
        s = self.settings
        short = [c for c in self.cells.values() if c.short_interval(s)]
        if short:
            covers = sorted({f"{c.summary.ci_coverage:.0%}" for c in short})
            out.append(
                f"{len(short)} cell(s) have too few runs for a {s.confidence:.0%} interval of the "
                f"median ({_some([f'{c.workload} [{by}={c.group}]' for c in short])}): their "
                f"CI is [min, max], which holds the median with probability {', '.join(covers)}"
            )
        blind = [c for c in self.cells.values() if c.mde_pct == math.inf]
        if blind:
            out.append(
                f"{len(blind)} comparison(s) have too few runs to call any difference real, "
                f"however large ({_some([f'{c.workload} [{by}={c.group}]' for c in blind])}): "
                f"p < {s.alpha:g} needs {fewest_runs(s.alpha)} runs per {by}"
            )
        return out


def _some(names: list[str]) -> str:
    return ", ".join(names[:4]) + (" …" if len(names) > 4 else "")


def compare(rows: Rows, settings: Settings) -> Comparison:
    """Every cell of the table; a ConfigError when the control group has no runs."""
    if settings.metric not in METRICS:
        raise ConfigError(
            f"unknown metric `{settings.metric}`", f"metrics are: {', '.join(METRICS)}"
        )
    groups = _groups_in_order(rows)
    control = settings.control
    if control is not None and control not in groups:
        raise ConfigError(
            f"no runs with {settings.by}={control} among the selected runs",
            f"{settings.by} values present: {', '.join(groups)}",
        )
    if control is None and len(groups) > 1:
        control = groups[0]
    rng = np.random.default_rng(settings.seed)
    values = rows.metrics[settings.metric]
    cells: dict[tuple[str, str], Cell] = {}
    workloads = list(dict.fromkeys(rows.workload.tolist()))
    # One family per comparison: each workload's series gets its share of alpha.
    series_alpha = settings.alpha / len(workloads)
    for workload in workloads:
        in_workload = np.flatnonzero(rows.workload == workload)
        findings = _findings(rows, values, in_workload, series_alpha, settings.seed)
        control_values = _cell_values(rows, values, in_workload, control)
        for group in groups:
            idx = in_workload[rows.group[in_workload] == group]
            if idx.size == 0:
                continue
            x = values[idx]
            x = x[~np.isnan(x)]
            diff = None
            if control is not None and group != control and control_values.size:
                diff = difference(
                    x,
                    control_values,
                    test=settings.test,
                    confidence=settings.confidence,
                    resamples=settings.resamples,
                    rng=rng,
                )
            cells[workload, group] = Cell(
                workload=workload,
                group=group,
                run_ids=tuple(rows.run_id[idx].tolist()),
                values=x,
                summary=describe(x, confidence=settings.confidence),
                diff=diff,
                tails=_pooled_tails(rows, idx),
                findings=tuple(f for f in findings if f.env == group),
                **_power(x, control_values if control is not None else None, diff, settings),
            )
    comparison = Comparison(settings, control, rows.thresholds_ns, workloads, groups, cells)
    if rows.unlabelled:
        comparison.notes.append(
            f"{rows.unlabelled} selected run(s) have no `{settings.by}` label and are left out"
        )
    return comparison


def _power(
    x: npt.NDArray[np.float64],
    control: npt.NDArray[np.float64] | None,
    diff: Difference | None,
    settings: Settings,
) -> dict[str, Any]:
    """The cell's noise, minimum detectable effect and, with --detect, runs to detect: for a
    comparison row against the control's runs; without a control, from the cell's own runs
    (as if another group had the same noise); nothing for the control's own row."""
    if control is not None and diff is None:
        return {}
    sigma = log_noise(x) if control is None else log_noise(x, control)
    s = settings
    out: dict[str, Any] = {"noise": sigma}
    if control is not None:
        out["mde_pct"] = detectable_effect(
            x.size,
            control.size,
            sigma,
            noise_pct=s.noise_pct,
            alpha=s.alpha,
            confidence=s.confidence,
            seed=s.seed,
        )
    if s.detect_pct is not None:
        out["runs_to_detect"] = runs_to_detect(
            s.detect_pct,
            sigma,
            noise_pct=s.noise_pct,
            alpha=s.alpha,
            confidence=s.confidence,
            seed=s.seed,
        )
    return out


def _groups_in_order(rows: Rows) -> list[str]:
    """Groups in the order their first run started: the control defaults to the earliest."""
    order = np.argsort(rows.started_ns, kind="stable")
    return list(dict.fromkeys(rows.group[order].tolist()))


def _cell_values(
    rows: Rows, values: npt.NDArray[np.float64], idx: npt.NDArray[np.intp], group: str | None
) -> npt.NDArray[np.float64]:
    if group is None:
        return np.empty(0)
    x = values[idx[rows.group[idx] == group]]
    return x[~np.isnan(x)]


def _findings(
    rows: Rows, values: npt.NDArray[np.float64], idx: npt.NDArray[np.intp], alpha: float, seed: int
) -> list[Finding]:
    """The latent-effect findings of one workload's series (its runs in time order)."""
    keep = idx[~np.isnan(values[idx])]
    return analyse_series(values[keep], rows.group[keep].tolist(), alpha=alpha, seed=seed)


def _pooled_tails(rows: Rows, idx: npt.NDArray[np.intp]) -> tuple[float, ...]:
    total = int(rows.ops_total[idx].sum())
    if total == 0:
        return tuple(float("nan") for _ in rows.thresholds_ns)
    return tuple(float(a) / total for a in rows.ops_above[idx].sum(axis=0))


def comparison_warnings(cmp: Comparison) -> list[RunWarning]:
    """The comparison's findings as warnings, for the sink that shows them."""
    return [RunWarning(Kind.COMPARISON, w) for w in cmp.warnings()]
