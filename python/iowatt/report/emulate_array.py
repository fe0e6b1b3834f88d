"""The report of an emulated array (an ``emulate`` run of ``--array``), answer first: the
personality over its disks, what it served (data requests and lookups), latency and completion
time, energy, spin cycles and gear shifts; each disk's energy by power state; then the array's
and each disk's power per bin with the disks spinning and PARAID's gear below, and the CDFs of
its data requests. The run's tables are ``iowatt sim raid``'s, so the CDFs are drawn by the
simulation's report code (:mod:`iowatt.report.sim_raid`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, MaxNLocator

from iowatt.report import sim_raid
from iowatt.report.emulate import STATES, DiskRow, EmulateView, emulate_view
from iowatt.report.plots import _legend, _to_svg
from iowatt.store.runs import read_manifest, read_summary, read_table
from iowatt.units import format_bytes, format_duration, format_joules, format_ns, format_watts

# Past this many disks, the disks' power is drawn as their band (min–max) and median.
_LINES_UP_TO = 8


def emulated_view(run_dir: Path) -> EmulateView:
    """An ``emulate`` run's view: an array's when its summary has one, else one disk's."""
    if "array" in read_summary(run_dir):
        return array_view(run_dir)
    return emulate_view(run_dir)


def _seconds(s: float | None) -> str:
    return "–" if s is None else format_ns(s * 1e9)


def _answer(a: Mapping[str, Any], label: str, gears: Sequence[int]) -> list[tuple[str, str]]:
    seconds, ops = float(a["seconds"]), a["read_ops"] + a["write_ops"]
    lat, comp = a.get("latency_s") or {}, a.get("completion_s") or {}
    requests = f"{ops:,} data requests ({a['read_ops']:,} reads, {a['write_ops']:,} writes;"
    requests += f" {a['drained']:,} answered unserved at unmount) and {a['lookups']:,} lookups"
    rated, most = a.get("rated_cycles_per_day"), max(a.get("most_cycles_a_day") or [0])
    rows = [
        ("array", label),
        ("requests", requests),
        ("time", format_duration(seconds)),
        ("ops/s", f"{ops / seconds:,.1f}" if seconds > 0 else "–"),
        (
            "MiB/s",
            f"{a['bytes'] / 2**20 / seconds:,.2f} ({format_bytes(a['bytes'])})"
            if seconds > 0
            else "–",
        ),
    ]
    rows += [(f"latency {k}", _seconds(lat.get(k))) for k in ("p50", "p99", "max")]
    rows += [(f"completion {k}", _seconds(comp.get(k))) for k in ("p50", "p99", "max")]
    energy = float(a["energy_j"])
    rows += [
        ("energy", format_joules(energy)),
        ("mean power", format_watts(energy / seconds) if seconds > 0 else "–"),
        ("spin cycles per disk", sim_raid._cycles(a["spin_cycles"])),
        (
            "most spin-downs in a day",
            f"{most:,}" + (f" (rated {rated:,.1f} a day)" if rated else ""),
        ),
    ]
    if gears:
        rows.append(
            ("gear shifts", f"{a['gear_shifts']:,} (gears of {', '.join(map(str, gears))} disks)")
        )
    rows.append(
        (
            "file system model",
            f"metadata blocks: {a['fs_reads']:,} read, {a['fs_writes']:,} written;"
            f" {format_bytes(a['synced_bytes'])} written back",
        )
    )
    return rows


def _standby_s(power: pa.Table | None, disks: int) -> list[float | None]:
    """Each disk's time in standby, from its bins in raid_power.parquet."""
    if power is None:
        return [None] * disks
    out: list[float | None] = []
    for d in range(disks):
        rows = power.filter(pc.equal(power["disk"], d))
        out.append(float(pc.sum(rows["standby_s"]).as_py() or 0.0) if rows.num_rows else None)
    return out


def _disk_rows(a: Mapping[str, Any], power: pa.Table | None) -> tuple[list[str], list[DiskRow]]:
    """The states any disk spent energy in (in :data:`STATES` order), and a row per disk and
    one for the array (the disks' sum)."""
    state_j: list[Mapping[str, float]] = a.get("state_j") or []
    energy = [float(e) for e in a.get("energy_by_disk_j") or []]
    seen = {s for d in state_j for s, j in d.items() if j > 0}  # a state no disk entered: out
    states = [s for s in STATES if s in seen] + sorted(seen - set(STATES))
    standby = _standby_s(power, len(energy))
    cycles, most = a.get("spin_cycles") or [], a.get("most_cycles_a_day") or []
    total = sum(energy)

    def row(name: str, e: float, by_state: list[float], standby_s: float | None,
            c: float, m: float) -> DiskRow:  # fmt: skip
        return DiskRow(
            disk=name,
            energy=format_joules(e),
            share=f"{e / total:.1%}" if total > 0 else "–",
            states=[format_joules(j) for j in by_state],
            standby="–" if standby_s is None else format_duration(standby_s),
            cycles=sim_raid._count(c),
            most_a_day=f"{m:,}",
        )

    rows = [
        row(
            f"disk {i}",
            e,
            [float((state_j[i] if i < len(state_j) else {}).get(s, 0.0)) for s in states],
            standby[i],
            cycles[i] if i < len(cycles) else 0,
            most[i] if i < len(most) else 0,
        )
        for i, e in enumerate(energy)
    ]
    known = [s for s in standby if s is not None]
    rows.append(
        row(
            "array",
            total,
            [sum(float(d.get(s, 0.0)) for d in state_j) for s in states],
            sum(known) if known else None,
            sum(cycles),
            sum(most),
        )
    )
    return [s.replace("_", " ") for s in states], rows


def _gear(run_dir: Path) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]] | None:
    """PARAID's gear shifts: when (s since the mount) and the disks of the gear entered."""
    events = read_table(run_dir, "events.parquet")
    if events is None or events.num_rows == 0:
        return None
    rows = events.filter(
        pc.and_(pc.equal(events["source"], "array"), pc.equal(events["kind"], "gear"))
    ).sort_by("t_s")
    if rows.num_rows == 0:
        return None
    disks = [float(str(m).split()[0]) for m in rows["message"].to_pylist()]
    return rows["t_s"].to_numpy(), np.asarray(disks)


def power_figure(run_dir: Path, end_s: float, name: str) -> str | None:
    """The array's mean W per bin, each disk's (one line each, or their band past
    :data:`_LINES_UP_TO` disks), and the disks spinning on average with PARAID's gear."""
    table = read_table(run_dir, "raid_power.parquet")
    if table is None or table.num_rows == 0:
        return None
    array = table.filter(pc.is_null(table["disk"])).sort_by("t_s")
    disks = table.filter(pc.is_valid(table["disk"]))
    if array.num_rows == 0:
        return None
    edges = sim_raid.bin_edges(array)
    gear = _gear(run_dir)
    unit, unit_name = sim_raid.time_unit(max(float(edges[-1]), end_s))
    fig = Figure(figsize=(9.0, 6.2), layout="constrained")
    top, middle, bottom = fig.subplots(3, 1, sharex=True, height_ratios=[1.0, 1.2, 0.9])

    handles: list[Any] = []

    def steps(ax: Any, values: npt.NDArray[np.float64], **kw: Any) -> None:
        handles.extend(
            ax.plot(edges / unit, np.append(values, values[-1]), drawstyle="steps-post", **kw)
        )

    steps(top, array["mean_w"].to_numpy(), color="#222", lw=1.2)
    top.set_ylabel("array", rotation=0, ha="right", va="center")
    numbers = sorted(int(d) for d in pc.unique(disks["disk"]).to_pylist())
    per_disk = []
    for d in numbers:
        rows = disks.filter(pc.equal(disks["disk"], d)).sort_by("t_s")
        if rows.num_rows == array.num_rows:  # each disk has the array's bins
            per_disk.append(rows["mean_w"].to_numpy())
    labels = ["array"]
    if per_disk and len(per_disk) <= _LINES_UP_TO:
        for d, watts in zip(numbers, per_disk, strict=False):
            steps(middle, watts, color=f"C{d % 10}", lw=1.0, label=f"disk {d}")
            labels.append(f"disk {d}")
    elif per_disk:
        stack = np.vstack(per_disk)
        middle.fill_between(edges / unit, np.append(stack.min(0), stack.min(0)[-1]),
                            np.append(stack.max(0), stack.max(0)[-1]), step="post",
                            color="C0", alpha=0.25, lw=0)  # fmt: skip
        steps(middle, np.median(stack, 0), color="C0", lw=1.0)  # its band goes unlabelled
        labels.append(f"{len(per_disk)} disks: median, min–max")
    middle.set_ylabel("each\ndisk", rotation=0, ha="right", va="center")
    for ax in (top, middle):
        ax.set_ylim(bottom=0)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: format_watts(v)))
        ax.yaxis.set_major_locator(MaxNLocator(4))
    steps(bottom, array["spinning"].to_numpy(), color="0.5", lw=1.2)
    labels.append("disks spinning (mean per bin)")
    if gear is not None:
        t, g = gear
        t = np.append(t, max(float(edges[-1]), end_s, float(t[-1])))
        handles += bottom.plot(t / unit, np.append(g, g[-1]), drawstyle="steps-post",
                               color="#222", lw=1.2, ls="--")  # fmt: skip
        labels.append("PARAID's gear (disks)")
    bottom.set_ylim(-0.1, max(float(len(numbers) or 1), 1.0) + 0.4)
    bottom.yaxis.set_major_locator(MaxNLocator(integer=True))
    bottom.set_ylabel("disks", rotation=0, ha="right", va="center")
    bottom.set_xlabel(f"time since the mount ({unit_name})")
    for ax in (top, middle, bottom):
        ax.grid(alpha=0.3)
    for h, label in zip(handles, labels, strict=True):
        h.set_label(label)
    _legend(fig, labels, handles)
    return _to_svg(fig, name)


def _label(config: Mapping[str, Any], summary: Mapping[str, Any], disks: int) -> str:
    personality = (config.get("array") or {}).get("personality") or summary["array"].get(
        "personality", "?"
    )
    model = (summary.get("model") or {}).get("label")
    name = config.get("disk_model", "?")
    what = f"{model} (--disk-model {name})" if model else name
    return f"{sim_raid._name(personality)} over {disks} × {what}"


def _facts(manifest: Mapping[str, Any], config: Mapping[str, Any]) -> list[tuple[str, str]]:
    setup = config.get("array") or {}
    array, spec = setup.get("array") or {}, setup.get("spec") or {}
    facts = [
        ("backing", str(config.get("backing", "?"))),
        ("mount", str(config.get("mount", "?"))),
        ("files when mounted", format_bytes(setup.get("used", 0))),
        ("stripe", format_bytes(array.get("stripe_bytes", 0))),
        ("power bins", format_duration(float(array.get("bin_s", 15)))),
        ("page cache", "on" if config.get("page_cache") else "off (direct I/O)"),
        ("seed", str(manifest.get("seed"))),
    ]
    if spec.get("personality") == "paraid":
        facts.append((sim_raid._name("paraid"), sim_raid._paraid(spec)))
    elif spec.get("personality") == "lru":
        t = spec.get("timeout_s")
        facts.append(
            (
                sim_raid._name("lru"),
                f"a disk spins down after {sim_raid._dur(t)} idle"
                if t
                else "a disk spins down once idle for its break-even time",
            )
        )
    return facts


def array_view(run_dir: Path) -> EmulateView:
    manifest, summary = read_manifest(run_dir), read_summary(run_dir)
    config, a = manifest.get("config") or {}, summary["array"]
    setup = config.get("array") or {}
    personality = a.get("personality") or setup.get("personality", "?")
    disks = int(a.get("disks") or len(a.get("energy_by_disk_j") or []))
    gears = [int(g) for g in (setup.get("spec") or {}).get("gears") or []]
    power = read_table(run_dir, "raid_power.parquet")
    states, rows = _disk_rows(a, power)
    prefix = f"{manifest['run_id'][-6:]}-array"
    figures, notes = [], []
    bin_s = format_duration(float((setup.get("array") or {}).get("bin_s", 15)))
    if (svg := power_figure(run_dir, float(a["seconds"]), f"{prefix}-power")) is not None:
        figures.append(
            (
                "power",
                f"Mean power per {bin_s} bin of the array (top) and of each disk (middle);"
                " below, the disks spinning on average in each bin"
                + (" and PARAID's gear, from its shifts." if personality == "paraid" else "."),
                svg,
            )
        )
    counts = sim_raid.request_counts(run_dir, [personality], [int(manifest.get("seed") or 1)], True)
    for m, what, caption in (
        (
            "latency_ns",
            "latency",
            "Latency of the data requests: from arrival at the mount until the first stripe"
            " unit is served (queueing included), as iowatt sim raid counts it.",
        ),
        (
            "completion_ns",
            "completion time",
            "Completion time: from arrival until the last stripe unit is served (a striped"
            " request waits for its slowest disk).",
        ),
    ):
        if counts is None:
            break
        edges, c = counts[m]
        if (svg := sim_raid.cdf_figure(edges, c, [personality], what, None, prefix)) is not None:
            figures.append((m.removesuffix("_ns"), caption, svg))
    if counts is None:
        notes.append(f"The run has no {sim_raid.REQUESTS}: its CDFs are left out.")
    elif len(figures) < 3 and a["requests"] == 0:
        notes.append("No data request was served: there is no CDF to draw.")
    if a.get("lazy_unmount"):
        notes.append("The mount was still busy when it was stopped: it was unmounted lazily.")
    return EmulateView(
        run_id=manifest["run_id"],
        status=manifest["status"],
        reason=manifest.get("reason"),
        incomplete=None,
        answer=_answer(a, _label(config, summary, disks), gears if personality == "paraid" else []),
        states=[],
        figures=figures,
        notes=notes,
        facts=_facts(manifest, config),
        title="Emulated array",
        disk_states=states,
        disks=rows,
    )
