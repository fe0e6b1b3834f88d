"""An aging's status, and removing exactly the files it made."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from iowatt.age.fs import aged_root, fill_percent, fs_usage
from iowatt.age.manifest import load_manifest, summarize
from iowatt.age.params import AGE_DIR, MANIFEST
from iowatt.errors import ConfigError, TargetError


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
    root = aged_root(directory)
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
    root = aged_root(directory)
    out: dict[str, Any] = {
        "dir": str(directory),
        "dry_run": dry_run,
        "files_removed": 0,
        "bytes_removed": 0,
        "dirs_removed": 0,
        "kept": [],
    }
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
        for tmp in root.glob(f".{MANIFEST}.*"):  # a rewrite the process did not finish
            tmp.unlink()
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
