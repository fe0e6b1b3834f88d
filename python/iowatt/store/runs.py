"""Finding and reading run directories (no database needed)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from iowatt.errors import RunNotFoundError

DEFAULT_RESULTS = Path("iowatt-results")


def results_dir(path: str | Path | None = None) -> Path:
    """``--results``, else ``$IOWATT_RESULTS``, else ``./iowatt-results``."""
    return Path(path or os.environ.get("IOWATT_RESULTS") or DEFAULT_RESULTS)


def run_dirs(results: Path) -> dict[str, Path]:
    """The committed runs in ``results`` by directory name: every directory holding a
    manifest, except those being written (``.tmp-*``) or otherwise hidden."""
    found = {}
    with os.scandir(results) as entries:
        for e in entries:
            if (
                not e.name.startswith(".")
                and e.is_dir()
                and os.path.exists(f"{e.path}/manifest.json")
            ):
                found[e.name] = Path(e.path)
    return found


def read_manifest(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "manifest.json").read_text())


def read_summary(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "summary.json").read_text())


def resolve_run(results: Path, ref: str) -> Path:
    """A run directory from a path, a run id, a unique run-id prefix or ``latest``."""
    as_path = Path(ref)
    if (as_path / "manifest.json").is_file():
        return as_path
    if ref == "latest":
        runs = sorted(p for p in results.glob("*/manifest.json"))
        if runs:
            return max((p.parent for p in runs), key=lambda p: read_manifest(p)["started_ns"])
    else:
        matches = sorted(p.parent for p in results.glob(f"{ref}*/manifest.json"))
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            raise RunNotFoundError(
                f"run `{ref}` is ambiguous ({len(matches)} runs match)", "give more of the run id"
            )
    raise RunNotFoundError(
        f"no run `{ref}` in `{results}`", "list runs with `iowatt runs`, or pass --results DIR"
    )
