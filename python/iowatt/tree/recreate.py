"""Recreating a tree from its manifest under a destination directory, with the Rust engine
(``crates/iowatt-tree``): checks that a user can get wrong come first (the manifest, the
destination, free space), then the engine makes everything beneath the destination."""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from iowatt import _engine
from iowatt.errors import ConfigError, RunInterrupted, TargetError
from iowatt.tree import manifest
from iowatt.units import format_bytes

if TYPE_CHECKING:
    import pyarrow as pa

MAX_THREADS = 256


def default_threads() -> int:
    # Creating files waits on the file system more than on the CPU: a few threads per core
    # keep a journal and a device busy.
    return min(32, 4 * (os.cpu_count() or 1))


def recreate(
    manifest_path: Path,
    dest: Path,
    *,
    sparse: bool = False,
    resume: bool = False,
    threads: int | None = None,
    seed: int | None = None,
    on_tick: Callable[[_engine.TreeProgress], None] | None = None,
) -> dict[str, Any]:
    """Recreates the tree of ``manifest_path`` under ``dest``; returns the summary. Raises
    :class:`RunInterrupted` on Ctrl-C (what was made stays; ``resume`` finishes it)."""
    threads = default_threads() if threads is None else threads
    if not 1 <= threads <= MAX_THREADS:
        raise ConfigError(
            f"--threads `{threads}` is out of range", f"give 1 to {MAX_THREADS} threads"
        )
    seed = secrets.randbits(63) if seed is None else seed
    import pyarrow.compute as pc

    table, meta = manifest.read(manifest_path)
    try:
        n, buffers = _buffers(table)
        run = _engine.TreeRecreate(
            str(dest), n, buffers, sparse=sparse, resume=resume, threads=threads, seed=seed
        )
    except ConfigError as e:
        raise ConfigError(
            f"manifest `{manifest_path}` {e.message}", manifest.NOT_A_MANIFEST
        ) from None
    file_sizes = table.filter(pc.equal(table["type"], "file"))["size"]
    del table
    _check_dest(dest, resume)
    if not sparse:
        _check_space(dest, file_sizes.to_pylist(), resume)
    if not resume:
        _check_inodes(dest, n)
    try:
        _engine.drive([run], None if on_tick is None else lambda: on_tick(run.progress()))
        result = run.result()
    except KeyboardInterrupt:
        raise _interrupted(manifest_path, dest) from None
    except TargetError as e:
        if e.kind == "no_space":
            raise TargetError(
                f"DEST `{dest}`: {e.message}", "free some space, or pass --sparse to write no data"
            ) from None
        raise
    summary: dict[str, Any] = {
        **result,
        "seconds": result["elapsed_ns"] / 1e9,
        "dest": str(dest),
        "manifest": str(manifest_path),
        "seed": seed,
        "sparse": sparse,
        "threads": threads,
        "key_id": meta.get("key_id"),
    }
    if result["status"] == "cancelled":
        raise _interrupted(manifest_path, dest)
    return summary


def _interrupted(manifest_path: Path, dest: Path) -> RunInterrupted:
    return RunInterrupted(
        f"interrupted: what was made stays in `{dest}`",
        f"`iowatt tree recreate {manifest_path} {dest} --resume` finishes it",
    )


def _buffers(table: pa.Table) -> tuple[int, dict[str, bytes]]:
    """The columns as the engine takes them: contiguous Arrow buffers, no nulls, so 500,000
    rows cross into Rust as a few byte strings instead of millions of Python objects."""
    import pyarrow as pa
    import pyarrow.compute as pc

    def column(name: str, type_: pa.DataType, fill: Any) -> pa.Array:
        arr = table[name].combine_chunks().fill_null(fill).cast(type_)
        # A sliced array's buffers start before its first row: copy it out.
        return pa.concat_arrays([arr, pa.array([], type_)]) if arr.offset else arr

    kinds = pc.index_in(table["type"], value_set=pa.array(manifest.TYPES)).combine_chunks()
    if kinds.null_count:
        row = kinds.to_pylist().index(None)
        raise ConfigError(
            f"row {row}: path `{table['path'][row]}` has type `{table['type'][row]}`, "
            "not dir, file or symlink"
        )
    out: dict[str, bytes] = {"kind": column_bytes(kinds.cast(pa.int8()))}
    for name in ("path", "target"):
        arr = column(name, pa.large_string(), "")
        _, offsets, data = arr.buffers()
        out[f"{name}_offsets"] = offsets.to_pybytes()[: 8 * (len(arr) + 1)]
        out[f"{name}_data"] = data.to_pybytes() if data is not None else b""
    for name in ("size", "mtime_ns", "atime_ns"):
        out[name] = column_bytes(column(name, pa.int64(), 0))
    out["mode"] = column_bytes(column("mode", pa.int32(), 0))
    return len(table), out


def column_bytes(arr: pa.Array) -> bytes:
    """A fixed-width array's values, little-endian as Arrow keeps them."""
    width = arr.type.bit_width // 8
    data = arr.buffers()[1]
    return data.to_pybytes()[arr.offset * width : (arr.offset + len(arr)) * width]


def _check_dest(dest: Path, resume: bool) -> None:
    if dest.is_symlink() or (dest.exists() and not dest.is_dir()):
        raise TargetError(f"DEST `{dest}` is not a directory", "name a new or empty directory")
    if not dest.exists():
        if not dest.parent.is_dir():
            raise TargetError(
                f"DEST `{dest}`: the directory `{dest.parent}` does not exist",
                "create it first, or name a directory in an existing one",
            )
        dest.mkdir()
        return
    if resume:
        return
    with os.scandir(dest) as entries:
        empty = next(entries, None) is None
    if not empty:
        raise TargetError(
            f"DEST `{dest}` is not empty",
            "name an empty or new directory, or pass --resume to finish a recreation there",
        )


def _check_space(dest: Path, sizes: list[int], resume: bool) -> None:
    """Refuses a destination whose file system cannot take the files' bytes (counted in whole
    blocks; with --resume, less what files of the tree already hold there)."""
    vfs = os.statvfs(dest)
    block = vfs.f_frsize or 4096
    need = sum(-(-(size or 0) // block) * block for size in sizes)
    if resume:
        need -= _allocated(dest)
    free = vfs.f_bavail * vfs.f_frsize
    if need > free:
        raise TargetError(
            f"DEST `{dest}` has {format_bytes(free)} free; the files need {format_bytes(need)}",
            "free some space, or pass --sparse to make sparse files",
        )


def _check_inodes(dest: Path, entries: int) -> None:
    vfs = os.statvfs(dest)
    # 0 total inodes: a file system that makes them on demand (btrfs, tmpfs without nr_inodes).
    if vfs.f_files and vfs.f_favail < entries:
        raise TargetError(
            f"DEST `{dest}` has {vfs.f_favail:,} free inodes; the tree needs {entries:,}",
            "use a file system with more inodes (mkfs.ext4 -N)",
        )


def _allocated(root: Path) -> int:
    total = 0
    stack = [str(root)]
    while stack:
        try:
            with os.scandir(stack.pop()) as it:
                for e in it:
                    st = e.stat(follow_symlinks=False)
                    total += st.st_blocks * 512
                    if e.is_dir(follow_symlinks=False):
                        stack.append(e.path)
        except OSError:
            continue
    return total
