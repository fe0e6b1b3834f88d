"""The report of RAID simulations (kind ``sim-raid``), answer first: the table per personality,
then the study's three figures — array power and disks spinning over the trace, the latency CDF
and the completion-time CDF, each with its min–max envelope over the seeds — then what was
simulated.

Request tables can hold millions of rows per personality and seed, so the CDFs are counted on a
common log grid in batches (numpy ``bincount``), never turned into Python lists."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from matplotlib.colors import to_hex
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, MaxNLocator

from iowatt.report.plots import _latency_axis, _legend, _to_svg
from iowatt.store.runs import DamagedRun, read_manifest, read_summary, read_table
from iowatt.units import format_bytes, format_duration, format_joules, format_ns, format_watts

NAMES = {"raid0": "RAID-0", "lru": "LRU spin-down", "paraid": "PARAID"}
REQUESTS = "raid_requests.parquet"
METRICS = ("latency_ns", "completion_ns")
_GRID = 400  # bins of the common log grid the CDFs are counted on
_BATCH = 1 << 20  # rows read at a time

Counts = npt.NDArray[np.int64]  # personality × seed × grid bin


@dataclass(frozen=True)
class RaidRow:
    personality: str
    color: str
    energy: str
    saving: str
    mean_w: str
    latency: list[str]  # p50, p99, max
    completion_p99: str
    success: str
    timeouts: str
    spin_cycles: str


@dataclass(frozen=True)
class RaidView:
    run_id: str
    status: str
    reason: str | None
    seeds: int
    rows: list[RaidRow]
    figures: list[tuple[str, str, str]]  # (name, caption, svg)
    notes: list[str]  # what the page leaves out and why
    facts: list[tuple[str, str]]


def _name(p: str) -> str:
    return NAMES.get(p, p)


def _count(v: float) -> str:
    """A mean over seeds: whole when it is, one decimal when not."""
    return f"{v:,.1f}".removesuffix(".0")


def _cycles(per_disk: Sequence[float]) -> str:
    if len(per_disk) <= 8:
        return " ".join(_count(c) for c in per_disk)
    low, high = _count(min(per_disk)), _count(max(per_disk))
    return f"{_count(float(np.mean(per_disk)))} mean, {low}–{high}"


def _row(r: Mapping[str, Any], color: str) -> RaidRow:
    lat, comp, saving = r["latency_s"], r["completion_s"], r["energy_saving_vs_raid0"]
    s = "–" if saving is None else f"{saving:+.1%}".replace("-0.0%", "+0.0%")
    return RaidRow(
        personality=_name(r["personality"]),
        color=to_hex(color),
        energy=format_joules(r["energy_j"]),
        saving="baseline" if r["personality"] == "raid0" else s,
        mean_w=format_watts(r["mean_w"]),
        latency=["–" if lat[k] is None else format_ns(lat[k] * 1e9) for k in ("p50", "p99", "max")],
        completion_p99="–" if comp["p99"] is None else format_ns(comp["p99"] * 1e9),
        success=f"{r['success_rate']:.2%}",
        timeouts=_count(r["timeouts"]),
        spin_cycles=_cycles(r["spin_cycles"]),
    )


def power_figure(
    run_dir: Path, order: Sequence[str], seed: int, name: str = "raid-power"
) -> str | None:
    """The array's mean W per bin, one panel per personality on its own scale (the day's swing
    is a fraction of a watt beside the tens a spun-down disk saves), and the disks spinning,
    one line per personality (``seed``)."""
    table = read_table(run_dir, "raid_power.parquet")
    if table is None or table.num_rows == 0:
        return None
    table = table.filter(pc.and_(pc.is_null(table["disk"]), pc.equal(table["seed"], seed)))
    parts = [(i, p, table.filter(pc.equal(table["personality"], p)).sort_by("t_s"))
             for i, p in enumerate(order)]  # fmt: skip
    parts = [(i, p, part) for i, p, part in parts if part.num_rows]
    if not parts:
        return None
    unit, unit_name = time_unit(pc.max(table["t_s"]).as_py() or 0.0)
    fig = Figure(figsize=(9.0, 2.0 + 1.4 * len(parts)), layout="constrained")
    axes = fig.subplots(len(parts) + 1, 1, sharex=True, height_ratios=[1.0] * len(parts) + [0.9])
    for ax, (i, p, part) in zip(axes, parts, strict=False):
        t = bin_edges(part) / unit
        kw: dict[str, Any] = {"color": f"C{i % 10}", "lw": 1.0, "drawstyle": "steps-post"}
        watts, spinning = part["mean_w"].to_numpy(), part["spinning"].to_numpy()
        ax.plot(t, np.append(watts, watts[-1]), **kw)
        ax.set_ylim(*_watt_range(watts))
        ax.set_ylabel(_name(p), rotation=0, ha="right", va="center")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: format_watts(v)))
        ax.yaxis.set_major_locator(MaxNLocator(3))
        axes[-1].plot(t, np.append(spinning, spinning[-1]), label=_name(p), **kw)
    bottom = axes[-1]
    bottom.set_ylim(bottom=-0.1)
    bottom.yaxis.set_major_locator(MaxNLocator(integer=True))
    bottom.set_ylabel("disks\nspinning", rotation=0, ha="right", va="center")
    bottom.set_xlabel(f"simulated time ({unit_name})")
    for ax in axes:
        ax.grid(alpha=0.3)
    _legend(fig, [_name(p) for _, p, _ in parts])
    return _to_svg(fig, name)


def time_unit(span_s: float) -> tuple[float, str]:
    """The unit a time axis spanning ``span_s`` seconds is labelled in, and its name."""
    return (3600, "h") if span_s > 7200 else (60, "min") if span_s > 600 else (1, "s")


def bin_edges(part: pa.Table) -> npt.NDArray[np.float64]:
    """The edges (s) of bins of ``raid_power.parquet`` in time order: where each starts, and
    where the last ends, at its own width (steps drawn ``steps-post`` repeat the last value)."""
    starts = part["t_s"].to_numpy()
    return np.append(starts, starts[-1] + _last_width(part, starts))


def _watt_range(watts: npt.NDArray[np.float64]) -> tuple[float, float]:
    """A panel's power axis: the bins between the 5th and 95th percentile with a margin, so a
    few minutes apart (a gear's first shift, a spin-up) run off the panel rather than flatten
    the day; the panel below shows them."""
    lo, hi = np.percentile(watts, [5, 95])
    pad = max((hi - lo) * 0.25, 0.05)
    return float(lo - pad), float(hi + pad)


def _last_width(part: pa.Table, starts: npt.NDArray[np.float64]) -> float:
    """The last bin's width: stored (a run ending within it), else the bins' spacing."""
    if "width_s" in part.column_names and part["width_s"][-1].is_valid:
        return float(part["width_s"][-1].as_py())
    return float(starts[1] - starts[0]) if starts.size > 1 else 0.0


def _batches(pf: pq.ParquetFile, columns: list[str], data_only: bool) -> Iterator[pa.RecordBatch]:
    """The file's ``columns`` in batches; with ``data_only``, only the rows of data requests
    served (an emulated array's lookups have 0 bytes, its requests answered unserved at unmount
    are not ok)."""
    if not data_only:
        yield from pf.iter_batches(batch_size=_BATCH, columns=columns)
        return
    for batch in pf.iter_batches(batch_size=_BATCH, columns=[*columns, "bytes", "ok"]):
        keep = pc.and_(pc.greater(batch.column("bytes"), 0), batch.column("ok"))
        yield batch.filter(keep).select(columns)


def _ranges(pf: pq.ParquetFile, data_only: bool) -> dict[str, tuple[float, float]]:
    """Each metric's smallest value above 0 and largest value in ns, a decade apart at least
    (cache hits, at 0, count in the first bin)."""
    lo, hi = dict.fromkeys(METRICS, np.inf), dict.fromkeys(METRICS, 0.0)
    for batch in _batches(pf, list(METRICS), data_only):
        for m in METRICS:
            col = batch.column(m)
            mm = pc.min_max(col.filter(pc.greater(col, 0))).as_py()
            if mm["min"] is not None:
                lo[m], hi[m] = min(lo[m], mm["min"]), max(hi[m], mm["max"])
    out = {}
    for m in METRICS:
        low = max(float(lo[m]), 1.0) if np.isfinite(lo[m]) else 1.0
        out[m] = (low, max(float(hi[m]), low * 10))
    return out


def _positions(column: Any, order: Sequence[str]) -> npt.NDArray[np.int64]:
    """Each row's personality as its place in ``order`` (-1: none), read off the dictionary."""
    if not isinstance(column, pa.DictionaryArray):
        column = pc.dictionary_encode(column)
    names = column.dictionary.to_pylist()
    lookup = np.array([order.index(n) if n in order else -1 for n in names] + [-1], np.int64)
    return lookup[pc.fill_null(column.indices, len(names)).to_numpy(zero_copy_only=False)]


def request_counts(
    run_dir: Path, order: Sequence[str], seeds: Sequence[int], data_only: bool = False
) -> dict[str, tuple[npt.NDArray[np.float64], Counts]] | None:
    """Per metric: the grid's bin edges (ns) and the requests in each bin, by personality
    and seed; the bins are equal in log time between the metric's lowest and highest value.
    ``data_only``: an emulated array's data requests served, as its summary counts them."""
    path = run_dir / REQUESTS
    if not path.exists():
        return None
    seed_list = np.asarray(sorted(seeds), dtype=np.int64)
    shape = (len(order), len(seed_list), _GRID)
    try:
        # Pre-buffering whole row groups costs memory and time here; one pass reads each once.
        pf = pq.ParquetFile(path, pre_buffer=False, read_dictionary=["personality"])
        ranges = _ranges(pf, data_only)
        logs = {m: (float(np.log10(lo)), float(np.log10(hi))) for m, (lo, hi) in ranges.items()}
        counts = {m: np.zeros(int(np.prod(shape)), dtype=np.int64) for m in METRICS}
        for batch in _batches(pf, ["personality", "seed", *METRICS], data_only):
            who = _positions(batch.column("personality"), order)
            seed = batch.column("seed").to_numpy(zero_copy_only=False)
            which = np.searchsorted(seed_list, seed).clip(0, len(seed_list) - 1)
            keep = (who >= 0) & (seed_list[which] == seed)
            group = (who * len(seed_list) + which)[keep] * _GRID
            for m in METRICS:
                (a, b), x = logs[m], batch.column(m).to_numpy(zero_copy_only=False)[keep]
                step = (b - a) / _GRID
                bins = ((np.log10(np.maximum(x, 1)) - a) / step).astype(np.int64)
                counts[m] += np.bincount(group + bins.clip(0, _GRID - 1), minlength=counts[m].size)
    except (OSError, pa.ArrowException) as e:
        raise DamagedRun(run_dir, REQUESTS, f"not a readable Parquet file: {e}") from None
    return {
        m: (np.logspace(logs[m][0], logs[m][1], _GRID + 1), counts[m].reshape(shape))
        for m in METRICS
    }


def cdf_figure(
    edges: npt.NDArray[np.float64],
    counts: Counts,
    order: Sequence[str],
    what: str,
    timeout_ns: float | None = None,
    name: str = "raid",
) -> str | None:
    """Each personality's CDF (its seeds pooled) and, with several seeds, the band between the
    lowest and highest seed's CDF at each point of the grid: at each bin's upper edge the share
    of requests in it or below, 0 at the grid's lowest edge."""
    fig = Figure(figsize=(9.0, 3.6), layout="constrained")
    ax = fig.subplots()
    handles: list[Any] = []
    banded = 0
    for i, p in enumerate(order):
        per_seed = counts[i][counts[i].sum(axis=1) > 0]
        if per_seed.size == 0:
            continue
        color = f"C{i % 10}"
        if len(per_seed) > 1:
            shares = np.cumsum(per_seed, axis=1) / per_seed.sum(axis=1, keepdims=True)
            shares = np.concatenate([np.zeros((len(shares), 1)), shares], axis=1)
            ax.fill_between(edges, shares.min(0), shares.max(0), color=color, alpha=0.2, lw=0)
            banded = max(banded, len(per_seed))
        pooled = np.cumsum(per_seed.sum(axis=0)) / per_seed.sum()
        ax.plot(edges, np.concatenate([[0.0], pooled]), color=color, lw=1.4)
        handles.append(Line2D([], [], color=color, lw=1.4, label=_name(p)))
    if not handles:
        return None
    if banded:
        handles.append(Patch(color="0.5", alpha=0.3, label=f"min–max over {banded} seeds"))
    if timeout_ns is not None and edges[0] < timeout_ns <= edges[-1] * 10:
        ax.axvline(timeout_ns, color="0.35", ls="--", lw=0.9)
        ax.annotate(
            "client timeout",
            (timeout_ns, 0.5),
            rotation=90,
            fontsize="small",
            ha="right",
            va="center",
            color="0.35",
        )
    _latency_axis(ax, float(np.log10(max(edges[-1], timeout_ns or 0) / edges[0])))
    ax.set_ylim(0, 1.02)
    ax.set_xlabel(what)
    ax.set_ylabel("fraction of requests")
    ax.grid(alpha=0.3, which="major")
    fig.legend(
        handles=handles,
        loc="outside lower center",
        ncols=len(handles),
        fontsize="small",
        frameon=False,
    )
    return _to_svg(fig, f"{name}-{what.split()[0]}")


def _facts(config: Mapping[str, Any], summary: Mapping[str, Any]) -> list[tuple[str, str]]:
    trace, array = config.get("trace") or {}, config.get("array") or {}
    layout = trace.get("layout", "?") + (f", {trace['format']}" if trace.get("format") else "")
    served = f"{summary.get('requests', trace.get('requests', 0)):,} served"
    for key, what in (
        ("writes", "writes"),
        ("files", "files laid out"),
        ("left_out", "log lines left out (not a served GET with a body)"),
    ):
        if trace.get(key):
            served += f"; {trace[key]:,} {what}"
    model = array.get("model") or {}
    cache = array.get("cache_bytes") or 0
    facts = [
        ("trace", f"{trace.get('path', '?')} ({layout})"),
        ("requests", served),
        (
            "array",
            f"{array.get('disks', '?')} × {model.get('label', '?')}, --disk-model "
            f"{array.get('model_name', '?')}",
        ),
        ("stripe", format_bytes(array.get("stripe_bytes", 0))),
        ("page cache", format_bytes(cache) if cache else "none"),
        ("speed-up", f"{config.get('speedup', 1):g}× (arrival times divided by it)"),
        ("client timeout", format_duration(float(config.get("timeout_s", 0)))),
        ("seeds", ", ".join(str(s) for s in config.get("seeds") or [])),
        ("power bins", format_duration(float(array.get("bin_s", 15)))),
    ]
    specs = config.get("personalities") or {}
    if lru := specs.get("lru"):
        t, be = lru.get("timeout_s"), _break_even(model)
        if t:
            spins = f"a disk spins down after {_dur(t)} idle"
        elif np.isinf(be):
            spins = "no spin-down: the disk's standby saves nothing (no break-even time)"
        elif np.isnan(be):
            spins = "a disk spins down once idle for its break-even time"
        else:
            spins = f"a disk spins down after {_dur(be)} idle (its break-even time)"
        facts.append((_name("lru"), spins))
    if par := specs.get("paraid"):
        facts.append((_name("paraid"), _paraid(par)))
    return facts


def _dur(seconds: float) -> str:
    return format_duration(seconds).removesuffix(" 0 s").removesuffix(" 0 min")


def _break_even(model: Mapping[str, Any]) -> float:
    """The idle time a spin-down pays back at (docs/sim-raid.md, "Break-even idle time")."""

    def watts(p: Mapping[str, float]) -> float:
        return p["w"] if "w" in p else 12 * p.get("a12", 0) + 5 * p.get("a5", 0)

    try:
        idle, standby = watts(model["idle"]), watts(model["standby"])
        trip = model["spin_down_s"] + model["spin_up_s"]
        energy = model["spin_down_j"] + model["spin_up_j"] - standby * trip
    except (KeyError, TypeError):
        return float("nan")
    return float(max(trip, energy / (idle - standby))) if idle > standby else float("inf")


def _paraid(p: Mapping[str, Any]) -> str:
    gears = ", ".join(str(g) for g in p.get("gears", []))
    short, long = _dur(p.get("short_s", 0)), _dur(p.get("long_s", 0))
    return (
        f"gears of {gears} disks; up-shift above {p.get('up', 0):.0%} busy ({short} average),"
        f" down below {p.get('down', 0):.0%} ({long} average), no down-shift within "
        f"{_dur(p.get('min_dwell_s', 0))} of a shift"
    )


def raid_view(run_dir: Path) -> RaidView:
    manifest, summary = read_manifest(run_dir), read_summary(run_dir)
    config = manifest.get("config") or {}
    rows = summary.get("raid") or []
    order = [r["personality"] for r in rows] or list(config.get("personalities") or {})
    seeds = [int(s) for s in config.get("seeds") or [manifest.get("seed", 0)]]
    figures = []
    bin_s = format_duration(float((config.get("array") or {}).get("bin_s", 15)))
    prefix = f"{manifest['run_id'][-6:]}-raid"  # ids unique on a page of several runs
    if (svg := power_figure(run_dir, order, seeds[0], f"{prefix}-power")) is not None:
        figures.append(
            (
                "power",
                f"The array's mean power per {bin_s} bin, each personality on its own scale"
                f" (the day's load moves it by the disks' busy time), and its disks spinning on"
                f" average (below), seed {seeds[0]}: LRU's spin-downs and PARAID's gear show"
                " there.",
                svg,
            )
        )
    counts = request_counts(run_dir, order, seeds)
    notes = [] if counts else [f"The run has no {REQUESTS}: its CDFs are left out."]
    extra = (
        " Lines pool the seeds; the shade spans their lowest and highest CDF."
        if len(seeds) > 1
        else ""
    )
    if (config.get("array") or {}).get("cache_bytes"):
        extra += " Cache hits, served at once (0 s), rise at the left edge."
    for m, what, caption, timeout in (
        (
            "latency_ns",
            "latency",
            "Latency: from a request's arrival until its first stripe unit is served.",
            None,
        ),
        (
            "completion_ns",
            "completion time",
            "Completion time: from arrival until its last stripe"
            " unit is served (a striped request waits for its slowest disk); above the client"
            " timeout it counts as failed.",
            float(config.get("timeout_s", 0)) * 1e9 or None,
        ),
    ):
        if counts is None:
            break
        edges, c = counts[m]
        if (svg := cdf_figure(edges, c, order, what, timeout, prefix)) is not None:
            figures.append((m.removesuffix("_ns"), caption + extra, svg))
    return RaidView(
        run_id=manifest["run_id"],
        status=manifest["status"],
        reason=manifest.get("reason"),
        seeds=len(seeds),
        rows=[_row(r, f"C{i % 10}") for i, r in enumerate(rows)],
        figures=figures,
        notes=notes,
        facts=_facts(config, summary),
    )
