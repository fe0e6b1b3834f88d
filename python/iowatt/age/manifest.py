"""The manifest of an aging: what it names, how it is checked, read, written and summarised."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from iowatt.age.fs import fill_percent
from iowatt.age.params import DIR_PATTERN, FILE_PATTERN, MANIFEST, MANIFEST_HINT, VERSION
from iowatt.errors import ConfigError


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
        ok = (
            isinstance(f, dict)
            and isinstance(f.get("path"), str)
            and FILE_PATTERN.fullmatch(f["path"])
        )
        if not ok or type(f.get("size")) is not int or f["size"] < 0:
            return f"the entry `{json.dumps(f)[:80]}` is not a path like `d00000/f00000000`"
    paths = {f["path"] for f in files}
    if len(paths) != len(files):
        return "a file is listed twice"
    for key, pattern in (
        ("deleted", FILE_PATTERN),
        ("pending", FILE_PATTERN),
        ("dirs", DIR_PATTERN),
    ):
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
        raise ConfigError(f"manifest `{path}` does not exist", hint=MANIFEST_HINT) from None
    except OSError as e:
        raise ConfigError(f"cannot read manifest `{path}`: {e.strerror}", MANIFEST_HINT) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"manifest `{path}` is not JSON ({e})", hint=MANIFEST_HINT) from None
    problem = _problem(m)
    if problem:
        raise ConfigError(f"manifest `{path}` is malformed: {problem}", hint=MANIFEST_HINT)
    assert isinstance(m, dict)
    return m


def dumps(m: dict[str, Any]) -> str:
    """The manifest as JSON, one line per file so that long listings stay readable."""
    rest = {k: v for k, v in m.items() if k != "files"}
    rows = ",\n".join("    " + json.dumps(f) for f in m["files"])
    files = f"[\n{rows}\n  ]" if rows else "[]"
    return json.dumps(rest, indent=2)[:-2] + f',\n  "files": {files}\n}}\n'


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
