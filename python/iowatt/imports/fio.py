"""fio 3.x JSON output (``--output-format=json`` or ``json+``) as an iowatt run.

One workload per fio job, one flowop per direction that did I/O (``read``, ``write``, ``trim``,
or ``mixed`` under ``unified_rw_reporting``). Throughput and the percentiles are fio's printed
figures, untouched: the catalog then shows what fio showed. json+ adds ``clat_ns.bins`` (fio's
histogram: 64 buckets per power of two, each keyed by the value fio prints for it), stored in
latency.parquet. fio picks the percentile bucket with its own float arithmetic, which can differ
by one sample from iowatt's rule; docs/import.md has the details and the evidence.

Every figure the mapping uses is read into a checked :class:`_Job` first, so a value that is
not what fio writes is named by its JSON path before anything is computed or written.
"""

from __future__ import annotations

import errno
import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from iowatt.bench.summary import MIB
from iowatt.errors import ConfigError, ImportFormatError
from iowatt.histogram import STANDARD_PERCENTILES, percentile
from iowatt.imports.model import Histogram, Parsed, Source, latency, workload
from iowatt.imports.shape import INT32_MAX, INT64_MAX, Node, check_storable, printable

HINT = "produce it with fio --output-format=json (json+ keeps exact histograms)"
# For a value fio would not have written: the file was edited, damaged or cut short.
SHAPE_HINT = (
    "iowatt reads fio 3's JSON as fio writes it (--output-format=json or json+);"
    " was the file edited or damaged?"
)
DIRECTIONS = ("read", "write", "trim", "mixed")
# fio runs at most 4096 jobs (REAL_MAX_JOBS); --client output has them per host. The bound keeps
# a hostile list of millions of `{}` from costing gigabytes more as checked jobs.
MAX_JOBS = 65536
# fio's histogram counts every latency from 2^34 ns (17.2 s) up in its last bucket.
SATURATION_NS = 1 << 34
_SIZE = re.compile(r"^\s*(\d+)\s*([kmgtp]?)(i?)b?\s*$", re.IGNORECASE | re.ASCII)
_DIGITS = re.compile(r"[0-9]+")
_PERCENT = re.compile(r"[0-9]+(?:\.[0-9]+)?")


@dataclass(frozen=True)
class _Latency:
    """A direction's ``clat_ns`` (or ``lat_ns``)."""

    min: int
    max: int
    mean: float
    stdev: float | None
    n: int | None
    printed: dict[float, int]  # fio's percentiles by p, p > 0
    bins: dict[int, int]  # json+: the buckets with a count, ascending


@dataclass(frozen=True)
class _Direction:
    """A direction that did I/O."""

    ops: int
    bytes: int
    iops: float
    runtime_ms: float
    bw_bytes: float
    lat: _Latency


@dataclass(frozen=True)
class _Job:
    """One fio job: every figure the mapping (docs/import.md) takes from it, checked."""

    node: Node
    name: str  # the workload's
    jobname: str | None
    groupid: int | None
    hostname: str | None
    options: dict[str, Node]  # `job options`, each a string
    runtimes_ms: list[float]  # every direction's, also of those without I/O
    job_runtime_ms: float
    directions: dict[str, _Direction]
    kind: str  # which fio latency: "clat_ns" or "lat_ns"
    error: int
    total_err: int | None
    first_error: int
    usr_cpu: float
    sys_cpu: float
    job_start: int | None


def parse(source: Source, workload_name: str | None) -> Parsed:
    root = _load(source)
    nodes = _job_nodes(root)
    idents = [_ident(node) for node in nodes]
    names = _names(idents)
    if workload_name is not None:
        if len(nodes) != 1:
            raise ConfigError(
                f"--workload names one workload but `{source.path}` has {len(nodes)} fio jobs",
                "leave --workload out to keep fio's job names",
            )
        names = [workload_name]
    _check_unique(names, nodes)
    jobs = [
        _read_job(node, name, *ident)
        for node, name, ident in zip(nodes, names, idents, strict=True)
    ]
    global_options = _options(root.get("global options"))
    clones = Counter((j.jobname, j.groupid) for j in jobs)
    configs, summaries, histograms = [], {}, []
    for job in jobs:
        summary, hists = _summary(job)
        options = {**global_options, **job.options}
        cfg = _config(job, options, clones[(job.jobname, job.groupid)])
        configs.append({**cfg, "latency": job.kind})
        summaries[job.name] = summary
        histograms += hists
    # Last, as it visits every value: a file that is not fio's is refused from its shape first.
    check_storable(root)
    hostnames = {j.hostname for j in jobs if j.hostname is not None}
    started_ns, ended_ns = _times(root, source, jobs)
    version = root.get("fio version")
    return Parsed(
        source="fio",
        path=source.path,
        tool_version=version.text() if version else None,
        started_ns=started_ns,
        ended_ns=ended_ns,
        workloads=configs,
        summaries=summaries,
        extra={"fio": root.value},
        histograms=histograms,
        host={"hostname": hostnames.pop()} if len(hostnames) == 1 else {},
    )


def _load(source: Source) -> Node:
    """The JSON document, skipping lines fio may print before it on stdout (notes, warnings)
    and text after it (``--output-format=json,normal``)."""
    path, text = source.path, source.text
    start = _first_non_space(text)
    if not text.startswith("{", start):
        first = re.search(r"^\{", text, re.MULTILINE)
        start = first.start() if first else start
    try:
        doc, _ = json.JSONDecoder().raw_decode(text, start)
    except json.JSONDecodeError as e:
        raise ImportFormatError(
            f"`{path}` is not valid JSON: {e.msg} at line {e.lineno}, column {e.colno}", HINT
        ) from None
    except RecursionError:
        raise ImportFormatError(
            f"`{path}` is not fio JSON output: it nests too deep", HINT
        ) from None
    except MemoryError:
        raise ImportFormatError(
            f"`{path}` is not fio JSON output: it holds more values than fit this machine's memory",
            HINT,
        ) from None
    except ValueError:  # Python refuses to convert integers of more than 4300 digits
        raise ImportFormatError(
            f"`{path}` is not fio JSON output: it has a number of thousands of digits", HINT
        ) from None
    if not isinstance(doc, dict):
        raise ImportFormatError(f"`{path}` is not fio JSON output: no `jobs` list", HINT)
    return Node(doc, "", path, SHAPE_HINT)


def _first_non_space(text: str) -> int:
    """Where the text starts after whitespace (``lstrip`` would copy up to 1 GiB)."""
    spaces = re.match(r"\s*", text)
    return spaces.end() if spaces else 0


def _job_nodes(root: Node) -> list[Node]:
    jobs = root.get("jobs")
    if jobs is None:
        jobs = root.get("client_stats")  # fio --client
    if jobs is None:
        raise ImportFormatError(f"`{root.file}` is not fio JSON output: no `jobs` list", HINT)
    if len(jobs.array()) > MAX_JOBS:
        jobs.fail(f"has {len(jobs.array())} jobs, more than fio runs (4096 per host)")
    nodes = jobs.elements()
    if jobs.path == "client_stats":
        nodes = [c for c in nodes if c.object().get("jobname") != "All clients"]
    if not nodes:
        raise ImportFormatError(f"`{root.file}` is not fio JSON output: no `jobs` list", HINT)
    for node in nodes:
        node.object()
    return nodes


def _ident(job: Node) -> tuple[str | None, int | None]:
    """The job's ``jobname`` and ``groupid``, which name its workload."""
    name, group = job.get("jobname"), job.get("groupid")
    return (name.text() if name else None, group.count() if group else None)


def _names(idents: Sequence[tuple[str | None, int | None]]) -> list[str]:
    """fio's job names, made unique: ``.gN`` when a name is reused in another reporting group,
    then ``.K`` for the clones ``numjobs`` makes without ``group_reporting``."""
    names = [jobname or f"job{i}" for i, (jobname, _) in enumerate(idents)]
    groups: dict[str, set[int | None]] = {}
    for name, (_, group) in zip(names, idents, strict=True):
        groups.setdefault(name, set()).add(group)
    names = [
        f"{n}.g{group}" if len(groups[n]) > 1 else n
        for n, (_, group) in zip(names, idents, strict=True)
    ]
    seen: Counter[str] = Counter()
    total = Counter(names)
    out = []
    for n in names:
        out.append(f"{n}.{seen[n]}" if total[n] > 1 else n)
        seen[n] += 1
    return out


def _check_unique(names: Sequence[str], nodes: Sequence[Node]) -> None:
    """Two jobs made into one workload name (``a`` twice and ``a.0``) would lose one."""
    first: dict[str, Node] = {}
    for name, node in zip(names, nodes, strict=True):
        if name in first:
            raise ImportFormatError(
                f"`{node.file}`: `{node.path}` and `{first[name].path}` would both be workload"
                f" `{printable(name)}`",
                "fio names its jobs apart; rename one of them in the file",
            )
        first[name] = node


def _read_job(node: Node, name: str, jobname: str | None, groupid: int | None) -> _Job:
    where = f"job `{printable(jobname or name)}` in `{node.file}`"
    sections = {d: node[d] for d in DIRECTIONS if node.has(d)}
    if not sections:
        raise ImportFormatError(f"{where} has no read or write section", HINT)
    active = [d for d, s in sections.items() if s["total_ios"].count() > 0]
    kind = _latency_kind([sections[d] for d in active])
    hostname, start = node.get("hostname"), node.get("job_start")
    return _Job(
        node=node,
        name=name,
        jobname=jobname,
        groupid=groupid,
        hostname=hostname.text() if hostname else None,
        options=_options(node.get("job options")),
        runtimes_ms=[_number(s, "runtime") for s in sections.values()],
        job_runtime_ms=_number(node, "job_runtime"),
        directions={d: _direction(sections[d], kind, where, d) for d in active},
        kind=kind,
        error=_count(node, "error"),
        total_err=node["total_err"].count() if node.has("total_err") else None,
        first_error=_count(node, "first_error"),
        usr_cpu=_number(node, "usr_cpu"),
        sys_cpu=_number(node, "sys_cpu"),
        job_start=start.integer() if start else None,
    )


def _count(node: Node, key: str) -> int:
    """A count fio may leave out (older versions), 0 then."""
    found = node.get(key)
    return found.count() if found else 0


def _number(node: Node, key: str) -> float:
    found = node.get(key)
    return found.number() if found else 0.0


def _options(node: Node | None) -> dict[str, Node]:
    """``global options`` or ``job options``: fio writes every value as a string."""
    if node is None:
        return {}
    for _, value in node.items():
        value.text()
    return dict(node.items())


def _latency_kind(sections: Sequence[Node]) -> str:
    """``clat_ns`` (completion latency, fio's default percentiles) unless only ``lat_ns`` has
    percentiles (``--clat_percentiles=0 --lat_percentiles=1``)."""
    for kind in ("clat_ns", "lat_ns"):
        if any(s.has(kind) and s[kind].has("percentile") for s in sections):
            return kind
    return "clat_ns"


def _direction(section: Node, kind: str, where: str, direction: str) -> _Direction:
    return _Direction(
        ops=section["total_ios"].count(),
        bytes=section["io_bytes"].count(),
        iops=section["iops"].number(),
        runtime_ms=section["runtime"].number(),
        bw_bytes=section["bw_bytes"].number(),
        lat=_latency(section, kind, where, direction),
    )


def _latency(section: Node, kind: str, where: str, direction: str) -> _Latency:
    lat = section.get(kind)
    if lat is None:
        raise ImportFormatError(
            f"{where}: `{direction}` has no `{kind}` latency",
            "fio 2.x wrote latencies in µs without `clat_ns`; rerun with fio 3.0 or newer",
        )
    stdev, n, printed = lat.get("stddev"), lat.get("N"), lat.get("percentile")
    return _Latency(
        min=lat["min"].count(),
        max=lat["max"].count(),
        mean=lat["mean"].number(),
        stdev=stdev.number() if stdev else None,
        n=n.count() if n else None,
        printed=_printed(printed) if printed else {},
        bins=_bins(lat.get("bins")),
    )


def _printed(node: Node) -> dict[float, int]:
    """fio's percentiles, keyed ``"99.000000"``; p = 0 (which fio accepts) says nothing."""
    out = {}
    for key, value in node.items():
        if not _PERCENT.fullmatch(key) or not 0 <= float(key) <= 100:
            value.fail("is not under a percentile (a number from 0 to 100)")
        count = value.count()
        if float(key) > 0:
            out[float(key)] = count
    return out


def _bins(node: Node | None) -> dict[int, int]:
    """json+ buckets, keyed by the latency in ns fio prints for them; empty ones left out."""
    if node is None:
        return {}
    counts: Counter[int] = Counter()
    for key, value in node.items():
        # The length test first: int() refuses thousands of digits.
        if not _DIGITS.fullmatch(key) or len(key.lstrip("0")) > 19 or int(key) > INT64_MAX:
            value.fail("is not under a latency (a whole number of ns from 0 to 2^63 − 1)")
        counts[int(key)] += value.count()
    if sum(counts.values()) > INT64_MAX:
        node.fail("has counts adding up to more than 2^63 − 1")
    return {v: counts[v] for v in sorted(counts) if counts[v]}


def _summary(job: _Job) -> tuple[dict[str, Any], list[Histogram]]:
    """The workload summary of one job and its exact histograms."""
    dirs = job.directions
    errors = job.total_err if job.total_err is not None else (1 if job.error else 0)
    flowops = {d: _flowop(x, errors) for d, x in dirs.items()}
    ops = _total(job, "total_ios", [x.ops for x in dirs.values()])
    bins = {d: x.lat.bins for d, x in dirs.items()}
    merged = _merged(job, bins.values()) if bins and all(bins.values()) else None
    runtime_ms = max((x.runtime_ms for x in dirs.values()), default=job.job_runtime_ms)
    usr_s = job.usr_cpu / 100 * job.job_runtime_ms / 1000
    sys_s = job.sys_cpu / 100 * job.job_runtime_ms / 1000
    summary = workload(
        status="complete" if job.error == 0 else "incomplete",
        reason=f"fio error {job.error} ({_errname(job.error)})" if job.error else None,
        ops=ops,
        nbytes=_total(job, "io_bytes", [x.bytes for x in dirs.values()]),
        errors=errors,
        errors_by_kind=_errors_by_kind(job, errors),
        runtime_s=runtime_ms / 1000,
        ops_s=sum((x.iops for x in dirs.values()), 0.0),
        mib_s=sum((x.bw_bytes / MIB for x in dirs.values()), 0.0),
        latency_ns=_workload_latency(dirs, merged),
        latency_saturated=any(x.lat.max >= SATURATION_NS for x in dirs.values()),
        cpu={
            "usr_s": usr_s,
            "sys_s": sys_s,
            "us_per_op": (usr_s + sys_s) * 1e6 / ops if ops else None,
        },
        flowops=flowops,
    )
    hists = [Histogram(job.name, d, list(b), list(b.values())) for d, b in bins.items() if b]
    if merged is not None:
        hists.insert(0, Histogram(job.name, None, list(merged), list(merged.values())))
    return summary, hists


def _total(job: _Job, key: str, values: Iterable[int]) -> int:
    total = sum(values)
    if total > INT64_MAX:
        job.node.fail(f"has `{key}` adding up to more than 2^63 − 1 over its directions")
    return total


def _merged(job: _Job, bins: Iterable[Mapping[int, int]]) -> dict[int, int]:
    """The directions' buckets together, ascending."""
    merged = sum((Counter(b) for b in bins), Counter())
    _total(job, f"{job.kind}.bins", merged.values())
    return {v: merged[v] for v in sorted(merged)}


def _percentiles(lat: _Latency) -> dict[float, int | None]:
    """fio's printed percentiles; one it did not print comes from its bins when there are any."""
    out: dict[float, int | None] = dict(lat.printed)
    for p in STANDARD_PERCENTILES:
        if p not in out and lat.bins:
            out[p] = percentile(list(lat.bins), list(lat.bins.values()), p)
    return out


def _flowop(direction: _Direction, errors: int) -> dict[str, Any]:
    lat = direction.lat
    pct = _percentiles(lat)
    return {
        "ops": direction.ops,
        "bytes": direction.bytes,
        # fio counts errors per job, not per direction.
        "errors": 0 if errors == 0 else None,
        "ops_s": direction.iops,
        "mib_s": direction.bw_bytes / MIB,
        "mean_ns": lat.mean,
        "min_ns": lat.min,
        "max_ns": lat.max,
        "p50_ns": pct.get(50.0),
        "p99_ns": pct.get(99.0),
    }


def _workload_latency(
    dirs: Mapping[str, _Direction], merged: Mapping[int, int] | None
) -> dict[str, Any]:
    """One direction: fio's figures. Several: min, max, mean and stdev combined exactly, and
    the percentiles of the merged bins (json+) or of the direction with the most I/Os."""
    lats = {d: x.lat for d, x in dirs.items()}
    if not lats:
        return latency()
    if len(lats) == 1:
        (lat,) = lats.values()
        return latency(
            min=lat.min, mean=lat.mean, stdev=lat.stdev, percentiles=_percentiles(lat), max=lat.max
        )
    ns = {d: lat.n or dirs[d].ops for d, lat in lats.items()}
    total = sum(ns.values())
    mean = sum(ns[d] * lat.mean for d, lat in lats.items()) / total if total else 0.0
    # fio's stddev is the sample standard deviation (n - 1); pooled with the parallel formula.
    sq = sum(
        (ns[d] - 1) * (lat.stdev or 0.0) ** 2 + ns[d] * (lat.mean - mean) ** 2
        for d, lat in lats.items()
        if ns[d]
    )
    if merged is not None:
        values, counts = list(merged), list(merged.values())
        pct: dict[float, int | None] = {
            p: percentile(values, counts, p) for p in STANDARD_PERCENTILES
        }
    else:
        pct = _percentiles(lats[max(lats, key=lambda d: ns[d])])
    return latency(
        min=min(lat.min for lat in lats.values()),
        mean=mean,
        stdev=math.sqrt(sq / (total - 1)) if total > 1 else 0.0,
        percentiles=pct,
        max=max(lat.max for lat in lats.values()),
    )


def _errname(code: int) -> str:
    return errno.errorcode.get(code, f"errno {code}")


def _errors_by_kind(job: _Job, errors: int) -> dict[str, int] | None:
    """By errno name when one kind is certain; None when continue_on_error hid the others."""
    if errors == 0:
        return {}
    if job.total_err is None:
        return {_errname(job.error): errors}
    return {_errname(job.first_error): errors} if errors == 1 and job.first_error else None


def _config(job: _Job, options: Mapping[str, Node], clones: int) -> dict[str, Any]:
    """The workload's parameters from fio's ``job options``; fio's documented default where an
    option was not given (bs 4k, numjobs 1, iodepth 1, buffered I/O, rw read), None for an
    engine not named (fio's default engine depends on its version and platform)."""
    text = {key: node.value for key, node in options.items()}
    kb_base = 1000 if text.get("kb_base") == "1000" else 1024
    rw = (text.get("rw") or text.get("readwrite") or "read").split(":")[0]
    bs = _option(options, "bs", "blocksize")
    sizes = {_size(part, kb_base) for part in (bs.value if bs else "4k").split(",") if part}
    if bs and any(size is not None and size > INT64_MAX for size in sizes):
        bs.wrong("a block size of at most 2^63 − 1 bytes")
    ranged = any(k in options for k in ("bsrange", "blocksize_range", "bssplit"))
    numjobs = _small_int(options.get("numjobs"))
    # Without group_reporting every clone of a numjobs job is its own entry (one thread each).
    nthreads = 1 if numjobs and clones > 1 and clones == numjobs else numjobs
    if "direct" in text:
        directio: bool | None = text["direct"].strip().lower() in ("1", "true", "yes", "on")
    elif "buffered" in text:
        directio = text["buffered"].strip().lower() in ("0", "false", "no", "off")
    else:
        directio = False
    return {
        "name": job.name,
        "personality": "rw" if rw == "readwrite" else rw,
        "iosize": sizes.pop() if len(sizes) == 1 and not ranged else None,
        "nthreads": nthreads,
        "iodepth": _small_int(options.get("iodepth")),
        "directio": directio,
        "engine": text.get("ioengine"),
        "jobname": job.jobname,
        "groupid": job.groupid,
    }


def _option(options: Mapping[str, Node], *names: str) -> Node | None:
    """The first of ``names`` given and not empty."""
    return next((options[n] for n in names if options.get(n) and options[n].value), None)


def _size(part: str, kb_base: int) -> int | None:
    """One size of ``bs`` (``4k``, ``64KiB``) in bytes; None for one iowatt does not read."""
    m = _SIZE.match(part)
    if not m:
        return None
    digits, unit, binary = m.groups()
    if len(digits.lstrip("0")) > 19:  # beyond 2^63 whatever the digits, and int() refuses 4300
        return INT64_MAX + 1
    base = 1024 if binary or kb_base == 1024 else 1000
    return int(digits) * base ** ("kmgtp".find(unit.lower()) + 1 if unit else 0)


def _small_int(node: Node | None) -> int | None:
    """``numjobs`` or ``iodepth`` (1 when not given); None for a value iowatt does not read."""
    if node is None:
        return 1
    text = node.value.strip()
    if not _DIGITS.fullmatch(text):
        return None
    if len(text.lstrip("0")) > 10 or int(text) > INT32_MAX:
        node.wrong("a number from 0 to 2^31 − 1 (the catalog's column)")
    return int(text)


def _times(root: Node, source: Source, jobs: Sequence[_Job]) -> tuple[int, int]:
    """When fio wrote the report (``timestamp_ms``, else the file's mtime) is the end; the
    start is fio's ``job_start`` (3.36+, realtime clock) or the end minus the runtime."""
    stamp_ms, stamp_s = root.get("timestamp_ms"), root.get("timestamp")
    if stamp_ms is not None:
        ended = _epoch_ns(stamp_ms, 10**6)
    elif stamp_s is not None:
        ended = _epoch_ns(stamp_s, 10**9)
    else:
        ended = source.mtime_ns
    # job_start may come from another clock (job_start_clock_id); only a plausible one counts.
    starts = [
        j.job_start * 1_000_000
        for j in jobs
        if j.job_start is not None and ended - 30 * 86400 * 10**9 < j.job_start * 1_000_000 <= ended
    ]
    if starts:
        return min(starts), ended
    # Reporting groups usually run one after another (stonewall); jobs in one group together.
    longest: dict[int | None, float] = {}
    for j in jobs:
        ms = max(j.runtimes_ms or [j.job_runtime_ms])
        longest[j.groupid] = max(longest.get(j.groupid, 0.0), ms)
    total_ms = sum(longest.values())
    started = ended - round(total_ms * 1_000_000)
    if started < 0:
        root.fail(f"has runtimes adding up to {total_ms:g} ms, longer than since 1970 at its end")
    return started, ended


def _epoch_ns(node: Node, ns_per_unit: int) -> int:
    ns = node.count() * ns_per_unit
    if ns > INT64_MAX:
        node.wrong("a time before 2262 (the end of 64-bit ns timestamps)")
    return ns
