"""What every importer produces: a file's workloads as iowatt's summaries and histograms."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from stat import S_IFBLK, S_IFCHR, S_IFIFO, S_IFMT, S_IFSOCK, S_ISDIR, S_ISREG
from typing import Any, NoReturn

from iowatt.errors import ConfigError
from iowatt.imports.shape import INT32_MAX, INT64_MAX, Node, check_storable

# fio json+ and FileBench results are kilobytes to a few MiB. A file far larger is no such
# result, and reading it whole would take the machine's memory (docs/import.md).
MAX_INPUT_BYTES = 256 * 2**20


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


@dataclass(frozen=True)
class Source:
    """An input file as read: its text, and its mtime (when a file does not say when its run
    ended, the file was written as the run ended)."""

    path: Path
    text: str
    mtime_ns: int


def read_source(path: Path) -> Source:
    """Reads a regular file of at most MAX_INPUT_BYTES; a ConfigError naming it otherwise.

    The name is checked before it is opened, because opening some devices acts (a FIFO waits
    for a writer, a watchdog starts); what was opened is checked again, in case the name was
    swapped in between. The read stops one byte past the bound: st_size of /proc files and
    growing files does not tell."""
    try:
        _check_regular(path, os.stat(path))
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as f:
            stat = os.fstat(f.fileno())
            _check_regular(path, stat)
            data = f.read(MAX_INPUT_BYTES + 1)
    except FileNotFoundError:
        raise ConfigError(
            f"no file `{path}`", "check the path; give fio JSON or FileBench output files"
        ) from None
    except OSError as e:
        raise ConfigError(f"cannot read `{path}`: {e.strerror}", "check its permissions") from None
    if len(data) > MAX_INPUT_BYTES:
        _too_large(path)
    return Source(path, data.decode("utf-8", errors="replace"), stat.st_mtime_ns)


def _check_regular(path: Path, stat: os.stat_result) -> None:
    if S_ISREG(stat.st_mode):
        if stat.st_size > MAX_INPUT_BYTES:
            _too_large(path)
        return
    via = f" (a symlink to `{os.path.realpath(path)}`)" if path.is_symlink() else ""
    if S_ISDIR(stat.st_mode):
        raise ConfigError(f"`{path}`{via} is a directory", "give the result files inside it")
    raise ConfigError(
        f"`{path}`{via} is a {_KINDS.get(S_IFMT(stat.st_mode), 'special file')}, not a regular"
        " file",
        "iowatt imports result files fio or FileBench wrote; save the output to a file first",
    )


def _too_large(path: Path) -> NoReturn:
    bound = MAX_INPUT_BYTES
    size = f"{bound // 2**20} MiB" if bound % 2**20 == 0 else f"{bound} bytes"
    raise ConfigError(
        f"`{path}` is larger than {size}, more than any fio or FileBench result",
        f"iowatt imports files of up to {size}; check that this is the tool's result file",
    )


def check_storable_run(parsed: Parsed) -> None:
    """The last check before anything is written: every value the run will store fits its
    column (64-bit integers, finite floats, 32-bit ``nthreads``/``iodepth``), times included.

    The importers check the file's values where they read them, naming their place in the
    file; this catches what is computed from them (a sum of counts beyond 2^63)."""
    stored = {
        "started_ns": parsed.started_ns,
        "ended_ns": parsed.ended_ns,
        "tool_version": parsed.tool_version,
        "host": parsed.host,
        "workloads": parsed.summaries,
        "config": parsed.workloads,
        "histograms": [[h.workload, h.flowop, h.value_ns, h.count] for h in parsed.histograms],
        **parsed.extra,
    }
    root = Node(stored, "run", parsed.path, _COMPUTED_HINT)
    check_storable(root)
    if not 0 <= parsed.started_ns <= parsed.ended_ns:
        root["started_ns"].fail(f"would be {parsed.started_ns}, not from 0 to `ended_ns`")
    for i, cfg in enumerate(parsed.workloads):
        for key in ("nthreads", "iodepth"):
            if not 0 <= (cfg.get(key) or 0) <= INT32_MAX:
                root["config"].elements()[i][key].wrong("a whole number from 0 to 2^31 − 1")
    for i, h in enumerate(parsed.histograms):
        if min(h.count, default=0) < 0 or sum(h.count) > INT64_MAX:
            root["histograms"].elements()[i].fail(
                "has counts below 0 or adding up to more than 2^63 − 1"
            )


_COMPUTED_HINT = (
    "it is computed from the file's figures, which are beyond what fio or FileBench report;"
    " was the file edited?"
)
_KINDS = {S_IFIFO: "FIFO", S_IFCHR: "character device", S_IFBLK: "block device", S_IFSOCK: "socket"}
