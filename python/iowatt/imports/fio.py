"""fio 3.x JSON output (``--output-format=json`` or ``json+``) as an iowatt run.

One workload per fio job, one flowop per direction that did I/O (``read``, ``write``, ``trim``,
or ``mixed`` under ``unified_rw_reporting``). Throughput and the percentiles are fio's printed
figures, untouched: the catalog then shows what fio showed. json+ adds ``clat_ns.bins`` (fio's
histogram: 64 buckets per power of two, each keyed by the value fio prints for it), stored in
latency.parquet. fio picks the percentile bucket with its own float arithmetic, which can differ
by one sample from iowatt's rule; docs/import.md has the details and the evidence.
"""

from __future__ import annotations

import errno
import json
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from iowatt.bench.summary import MIB
from iowatt.errors import ConfigError, ImportFormatError
from iowatt.histogram import STANDARD_PERCENTILES, percentile
from iowatt.imports.model import Histogram, Parsed, latency, workload

HINT = "produce it with fio --output-format=json (json+ keeps exact histograms)"
DIRECTIONS = ("read", "write", "trim", "mixed")
# fio's histogram counts every latency from 2^34 ns (17.2 s) up in its last bucket.
SATURATION_NS = 1 << 34
_SIZE = re.compile(r"^\s*(\d+)\s*([kmgtp]?)(i?)b?\s*$", re.IGNORECASE)


def parse(path: Path, text: str, workload_name: str | None) -> Parsed:
    doc = _load(path, text)
    jobs = doc.get("jobs")
    if jobs is None and isinstance(doc.get("client_stats"), list):  # fio --client
        jobs = [j for j in doc["client_stats"] if j.get("jobname") != "All clients"]
    if not isinstance(jobs, list) or not jobs or not all(isinstance(j, dict) for j in jobs):
        raise ImportFormatError(f"`{path}` is not fio JSON output: no `jobs` list", HINT)
    names = _names(jobs)
    if workload_name is not None:
        if len(jobs) != 1:
            raise ConfigError(
                f"--workload names one workload but `{path}` has {len(jobs)} fio jobs",
                "leave --workload out to keep fio's job names",
            )
        names = [workload_name]
    clones = Counter((j.get("jobname"), j.get("groupid")) for j in jobs)
    configs, summaries, histograms = [], {}, []
    for name, job in zip(names, jobs, strict=True):
        options = {**_strings(doc.get("global options")), **_strings(job.get("job options"))}
        try:
            summary, hists, lat_kind = _job(path, name, job)
        except (KeyError, TypeError, ValueError) as e:  # a value of an unexpected type
            raise ImportFormatError(
                f"job `{job.get('jobname', name)}` in `{path}` is not laid out as fio 3 writes"
                f" it: {type(e).__name__}: {e}",
                HINT,
            ) from e
        cfg = _config(name, job, options, clones[(job.get("jobname"), job.get("groupid"))])
        configs.append({**cfg, "latency": lat_kind})
        summaries[name] = summary
        histograms += hists
    hostnames = {j["hostname"] for j in jobs if isinstance(j.get("hostname"), str)}
    started_ns, ended_ns = _times(path, doc, jobs)
    return Parsed(
        source="fio",
        path=path,
        tool_version=doc.get("fio version"),
        started_ns=started_ns,
        ended_ns=ended_ns,
        workloads=configs,
        summaries=summaries,
        extra={"fio": doc},
        histograms=histograms,
        host={"hostname": hostnames.pop()} if len(hostnames) == 1 else {},
    )


def _load(path: Path, text: str) -> dict[str, Any]:
    """The JSON document, skipping lines fio may print before it on stdout (notes, warnings)
    and text after it (``--output-format=json,normal``)."""
    stripped = text.lstrip()
    start = len(text) - len(stripped)
    if not stripped.startswith("{"):
        first = re.search(r"^\{", text, re.MULTILINE)
        start = first.start() if first else start
    try:
        doc, _ = json.JSONDecoder().raw_decode(text, start)
    except json.JSONDecodeError as e:
        raise ImportFormatError(
            f"`{path}` is not valid JSON: {e.msg} at line {e.lineno}, column {e.colno}", HINT
        ) from None
    if not isinstance(doc, dict):
        raise ImportFormatError(f"`{path}` is not fio JSON output: no `jobs` list", HINT)
    return doc


def _names(jobs: Sequence[Mapping[str, Any]]) -> list[str]:
    """fio's job names, made unique: ``.gN`` when a name is reused in another reporting group,
    then ``.K`` for the clones ``numjobs`` makes without ``group_reporting``."""
    names = [str(j.get("jobname") or f"job{i}") for i, j in enumerate(jobs)]
    groups: dict[str, set[Any]] = {}
    for name, job in zip(names, jobs, strict=True):
        groups.setdefault(name, set()).add(job.get("groupid"))
    names = [
        f"{n}.g{j.get('groupid')}" if len(groups[n]) > 1 else n
        for n, j in zip(names, jobs, strict=True)
    ]
    seen: Counter[str] = Counter()
    total = Counter(names)
    out = []
    for n in names:
        out.append(f"{n}.{seen[n]}" if total[n] > 1 else n)
        seen[n] += 1
    return out


def _strings(options: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in options.items()} if isinstance(options, dict) else {}


def _config(
    name: str, job: Mapping[str, Any], options: Mapping[str, str], clones: int
) -> dict[str, Any]:
    """The workload's parameters from fio's ``job options``; fio's documented default where an
    option was not given (bs 4k, numjobs 1, iodepth 1, buffered I/O, rw read), None for an
    engine not named (fio's default engine depends on its version and platform)."""
    kb_base = 1000 if options.get("kb_base") == "1000" else 1024
    rw = (options.get("rw") or options.get("readwrite") or "read").split(":")[0]
    bs = options.get("bs") or options.get("blocksize") or "4k"
    sizes = {_size(part, kb_base) for part in bs.split(",") if part}
    ranged = any(k in options for k in ("bsrange", "blocksize_range", "bssplit"))
    numjobs = _int(options.get("numjobs", "1"))
    # Without group_reporting every clone of a numjobs job is its own entry (one thread each).
    nthreads = 1 if numjobs and clones > 1 and clones == numjobs else numjobs
    if "direct" in options:
        directio: bool | None = options["direct"].strip().lower() in ("1", "true", "yes", "on")
    elif "buffered" in options:
        directio = options["buffered"].strip().lower() in ("0", "false", "no", "off")
    else:
        directio = False
    return {
        "name": name,
        "personality": "rw" if rw == "readwrite" else rw,
        "iosize": sizes.pop() if len(sizes) == 1 and not ranged else None,
        "nthreads": nthreads,
        "iodepth": _int(options.get("iodepth", "1")),
        "directio": directio,
        "engine": options.get("ioengine"),
        "jobname": job.get("jobname"),
        "groupid": job.get("groupid"),
    }


def _size(text: str, kb_base: int) -> int | None:
    m = _SIZE.match(text)
    if not m:
        return None
    digits, unit, binary = m.groups()
    base = 1024 if binary or kb_base == 1024 else 1000
    return int(digits) * base ** ("kmgtp".find(unit.lower()) + 1 if unit else 0)


def _int(text: str) -> int | None:
    return int(text) if text.strip().isdigit() else None


def _job(
    path: Path, name: str, job: Mapping[str, Any]
) -> tuple[dict[str, Any], list[Histogram], str]:
    """The workload summary of one job, its exact histograms and which fio latency they are."""
    where = f"job `{job.get('jobname', name)}` in `{path}`"
    sections = {d: job[d] for d in DIRECTIONS if isinstance(job.get(d), dict)}
    if not sections:
        raise ImportFormatError(f"{where} has no read or write section", HINT)
    active = {d: s for d, s in sections.items() if _num(s, "total_ios", where, d) > 0}
    for d, s in active.items():
        for key in ("iops", "runtime", "io_bytes", "bw_bytes"):
            _num(s, key, where, d)
    kind = _latency_kind(active.values())
    lats = {d: _lat(s, kind, where, d) for d, s in active.items()}
    bins = {d: _bins(lat) for d, lat in lats.items()}
    error = int(job.get("error") or 0)
    errors = int(job["total_err"]) if "total_err" in job else (1 if error else 0)
    flowops = {d: _flowop(s, lats[d], bins[d], errors) for d, s in active.items()}
    ops = sum(f["ops"] for f in flowops.values())
    runtime_ms = max((float(s["runtime"]) for s in active.values()), default=None)
    usr_s = float(job.get("usr_cpu", 0)) / 100 * float(job.get("job_runtime", 0)) / 1000
    sys_s = float(job.get("sys_cpu", 0)) / 100 * float(job.get("job_runtime", 0)) / 1000
    per_op = (usr_s + sys_s) * 1e6 / ops if ops else None
    summary = workload(
        status="complete" if error == 0 else "incomplete",
        reason=f"fio error {error} ({_errname(error)})" if error else None,
        ops=ops,
        nbytes=sum(f["bytes"] for f in flowops.values()),
        errors=errors,
        errors_by_kind=_errors_by_kind(job, error, errors),
        runtime_s=(runtime_ms if runtime_ms is not None else job.get("job_runtime", 0)) / 1000,
        ops_s=sum((float(s["iops"]) for s in active.values()), 0.0),
        mib_s=sum((f["mib_s"] for f in flowops.values()), 0.0),
        latency_ns=_workload_latency(lats, bins, {d: s["total_ios"] for d, s in active.items()}),
        latency_saturated=any(int(lat.get("max", 0)) >= SATURATION_NS for lat in lats.values()),
        cpu={"usr_s": usr_s, "sys_s": sys_s, "us_per_op": per_op},
        flowops=flowops,
    )
    hists = [Histogram(name, d, list(b), list(b.values())) for d, b in bins.items() if b]
    if bins and all(bins.values()):
        merged = sum((Counter(b) for b in bins.values()), Counter())
        values = sorted(merged)
        hists.insert(0, Histogram(name, None, values, [merged[v] for v in values]))
    return summary, hists, kind


def _num(section: Mapping[str, Any], key: str, where: str, direction: str) -> float:
    value = section.get(key)
    if not isinstance(value, int | float):
        raise ImportFormatError(f"{where}: `{direction}` has no `{key}`", HINT)
    return value


def _latency_kind(sections: Any) -> str:
    """``clat_ns`` (completion latency, fio's default percentiles) unless only ``lat_ns`` has
    percentiles (``--clat_percentiles=0 --lat_percentiles=1``)."""
    sections = list(sections)
    if any("percentile" in (s.get("clat_ns") or {}) for s in sections):
        return "clat_ns"
    if any("percentile" in (s.get("lat_ns") or {}) for s in sections):
        return "lat_ns"
    return "clat_ns"


def _lat(section: Mapping[str, Any], kind: str, where: str, direction: str) -> Mapping[str, Any]:
    lat = section.get(kind)
    if not isinstance(lat, dict) or not all(k in lat for k in ("min", "max", "mean")):
        raise ImportFormatError(
            f"{where}: `{direction}` has no `{kind}` latency",
            "fio 2.x wrote latencies in µs without `clat_ns`; rerun with fio 3.0 or newer",
        )
    return lat


def _bins(lat: Mapping[str, Any]) -> dict[int, int]:
    raw = lat.get("bins") or {}
    return {int(v): int(n) for v, n in sorted(raw.items(), key=lambda kv: int(kv[0])) if n}


def _percentiles(lat: Mapping[str, Any], bins: Mapping[int, int]) -> dict[float, int | None]:
    """fio's printed percentiles; one it did not print comes from its bins when there are any."""
    out: dict[float, int | None] = {}
    for key, value in (lat.get("percentile") or {}).items():
        if float(key) > 0:
            out[float(key)] = int(value)
    for p in STANDARD_PERCENTILES:
        if p not in out and bins:
            out[p] = percentile(list(bins), list(bins.values()), p)
    return out


def _flowop(
    section: Mapping[str, Any], lat: Mapping[str, Any], bins: Mapping[int, int], errors: int
) -> dict[str, Any]:
    pct = _percentiles(lat, bins)
    return {
        "ops": int(section["total_ios"]),
        "bytes": int(section["io_bytes"]),
        # fio counts errors per job, not per direction.
        "errors": 0 if errors == 0 else None,
        "ops_s": float(section["iops"]),
        "mib_s": float(section["bw_bytes"]) / MIB,
        "mean_ns": float(lat["mean"]),
        "min_ns": int(lat["min"]),
        "max_ns": int(lat["max"]),
        "p50_ns": pct.get(50.0),
        "p99_ns": pct.get(99.0),
    }


def _workload_latency(
    lats: Mapping[str, Mapping[str, Any]],
    bins: Mapping[str, Mapping[int, int]],
    ios: Mapping[str, int],
) -> dict[str, Any]:
    """One direction: fio's figures. Several: min, max, mean and stdev combined exactly, and
    the percentiles of the merged bins (json+) or of the direction with the most I/Os."""
    if not lats:
        return latency()
    if len(lats) == 1:
        (d, lat), = lats.items()  # fmt: skip
        return latency(
            min=int(lat["min"]), mean=float(lat["mean"]), stdev=_stdev(lat),
            percentiles=_percentiles(lat, bins[d]), max=int(lat["max"]),
        )  # fmt: skip
    ns = {d: int(lat.get("N") or ios[d]) for d, lat in lats.items()}
    total = sum(ns.values())
    mean = sum(ns[d] * float(lat["mean"]) for d, lat in lats.items()) / total if total else 0.0
    # fio's stddev is the sample standard deviation (n - 1); pooled with the parallel formula.
    sq = sum(
        (ns[d] - 1) * (_stdev(lat) or 0.0) ** 2 + ns[d] * (float(lat["mean"]) - mean) ** 2
        for d, lat in lats.items()
        if ns[d]
    )
    if all(bins.values()):
        merged = sum((Counter(b) for b in bins.values()), Counter())
        values = list(merged)
        counts = [merged[v] for v in values]
        pct: dict[float, int | None] = {
            p: percentile(values, counts, p) for p in STANDARD_PERCENTILES
        }
    else:
        busiest = max(lats, key=lambda d: ns[d])
        pct = _percentiles(lats[busiest], bins[busiest])
    return latency(
        min=min(int(lat["min"]) for lat in lats.values()), mean=mean,
        stdev=math.sqrt(sq / (total - 1)) if total > 1 else 0.0,
        percentiles=pct, max=max(int(lat["max"]) for lat in lats.values()),
    )  # fmt: skip


def _stdev(lat: Mapping[str, Any]) -> float | None:
    value = lat.get("stddev")
    return float(value) if isinstance(value, int | float) else None


def _errname(code: int) -> str:
    return errno.errorcode.get(code, f"errno {code}")


def _errors_by_kind(job: Mapping[str, Any], error: int, errors: int) -> dict[str, int] | None:
    """By errno name when one kind is certain; None when continue_on_error hid the others."""
    if errors == 0:
        return {}
    if "total_err" not in job:
        return {_errname(error): errors}
    first = int(job.get("first_error") or 0)
    return {_errname(first): errors} if errors == 1 and first else None


def _times(
    path: Path, doc: Mapping[str, Any], jobs: Sequence[Mapping[str, Any]]
) -> tuple[int, int]:
    """When fio wrote the report (``timestamp_ms``, else the file's mtime) is the end; the
    start is fio's ``job_start`` (3.36+, realtime clock) or the end minus the runtime."""
    if isinstance(doc.get("timestamp_ms"), int):
        ended = doc["timestamp_ms"] * 1_000_000
    elif isinstance(doc.get("timestamp"), int):
        ended = doc["timestamp"] * 1_000_000_000
    else:
        ended = path.stat().st_mtime_ns
    # job_start may come from another clock (job_start_clock_id); only a plausible one counts.
    starts = [
        j["job_start"] * 1_000_000
        for j in jobs
        if isinstance(j.get("job_start"), int)
        and ended - 30 * 86400 * 10**9 < j["job_start"] * 1_000_000 <= ended
    ]
    if starts:
        return min(starts), ended
    # Reporting groups usually run one after another (stonewall); jobs in one group together.
    longest: dict[Any, float] = {}
    for j in jobs:
        ms = max(
            [float(j[d].get("runtime", 0)) for d in DIRECTIONS if isinstance(j.get(d), dict)]
            or [float(j.get("job_runtime", 0))]
        )
        longest[j.get("groupid")] = max(longest.get(j.get("groupid"), 0.0), ms)
    return ended - round(sum(longest.values()) * 1_000_000), ended
