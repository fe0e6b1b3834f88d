"""What the RAID simulator serves: requests at the array (arrival ns, offset, bytes), from

- a block trace: the SNIA/MSR-Cambridge CSV layout (``Timestamp,Hostname,DiskNumber,Type,
  Offset,Size,ResponseTime``, timestamps in 100 ns ticks) or blkparse's default text output
  (its ``Q`` — queued — lines: sector and count, 512-byte sectors);
- a web access log (any format ``iowatt trace`` reads), a ``iowatt trace split`` directory or
  a replay run's directory (its ``requests.parquet``, the log's status and size per request):
  the answered GETs with a body, each file laid out on the array once, in order of first
  request, at the largest size the log sent it — or as a tree manifest (``iowatt tree
  snapshot``) lists the files, with their sizes;

sped up by ``speedup`` (arrival times divided by it) and checked in time order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from iowatt.errors import ConfigError
from iowatt.store.manifest import MANIFEST
from iowatt.trace.filters import Filters

ALIGN = 4096  # files start on 4 KiB boundaries
_MSR = re.compile(r"^\d+,[^,]*,\d+,(Read|Write),\d+,\d+,\d+\s*$", re.IGNORECASE)
_BLKPARSE = re.compile(r"^\s*\d+,\d+\s+\d+\s+\d+\s+\d+\.\d+\s+\d+\s+[A-Z]+\s+[RWDFNSMAB]+\s+\d+")
LAYOUTS = (
    "MSR-Cambridge CSV, blkparse text, an access log (--format), a split directory, a replay run"
)

U64 = npt.NDArray[np.uint64]


@dataclass
class Requests:
    t_ns: U64
    offset: U64
    size: U64
    write: npt.NDArray[np.bool_]
    # what the trace was and how it was read (recorded in the manifest)
    described: dict[str, Any]

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


def _first_line(path: Path) -> str:
    import gzip

    opener = gzip.open if path.read_bytes()[:2] == b"\x1f\x8b" else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.strip():
                return line
    return ""


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
    order = np.argsort(out, kind="stable")
    if not np.array_equal(order, np.arange(out.size)):
        raise ConfigError(
            "the trace's requests are not in time order",
            "sort it by time first (e.g. `sort -t, -k1,1n` for a CSV block trace)",
        )
    return out


def _msr(path: Path, speedup: float) -> Requests:
    import pyarrow as pa
    import pyarrow.csv as pcsv

    names = ["Timestamp", "Hostname", "DiskNumber", "Type", "Offset", "Size", "ResponseTime"]
    hint = "the MSR-Cambridge layout: Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime"
    types = {
        "Timestamp": pa.int64(),
        "Offset": pa.uint64(),
        "Size": pa.uint64(),
        "Type": pa.string(),
        "Hostname": pa.string(),
    }
    try:
        table = pcsv.read_csv(
            path,
            read_options=pcsv.ReadOptions(column_names=names),
            convert_options=pcsv.ConvertOptions(column_types=types),
        )
    except (pa.ArrowInvalid, ValueError) as e:
        reason = str(e).splitlines()[0]
        raise ConfigError(f"block trace `{path}` is not a clean MSR CSV: {reason}", hint) from None
    kinds = [str(t).lower() for t in table["Type"].to_pylist()]
    odd = next((i for i, k in enumerate(kinds) if k not in ("read", "write")), None)
    if odd is not None:
        raise ConfigError(
            f"block trace `{path}` row {odd + 1} has Type `{table['Type'][odd]}`", hint
        )
    ticks = table["Timestamp"].to_numpy().astype(np.float64)
    if (ticks < 0).any():
        raise ConfigError(f"block trace `{path}` has a negative Timestamp", hint)
    write = np.array([k == "write" for k in kinds], dtype=bool)
    return Requests(
        _scaled(ticks * 100.0, speedup),
        table["Offset"].to_numpy().astype(np.uint64),
        np.maximum(table["Size"].to_numpy().astype(np.uint64), 1),
        write,
        {
            "layout": "msr-csv",
            "path": str(path),
            "requests": table.num_rows,
            "writes": int(write.sum()),
        },
    )


def _blkparse(path: Path, speedup: float) -> Requests:
    t, off, size, write = [], [], [], []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            parts = line.split()
            # dev cpu seq time pid action rwbs sector + count
            if len(parts) >= 10 and parts[5] == "Q" and parts[8] == "+":
                try:
                    row = (float(parts[3]) * 1e9, int(parts[7]) * 512, int(parts[9]) * 512)
                except ValueError:
                    continue
                if min(row) < 0 or max(row[1:]) >= 2**63:
                    continue  # not a request a device could have queued
                t.append(row[0])
                off.append(row[1])
                size.append(row[2])
                write.append("W" in parts[6])
    if not t:
        raise ConfigError(f"blkparse output `{path}` has no Q (queue) lines", "run blkparse -i …")
    return Requests(
        _scaled(np.array(t), speedup),
        np.array(off, dtype=np.uint64),
        np.maximum(np.array(size, dtype=np.uint64), 1),
        np.array(write, dtype=bool),
        {"layout": "blkparse", "path": str(path), "requests": len(t), "writes": sum(write)},
    )


def _replay_run(path: Path) -> Any:
    """A replay run's requests.parquet, in the columns a log's requests have."""
    import pyarrow.parquet as pq

    columns = ["offset_ns", "method", "target", "log_status", "log_bytes"]
    table = pq.read_table(path / "requests.parquet", columns=columns)
    return table.rename_columns(["offset_ns", "method", "target", "status", "bytes"])


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
    path: Path, fmt: str, speedup: float, tree: Path | None, filters: Filters | None
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
    method = np.array(req["method"].to_pylist(), dtype=object)
    status = np.array([s or 0 for s in req["status"].to_pylist()])
    size = np.array([b or 0 for b in req["bytes"].to_pylist()], dtype=np.int64)
    keep = (method == "GET") & (status >= 200) & (status < 300) & (size > 0)
    targets = [t.split("?", 1)[0] for t in np.array(req["target"].to_pylist(), dtype=object)[keep]]
    offsets_ns = req["offset_ns"].to_numpy()[keep]
    size = size[keep]
    where, known = _layout(targets, size, tree)
    offset = np.array([where[t] for t in targets], dtype=np.uint64)
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
        },
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


def load_requests(
    path: Path,
    fmt: str,
    speedup: float,
    tree: Path | None = None,
    filters: Filters | None = None,
) -> Requests:
    """The requests of the trace at ``path`` (module doc), or one error saying which layouts
    were tried."""
    if not (speedup > 0 and np.isfinite(speedup)):
        raise ConfigError(f"--speedup `{speedup}` must be above 0", "e.g. --speedup 8")
    if path.is_dir():
        return _web(path, fmt, speedup, tree, filters)
    if not path.is_file():
        raise ConfigError(f"trace `{path}` does not exist", "give a block trace or an access log")
    first = _first_line(path)
    if _MSR.match(first):
        return _msr(path, speedup)
    if _BLKPARSE.match(first):
        return _blkparse(path, speedup)
    try:
        return _web(path, fmt, speedup, tree, filters)
    except ConfigError as e:
        raise ConfigError(
            f"trace `{path}` is in no layout iowatt knows (tried {LAYOUTS}): {e.message}",
            "an access log in another format needs --format; see docs/sim-raid.md",
        ) from None
