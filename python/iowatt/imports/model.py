"""What every importer produces: a file's workloads as iowatt's summaries and histograms."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from iowatt.errors import ConfigError


@dataclass
class Histogram:
    """Exact latency buckets of one workload (``flowop`` None) or one of its flowops."""

    workload: str
    flowop: str | None
    value_ns: list[int]
    count: list[int]


@dataclass
class Parsed:
    """One input file turned into a run's content; nothing has been written yet."""

    source: str
    path: Path
    tool_version: str | None
    started_ns: int
    ended_ns: int
    workloads: list[dict[str, Any]]
    summaries: dict[str, dict[str, Any]]
    # More summary.json sections, e.g. the whole fio document under "fio".
    extra: dict[str, Any] = field(default_factory=dict)
    histograms: list[Histogram] = field(default_factory=list)
    host: dict[str, Any] = field(default_factory=dict)


def latency(
    *,
    min: int | None = None,
    mean: float | None = None,
    stdev: float | None = None,
    percentiles: Mapping[float, int | None] | None = None,
    max: int | None = None,
) -> dict[str, Any]:
    """A summary's ``latency_ns`` with iowatt's keys; a value the source did not give is None."""
    pct = percentiles or {}
    out: dict[str, Any] = {"min": min, "mean": mean, "stdev": stdev}
    for p in (50.0, 90.0, 95.0, 99.0, 99.9, 99.99):
        out[f"p{p:g}"] = pct.get(p)
    out["max"] = max
    return out


def workload(
    *,
    status: str,
    reason: str | None,
    ops: int | None,
    nbytes: int | None,
    errors: int | None,
    errors_by_kind: dict[str, int] | None,
    runtime_s: float | None,
    ops_s: float | None,
    mib_s: float | None,
    latency_ns: dict[str, Any],
    latency_saturated: bool | None,
    cpu: dict[str, float | None],
    flowops: dict[str, dict[str, Any]],
) -> dict[str, Any]:
    """A workload's summary with exactly the keys :func:`iowatt.bench.summary.workload_summary` has,
    so readers of summary.json need no special case for imported runs."""
    return {
        "status": status,
        "reason": reason,
        "ops": ops,
        "bytes": nbytes,
        "errors": errors,
        "errors_by_kind": errors_by_kind,
        "runtime_s": runtime_s,
        "ops_s": ops_s,
        "mib_s": mib_s,
        "latency_ns": latency_ns,
        "latency_saturated": latency_saturated,
        "cpu": cpu,
        "flowops": flowops,
    }


def read_text(path: Path) -> str:
    """The file's text; a ConfigError naming it when it is missing or unreadable."""
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        raise ConfigError(
            f"no file `{path}`", "check the path; give fio JSON or FileBench output files"
        ) from None
    except IsADirectoryError:
        raise ConfigError(f"`{path}` is a directory", "give the result files inside it") from None
    except OSError as e:
        raise ConfigError(f"cannot read `{path}`: {e.strerror}", "check its permissions") from None
