"""Carrying out an aging, or recreating one from its manifest, with the manifest kept current."""

from __future__ import annotations

import errno
import os
import random
import time
from collections.abc import Callable, Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from iowatt import __version__
from iowatt.age.fs import fill_percent, fresh_root, fs_facts, fs_usage
from iowatt.age.manifest import dumps, load_manifest, summarize
from iowatt.age.params import (
    AGE_DIR,
    CHECKPOINT_S,
    CHUNK,
    MANIFEST,
    PENDING,
    VERSION,
    AgeConfig,
    Progress,
)
from iowatt.age.plan import overhead, plan
from iowatt.age.sizes import choose_deletions, file_path, size_stream
from iowatt.errors import ConfigError, RunInterrupted, TargetError
from iowatt.store.writer import write_atomic
from iowatt.units import format_bytes


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
        text = dumps(self.m)
        write_atomic(self.root / MANIFEST, text.encode())
        if self.copy_to is not None:
            write_atomic(self.copy_to, text.encode())
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
        fresh_root(directory)
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
    need = total + overhead([f["size"] for f in files], fs["block"])
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
