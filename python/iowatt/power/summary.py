"""The ``power`` section of a run's summary.json: energy per channel over the run's windows.

Windows: ``idle`` (the baseline measured before the work, with ``--idle``), ``work`` (the
command, or every workload of a bench), and each workload's own measured window. Channels are
reported separately and never summed across scopes that nest (RAPL psys ⊇ package ⊇ core);
the ``headline`` channel is the widest scope recorded, used by ``iowatt energy compare``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from iowatt.power.energy import dynamic_energy, max_gap_ns, window_energy
from iowatt.power.recording import Channel, PowerData
from iowatt.warnings import Kind, RunWarning

# Widest first: the whole node at the wall, then what a BMC or the platform reports, then parts.
HEADLINE_SCOPES = (
    "total",
    "wall",
    "node",
    "psys",
    "server",
    "package",
    "disks",
    "disk",
    "hwmon",
    "cmd",
    "dram",
    "core",
    "uncore",
    "disk-rail",
)


@dataclass
class Window:
    start_ns: int
    end_ns: int
    ops: int | None = None
    bytes: int | None = None


def span(windows: list[Window]) -> Window:
    """The window from the first to the last of ``windows`` (in order), with their work."""
    return Window(
        windows[0].start_ns,
        windows[-1].end_ns,
        sum(w.ops or 0 for w in windows),
        sum(w.bytes or 0 for w in windows),
    )


def summarize(
    data: PowerData,
    t0_ns: int,
    work: Window,
    idle: Window | None = None,
    workloads: Mapping[str, Window] | None = None,
) -> dict[str, Any]:
    channels = data.power_channels()
    nominal = {s.name: 1e9 / s.hz for s in data.specs if s.hz}
    idle_w: dict[str, float] = {}
    out: dict[str, Any] = {
        "t0_ns": t0_ns,
        "clock_anchor": list(data.anchor),
        "sources": data.stats,
        "channels": [
            {
                "key": c.key,
                "source": c.source,
                "channel": c.channel,
                "scope": c.scope,
                "counter": c.series.is_counter,
                "parent": c.parent,
            }
            for c in channels
        ],
    }
    out["headline"] = headline(out["channels"])
    gap = {c.key: max_gap_ns(c.series.mono_ns, nominal.get(c.source)) for c in channels}
    if idle is not None:
        idle_out = {}
        for c in channels:
            e = window_energy(c.series, idle.start_ns, idle.end_ns, gap[c.key], t0_ns)
            idle_out[c.key] = {"avg_w": e.avg_w, "energy_j": e.energy_j, "gap_s": e.gap_s}
            idle_w[c.key] = e.avg_w
        out["idle"] = {
            "start_s": (idle.start_ns - t0_ns) / 1e9,
            "duration_s": (idle.end_ns - idle.start_ns) / 1e9,
            "channels": idle_out,
        }
    out["work"] = {c.key: _entry(c, work, gap[c.key], t0_ns, idle_w) for c in channels}
    if workloads:
        out["workloads"] = {
            name: {c.key: _entry(c, w, gap[c.key], t0_ns, idle_w) for c in channels}
            for name, w in workloads.items()
        }
    return out


def _entry(
    c: Channel, w: Window, gap_ns: float, t0_ns: int, idle_w: Mapping[str, float]
) -> dict[str, Any]:
    e = window_energy(c.series, w.start_ns, w.end_ns, gap_ns, t0_ns)
    entry: dict[str, Any] = {"scope": c.scope, **e.as_dict(), "wh": e.energy_j / 3600}
    entry["dynamic_j"] = dynamic_energy(e.energy_j, idle_w.get(c.key), e.duration_s)
    if w.ops is not None:
        entry["j_per_op"] = e.energy_j / w.ops if w.ops else None
        entry["ops_per_j"] = w.ops / e.energy_j if e.energy_j > 0 else None
    if w.bytes is not None:
        entry["j_per_byte"] = e.energy_j / w.bytes if w.bytes else None
    return {k: _finite(v) for k, v in entry.items()}


def _finite(v: Any) -> Any:
    # JSON has no NaN: an unknown figure is null.
    if isinstance(v, float) and not np.isfinite(v):
        return None
    return v


def headline(channels: list[dict[str, Any]]) -> str | None:
    """The widest-scope channel of a summary's ``channels`` (the first of its scope)."""
    for scope in HEADLINE_SCOPES:
        for c in channels:
            if c["scope"] == scope and c["parent"] is None:
                return str(c["key"])
    return str(channels[0]["key"]) if channels else None


def warnings(power: Mapping[str, Any]) -> list[RunWarning]:
    """What a user must know about the power data: gaps, unusable lines and readings."""
    out = []
    for key, e in (power.get("work") or {}).items():
        if e["gap_s"] and e["gap_s"] > 0:
            message = (
                f"power channel `{key}` has {e['gap_s']:.3g} s of gaps in the work window; "
                "its energy covers the sampled time only"
            )
            out.append(RunWarning(Kind.POWER_GAP, message))
    for s in power.get("sources") or []:
        counted = {
            "malformed lines": s.get("malformed_lines", 0),
            "missing values": s.get("missing_values", 0),
            "out-of-order lines": s.get("out_of_order", 0),
            "invalid readings": s.get("invalid_readings", 0),
            "failed polls": s.get("errors", 0),
        }
        found = ", ".join(f"{n} {what}" for what, n in counted.items() if n)
        if found:
            example = ""
            if s.get("examples"):
                line, text = s["examples"][0]
                example = f" (first: line {line}: {text!r})" if line else f" (first: {text!r})"
            log = ("malformed lines", "missing values", "out-of-order lines")
            kind = Kind.METER_LINES if any(counted[k] for k in log) else Kind.SOURCE_FAILING
            out.append(RunWarning(kind, f"power source `{s['source']}`: {found}{example}"))
    return out
