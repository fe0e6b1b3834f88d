"""Block traces for the RAID simulator (:mod:`iowatt.sim.requests` makes them requests): the
SNIA/MSR-Cambridge CSV layout (``Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime``,
timestamps in 100 ns ticks; its header line is optional) and blkparse's default text output (its
``Q`` — queued — lines: sector and count, 512-byte sectors).

A line that does not read is counted and the first one named with its reason; past ``max_bad``
of them the trace is refused. blkparse's other actions, its ``Input file … added`` lines and its
closing summary (``CPU0 (8,0):`` …) are not requests and are not counted.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from iowatt.errors import ConfigError

if TYPE_CHECKING:
    import pyarrow as pa

MSR_COLUMNS = ("Timestamp", "Hostname", "DiskNumber", "Type", "Offset", "Size", "ResponseTime")
MSR_HINT = "the MSR-Cambridge layout: " + ",".join(MSR_COLUMNS)

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


@dataclass
class Block:
    """A block trace's requests: times (ns from the first, not yet sped up), offsets, sizes,
    write flags, and what was read (recorded in the run's manifest)."""

    t_ns: npt.NDArray[np.float64]
    offset: npt.NDArray[np.uint64]
    size: npt.NDArray[np.uint64]
    write: npt.NDArray[np.bool_]
    described: dict[str, Any]


def read_block_trace(path: Path, max_bad: int) -> Block | None:
    """The block trace at ``path``, or None when its first lines are in neither layout."""
    read = _reader(_head(path))
    return None if read is None else read(path, max_bad)


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


def _msr(path: Path, max_bad: int) -> Block:
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
    return Block(
        # From the first tick, in integers: real MSR ticks (~1.28e17) lose 2 µs as float ns.
        (ticks - ticks.min()).astype(np.float64) * 100.0,
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


def _blkparse(path: Path, max_bad: int) -> Block:
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
    return Block(
        t,
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


def _reader(head: list[str]) -> Callable[[Path, int], Block] | None:
    """The reader of a block trace whose first lines are ``head``; None for any other trace.
    One of them in the layout will do: the others are read, or counted as unreadable."""
    if any(_BLK_EVENT.match(line) for line in head):
        return _blkparse
    if any(_MSR.match(line) for line in head) or (head and _MSR_HEADER.match(head[0])):
        return _msr
    return None
