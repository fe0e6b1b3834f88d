"""An access log made shareable: client addresses through Crypto-PAn, paths hashed like the
names of ``iowatt tree snapshot``, users, queries, referers and other secrets keyed-hashed, every
other byte kept; lines that do not parse are left out (see docs/trace.md, "Anonymising a log").

The Rust core rewrites the lines; this module checks the input and output, and writes the
output atomically (a temporary file renamed into place, gzip when its name ends in ``.gz``).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from iowatt import _engine
from iowatt.errors import ConfigError
from iowatt.keys import Keys
from iowatt.store.writer import check_output
from iowatt.trace.log import FORMAT_HINT

GZIP_MAGIC = b"\x1f\x8b"


@dataclass(frozen=True)
class Anonymized:
    """What was made: counts of lines, and where they went (None: a stream)."""

    log: Path
    output: Path | None
    key_id: str
    lines: int
    written: int
    blank: int
    bad: int
    addresses: int
    host_names: int
    # (line number, reason) of the first lines left out
    bad_lines: list[tuple[int, str]] = field(default_factory=list)


def is_gzip(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(2) == GZIP_MAGIC


def default_output(log: Path) -> Path:
    """``NAME.anon`` in the current directory (``NAME.anon.gz`` for a gzip log): never next to
    the log, which often sits where only root writes and where it would be shared by mistake."""
    name = log.name.removesuffix(".gz")
    return Path(f"{name}.anon.gz" if is_gzip(log) else f"{name}.anon")


def check_log(log: Path) -> None:
    """Refuses a log that is missing, not a file, unreadable or empty, before any work."""
    hint = "give the path of an access log, plain or gzip"
    if not log.exists():
        raise ConfigError(f"log `{log}` does not exist", hint)
    if not log.is_file():
        raise ConfigError(f"log `{log}` is not a regular file", hint)
    try:
        with open(log, "rb") as f:
            empty = not f.read(1)
    except OSError as e:
        raise ConfigError(
            f"log `{log}` cannot be read: {e.strerror}", "check its permissions"
        ) from None
    if empty:
        raise ConfigError(f"log `{log}` is empty", hint)


def anonymize(
    log: Path,
    keys: Keys,
    output: Path | BinaryIO,
    log_format: str = "combined",
    keep_extensions: bool = False,
    hash_agents: bool = False,
) -> Anonymized:
    """Writes ``log`` anonymised with ``keys`` to ``output`` (a file, replaced atomically, or
    a binary stream). Raises ConfigError, with nothing written, if no line parses."""
    check_log(log)
    if isinstance(output, Path):
        check_output(output, "-o")
        if output.exists() and output.samefile(log):
            raise ConfigError(f"-o `{output}` is the log itself", "name another file")
        stats = _to_file(log, keys, output, log_format, keep_extensions, hash_agents)
    else:
        stats = _run(log, keys, output.write, log_format, keep_extensions, hash_agents)
        _check_written(log, log_format, stats)
    return Anonymized(
        log=log,
        output=output if isinstance(output, Path) else None,
        key_id=keys.id,
        lines=stats["lines"],
        written=stats["written"],
        blank=stats["blank"],
        bad=stats["bad"],
        addresses=stats["addresses"],
        host_names=stats["host_names"],
        bad_lines=[(int(n), str(r)) for n, r in stats["bad_lines"]],
    )


def _run(
    log: Path,
    keys: Keys,
    write: Callable[[bytes], object],
    log_format: str,
    keep_extensions: bool,
    hash_agents: bool,
) -> dict[str, Any]:
    try:
        return _engine.anonymize_log(
            str(log), log_format, keys.names, keys.addresses, keep_extensions, hash_agents, write
        )
    except ConfigError as e:
        if e.kind == "format":
            raise ConfigError(f"--format `{log_format}`: {e.message}", FORMAT_HINT) from None
        raise


def _to_file(
    log: Path,
    keys: Keys,
    output: Path,
    log_format: str,
    keep_extensions: bool,
    hash_agents: bool,
) -> dict[str, Any]:
    import gzip

    fd, tmp = tempfile.mkstemp(dir=output.parent, prefix=f".{output.name}.")
    try:
        with os.fdopen(fd, "wb") as raw:
            if output.name.endswith(".gz"):
                # No name and no time in the header: one key and one log give the same bytes.
                with gzip.GzipFile(
                    filename="", fileobj=raw, mode="wb", compresslevel=6, mtime=0
                ) as gz:
                    stats = _run(log, keys, gz.write, log_format, keep_extensions, hash_agents)
            else:
                stats = _run(log, keys, raw.write, log_format, keep_extensions, hash_agents)
            _check_written(log, log_format, stats)
            raw.flush()
            os.fsync(raw.fileno())
        # mkstemp makes the file private; the output is meant to be shared.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, output)
    except BaseException:
        os.unlink(tmp)
        raise
    return stats


def _check_written(log: Path, log_format: str, stats: dict[str, Any]) -> None:
    if stats["written"]:
        return
    if not stats["bad"]:
        raise ConfigError(f"log `{log}` holds no lines", "give a non-empty access log")
    number, reason = stats["bad_lines"][0]
    raise ConfigError(
        f"no line of `{log}` is in the format `{log_format}` (line {number}: {reason})",
        FORMAT_HINT,
    )
