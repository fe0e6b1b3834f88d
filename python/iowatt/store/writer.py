"""Writing a run: files collected in a hidden temporary directory, then renamed into place."""

from __future__ import annotations

import json
import os
import secrets
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq


def new_run_id(kind: str) -> str:
    return f"{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}-{kind}-{secrets.token_hex(3)}"


def write_atomic(path: Path, data: bytes) -> None:
    """Replaces ``path`` with ``data`` all at once: a reader sees the old file or the new one,
    and a crash leaves one of them, never half of either."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


class RunWriter:
    """Collects a run's files in a temporary directory; :meth:`commit` publishes it."""

    def __init__(self, results: Path, run_id: str) -> None:
        self.results = results
        self.run_id = run_id
        self.final = results / run_id
        self.tmp = results / f".tmp-{run_id}"
        self.tmp.mkdir(parents=True)

    @classmethod
    def resume(cls, tmp: Path, run_id: str) -> RunWriter:
        """A writer for a temporary run directory that already exists (a sweep's journal)."""
        writer = cls.__new__(cls)
        writer.results = tmp.parent
        writer.run_id = run_id
        writer.final = tmp.parent / run_id
        writer.tmp = tmp
        return writer

    def write_json(self, name: str, data: Mapping[str, Any]) -> None:
        (self.tmp / name).write_text(json.dumps(data, indent=2, default=str) + "\n")

    def write_table(self, name: str, table: pa.Table) -> None:
        pq.write_table(table, self.tmp / name)

    def write_text(self, name: str, text: str) -> None:
        (self.tmp / name).write_text(text)

    def commit(self) -> Path:
        for f in self.tmp.iterdir():
            with open(f, "rb") as fh:
                os.fsync(fh.fileno())
        os.rename(self.tmp, self.final)
        dir_fd = os.open(self.results, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
        return self.final
