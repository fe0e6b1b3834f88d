"""The tree manifest: one Parquet file, one row per directory, file and symlink, with hashed
names and the metadata that says what made it (see docs/tree.md).

The columns ``path``, ``type``, ``size``, ``mode``, ``mtime_ns``, ``atime_ns`` and ``target``
are a contract other tools read; columns may be added, never changed.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from iowatt.errors import ConfigError

if TYPE_CHECKING:
    import pyarrow as pa

FORMAT = "iowatt-tree/1"
META_KEY = b"iowatt"
# What recreate needs; a manifest without one of them is not one iowatt made.
REQUIRED = ("path", "type", "size", "mode", "mtime_ns", "atime_ns", "target")
TYPES = ("dir", "file", "symlink")
NOT_A_MANIFEST = "give a manifest written by `iowatt tree snapshot`"


def schema(meta: dict[str, Any]) -> pa.Schema:
    import pyarrow as pa

    fields = [
        ("path", pa.string()),
        ("type", pa.string()),
        ("size", pa.int64()),
        ("mode", pa.int32()),
        ("mtime_ns", pa.int64()),
        ("atime_ns", pa.int64()),
        ("target", pa.string()),
        # Beyond the contract: what du would count, and what ls -l shows besides.
        ("allocated", pa.int64()),
        ("ctime_ns", pa.int64()),
        ("nlink", pa.int32()),
    ]
    return pa.schema(fields, metadata={META_KEY: json.dumps(meta).encode()})


def write(columns: dict[str, list[Any]], meta: dict[str, Any], out: Path) -> None:
    """Writes the manifest atomically: a temporary file beside ``out``, renamed over it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pydict(columns, schema=schema(meta))
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            pq.write_table(table, f, compression="zstd")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read(path: Path) -> tuple[pa.Table, dict[str, Any]]:
    """The manifest's table and metadata; a ConfigError naming ``path`` when it is missing, not
    Parquet, or not a tree manifest of this format."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not path.is_file():
        what = "does not exist" if not path.exists() else "is not a file"
        raise ConfigError(f"manifest `{path}` {what}", NOT_A_MANIFEST)
    try:
        pf = pq.ParquetFile(path)
    except (pa.ArrowException, OSError) as e:
        raise ConfigError(
            f"manifest `{path}` is not a Parquet file ({e})", NOT_A_MANIFEST
        ) from None
    raw = (pf.schema_arrow.metadata or {}).get(META_KEY)
    try:
        meta = json.loads(raw) if raw is not None else None
    except ValueError:
        meta = None
    found = meta.get("format") if isinstance(meta, dict) else None
    if found != FORMAT:
        said = f"is of format `{found}`" if found else f"has no `{META_KEY.decode()}` metadata"
        raise ConfigError(f"manifest `{path}` {said}, not {FORMAT}", NOT_A_MANIFEST)
    assert isinstance(meta, dict)
    missing = [c for c in REQUIRED if c not in pf.schema_arrow.names]
    if missing:
        raise ConfigError(f"manifest `{path}` lacks the column `{missing[0]}`", NOT_A_MANIFEST)
    try:
        table = pf.read(columns=list(REQUIRED))
    except (pa.ArrowException, OSError) as e:
        raise ConfigError(f"manifest `{path}` cannot be read ({e})", NOT_A_MANIFEST) from None
    return table, meta
