"""Finding and reading run directories (no database needed)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from iowatt.errors import RunNotFoundError, StoreError
from iowatt.store.manifest import MANIFEST, SUMMARY

if TYPE_CHECKING:
    import pyarrow as pa

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
            if not e.name.startswith(".") and e.is_dir() and os.path.exists(f"{e.path}/{MANIFEST}"):
                found[e.name] = Path(e.path)
    return found


def read_manifest(run_dir: Path) -> dict[str, Any]:
    return read_json(run_dir, MANIFEST)


def read_summary(run_dir: Path) -> dict[str, Any]:
    return read_json(run_dir, SUMMARY)


def read_json(run_dir: Path, name: str) -> dict[str, Any]:
    """One of a run's JSON files; a missing or damaged one is a :class:`DamagedRun`."""
    try:
        data = json.loads((run_dir / name).read_bytes())
    except FileNotFoundError:
        raise DamagedRun(run_dir, name, "missing") from None
    except (OSError, ValueError) as e:
        raise DamagedRun(run_dir, name, f"unreadable: {e}") from None
    if not isinstance(data, dict):
        raise DamagedRun(run_dir, name, "not a JSON object")
    return data


def read_table(run_dir: Path, name: str) -> pa.Table | None:
    """One of a run's Parquet files, read as it is (``pq.read_table`` would load
    pyarrow.dataset, ~0.4 s, for nothing); None when the run has none."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = run_dir / name
    if not path.exists():
        return None
    try:
        return pq.ParquetFile(path).read()
    except (OSError, pa.ArrowException) as e:
        raise DamagedRun(run_dir, name, f"not a readable Parquet file: {e}") from None


class DamagedRun(StoreError):
    """A run file that is missing, unreadable or not shaped as docs/run-store.md describes:
    the run and the file are named, and the other runs keep working."""

    def __init__(self, run_dir: Path, file: str, reason: str) -> None:
        super().__init__(
            f"run `{run_dir.name}`: its {file} is {reason}",
            "restore the file or remove the run; `iowatt runs --check` lists damaged runs",
        )
        self.file = file
        self.reason = reason


def resolve_run(results: Path, ref: str) -> Path:
    """A run directory from a path, a run id, a unique run-id prefix or ``latest``."""
    as_path = Path(ref)
    if (as_path / MANIFEST).is_file():
        return as_path
    if as_path.is_absolute() or "/" in ref:
        # A path that is not a run directory (a glob of it would fail, not find nothing).
        raise RunNotFoundError(
            f"`{ref}` is not a run directory (it has no manifest.json)",
            "give a run directory, a run id, a unique prefix or `latest`",
        )
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
