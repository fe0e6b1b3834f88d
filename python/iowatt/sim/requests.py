"""What the RAID simulator serves: requests at the array (arrival ns, offset, bytes), from

- a block trace: the SNIA/MSR-Cambridge CSV layout (``Timestamp,Hostname,DiskNumber,Type,
  Offset,Size,ResponseTime``, timestamps in 100 ns ticks; its header line is optional) or
  blkparse's default text output (its ``Q`` — queued — lines: sector and count, 512-byte
  sectors). A line that does not read is counted and the first one named with its reason; past
  ``max_bad`` of them the trace is refused. blkparse's other actions, its ``Input file … added``
  lines and its closing summary (``CPU0 (8,0):`` …) are not requests and are not counted;
- a web access log (any format ``iowatt trace`` reads), a ``iowatt trace split`` directory or
  a replay run's directory (its ``requests.parquet``, the log's status and size per request):
  the answered GETs with a body, each file laid out on the array once, in order of first
  request, at the largest size the log sent it — or as a tree manifest (``iowatt tree
  snapshot``) lists the files, with their sizes;

sped up by ``speedup`` (arrival times divided by it; None: a replay run's own, any other
trace's 1) and checked in time order. A web trace's times are whole seconds: each request starts
at its second's start, and :meth:`Requests.arrivals` places a second's requests within it by a
seeded rule (``--arrival-jitter``). A block trace keeps its own times.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from iowatt.errors import ConfigError, StoreError
from iowatt.store.manifest import MANIFEST
from iowatt.trace.filters import Filters

if TYPE_CHECKING:
    import pyarrow as pa

ALIGN = 4096  # files start on 4 KiB boundaries
NS = 1_000_000_000
LAYOUTS = (
    "MSR-Cambridge CSV, blkparse text, an access log (--format), a split directory, a replay run"
)
MSR_COLUMNS = ("Timestamp", "Hostname", "DiskNumber", "Type", "Offset", "Size", "ResponseTime")
MSR_HINT = "the MSR-Cambridge layout: " + ",".join(MSR_COLUMNS)
JITTER_RULES = ("uniform", "none")
# Jitter's draws come from their own stream of the seed, apart from its rotational positions.
_JITTER_STREAM = 0x1A77E2

# Detection, on a trace's first lines.
_MSR = re.compile(r"^\d+,[^,]*,\d+,(Read|Write),\d+,\d+,\d+\s*$", re.IGNORECASE)
_MSR_HEADER = re.compile(r"^\s*" + ",".join(MSR_COLUMNS) + r"\s*$", re.IGNORECASE)
_BLK_EVENT = re.compile(r"^\s*\d+,\d+\s+\d+\s+\d+\s+\d+\.\d+\s+\d+\s+\S")
_BLK_INPUT = re.compile(r"^Input file .* added\s*$")

# Reading, on every line at once (Arrow's RE2 over the file's lines, each with its "\n").
# A number as pyarrow's CSV reader takes it (spaces around, leading zeros, 0x…): Timestamp,
# Offset and Size below 10^18 once read (3,000 years of ticks, an exabyte), DiskNumber and
# ResponseTime below 10^19.
_NUM = r"[ \t]*(?:0[xX]0*[0-9a-fA-F]{1,15}|0*\d{1,18})[ \t]*"
_U64 = r"[ \t]*(?:0[xX]0*[0-9a-fA-F]{1,16}|0*\d{1,19})[ \t]*"
_MSR_ROW = rf"^{_NUM},[^,\r\n]*,{_U64},(?i:read|write),{_NUM},{_NUM},{_U64}\r?\n?$"
_LIMIT = 10**18
_LIMIT_U64 = 10**19
_BLANK = r"^\s*$"
_BLK_MARK = r"^\s*\d+,\d+\s"  # a device's major,minor: an event line
# dev cpu seq time pid [cgroup] action rwbs …
_BLK_HEAD = r"^\s*\d+,\d+\s+\d+\s+\d+\s+(?P<t>\d+\.\d+)\s+\d+\s+(?:[0-9a-f]+,[0-9a-f]+\s+)?"
_BLK_EVENT_OK = _BLK_HEAD + r"\S+\s+\S"
_BLK_Q = _BLK_HEAD + r"Q\s"
_BLK_QUEUED = (
    _BLK_HEAD + r"Q\s+(?P<rwbs>\S+)\s+(?P<sector>0*\d{1,18})\s+\+\s+(?P<count>0*\d{1,10})(?:\s|$)"
)
# A Q line without a sector: a flush ([name]), a passthrough command (bytes [name] or (cdb)).
_BLK_NO_DATA = _BLK_HEAD + r"Q\s+\S+\s+(?:\[|\(|\d+\s+[\[(])"
_BLK_SUMMARY = (
    r"^(?:CPU\d+ \(|Total \(|Throughput \(R/W\):|Events \(|Skips: |Trace started at "
    r"|discarded traces )"
)
_BLK_STATS = r"^ Reads Queued:"  # a summary's first figures, after its name (e.g. `fio (99)`)
_MAX_SECTOR = 2**63 // 512

U64 = npt.NDArray[np.uint64]


@dataclass
class Requests:
    t_ns: U64
    offset: U64
    size: U64
    write: npt.NDArray[np.bool_]
    # what the trace was and how it was read (recorded in the manifest)
    described: dict[str, Any]
    # A web trace's whole second of each request, from its first; None where the trace has
    # times of its own (a block trace, or a web trace spread within its seconds).
    second: npt.NDArray[np.int64] | None = None
    speedup: float = 1.0
    # A web trace's files in layout order (their offsets and directories), and each request's
    # file among them; None for a block trace.
    files: tuple[U64, list[str]] | None = None
    file_of: npt.NDArray[np.int64] | None = None

    def __len__(self) -> int:
        return int(self.t_ns.size)

    def columns(self) -> dict[str, bytes]:
        return {
            "t_ns": self.t_ns.astype("<u8").tobytes(),
            "offset": self.offset.astype("<u8").tobytes(),
            "bytes": self.size.astype("<u8").tobytes(),
            "write": self.write.astype(np.uint8).tobytes(),
        }

    def array_bytes(self) -> int:
        return int((self.offset + self.size).max()) if len(self) else 0

    def metadata(self, fs: Mapping[str, Any]) -> dict[str, bytes]:
        """A web trace's columns ``dir_at`` and ``inode_at`` (each request's file's metadata
        blocks, :mod:`iowatt.sim.fs_layout`) for the file system of ``fs``; none for a block
        trace, whose requests hold their file system's already."""
        if self.files is None or self.file_of is None:
            return {}
        from iowatt.sim.fs_layout import metadata_blocks

        dir_at, inode_at = metadata_blocks(*self.files, fs)
        return {
            "dir_at": dir_at[self.file_of].astype("<u8").tobytes(),
            "inode_at": inode_at[self.file_of].astype("<u8").tobytes(),
        }

    def arrivals(self, seed: int, rule: str) -> U64:
        """Each request's arrival (ns, in time order) under ``rule``: for a web trace of whole
        seconds, ``uniform`` gives a second's n requests n sorted uniform times within it (a
        second of the trace lasts 1 s / speed-up), drawn from ``seed``, in the requests' order;
        ``none`` keeps the second's start (``t_ns``). A block trace keeps its own times. The
        rule applied is recorded in ``described["arrival_jitter"]``."""
        check_arrival_jitter(rule)
        if self.second is None:
            return self.t_ns.copy()
        self.described["arrival_jitter"] = rule
        if rule == "none" or not len(self):
            return self.t_ns.copy()
        return _jittered(self.t_ns, self.second, self.speedup, seed)


def check_arrival_jitter(rule: str) -> str:
    if rule not in JITTER_RULES:
        raise ConfigError(f"--arrival-jitter `{rule}` is unknown", "uniform or none")
    return rule


def check_max_bad(max_bad: int) -> int:
    if isinstance(max_bad, bool) or not isinstance(max_bad, int) or max_bad < 0:
        raise ConfigError(
            f"--max-bad `{max_bad}` must be a whole number, 0 or more",
            "e.g. --max-bad 10 to serve a trace with up to ten unreadable lines",
        )
    return max_bad


def _jittered(start: U64, second: npt.NDArray[np.int64], speedup: float, seed: int) -> U64:
    """``start`` (each request's second's start) plus a sorted uniform offset within the
    second: [start, next second's start), that start computed as :func:`_scaled` does."""
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ConfigError(f"--seed `{seed}` must be a whole number, 0 or more", "e.g. --seed 1")
    u = np.random.default_rng([int(seed), _JITTER_STREAM]).random(second.size)
    # Seconds are in order, so sorting by (second, u) moves each u only within its second.
    u = u[np.lexsort((u, second))]
    end = np.round((second + 1).astype(np.float64) * NS / speedup)
    width = np.maximum(end - start.astype(np.float64), 0.0)
    within = np.minimum(np.floor(u * width), np.maximum(width - 1.0, 0.0))
    return start + within.astype(np.uint64)


def _read_bytes(path: Path) -> bytes:
    """The file's bytes, gunzipped if it is gzip, without a UTF-8 byte-order mark."""
    import gzip
    import zlib

    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as e:
            raise ConfigError(
                f"trace `{path}` is not a whole gzip file: {e}", "check it with `gunzip -t`"
            ) from None
    return data[3:] if data[:3] == b"\xef\xbb\xbf" else data


def _head(path: Path, n: int = 20) -> list[str]:
    """The first ``n`` non-blank lines of the file (gzip or not)."""
    import gzip

    with open(path, "rb") as f:
        gz = f.read(2) == b"\x1f\x8b"
    opener = gzip.open if gz else open
    out: list[str] = []
    try:
        with opener(path, "rt", encoding="utf-8-sig", errors="replace") as f:
            for line in f:
                if line.strip():
                    out.append(line)
                    if len(out) == n:
                        break
    except (OSError, EOFError):
        pass  # a damaged gzip: no layout of ours, as an access log it is refused by name
    return out


def _lines(data: bytes) -> pa.Array:
    """The file's lines as one binary array, each with its "\\n" (no copy)."""
    import pyarrow as pa

    if not data:
        return pa.array([], pa.large_binary())
    ends = np.flatnonzero(np.frombuffer(data, np.uint8) == 10) + 1
    if ends.size == 0 or ends[-1] != len(data):
        ends = np.append(ends, len(data))
    offsets = np.concatenate(([0], ends)).astype(np.int64)
    return pa.LargeBinaryArray.from_buffers(
        pa.large_binary(), len(ends), [None, pa.py_buffer(offsets), pa.py_buffer(data)]
    )


def _matches(lines: pa.Array, pattern: str) -> npt.NDArray[np.bool_]:
    import pyarrow.compute as pc

    return _bools(pc.match_substring_regex(lines, pattern))


def _bools(values: pa.Array) -> npt.NDArray[np.bool_]:
    return np.asarray(values.to_numpy(zero_copy_only=False), dtype=bool)


def _parsed(values: pa.Array, kind: pa.DataType) -> npt.NDArray[Any]:
    import pyarrow as pa
    import pyarrow.compute as pc

    text = pc.utf8_trim_whitespace(values.cast(pa.large_string()))
    return np.asarray(text.cast(kind).to_numpy(zero_copy_only=False))


def _text(line: bytes) -> str:
    return line.decode("utf-8", errors="replace").strip()


def _unreadable(path: Path, bad: npt.NDArray[np.intp], why: str, max_bad: int) -> dict[str, Any]:
    """What the manifest counts of a block trace's unreadable lines (``bad``, 0-based, in
    order; ``why`` the first one's reason), or the error past ``max_bad`` of them."""
    first = {"line": int(bad[0]) + 1, "reason": why} if bad.size else None
    if bad.size > max_bad:
        assert first is not None
        lines = "line" if bad.size == 1 else "lines"
        raise ConfigError(
            f"block trace `{path}`: {bad.size} unreadable {lines} (first: line"
            f" {first['line']}, {why})",
            f"fix them or allow them with --max-bad {bad.size}",
        )
    return {"bad_lines": int(bad.size), "first_bad": first}


def _scaled(t_ns: npt.NDArray[Any], speedup: float) -> U64:
    t = np.asarray(t_ns, dtype=np.float64)
    t = (t - t.min()) / speedup if t.size else t
    if t.size and t.max() >= 2.0**64:
        raise ConfigError(
            f"the trace spans {t.max() / 1e9 / 86400 / 365.25:,.0f} years, more than the"
            " simulator's nanosecond clock holds (584 years)",
            "check the unit of its time column (an MSR trace counts 100 ns ticks)",
        )
    out = np.round(t).astype(np.uint64)
    if out.size and (out[1:] < out[:-1]).any():
        raise ConfigError(
            "the trace's requests are not in time order",
            "sort it by time first (e.g. `sort -t, -k1,1n` for a CSV block trace)",
        )
    return out


def _msr(path: Path, speedup: float, max_bad: int) -> Requests:
    data = _read_bytes(path)
    first = re.match(rb"\s*([^\n]*)", data[:4096])
    header = bool(first and _MSR_HEADER.match(first.group(1).decode("utf-8", "replace")))
    clean = _msr_clean(data, header)
    if clean is None:
        (ticks, offset, size, write), bad = _msr_lines(path, data, max_bad)
    else:
        (ticks, offset, size, write), bad = clean, {"bad_lines": 0, "first_bad": None}
    if not ticks.size:
        raise ConfigError(f"block trace `{path}` has no requests", MSR_HINT)
    return Requests(
        # From the first tick, in integers: real MSR ticks (~1.28e17) lose 2 µs as float ns.
        _scaled((ticks - ticks.min()).astype(np.float64) * 100.0, speedup),
        offset.astype(np.uint64),
        np.maximum(size.astype(np.uint64), 1),
        write,
        {
            "layout": "msr-csv",
            "path": str(path),
            "header": header,
            "requests": int(ticks.size),
            "writes": int(write.sum()),
            **bad,
            "arrival_jitter": "block trace: own times",
        },
    )


_Columns = tuple[
    npt.NDArray[np.int64], npt.NDArray[np.uint64], npt.NDArray[np.uint64], npt.NDArray[np.bool_]
]


def _msr_csv(data: bytes | pa.Buffer, header: bool) -> tuple[_Columns, npt.NDArray[np.bool_]]:
    """The rows' columns, read by pyarrow's CSV reader (multi-threaded), and which rows hold
    values in range; a pyarrow error if any row does not read."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pcsv

    u64 = pa.uint64()
    kinds = (pa.int64(), pa.string(), u64, pa.string(), u64, u64, u64)
    table = pcsv.read_csv(
        pa.BufferReader(data),
        read_options=pcsv.ReadOptions(column_names=list(MSR_COLUMNS), skip_rows=int(header)),
        parse_options=pcsv.ParseOptions(quote_char=False),
        convert_options=pcsv.ConvertOptions(
            column_types=dict(zip(MSR_COLUMNS, kinds, strict=True)),
            null_values=[],
            strings_can_be_null=False,
            include_columns=[c for c in MSR_COLUMNS if c != "Hostname"],
        ),
    )
    kind = pc.ascii_lower(table["Type"])
    write = _bools(pc.equal(kind, "write"))
    read = _bools(pc.equal(kind, "read"))
    ticks = table["Timestamp"].to_numpy()
    offset = table["Offset"].to_numpy()
    size = table["Size"].to_numpy()
    fine = (write | read) & (ticks >= 0) & (ticks < _LIMIT) & (offset < _LIMIT) & (size < _LIMIT)
    for name in ("DiskNumber", "ResponseTime"):
        fine &= table[name].to_numpy() < np.uint64(_LIMIT_U64)
    return (ticks, offset, size, write), fine


def _msr_clean(data: bytes, header: bool) -> _Columns | None:
    """A clean file's columns; None when any row does not read, for :func:`_msr_lines` to
    count and name them."""
    import pyarrow as pa

    try:
        columns, fine = _msr_csv(data, header)
    except (pa.ArrowInvalid, ValueError):
        return None
    return columns if fine.all() else None


def _msr_lines(path: Path, data: bytes, max_bad: int) -> tuple[_Columns, dict[str, Any]]:
    """Every line matched at once against an MSR row (blank lines and the header skipped),
    the count of those that do not and the rows that do, read as CSV."""
    import pyarrow as pa

    lines = _lines(data)
    skip = _matches(lines, _BLANK)
    ok = _matches(lines, _MSR_ROW) & ~skip
    kept = np.flatnonzero(ok)
    if kept.size:
        # The rows that match, one after another in one buffer, read as the clean file is.
        rows = lines.filter(pa.array(ok))
        _, offsets, text = rows.buffers()
        at = np.frombuffer(offsets, np.int64)[rows.offset : rows.offset + len(rows) + 1]
        columns, fine = _msr_csv(text.slice(int(at[0]), int(at[-1] - at[0])), False)
        if fine.size != kept.size:
            raise RuntimeError(f"{kept.size} MSR rows matched, {fine.size} read")
    else:
        empty = np.zeros(0, np.uint64)
        columns, fine = (empty.astype(np.int64), empty, empty, empty.astype(bool)), empty > 0
    bad = np.union1d(np.flatnonzero(~ok & ~skip), kept[~fine])
    why = ""
    if bad.size:
        first = _text(lines[int(bad[0])].as_py())
        header = _MSR_HEADER.match(first) and not (~skip[: bad[0]]).any()
        if header:  # the header line, where it belongs: not a bad line
            bad = bad[1:]
        why = _msr_reason(_text(lines[int(bad[0])].as_py())) if bad.size else ""
    counted = _unreadable(path, bad, why, max_bad)
    ticks, offset, size, write = columns
    return (ticks[fine], offset[fine], size[fine], write[fine]), counted


def _msr_reason(line: str) -> str:
    """Why an MSR line does not read, in a few words."""
    fields = line.split(",")
    if len(fields) != len(MSR_COLUMNS):
        return f"{len(fields)} fields, not the {len(MSR_COLUMNS)} of an MSR row"
    for name, value in zip(MSR_COLUMNS, fields, strict=True):
        v = value.strip()
        if name == "Type" and value.lower() not in ("read", "write"):
            return f"Type `{value}` is not Read or Write"
        if name in ("Hostname", "Type"):
            continue
        if not re.fullmatch(r"[ \t]*(?:0[xX][0-9a-fA-F]+|\d+)[ \t]*", value):
            return f"{name} `{v}` is not a whole number"
        big = int(v, 16) if v[:2].lower() == "0x" else int(v)
        if big >= (_LIMIT_U64 if name in ("DiskNumber", "ResponseTime") else _LIMIT):
            return f"{name} `{v}` is out of range"
    return "not an MSR row"


def _blkparse(path: Path, speedup: float, max_bad: int) -> Requests:
    import pyarrow as pa
    import pyarrow.compute as pc

    lines = _lines(_read_bytes(path))
    n = len(lines)
    event = _matches(lines, _BLK_MARK)
    unread = event & ~_matches(lines, _BLK_EVENT_OK)
    # Q lines: a request (sector + count), a request without data, or unreadable.
    queued = np.flatnonzero(_matches(lines, _BLK_Q))
    q_lines = lines.take(pa.array(queued))
    req = pc.extract_regex(q_lines, _BLK_QUEUED)
    is_req = _bools(req.is_valid())
    unread[queued[~is_req & ~_matches(q_lines, _BLK_NO_DATA)]] = True
    req = req.filter(pa.array(is_req))
    sector = _parsed(req.field("sector"), pa.uint64())
    count = _parsed(req.field("count"), pa.uint64())
    fine = sector < _MAX_SECTOR
    unread[queued[is_req][~fine]] = True
    t = _parsed(req.field("t").filter(pa.array(fine)), pa.float64()) * 1e9
    write = _bools(pc.match_substring(req.field("rwbs").filter(pa.array(fine)), b"W"))
    # Lines that are not events: blank, blkparse's own notes, its summary (from its first
    # heading to the end), or unreadable.
    at = np.flatnonzero(~event)
    others = lines.take(pa.array(at))
    other = ~_matches(others, _BLANK) & ~_matches(others, _BLK_INPUT.pattern)
    stats = np.zeros(n + 1, bool)
    stats[at] = _matches(others, _BLK_STATS)
    heading = other & (_matches(others, _BLK_SUMMARY) | stats[at + 1])
    summary = at[np.argmax(heading)] if heading.any() else n
    unread[at[other & (at < summary)]] = True
    bad = np.flatnonzero(unread)
    why = _blk_reason(_text(lines[int(bad[0])].as_py())) if bad.size else ""
    counted = _unreadable(path, bad, why, max_bad)
    if not t.size:
        raise ConfigError(f"blkparse output `{path}` has no Q (queue) lines", "run blkparse -i …")
    return Requests(
        _scaled(t, speedup),
        sector[fine] * np.uint64(512),
        np.maximum(count[fine] * np.uint64(512), 1),
        write,
        {
            "layout": "blkparse",
            "path": str(path),
            "requests": int(t.size),
            "writes": int(write.sum()),
            **counted,
            "arrival_jitter": "block trace: own times",
        },
    )


def _blk_reason(line: str) -> str:
    """Why a blkparse line does not read, in a few words."""
    if not re.match(_BLK_MARK, line + "\n"):
        return "not a blkparse event line (dev cpu seq time pid action …)"
    parts = line.split()
    if len(parts) < 7:
        return "an event line cut short"
    for name, value in (("cpu", parts[1]), ("sequence", parts[2]), ("pid", parts[4])):
        if not value.isdigit():
            return f"{name} `{value}` is not a whole number"
    if not re.fullmatch(r"\d+\.\d+", parts[3]):
        return f"time `{parts[3]}` is not in seconds"
    if parts[5] == "Q" and len(parts) >= 10 and parts[8] == "+":
        for name, value in (("sector", parts[7]), ("count", parts[9])):
            if not value.isdigit():
                return f"{name} `{value}` is not a whole number"
        if len(parts[9].lstrip("0")) > 10:
            return f"count `{parts[9]}` is out of range"
        return f"sector `{parts[7]}` is past any device's end"
    if parts[5] == "Q":
        return "a Q line without `sector + count`"
    return "an event line that does not read"


def _replay_run(path: Path) -> Any:
    """A replay run's requests.parquet, in the columns a log's requests have."""
    import pyarrow.parquet as pq

    columns = ["offset_ns", "method", "target", "log_status", "log_bytes"]
    table = pq.read_table(path / "requests.parquet", columns=columns)
    return table.rename_columns(["offset_ns", "method", "target", "status", "bytes"])


def _replay_speedup(path: Path) -> float:
    """The speed-up a replay run's manifest records (its ``config.speedup``)."""
    from iowatt.store.runs import read_manifest

    hint = "give the simulation its own --speedup"
    try:
        config = read_manifest(path).get("config")
    except StoreError as e:
        raise ConfigError(f"replay run `{path}`: {e.message}", hint) from None
    value = config.get("speedup") if isinstance(config, dict) else None
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ConfigError(
            f"replay run `{path}`: its manifest's speed-up `{value}` is not a number above 0",
            hint,
        )
    return _check_speedup(float(value))


def _log(path: Path, fmt: str, filters: Filters | None) -> tuple[Any, dict[str, Any]]:
    """A log's requests through the traces' filters, with what each dropped."""
    import pyarrow as pa

    from iowatt.trace.log import read_log
    from iowatt.trace.schedule import offsets_ns

    table = read_log(path, fmt).table
    dropped: dict[str, int] = {}
    if filters is not None:
        table, dropped = filters.apply(table)
    offsets = offsets_ns(table["time_s"].to_numpy(), "start")
    table = table.append_column("offset_ns", pa.array(offsets))
    return table, {"filters": filters.describe() if filters else None, "dropped": dropped}


def _web(
    path: Path, fmt: str, speedup: float | None, tree: Path | None, filters: Filters | None
) -> Requests:
    from iowatt.replay.source import load

    read: dict[str, Any] = {}
    if path.is_dir() and filters is not None and filters != Filters():
        raise ConfigError(
            f"`{path}` is not a log: the filters (--from, --status, …) apply to a log",
            "a split was filtered when it was made; give the log itself to filter it",
        )
    if (path / MANIFEST).is_file() and (path / "requests.parquet").is_file():
        req, layout = _replay_run(path), "replay-run"
    elif path.is_dir():
        req, layout = load(path, fmt, "start").requests, "split"
    else:
        (req, read), layout = _log(path, fmt, filters), "access-log"
    if speedup is not None:
        source = "--speedup"
    elif layout == "replay-run":
        speedup, source = _replay_speedup(path), "the replay run's manifest"
    else:
        speedup, source = 1.0, "default"
    method = np.array(req["method"].to_pylist(), dtype=object)
    status = np.array([s or 0 for s in req["status"].to_pylist()])
    size = np.array([b or 0 for b in req["bytes"].to_pylist()], dtype=np.int64)
    keep = (method == "GET") & (status >= 200) & (status < 300) & (size > 0)
    targets = [t.split("?", 1)[0] for t in np.array(req["target"].to_pylist(), dtype=object)[keep]]
    offsets_ns = np.asarray(req["offset_ns"].to_numpy(), dtype=np.int64)[keep]
    size = size[keep]
    where, known = _layout(targets, size, tree)
    offset = np.array([where[t] for t in targets], dtype=np.uint64)
    number = {name: i for i, name in enumerate(where)}
    file_of = np.array([number[t] for t in targets], dtype=np.int64)
    files = (
        np.fromiter(where.values(), dtype=np.uint64, count=len(where)),
        [name.rsplit("/", 1)[0] or "/" for name in where],
    )
    # Whole seconds (a log's, or a split's or replay's spread `start`): arrivals() may jitter.
    second = None
    if not (offsets_ns % NS).any():
        second = (offsets_ns - offsets_ns.min()) // NS if offsets_ns.size else offsets_ns
    return Requests(
        _scaled(offsets_ns, speedup),
        offset,
        size.astype(np.uint64),
        np.zeros(size.size, dtype=bool),
        {
            "layout": layout,
            "path": str(path),
            "format": fmt,
            **read,
            "requests": len(targets),
            "left_out": int((~keep).sum()),
            "files": len(where),
            "tree": str(tree) if tree else None,
            "not_in_tree": known,
            "speedup": speedup,
            "speedup_from": source,
            "arrival_jitter": "none" if second is not None else "the trace's own times",
        },
        second=second,
        speedup=speedup,
        files=files,
        file_of=file_of,
    )


def _layout(
    targets: list[str], size: npt.NDArray[np.int64], tree: Path | None
) -> tuple[dict[str, int], int]:
    """Each file's array offset: the tree's files in its order, or the log's in order of first
    request at the largest size sent; and how many requested files the tree lacks (laid out
    after its files)."""
    largest: dict[str, int] = {}
    for t, s in zip(targets, size.tolist(), strict=True):
        largest[t] = max(largest.get(t, 0), s)
    files: dict[str, int] = {}
    if tree is not None:
        from iowatt.tree.manifest import read

        table, _ = read(tree)
        for p, kind, s in zip(
            table["path"].to_pylist(),
            table["type"].to_pylist(),
            table["size"].to_pylist(),
            strict=True,
        ):
            if kind == "file":
                files["/" + p.lstrip("/")] = max(int(s or 0), 1)
    missing = [t for t in largest if t not in files]
    for t in missing:
        files[t] = largest[t]
    where, at = {}, 0
    for name, s in files.items():
        where[name] = at
        at += -(-max(s, largest.get(name, 0)) // ALIGN) * ALIGN
    return where, len(missing) if tree is not None else 0


def _check_speedup(speedup: float) -> float:
    if not (speedup > 0 and np.isfinite(speedup)):
        raise ConfigError(f"--speedup `{speedup}` must be above 0", "e.g. --speedup 8")
    return speedup


def _block_reader(head: list[str]) -> Callable[[Path, float, int], Requests] | None:
    """The reader of a block trace whose first lines are ``head``; None for any other trace.
    One of them in the layout will do: the others are read, or counted as unreadable."""
    if any(_BLK_EVENT.match(line) for line in head):
        return _blkparse
    if any(_MSR.match(line) for line in head) or (head and _MSR_HEADER.match(head[0])):
        return _msr
    return None


def load_requests(
    path: Path,
    fmt: str,
    speedup: float | None = None,
    tree: Path | None = None,
    filters: Filters | None = None,
    *,
    max_bad: int = 0,
) -> Requests:
    """The requests of the trace at ``path`` (module doc), or one error saying which layouts
    were tried. ``speedup`` None takes a replay run's own and 1 for any other trace;
    ``max_bad`` is how many unreadable lines a block trace may have."""
    if speedup is not None:
        _check_speedup(speedup)
    check_max_bad(max_bad)
    if path.is_dir():
        return _web(path, fmt, speedup, tree, filters)
    if not path.is_file():
        raise ConfigError(f"trace `{path}` does not exist", "give a block trace or an access log")
    read = _block_reader(_head(path))
    if read is not None:
        used = 1.0 if speedup is None else speedup
        req = read(path, used, max_bad)
        req.described["speedup"] = req.speedup = used
        req.described["speedup_from"] = "default" if speedup is None else "--speedup"
        return req
    try:
        return _web(path, fmt, speedup, tree, filters)
    except ConfigError as e:
        raise ConfigError(
            f"trace `{path}` is in no layout iowatt knows (tried {LAYOUTS}): {e.message}",
            "an access log in another format needs --format; see docs/sim-raid.md",
        ) from None
