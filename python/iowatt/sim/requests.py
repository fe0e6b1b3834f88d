"""What the RAID simulator serves: requests at the array (arrival ns, offset, bytes), from

- a block trace: MSR-Cambridge CSV or blkparse text (:mod:`iowatt.sim.block_traces`), its
  unreadable lines counted and refused past ``max_bad``;
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

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from iowatt.errors import ConfigError, StoreError
from iowatt.sim.block_traces import read_block_trace
from iowatt.store.manifest import MANIFEST
from iowatt.trace.filters import Filters

if TYPE_CHECKING:
    import pyarrow as pa

ALIGN = 4096  # files start on 4 KiB boundaries
NS = 1_000_000_000
LAYOUTS = (
    "MSR-Cambridge CSV, blkparse text, an access log (--format), a split directory, a replay run"
)
JITTER_RULES = ("uniform", "none")
# Jitter's draws come from their own stream of the seed, apart from its rotational positions.
_JITTER_STREAM = 0x1A77E2

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
    files: tuple[U64, pa.Array] | None = None
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
    laid = _layout(targets, size, tree)
    offset = laid.offsets[laid.file_of]
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
            "files": len(laid.paths),
            "tree": str(tree) if tree else None,
            "not_in_tree": laid.missing,
            "speedup": speedup,
            "speedup_from": source,
            "arrival_jitter": "none" if second is not None else "the trace's own times",
        },
        second=second,
        speedup=speedup,
        files=(laid.offsets, laid.paths),
        file_of=laid.file_of,
    )


@dataclass
class _Layout:
    """Files on the array in layout order: their paths, array offsets, and each request's file
    among them; how many requested files a tree lacks."""

    paths: pa.Array
    offsets: U64
    file_of: npt.NDArray[np.int64]
    missing: int


def _layout(targets: list[str], size: npt.NDArray[np.int64], tree: Path | None) -> _Layout:
    """Each file's array offset: the tree's files in its order, or the log's in order of first
    request at the largest size sent; and how many requested files the tree lacks (laid out
    after its files). Columnar, so a tree of half a million files costs no Python objects."""
    import pyarrow as pa
    import pyarrow.compute as pc

    asked = pa.array(targets, pa.string())
    unique = pc.unique(asked)  # in order of first request
    largest = np.zeros(len(unique), dtype=np.int64)
    np.maximum.at(largest, np.asarray(pc.index_in(asked, unique)), size)
    paths, sizes = pa.array([], pa.string()), np.zeros(0, dtype=np.int64)
    if tree is not None:
        from iowatt.tree.manifest import read

        table, _ = read(tree)
        table = table.filter(pc.equal(table["type"], "file"))
        # The log's targets are absolute; the manifest's paths are relative to its root.
        trimmed = pc.utf8_ltrim(table["path"], "/").combine_chunks()
        paths = pc.binary_join_element_wise("", trimmed, "/").cast(pa.string())
        sizes = np.maximum(table["size"].fill_null(0).to_numpy(), 1).astype(np.int64)
    in_tree = np.asarray(pc.is_in(unique, paths))
    extra = unique.filter(pa.array(~in_tree))
    paths = pa.concat_arrays([paths, extra])
    # A file is laid out at the larger of its size in the tree and what the log sent of it.
    sent = np.zeros(len(paths), dtype=np.int64)
    at = np.asarray(pc.index_in(unique, paths))
    sent[at] = largest
    sizes = np.maximum(np.concatenate([sizes, np.zeros(len(extra), np.int64)]), sent)
    aligned = -(-sizes // ALIGN) * ALIGN
    offsets = (np.cumsum(aligned) - aligned).astype(np.uint64)
    file_of = np.asarray(pc.index_in(asked, paths)).astype(np.int64)
    return _Layout(paths, offsets, file_of, len(extra) if tree is not None else 0)


def _check_speedup(speedup: float) -> float:
    if not (speedup > 0 and np.isfinite(speedup)):
        raise ConfigError(f"--speedup `{speedup}` must be above 0", "e.g. --speedup 8")
    return speedup


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
    block = read_block_trace(path, max_bad)
    if block is not None:
        used = 1.0 if speedup is None else speedup
        return Requests(
            _scaled(block.t_ns, used),
            block.offset,
            block.size,
            block.write,
            {
                **block.described,
                "speedup": used,
                "speedup_from": "default" if speedup is None else "--speedup",
            },
            speedup=used,
        )
    try:
        return _web(path, fmt, speedup, tree, filters)
    except ConfigError as e:
        raise ConfigError(
            f"trace `{path}` is in no layout iowatt knows (tried {LAYOUTS}): {e.message}",
            "an access log in another format needs --format; see docs/sim-raid.md",
        ) from None
