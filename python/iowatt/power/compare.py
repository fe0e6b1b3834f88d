"""``iowatt energy compare BASELINE CANDIDATE``: what the candidate saves in time and energy.

Both runs are read from their summary.json. A command run (``iowatt power record``) did one
job: its time and energy compare as they are. A benchmark runs for a fixed time, so the
candidate is normalised to the baseline's work: the time it would need for the baseline's
operations at its own rate, and their energy at its own joules per operation.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from iowatt.errors import ConfigError
from iowatt.power.energy import Work, compare
from iowatt.store.runs import read_manifest, read_summary


def compare_runs(
    baseline: Path,
    candidate: Path,
    pue: float,
    channel: str | None = None,
    idle_w: float | None = None,
) -> dict[str, Any]:
    check_options(pue, idle_w)
    runs = [(read_manifest(d), read_summary(d)) for d in (baseline, candidate)]
    for d, (_, s) in zip((baseline, candidate), runs, strict=True):
        if not (s.get("power") or {}).get("work"):
            raise ConfigError(
                f"run `{d.name}` has no power data",
                "record it with `iowatt power record` or `iowatt bench --power SOURCE`",
            )
    key = channel or runs[0][1]["power"]["headline"]
    common = [k for k in runs[0][1]["power"]["work"] if k in runs[1][1]["power"]["work"]]
    if key not in common:
        raise ConfigError(
            f"channel `{key}` is not in both runs",
            f"channels in both: {', '.join(common) or 'none'}",
        )
    base = _work(*runs[0], key, idle_w)
    cand = _work(*runs[1], key, idle_w)
    base_ops, cand_ops = _ops(runs[0][1]), _ops(runs[1][1])
    normalised = base_ops is not None and cand_ops is not None and cand_ops > 0
    if normalised:
        assert base_ops is not None and cand_ops is not None
        scale = base_ops / cand_ops
        cand = Work(cand.seconds * scale, cand.energy_j * scale, cand.avg_w, cand.idle_w)
    return {
        "channel": key,
        "baseline": {"run_id": runs[0][0]["run_id"], **vars(base), "ops": base_ops},
        "candidate": {"run_id": runs[1][0]["run_id"], **vars(cand), "ops": cand_ops},
        "normalised_to_baseline_ops": normalised,
        **compare(base, cand, pue),
    }


# Idle power of one machine: no server draws a megawatt.
MAX_IDLE_W = 1e6


def check_options(pue: float, idle_w: float | None) -> None:
    """The comparison's numbers, refused with their option before any run is read."""
    if not 1.0 <= pue <= 5.0:  # NaN fails too
        raise ConfigError(f"--pue `{pue:g}` is out of range", "PUE is ≥ 1 (typically 1.2 to 2.5)")
    if idle_w is not None and not 0 <= idle_w <= MAX_IDLE_W:
        raise ConfigError(
            f"--idle-watts `{idle_w:g}` must be 0 or more watts (and finite)",
            "give the machine's measured idle power, e.g. --idle-watts 85, or record the "
            "runs with --idle",
        )


def _work(
    manifest: dict[str, Any], summary: dict[str, Any], key: str, idle_w: float | None
) -> Work:
    power = summary["power"]
    idle = (power.get("idle") or {}).get("channels", {}).get(key, {}).get("avg_w")
    idle = idle_w if idle_w is not None else idle
    if manifest["kind"] == "power":
        e = power["work"][key]
        return Work(summary["command"]["seconds"], e["energy_j"], e["avg_w"], idle)
    # A bench: the workloads' measured windows, not the file layout between them.
    parts = [w[key] for w in (power.get("workloads") or {}).values()] or [power["work"][key]]
    seconds = sum(p["duration_s"] for p in parts)
    energy = sum(p["energy_j"] for p in parts)
    return Work(seconds, energy, energy / seconds if seconds else float("nan"), idle)


def _ops(summary: dict[str, Any]) -> int | None:
    workloads = summary.get("workloads")
    if not workloads:
        return None
    return sum(w["ops"] for w in workloads.values())
