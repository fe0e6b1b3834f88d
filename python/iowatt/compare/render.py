"""A comparison as a terminal table, Markdown, CSV, JSON or a self-contained HTML page.

Two layouts: ``long`` (one row per workload × group, every statistic) and ``study`` (the
vibration study's table: workloads as rows, groups as columns, the % difference against the
control beside each group).
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Callable, Sequence
from typing import Any

from iowatt.compare.data import METRICS, Rows
from iowatt.compare.power import MAX_RUNS, POWER
from iowatt.compare.stats import Difference
from iowatt.compare.table import MIN_RUNS, Cell, Comparison, Settings
from iowatt.units import format_duration, format_ns, format_rate

FORMATS = ("text", "markdown", "csv", "json")  # and "html": iowatt.report.compare_page
LAYOUTS = ("long", "study")


def threshold_name(ns: int) -> str:
    """``100ms`` for 100,000,000 ns: a column-name-safe threshold."""
    return format_ns(ns).replace(" ", "").replace("µ", "u")


def _value(metric: str) -> Callable[[float], str]:
    if METRICS[metric][1] == "ns":
        return lambda v: "–" if math.isnan(v) else format_ns(v)
    if metric == "success_rate":
        return lambda v: "–" if math.isnan(v) else f"{v:.2%}"
    if METRICS[metric][1] == "s":
        return lambda v: "–" if math.isnan(v) else format_duration(v)
    return lambda v: "–" if math.isnan(v) else format_rate(v)


def _pct(p: float) -> str:
    return "–" if math.isnan(p) else f"{p:+.1f}%"


def _share(s: float) -> str:
    if math.isnan(s):
        return "–"
    return "0%" if s == 0 else f"{100 * s:.3g}%"


def _p(d: Difference) -> str:
    """Two significant digits (an exact p of 2/252 is 0.0079, not 0.008), and a Monte Carlo
    p's standard error beside it."""
    p = d.p_value
    if math.isnan(p):
        return "–"
    text = "<0.0001" if p < 0.0001 else f"{p:.2g}"
    return f"{text}±{d.p_error:.1g}" if d.p_method == "monte-carlo" else text


def _mde(pct: float) -> str:
    if math.isnan(pct):
        return "–"
    return "none" if math.isinf(pct) else f"≥{pct:.1f}%"


def _runs(n: int | None) -> str:
    if n is None:
        return "–"
    return f">{MAX_RUNS:,}" if n > MAX_RUNS else f"{n:,}"


def _flags(c: Cell, settings: Settings) -> str:
    out = []
    if c.significant(settings):
        out.append("*")
    if c.few:
        out.append(f"n<{MIN_RUNS}")
    if c.short_interval(settings):
        out.append(f"CI {c.summary.ci_coverage:.0%}")
    if not c.at_equilibrium:
        out.append("not at equilibrium")
    return " ".join(out)


# --- tables as rows of text ---------------------------------------------------------------


def table_rows(cmp: Comparison, layout: str) -> tuple[list[str], list[list[str]]]:
    """Header and rows of text, shared by the terminal, Markdown and HTML outputs."""
    return _study(cmp) if layout == "study" else _long(cmp)


def _long(cmp: Comparison) -> tuple[list[str], list[list[str]]]:
    s = cmp.settings
    fmt = _value(s.metric)
    ci = f"{round(100 * s.confidence)}% CI"
    header = ["workload", s.by, "n", f"median {METRICS[s.metric][0]}", "IQR", ci]
    if cmp.control is not None:
        header += [f"vs {cmp.control}", f"{ci} of diff", "p", "detects"]
    if s.detect_pct is not None:
        header.append(f"runs for {s.detect_pct:g}%")
    header += [f"> {format_ns(t)}" for t in cmp.thresholds_ns] + ["flags"]
    rows = []
    for w in cmp.workloads:
        for g in cmp.groups:
            c = cmp.cell(w, g)
            if c is None:
                continue
            m = c.summary
            row = [
                w,
                g,
                str(m.n),
                fmt(m.median),
                f"{fmt(m.q1)} – {fmt(m.q3)}",
                f"{fmt(m.ci_low)} – {fmt(m.ci_high)}",
            ]
            d = c.diff
            if cmp.control is not None:
                row += (
                    ["control", "", "", ""]
                    if d is None
                    else [
                        _pct(d.pct),
                        f"{_pct(d.ci_low)} – {_pct(d.ci_high)}",
                        _p(d),
                        _mde(c.mde_pct),
                    ]
                )
            if s.detect_pct is not None:
                row.append("" if cmp.control is not None and d is None else _runs(c.runs_to_detect))
            row += [_share(t) for t in c.tails] + [_flags(c, s)]
            rows.append(row)
    return header, rows


def _study(cmp: Comparison) -> tuple[list[str], list[list[str]]]:
    s = cmp.settings
    fmt = _value(s.metric)
    header = ["workload"]
    for g in cmp.groups:
        header.append(f"{g} ({METRICS[s.metric][0]})")
        if cmp.control is not None and g != cmp.control:
            header += [f"{g} vs {cmp.control}", f"{g} detects"]
        if s.detect_pct is not None and g != cmp.control:
            header.append(f"{g} runs for {s.detect_pct:g}%")
    rows = []
    for w in cmp.workloads:
        row = [w]
        for g in cmp.groups:
            c = cmp.cell(w, g)
            row.append("–" if c is None else f"{fmt(c.summary.median)} (n={c.summary.n})")
            if cmp.control is not None and g != cmp.control:
                if c is None or c.diff is None:
                    row += ["–", "–"]
                else:
                    mark = "*" if c.significant(s) else ""
                    row += [_pct(c.diff.pct) + mark, _mde(c.mde_pct)]
            if s.detect_pct is not None and g != cmp.control:
                row.append("–" if c is None else _runs(c.runs_to_detect))
        rows.append(row)
    return header, rows


def legend(cmp: Comparison, layout: str) -> str:
    """The footnote: only what the table of ``layout`` shows."""
    s = cmp.settings
    ci = f"{round(100 * s.confidence)}% CI"
    often = f"{POWER:.0%} of the time"
    parts = []
    cells = cmp.cells.values()
    if cmp.control is not None:
        parts.append(
            f"* p < {s.alpha:g} ({s.test}) and the {ci} of the difference outside ±{s.noise_pct:g}%"
        )
        parts.append(f"detects: the least difference these runs would call real {often}")
    if s.detect_pct is not None:
        parts.append(
            f"runs for {s.detect_pct:g}%: runs per {s.by} that would call a {s.detect_pct:g}% "
            f"difference real {often}"
        )
    if layout == "long":
        if any(c.diff and c.diff.p_method == "monte-carlo" for c in cells):
            parts.append("p±e: random splits, with their standard error")
        parts.append("CI: order statistics of the median")
        if cmp.control is not None:
            parts.append(f"CI of diff: bootstrap, {s.resamples} resamples")
        if any(c.short_interval(s) for c in cells):
            parts.append(
                f"CI n%: [min, max], holding the median n% of the time (too few runs for a {ci})"
            )
        if cmp.thresholds_ns:
            parts.append("> threshold: share of operations above it")
    return "; ".join(parts)


# --- outputs --------------------------------------------------------------------------------


def render(cmp: Comparison, rows: Rows, fmt: str, layout: str) -> str:
    if fmt == "json":
        return json.dumps(to_json(cmp, rows), indent=2, default=_json_default) + "\n"
    if fmt == "csv":
        return _csv(cmp, layout)
    if fmt == "markdown":
        return _markdown(cmp, layout)
    return _text(cmp, layout)


def _text(cmp: Comparison, layout: str) -> str:
    from rich.console import Console
    from rich.table import Table

    header, body = table_rows(cmp, layout)
    table = Table(box=None, header_style="bold", title_justify="left")
    for i, h in enumerate(header):
        table.add_column(h, justify="left" if i < (1 if layout == "study" else 2) else "right")
    for row in body:
        table.add_row(*row)
    console = Console(file=io.StringIO(), width=max(100, 12 * len(header)), color_system=None)
    console.print(title(cmp), markup=False)
    console.print(table)
    console.print(legend(cmp, layout), markup=False)
    return console.file.getvalue()  # type: ignore[attr-defined, no-any-return]


def title(cmp: Comparison) -> str:
    s = cmp.settings
    control = f", control {s.by}={cmp.control}" if cmp.control else ""
    return f"{METRICS[s.metric][0]} by {s.by}{control}"


def _markdown(cmp: Comparison, layout: str) -> str:
    header, body = table_rows(cmp, layout)

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    align = ["---" if i < (1 if layout == "study" else 2) else "---:" for i in range(len(header))]
    lines = [f"**{title(cmp)}**", "", line(header), line(align), *map(line, body), ""]
    lines.append(legend(cmp, layout))
    return "\n".join(lines) + "\n"


def _csv(cmp: Comparison, layout: str) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    if layout == "study":
        header = ["workload"]
        for g in cmp.groups:
            header.append(g)
            if cmp.control is not None and g != cmp.control:
                header += [f"{g}_diff_pct", f"{g}_p_value", f"{g}_mde_pct"]
            if cmp.settings.detect_pct is not None and g != cmp.control:
                header.append(f"{g}_runs_to_detect")
        writer.writerow(header)
        for w in cmp.workloads:
            row: list[Any] = [w]
            for g in cmp.groups:
                c = cmp.cell(w, g)
                row.append(_num(c.summary.median) if c else "")
                if cmp.control is not None and g != cmp.control:
                    d = c.diff if c else None
                    row += [_num(d.pct), _num(d.p_value), _mde_num(c)] if c and d else ["", "", ""]
                if cmp.settings.detect_pct is not None and g != cmp.control:
                    row.append("" if c is None or c.runs_to_detect is None else c.runs_to_detect)
            writer.writerow(row)
        return out.getvalue()
    cells = [cell_record(cmp, c) for c in cmp.cells.values()]
    if cells:
        writer.writerow(cells[0].keys())
        for rec in cells:
            writer.writerow(["" if v is None else v for v in rec.values()])
    return out.getvalue()


def _num(v: float) -> float | str:
    return "" if math.isnan(v) else v


def _nan_none(v: float) -> float | None:
    return None if math.isnan(v) else float(v)


def _mde_num(c: Cell) -> float | str:
    return "" if not math.isfinite(c.mde_pct) else c.mde_pct


def _detectable(c: Cell) -> bool | None:
    return None if math.isnan(c.mde_pct) else math.isfinite(c.mde_pct)


def cell_record(cmp: Comparison, c: Cell) -> dict[str, Any]:
    """A cell as flat fields (CSV columns and JSON objects share them)."""
    m, d = c.summary, c.diff
    rec: dict[str, Any] = {
        "workload": c.workload,
        cmp.settings.by: c.group,
        "metric": cmp.settings.metric,
        "n": m.n,
        "median": _nan_none(m.median),
        "q1": _nan_none(m.q1),
        "q3": _nan_none(m.q3),
        "ci_low": _nan_none(m.ci_low),
        "ci_high": _nan_none(m.ci_high),
        "ci_coverage": _nan_none(m.ci_coverage),
        "diff_pct": _nan_none(d.pct) if d else None,
        "diff_ci_low": _nan_none(d.ci_low) if d else None,
        "diff_ci_high": _nan_none(d.ci_high) if d else None,
        "p_value": _nan_none(d.p_value) if d else None,
        "p_method": d.p_method if d else None,
        "p_error": d.p_error if d else None,
        "significant": c.significant(cmp.settings) if d else None,
        "run_noise_pct": _nan_none(100.0 * c.noise),
        "mde_pct": c.mde_pct if math.isfinite(c.mde_pct) else None,
        "detectable": _detectable(c),
        "runs_to_detect": c.runs_to_detect,
        "few_runs": c.few,
        "at_equilibrium": c.at_equilibrium,
    }
    for t, share in zip(cmp.thresholds_ns, c.tails, strict=True):
        rec[f"above_{threshold_name(t)}"] = _nan_none(share)
    return rec


def to_json(cmp: Comparison, rows: Rows) -> dict[str, Any]:
    s = cmp.settings
    return {
        "by": s.by,
        "control": cmp.control,
        "metric": s.metric,
        "test": s.test,
        "alpha": s.alpha,
        "noise_pct": s.noise_pct,
        "power": POWER,
        "detect_pct": s.detect_pct,
        "confidence": s.confidence,
        "resamples": s.resamples,
        "seed": s.seed,
        "thresholds_ns": list(cmp.thresholds_ns),
        "cells": [
            {
                **cell_record(cmp, c),
                "runs": list(c.run_ids),
                "findings": [
                    {
                        "kind": f.kind,
                        "p_value": f.p_value,
                        "statistic": f.statistic,
                        "runs": _finding_runs(rows, c.workload, f.runs),
                        "message": f.message,
                    }
                    for f in c.findings
                ],
            }
            for c in cmp.cells.values()
        ],
        "runs": run_records(cmp, rows),
        "warnings": cmp.warnings(),
        "notes": cmp.notes,
    }


def _finding_runs(rows: Rows, workload: str, indices: Sequence[int]) -> list[str]:
    """Run ids of a finding's series positions (the workload's runs in time order)."""
    series = rows.run_id[rows.workload == workload]
    return [str(series[i]) for i in indices if i < series.size]


def run_records(cmp: Comparison, rows: Rows) -> list[dict[str, Any]]:
    """Every (run, workload) that took part, with its own tail fractions."""
    out = []
    for i in range(len(rows)):
        total = int(rows.ops_total[i])
        rec: dict[str, Any] = {
            "run_id": rows.run_id[i],
            "started_ns": int(rows.started_ns[i]),
            "workload": rows.workload[i],
            cmp.settings.by: rows.group[i],
        }
        for m in METRICS:
            rec[m] = _nan_none(float(rows.metrics[m][i]))
        rec["ops_in_histogram"] = total
        for j, t in enumerate(cmp.thresholds_ns):
            above = int(rows.ops_above[i, j])
            rec[f"above_{threshold_name(t)}"] = above / total if total else None
        out.append(rec)
    return out


def _json_default(value: Any) -> Any:
    if hasattr(value, "item"):
        return value.item()
    return str(value)
