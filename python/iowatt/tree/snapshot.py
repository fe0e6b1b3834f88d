"""Snapshotting a tree's metadata: every directory, regular file and symlink under a directory,
names replaced by their keyed hash (:mod:`iowatt.keys`), into a manifest
(:mod:`iowatt.tree.manifest`). Sockets, FIFOs and devices are counted and left out; so are
mount points' contents unless asked (they belong to another file system)."""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from iowatt import __version__
from iowatt.errors import ConfigError
from iowatt.keys import Keys
from iowatt.tree import manifest

# Unreadable directories named in the summary; the rest are counted.
SHOWN_UNREADABLE = 5
PROGRESS_EVERY = 4096


@dataclass
class _Walk:
    """What the walk found: per entry its parent's row (-1: DIR), raw name, type, stat."""

    parent: list[int] = field(default_factory=list)
    name: list[bytes] = field(default_factory=list)
    kind: list[str] = field(default_factory=list)
    st: list[os.stat_result] = field(default_factory=list)
    target: list[bytes | None] = field(default_factory=list)
    skipped: int = 0  # sockets, FIFOs, devices
    unreadable: list[str] = field(default_factory=list)
    mounts: list[str] = field(default_factory=list)  # not crossed


def snapshot(
    root: Path,
    keys: Keys,
    out: Path,
    *,
    keep_extensions: bool = False,
    cross_mounts: bool = False,
    on_progress: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """Writes the manifest of ``root`` to ``out``; returns the summary (counts, bytes, what
    could not be read)."""
    try:
        top = os.lstat(root)
    except OSError as e:
        raise ConfigError(f"`{root}` cannot be read: {e.strerror}", "name a directory") from None
    if not stat.S_ISDIR(top.st_mode):
        raise ConfigError(f"`{root}` is not a directory", "name the directory to snapshot")
    started = time.time_ns()
    w = _walk(os.fsencode(root), top.st_dev, cross_mounts, on_progress)
    columns = _columns(w, keys, keep_extensions)
    counts = {k: w.kind.count(k) for k in manifest.TYPES}
    size = sum(s for s, k in zip(columns["size"], w.kind, strict=True) if k == "file")
    summary: dict[str, Any] = {
        "dirs": counts["dir"],
        "files": counts["file"],
        "links": counts["symlink"],
        "bytes": size,
        "skipped_special": w.skipped,
        "unreadable": len(w.unreadable),
        "mounts_not_crossed": len(w.mounts),
    }
    meta = {
        "format": manifest.FORMAT,
        "key_id": keys.id,
        "keep_extensions": keep_extensions,
        "counts": summary,
        "iowatt": __version__,
        "snapshot_ns": started,
        "cross_mounts": cross_mounts,
    }
    manifest.write(columns, meta, out)
    return {
        **summary,
        "manifest": str(out),
        "key_id": keys.id,
        "unreadable_paths": w.unreadable[:SHOWN_UNREADABLE],
        "mount_points": w.mounts[:SHOWN_UNREADABLE],
    }


def _walk(
    root: bytes, dev: int, cross_mounts: bool, on_progress: Callable[[int], None] | None
) -> _Walk:
    """Breadth first, so every directory's row comes before its entries' rows."""
    w = _Walk()
    queue: list[tuple[int, bytes]] = [(-1, root)]
    head = 0
    while head < len(queue):
        parent, path = queue[head]
        head += 1
        try:
            with os.scandir(path) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            w.unreadable.append(os.fsdecode(os.path.relpath(path, root)))
            continue
        for e in entries:
            try:
                st = e.stat(follow_symlinks=False)
            except OSError:
                w.unreadable.append(os.fsdecode(os.path.relpath(e.path, root)))
                continue
            mode = st.st_mode
            if stat.S_ISDIR(mode):
                kind = "dir"
            elif stat.S_ISREG(mode):
                kind = "file"
            elif stat.S_ISLNK(mode):
                kind = "symlink"
            else:
                w.skipped += 1
                continue
            row = len(w.name)
            w.parent.append(parent)
            w.name.append(e.name)  # type: ignore[arg-type]  # bytes: scandir of a bytes path
            w.kind.append(kind)
            w.st.append(st)
            w.target.append(os.readlink(e.path) if kind == "symlink" else None)  # type: ignore[arg-type]
            if kind == "dir":
                if st.st_dev != dev and not cross_mounts:
                    w.mounts.append(os.fsdecode(os.path.relpath(e.path, root)))
                else:
                    queue.append((row, e.path))  # type: ignore[arg-type]
            if on_progress is not None and row % PROGRESS_EVERY == 0:
                on_progress(row)
    return w


def _columns(w: _Walk, keys: Keys, keep_extensions: bool) -> dict[str, list[Any]]:
    # One call for every name and target component: hashing is cheap, crossing into Rust
    # per name is not.
    link_parts = [t.split(b"/") if t is not None else [] for t in w.target]
    plain = {b"", b".", b".."}
    to_hash = list(w.name)
    for parts in link_parts:
        to_hash.extend(p for p in parts if p not in plain)
    hashed = keys.hash_names(to_hash, keep_extensions)
    n = len(w.name)
    paths: list[str] = []
    for row in range(n):
        p = w.parent[row]
        paths.append(hashed[row] if p < 0 else f"{paths[p]}/{hashed[row]}")
    targets: list[str | None] = []
    k = n
    for parts, t in zip(link_parts, w.target, strict=True):
        if t is None:
            targets.append(None)
            continue
        out = []
        for part in parts:
            if part in plain:
                out.append(part.decode())
            else:
                out.append(hashed[k])
                k += 1
        targets.append("/".join(out))
    st = w.st
    return {
        "path": paths,
        "type": w.kind,
        "size": [
            len(t) if t is not None else (s.st_size if kind == "file" else 0)
            for s, kind, t in zip(st, w.kind, w.target, strict=True)
        ],
        "mode": [s.st_mode & 0o7777 for s in st],
        "mtime_ns": [s.st_mtime_ns for s in st],
        "atime_ns": [s.st_atime_ns for s in st],
        "target": targets,
        "allocated": [s.st_blocks * 512 for s in st],
        "ctime_ns": [s.st_ctime_ns for s in st],
        "nlink": [s.st_nlink for s in st],
    }
