"""``iowatt age``: fill a file system with files of random sizes, then delete a random share of
them, so benchmarks run on aged, fragmented free space rather than on a blank disk.

The storage-workloads study (``spec/storage-workloads.md``) filled 570 GB with files of 1 kB–75
GB, then deleted ~400 files of 50 kB–1 GB to free 37 GB. This module does the same from a seed:
sizes come from a log-uniform (or uniform) distribution, the files to delete are drawn at random
among those in a size window until enough bytes are freed, and every file is listed in
``DIR/iowatt-age/manifest.json``, so the state can be recreated elsewhere (:func:`recreate`) and
removed exactly (:func:`cleanup`).

The manifest is rewritten atomically as files are written and always names every file that may
exist: the next batch of files is listed as ``pending`` before it is written. A run stopped by
Ctrl-C, SIGTERM or a full file system leaves it with ``"status": "incomplete"`` and the reason.
The file system is synced once between the fill and the deletions (so that deleted files held
real blocks: with delayed allocation, a file deleted before writeback leaves no hole) and once at
the end.
"""

from __future__ import annotations

import errno
import json
import math
import os
import random
import re
import secrets
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from iowatt import __version__
from iowatt.errors import ConfigError, RunInterrupted, TargetError
from iowatt.hostinfo import find_mount, read_mounts
from iowatt.units import format_bytes, parse_size

AGE_DIR = "iowatt-age"
MANIFEST = "manifest.json"
VERSION = 1
CHUNK = 1 << 20
FILES_PER_DIR = 1000
PENDING = 1000  # files named in the manifest ahead of their writing (or half those written)
CHECKPOINT_S = 30.0  # the manifest is rewritten at least this often
DISTS = ("loguniform", "uniform")
DEFAULT_SIZES = "1k..75g"
DEFAULT_DELETE = "7%"
_FILE = re.compile(r"d[0-9]+/f[0-9]+")
_DIR = re.compile(r"d[0-9]+")
_MANIFEST_HINT = "give the manifest.json that `iowatt age` wrote (DIR/iowatt-age/manifest.json)"

Progress = Callable[[str, int, int], None]
"""Called with a phase (``writing``, ``syncing``, ``deleting``), bytes done and bytes in all."""


# --- parameters --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Amount:
    """A share in percent or a number of bytes, with the text the user typed (``90%``, ``20g``)."""

    text: str
    percent: float | None = None
    nbytes: int | None = None

    def of(self, whole: int) -> int:
        """Bytes this amount stands for, as a share of ``whole`` bytes when it is a percentage."""
        if self.nbytes is not None:
            return self.nbytes
        return round(whole * (self.percent or 0.0) / 100)


def parse_amount(text: str, option: str, *, zero_ok: bool) -> Amount:
    """``90%`` or a size (``37g``); a ConfigError naming ``option`` and the value otherwise."""
    t = text.strip()
    if t.endswith("%"):
        try:
            pct = float(t[:-1])
        except ValueError:
            pct = math.nan
        if not ((pct >= 0 if zero_ok else pct > 0) and pct <= 100):  # NaN fails both
            lowest = "from 0" if zero_ok else "above 0"
            raise ConfigError(
                f"{option} `{text}` is not a percentage {lowest} to 100",
                hint=f"e.g. `{option} 90%`, or a size such as `{option} 20g`",
            )
        return Amount(text, percent=pct)
    n = parse_size(t, option)
    if n == 0 and not zero_ok:
        raise ConfigError(f"{option} `{text}` must be above zero", hint=f"e.g. `{option} 90%`")
    return Amount(text, nbytes=n)


def parse_range(text: str, option: str) -> tuple[int, int]:
    """``1k..75g`` as (1024, 80530636800): a smallest size of at least 1 byte, then the largest."""
    lo_text, sep, hi_text = text.partition("..")
    if not sep:
        raise ConfigError(
            f"{option} `{text}` is not a range of sizes",
            hint=f"give the smallest and the largest size, e.g. `{option} 1k..75g`",
        )
    lo, hi = parse_size(lo_text.strip(), option), parse_size(hi_text.strip(), option)
    if lo < 1 or lo > hi:
        raise ConfigError(
            f"{option} `{text}` must go from at least 1 byte up to a size not below it",
            hint=f"e.g. `{option} 1k..75g`",
        )
    return lo, hi


def parse_seed(text: str | int | None) -> int:
    """A seed of 0 or more; a new random one when ``None`` (it is recorded in the manifest)."""
    if text is None:
        return secrets.randbelow(2**32)
    try:
        seed = int(text)
    except ValueError:
        seed = -1
    if seed < 0:
        raise ConfigError(f"--seed `{text}` is not a whole number of 0 or more", hint="e.g. 42")
    return seed


@dataclass(frozen=True)
class AgeConfig:
    """What to write and what to delete; see :meth:`parse` for the options' syntax."""

    fill: Amount
    sizes: tuple[int, int]
    delete: Amount
    delete_sizes: tuple[int, int] | None = None
    dist: str = "loguniform"
    seed: int = 0
    files_per_dir: int = FILES_PER_DIR

    @classmethod
    def parse(
        cls,
        fill: str,
        sizes: str = DEFAULT_SIZES,
        delete: str = DEFAULT_DELETE,
        delete_sizes: str | None = None,
        dist: str = "loguniform",
        seed: str | int | None = None,
    ) -> AgeConfig:
        if dist not in DISTS:
            raise ConfigError(f"--dist `{dist}` is not one of {', '.join(DISTS)}", "e.g. uniform")
        return cls(
            fill=parse_amount(fill, "--fill", zero_ok=False),
            sizes=parse_range(sizes, "--sizes"),
            delete=parse_amount(delete, "--delete", zero_ok=True),
            delete_sizes=parse_range(delete_sizes, "--delete-sizes") if delete_sizes else None,
            dist=dist,
            seed=parse_seed(seed),
        )

    def params(self) -> dict[str, Any]:
        return {
            "fill": self.fill.text,
            "sizes": list(self.sizes),
            "dist": self.dist,
            "delete": self.delete.text,
            "delete_sizes": list(self.delete_sizes) if self.delete_sizes else None,
            "files_per_dir": self.files_per_dir,
            "chunk_bytes": CHUNK,
        }


# --- pure planning -----------------------------------------------------------------------------


def size_stream(seed: int, lo: int, hi: int, dist: str = "loguniform") -> Iterator[int]:
    """Endless file sizes in ``[lo, hi]``: log-uniform (most files small, a few huge, like the
    study's) or uniform. The same seed gives the same sizes."""
    rng = random.Random(seed)
    if dist == "uniform":
        while True:
            yield rng.randint(lo, hi)
    a, b = math.log(lo), math.log(hi + 1)
    while True:
        yield max(lo, min(hi, int(math.exp(rng.uniform(a, b)))))


def plan_sizes(total: int, seed: int, lo: int, hi: int, dist: str = "loguniform") -> list[int]:
    """The sizes of the files holding ``total`` bytes: drawn in turn, the last one cut to fit."""
    sizes: list[int] = []
    left = total
    for size in size_stream(seed, lo, hi, dist):
        if left <= 0:
            break
        sizes.append(min(size, left))
        left -= sizes[-1]
    return sizes


def choose_deletions(
    sizes: Sequence[int], nbytes: int, window: tuple[int, int] | None, seed: int
) -> list[int]:
    """Indices of the files to delete, in order: drawn at random among those whose size is in
    ``window`` until at least ``nbytes`` are freed (all of them if they hold less)."""
    if nbytes <= 0:
        return []
    lo, hi = window or (0, max(sizes, default=0))
    eligible = [i for i, s in enumerate(sizes) if lo <= s <= hi]
    random.Random(f"iowatt-age-delete-{seed}").shuffle(eligible)
    chosen, freed = [], 0
    for i in eligible:
        if freed >= nbytes:
            break
        chosen.append(i)
        freed += sizes[i]
    return chosen


def file_path(index: int, files_per_dir: int = FILES_PER_DIR) -> str:
    """The path of file ``index`` relative to ``DIR/iowatt-age``: ``d00000/f00000000``."""
    return f"d{index // files_per_dir:05d}/f{index:08d}"


# --- the file system ---------------------------------------------------------------------------


def fs_usage(path: Path) -> dict[str, int]:
    """Size, used, free and available bytes (and block size) of the file system holding ``path``;
    used is size minus free, the way statvfs counts it (df's Use% leaves out reserved blocks)."""
    st = os.statvfs(path)
    size, free = st.f_blocks * st.f_frsize, st.f_bfree * st.f_frsize
    avail = st.f_bavail * st.f_frsize
    return {
        "size": size,
        "used": size - free,
        "free": free,
        "available": avail,
        "block": st.f_frsize,
    }


def fs_facts(path: Path) -> dict[str, Any]:
    """:func:`fs_usage` with the file system's type, mount point and source (from mountinfo)."""
    mount = find_mount(path.resolve(), read_mounts())
    return {
        "type": mount.fs_type if mount else None,
        "mount_point": mount.mount_point if mount else None,
        "source": mount.source if mount else None,
        **fs_usage(path),
    }


def fill_percent(used: int | None, size: int) -> float | None:
    return round(100 * used / size, 3) if size and used is not None else None


def _check_dir(directory: Path) -> None:
    if not directory.exists():
        raise TargetError(
            f"`{directory}` does not exist",
            hint="give an existing directory on the file system to age",
        )
    if not directory.is_dir():
        raise TargetError(
            f"`{directory}` is not a directory",
            hint="give a directory on the file system to age",
        )


def _foreign(root: Path) -> TargetError:
    return TargetError(
        f"`{root}` exists but holds no {MANIFEST}; iowatt will neither use nor delete it",
        hint="`iowatt age` did not make it (or its manifest is gone): move or remove it yourself",
    )


def _fresh_root(directory: Path) -> Path:
    """``DIR/iowatt-age``, which must not exist yet."""
    _check_dir(directory)
    root = directory / AGE_DIR
    if (root / MANIFEST).is_file():
        raise TargetError(
            f"`{directory}` is already aged (`{root / MANIFEST}` exists)",
            hint=f"`iowatt age {directory} --status` shows it; `--cleanup` removes it first",
        )
    if os.path.lexists(root):
        raise _foreign(root)
    return root


def _aged_root(directory: Path) -> Path | None:
    """``DIR/iowatt-age`` with its manifest, or ``None`` when there is no such directory."""
    _check_dir(directory)
    root = directory / AGE_DIR
    if not os.path.lexists(root):
        return None
    if root.is_symlink():
        raise TargetError(
            f"`{root}` is a symbolic link, not the directory `iowatt age` made",
            hint="move it away; iowatt will not follow it",
        )
    if not (root / MANIFEST).is_file():
        raise _foreign(root)
    return root


# --- the manifest ------------------------------------------------------------------------------


def _problem(m: Any) -> str | None:
    """What makes ``m`` unusable as an age manifest (paths are checked: nothing outside the
    aging directory can be named), or ``None``."""
    if not isinstance(m, dict) or m.get("kind") != "age":
        return "it is not an `iowatt age` manifest"
    if m.get("version") != VERSION:
        return f"its version `{m.get('version')}` is not {VERSION}"
    if type(m.get("seed")) is not int or m.get("status") not in ("complete", "incomplete"):
        return "it lacks an integer `seed` or a `status`"
    fs = m.get("fs")
    if not (isinstance(m.get("params"), dict) and isinstance(m.get("plan"), dict)) or not (
        isinstance(fs, dict) and isinstance(fs.get("before"), dict)
    ):
        return "it lacks `params`, `plan` or `fs.before`"
    files = m.get("files")
    if not isinstance(files, list):
        return "`files` is not a list"
    for f in files:
        ok = isinstance(f, dict) and isinstance(f.get("path"), str) and _FILE.fullmatch(f["path"])
        if not ok or type(f.get("size")) is not int or f["size"] < 0:
            return f"the entry `{json.dumps(f)[:80]}` is not a path like `d00000/f00000000`"
    paths = {f["path"] for f in files}
    if len(paths) != len(files):
        return "a file is listed twice"
    for key, pattern in (("deleted", _FILE), ("pending", _FILE), ("dirs", _DIR)):
        items = m.get(key, [])
        if not isinstance(items, list) or not all(
            isinstance(p, str) and pattern.fullmatch(p) for p in items
        ):
            return f"`{key}` is not a list of paths made by iowatt age"
    deleted = m.get("deleted", [])
    if len(set(deleted)) != len(deleted) or not paths.issuperset(deleted):
        return "`deleted` names a file twice, or one not in `files`"
    return None


def load_manifest(path: Path) -> dict[str, Any]:
    """The manifest at ``path``, checked; a ConfigError saying what is wrong with it otherwise."""
    try:
        m = json.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"manifest `{path}` does not exist", hint=_MANIFEST_HINT) from None
    except OSError as e:
        raise ConfigError(f"cannot read manifest `{path}`: {e.strerror}", _MANIFEST_HINT) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"manifest `{path}` is not JSON ({e})", hint=_MANIFEST_HINT) from None
    problem = _problem(m)
    if problem:
        raise ConfigError(f"manifest `{path}` is malformed: {problem}", hint=_MANIFEST_HINT)
    assert isinstance(m, dict)
    return m


def _dumps(m: dict[str, Any]) -> str:
    """The manifest as JSON, one line per file so that long listings stay readable."""
    rest = {k: v for k, v in m.items() if k != "files"}
    rows = ",\n".join("    " + json.dumps(f) for f in m["files"])
    files = f"[\n{rows}\n  ]" if rows else "[]"
    return json.dumps(rest, indent=2)[:-2] + f',\n  "files": {files}\n}}\n'


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def summarize(m: dict[str, Any], root: Path) -> dict[str, Any]:
    """Files, bytes written and deleted, and the fill before and after, from a manifest."""
    sizes = {f["path"]: f["size"] for f in m["files"]}
    written, freed = sum(sizes.values()), sum(sizes[p] for p in m["deleted"])
    before, after = m["fs"]["before"], m["fs"].get("after") or {}
    return {
        "dir": str(root.parent),
        "manifest": str(root / MANIFEST),
        "status": m["status"],
        "reason": m.get("reason"),
        "seed": m["seed"],
        "files": len(sizes),
        "files_deleted": len(m["deleted"]),
        "files_present": len(sizes) - len(m["deleted"]),
        "bytes_written": written,
        "bytes_deleted": freed,
        "bytes_present": written - freed,
        "delete_requested": m["plan"].get("delete_bytes"),
        "pending": len(m.get("pending", [])),
        "fs": {
            "type": m["fs"].get("type"),
            "size": before["size"],
            "used_before": before["used"],
            "used_after": after.get("used"),
            "fill_before": fill_percent(before["used"], before["size"]),
            "fill_after": fill_percent(after.get("used"), before["size"]),
        },
        "warnings": m.get("warnings", []),
    }


# --- planning against the file system ----------------------------------------------------------


@dataclass
class Plan:
    """What an aging will do, checked against the file system before anything is written."""

    directory: Path
    seed: int
    fs: dict[str, Any]
    target_used: int | None  # the used bytes to reach (a percentage fill), else None
    write_bytes: int
    files: int
    largest: int
    delete_bytes: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "dry_run": True,
            "dir": str(self.directory),
            "seed": self.seed,
            "fs": {**self.fs, "fill_now": fill_percent(self.fs["used"], self.fs["size"])},
            "fill_target": fill_percent(self.target_used, self.fs["size"]),
            "bytes_to_write": self.write_bytes,
            "files": self.files,
            "largest_file": self.largest,
            "bytes_to_delete": self.delete_bytes,
        }


def _overhead(sizes: Sequence[int], block: int) -> int:
    """Room the files take beyond their data: the rest of each one's last block, a block per
    directory, and the manifest twice over (it is replaced by a new copy)."""
    tails = sum(-s % block for s in sizes) if block else 0
    manifest = len(sizes) * 72 + PENDING * 24 + 4096
    return tails + (len(sizes) // FILES_PER_DIR + 1) * block + 2 * manifest


def plan(directory: Path, config: AgeConfig) -> Plan:
    """Check ``directory`` and the options against its file system; raise if the fill is already
    exceeded, cannot be reached, or the files to delete could not hold ``--delete``."""
    _fresh_root(directory)
    fs = fs_facts(directory)
    target_used, fill = None, config.fill
    if fill.percent is not None:
        if fs["size"] == 0:
            raise TargetError(
                f"the file system of `{directory}` reports no size, so --fill `{fill.text}` "
                "means nothing there",
                hint="give a size of data to write instead, e.g. `--fill 1g`",
            )
        target_used = round(fs["size"] * fill.percent / 100)
        write = target_used - fs["used"]
        if write <= 0:
            raise TargetError(
                f"`{directory}` is already {fill_percent(fs['used'], fs['size']):.1f}% full, "
                f"at or above --fill `{fill.text}`",
                hint="give a higher --fill, or a size of data to write such as `--fill 1g`",
            )
    else:
        write = fill.of(0)
    lo, hi = config.sizes
    sizes = plan_sizes(write, config.seed, lo, hi, config.dist)
    if target_used is not None:
        # The target counts the files' overhead as used: only the manifests need more room.
        room = fs["available"] - _overhead(sizes, 0)
        if write > room:
            most = fill_percent(fs["used"] + room, fs["size"]) or 0.0
            raise TargetError(
                f"--fill `{fill.text}` is out of reach: `{directory}` is "
                f"{fill_percent(fs['used'], fs['size']):.1f}% full with "
                f"{format_bytes(fs['available'])} available",
                hint=f"give a --fill of at most {math.floor(most * 10) / 10:.1f}%, "
                "or free some space",
            )
    elif write + _overhead(sizes, fs["block"]) > fs["available"]:
        need = write + _overhead(sizes, fs["block"])
        fits = fs["available"] * write // need
        raise TargetError(
            f"--fill `{fill.text}` needs {format_bytes(need)} with the file system's overhead, "
            f"but `{directory}` has {format_bytes(fs['available'])} available",
            hint=f"give a --fill of at most about {format_bytes(fits)}, or free some space",
        )
    delete = config.delete.of(write)
    window = config.delete_sizes or (0, hi)
    eligible = sum(s for s in sizes if window[0] <= s <= window[1])
    if delete > eligible:
        raise ConfigError(
            f"--delete `{config.delete.text}` asks for {format_bytes(delete)} but the files of "
            f"{format_bytes(window[0])}..{format_bytes(window[1])} would hold "
            f"{format_bytes(eligible)}",
            hint="widen --delete-sizes or --sizes, or lower --delete",
        )
    return Plan(directory, config.seed, fs, target_used, write, len(sizes), max(sizes), delete)


# --- running -----------------------------------------------------------------------------------


def _now() -> tuple[int, str]:
    ns = time.time_ns()
    iso = datetime.fromtimestamp(ns / 1e9, tz=timezone.utc).isoformat(timespec="seconds")
    return ns, iso.replace("+00:00", "Z")


def _new_manifest(
    directory: Path, seed: int, params: dict[str, Any], plan_: dict[str, Any]
) -> dict[str, Any]:
    facts = fs_facts(directory)
    usage = {k: facts.pop(k) for k in ("size", "used", "free", "available", "block")}
    ns, iso = _now()
    return {
        "version": VERSION,
        "kind": "age",
        "status": "incomplete",
        "reason": "in progress",
        "iowatt_version": __version__,
        "seed": seed,
        "params": params,
        "plan": plan_,
        "recreated_from": None,
        "fs": {**facts, "before": usage, "after": None},
        "started_ns": ns,
        "started": iso,
        "filled_ns": None,
        "ended_ns": None,
        "ended": None,
        "warnings": [],
        "dirs": [],
        "pending": [],
        "deleted": [],
        "files": [],
    }


class _Job:
    """Writes the files, deletes some, and keeps the manifest naming all that may exist."""

    def __init__(
        self, root: Path, m: dict[str, Any], copy_to: Path | None, progress: Progress | None
    ) -> None:
        self.root, self.m, self.copy_to = root, m, copy_to
        self.progress = progress or (lambda phase, done, total: None)
        self.files: list[dict[str, Any]] = m["files"]
        data = random.Random(f"iowatt-age-data-{m['seed']}").randbytes(2 * CHUNK)
        self.data = memoryview(data)
        self.dirs: set[str] = set(m["dirs"])
        self.pending_end = 0
        self.saved_at = 0.0
        self.shown_at = 0.0
        self.done = 0

    def run(
        self,
        name: Callable[[int], str],
        count: int | None,
        sizes: Iterable[int],
        left: Callable[[int], int] | None,
        total: int,
        deletions: Callable[[list[dict[str, Any]]], list[str]],
    ) -> dict[str, Any]:
        self.root.mkdir()
        try:
            self._save()
            self._fill(name, count, sizes, left, total)
            self.progress("syncing", 0, 0)
            os.sync()
            self.m["filled_ns"] = time.time_ns()
            self._delete(deletions(self.files))
            self._finish("complete", None)
            os.sync()
        except KeyboardInterrupt:
            where = self._finish("incomplete", "interrupted")
            raise RunInterrupted(
                f"interrupted after {len(self.files)} files; {where}",
                hint=f"`iowatt age {self.root.parent} --cleanup` removes them",
            ) from None
        except OSError as e:
            if e.errno == errno.ENOSPC:
                self._drop_partial()
            where = self._finish("incomplete", e.strerror or str(e))
            what = "is full" if e.errno == errno.ENOSPC else f"failed ({e.strerror})"
            raise TargetError(
                f"`{self.root.parent}` {what} after {len(self.files)} files "
                f"({format_bytes(sum(f['size'] for f in self.files))}); {where}",
                hint=f"`iowatt age {self.root.parent} --cleanup` removes them; "
                "then age with a lower --fill",
            ) from None
        except BaseException:
            self._finish("incomplete", "internal failure")
            raise
        return summarize(self.m, self.root)

    def _fill(
        self,
        name: Callable[[int], str],
        count: int | None,
        sizes: Iterable[int],
        left: Callable[[int], int] | None,
        total: int,
    ) -> None:
        written = 0
        for i, size in enumerate(sizes):
            if left is not None:
                room = left(written)
                if room <= 0:
                    break
                size = min(size, room)
            if i >= self.pending_end or time.monotonic() - self.saved_at > CHECKPOINT_S:
                # Batches grow with the listing, so that rewriting it costs O(n) in all.
                end = i + max(PENDING, i // 2)
                end = end if count is None else min(end, count)
                self.m["pending"] = [name(j) for j in range(i, end)]
                self._add_dirs(self.m["pending"])
                self.pending_end = end
                self._save()
            path = name(i)
            (self.root / path).parent.mkdir(exist_ok=True)
            self._write(self.root / path, size, i, total)
            self.files.append({"path": path, "size": size})
            written += size
        self.progress("writing", self.done, self.done)

    def _write(self, path: Path, size: int, index: int, total: int) -> None:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        try:
            done, chunk = 0, 0
            while done < size:
                # One random buffer, read at an offset that varies by file and chunk: every
                # chunk differs, so neither compression nor deduplication shrinks the data.
                offset = (index * 7919 + chunk * 4099) % CHUNK
                n = os.write(fd, self.data[offset : offset + min(CHUNK, size - done)])
                done += n
                chunk += 1
                self._tick("writing", n, total)
        finally:
            os.close(fd)

    def _tick(self, phase: str, n: int, total: int) -> None:
        self.done += n
        now = time.monotonic()
        if now - self.shown_at >= 0.1:
            self.shown_at = now
            self.progress(phase, self.done, total)

    def _delete(self, paths: list[str]) -> None:
        sizes = {f["path"]: f["size"] for f in self.files}
        total = sum(sizes[p] for p in paths)
        self.done = 0
        for path in paths:
            if time.monotonic() - self.saved_at > CHECKPOINT_S:
                self._save()
            os.unlink(self.root / path)
            self.m["deleted"].append(path)
            self._tick("deleting", sizes[path], total)
        self.progress("deleting", total, total)

    def _add_dirs(self, paths: list[str]) -> None:
        for p in paths:
            d = p.partition("/")[0]
            if d not in self.dirs:
                self.dirs.add(d)
                self.m["dirs"].append(d)

    def _drop_partial(self) -> None:
        """Remove the file a full file system cut short, to make room for the manifest."""
        listed = {f["path"] for f in self.files}
        for p in self.m["pending"]:
            if p not in listed:
                (self.root / p).unlink(missing_ok=True)
                return

    def _finish(self, status: str, reason: str | None) -> str:
        """Record the end; say where the manifest is (or that only its last checkpoint is)."""
        listed = {f["path"] for f in self.files}
        for p in self.m["pending"]:  # the file being written when the run stopped, if any
            if p not in listed:
                if not os.path.lexists(self.root / p):
                    break  # files are made in order: none after it exists
                self.files.append({"path": p, "size": os.lstat(self.root / p).st_size})
        self.m["pending"] = []
        self.m["dirs"] = [d for d in self.m["dirs"] if (self.root / d).is_dir()]
        ns, iso = _now()
        after = fs_usage(self.root)
        self.m.update(status=status, reason=reason, ended_ns=ns, ended=iso)
        self.m["fs"]["after"] = after
        try:
            self._save()
        except OSError as e:
            return f"the manifest could not be updated ({e.strerror}); its last copy names them"
        return f"`{self.root / MANIFEST}` lists them, marked {status}"

    def _save(self) -> None:
        text = _dumps(self.m)
        _write_atomic(self.root / MANIFEST, text)
        if self.copy_to is not None:
            _write_atomic(self.copy_to, text)
        self.saved_at = time.monotonic()


def _check_copy_to(copy_to: Path | None) -> None:
    if copy_to is not None and not copy_to.parent.is_dir():
        raise ConfigError(
            f"--manifest `{copy_to}`: its directory does not exist",
            hint="give a path in an existing directory",
        )


def run(
    directory: Path,
    config: AgeConfig,
    progress: Progress | None = None,
    copy_to: Path | None = None,
) -> dict[str, Any]:
    """Age ``directory``'s file system as ``config`` says; return :func:`summarize`'s summary.

    ``copy_to`` keeps a second copy of the manifest (e.g. off the aged disk, to recreate the
    state after :func:`cleanup`). Raises RunInterrupted on Ctrl-C, TargetError on a full file
    system; the manifest is written, marked incomplete, either way.
    """
    _check_copy_to(copy_to)
    p = plan(directory, config)
    root = directory / AGE_DIR
    params = config.params()
    m = _new_manifest(
        directory,
        config.seed,
        params,
        {"write_bytes": p.write_bytes, "target_used_bytes": p.target_used, "delete_bytes": None},
    )
    lo, hi = config.sizes

    def left(written: int) -> int:
        if p.target_used is None:
            return p.write_bytes - written
        # A percentage: stop at the target use, measured, so that overhead counts too.
        return min(p.target_used - fs_usage(directory)["used"], p.fs["available"] - written)

    def deletions(files: list[dict[str, Any]]) -> list[str]:
        sizes = [f["size"] for f in files]
        want = config.delete.of(sum(sizes))
        m["plan"]["delete_bytes"] = want
        chosen = choose_deletions(sizes, want, config.delete_sizes, config.seed)
        freed = sum(sizes[i] for i in chosen)
        if freed < want:
            m["warnings"].append(
                f"only {format_bytes(freed)} of the {format_bytes(want)} asked by --delete "
                f"`{config.delete.text}` were in files within --delete-sizes: all were deleted"
            )
        return [files[i]["path"] for i in chosen]

    if p.fs["type"] in ("tmpfs", "ramfs"):
        m["warnings"].append(f"`{directory}` is on {p.fs['type']}: it has no layout to fragment")
    job = _Job(root, m, copy_to, progress)
    return job.run(
        lambda i: file_path(i, config.files_per_dir),
        None,
        size_stream(config.seed, lo, hi, config.dist),
        left,
        p.write_bytes,
        deletions,
    )


def recreate(
    directory: Path,
    manifest: Path,
    progress: Progress | None = None,
    copy_to: Path | None = None,
    dry_run: bool = False,
) -> dict[str, Any]:
    """Write the files of ``manifest`` under ``directory`` (same names, sizes and seeded data),
    then delete the same ones in the same order."""
    src = load_manifest(manifest)
    if src["status"] != "complete":
        raise ConfigError(
            f"manifest `{manifest}` describes an incomplete aging ({src.get('reason')})",
            hint="recreate from the manifest of an aging that completed",
        )
    _check_copy_to(copy_to)
    try:
        _fresh_root(directory)
    except TargetError as e:
        if manifest.resolve().is_relative_to((directory / AGE_DIR).resolve()):
            e.hint = (
                f"--cleanup would remove `{manifest}` too: copy it elsewhere first, clean up, "
                "then recreate from the copy"
            )
        raise
    files = src["files"]
    total = sum(f["size"] for f in files)
    sizes = {f["path"]: f["size"] for f in files}
    delete_bytes = sum(sizes[p] for p in src["deleted"])
    fs = fs_facts(directory)
    need = total + _overhead([f["size"] for f in files], fs["block"])
    if need > fs["available"]:
        raise TargetError(
            f"recreating `{manifest}` needs {format_bytes(need)} (with file system overhead) "
            f"but `{directory}` has {format_bytes(fs['available'])} available",
            hint="free some space, or recreate on a larger file system",
        )
    if dry_run:
        return {
            "dry_run": True,
            "dir": str(directory),
            "seed": src["seed"],
            "fs": {**fs, "fill_now": fill_percent(fs["used"], fs["size"])},
            "bytes_to_write": total,
            "files": len(files),
            "bytes_to_delete": delete_bytes,
            "files_to_delete": len(src["deleted"]),
        }
    m = _new_manifest(
        directory,
        src["seed"],
        src["params"],
        {**src["plan"], "write_bytes": total, "delete_bytes": delete_bytes},
    )
    m["recreated_from"] = str(manifest.resolve())
    job = _Job(directory / AGE_DIR, m, copy_to, progress)
    return job.run(
        lambda i: files[i]["path"],
        len(files),
        (f["size"] for f in files),
        None,
        total,
        lambda _: list(src["deleted"]),
    )


def _own_manifest(root: Path) -> dict[str, Any]:
    try:
        return load_manifest(root / MANIFEST)
    except ConfigError as e:
        raise TargetError(
            f"{e.message}; nothing was deleted",
            hint="restore the manifest iowatt wrote; iowatt deletes only the files it lists",
        ) from None


def status(directory: Path) -> dict[str, Any]:
    """The summary of the aging in ``directory``, with the file system's use now."""
    root = _aged_root(directory)
    if root is None:
        raise TargetError(
            f"`{directory}` holds no aging (no `{AGE_DIR}` directory)",
            hint=f"age it with `iowatt age {directory} --fill 90%`",
        )
    m = _own_manifest(root)
    out = summarize(m, root)
    now = fs_usage(directory)
    out["fs"]["used_now"] = now["used"]
    out["fs"]["fill_now"] = fill_percent(now["used"], now["size"])
    return out


def cleanup(directory: Path, dry_run: bool = False) -> dict[str, Any]:
    """Delete the files and directories the manifest in ``directory`` lists, then the manifest;
    nothing else. Returns what was removed and what was kept (e.g. a file the user put there)."""
    root = _aged_root(directory)
    out: dict[str, Any] = {"dir": str(directory), "dry_run": dry_run, "files_removed": 0,
                           "bytes_removed": 0, "dirs_removed": 0, "kept": []}  # fmt: skip
    if root is None:
        return out
    m = _own_manifest(root)
    dirs = list(dict.fromkeys([*m["dirs"], *(p.partition("/")[0] for p in _listed(m))]))
    for d in dirs:  # never follow a link out of the aging directory
        if (root / d).is_symlink() or (os.path.lexists(root / d) and not (root / d).is_dir()):
            raise TargetError(
                f"`{root / d}` is not the directory iowatt made; nothing was deleted",
                hint="move it away, then clean up again",
            )
    for p in _listed(m):
        try:
            st = os.lstat(root / p)
            if not dry_run:
                os.unlink(root / p)
        except FileNotFoundError:
            continue
        except OSError:
            out["kept"].append(str(root / p))
            continue
        out["files_removed"] += 1
        out["bytes_removed"] += st.st_size
    for d in sorted(dirs, reverse=True):
        out["dirs_removed"] += _rmdir(root / d, dry_run, out["kept"])
    if not dry_run:
        (root / f".{MANIFEST}.tmp").unlink(missing_ok=True)
        (root / MANIFEST).unlink()
        _rmdir(root, dry_run, out["kept"])
    return out


def _listed(m: dict[str, Any]) -> Iterator[str]:
    gone = set(m["deleted"])
    yield from (f["path"] for f in m["files"] if f["path"] not in gone)
    yield from m.get("pending", [])


def _rmdir(path: Path, dry_run: bool, kept: list[str]) -> int:
    if dry_run:
        return int(path.is_dir())
    try:
        path.rmdir()
    except FileNotFoundError:
        return 0
    except OSError:
        kept.append(str(path))
        return 0
    return 1
