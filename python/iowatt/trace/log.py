"""An access log read into an Arrow table by the Rust parser (``crates/iowatt-trace``): every
line counted, bad ones with their numbers and reasons, the requests in time order.

Columns: ``time_s`` (int64, seconds since the epoch, UTC), ``zone_s`` (int32, the line's zone
offset, seconds east of UTC), ``line`` (uint64, 1-based), ``host``, ``method``, ``target``
(strings as written, Apache's escapes undone), ``status`` (uint16), ``bytes`` (int64, null where
the log says ``-``), ``vhost`` (the virtual host ``%v`` or the Host header ``%{Host}i``; null
when the format has neither).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from iowatt import _engine
from iowatt.errors import ConfigError

if TYPE_CHECKING:
    import pyarrow as pa

NAMED_FORMATS = ("common", "combined", "vhost_combined")
FORMAT_HINT = (
    "give a named format (common, combined, vhost_combined) or the server's own format string "
    "in mod_log_config syntax, e.g. --format '%h %l %u %t \"%r\" %>s %b %D'"
)


@dataclass
class Log:
    path: Path
    format: str
    table: pa.Table
    lines: int  # every line, blank ones included
    bad: int
    out_of_order: int
    bad_lines: list[tuple[int, str]] = field(default_factory=list)  # the first 100

    def counts(self) -> dict[str, Any]:
        """What reading the log found, for a summary or a sidecar file."""
        return {
            "lines": self.lines,
            "requests": self.table.num_rows,
            "bad": self.bad,
            "out_of_order": self.out_of_order,
            "bad_lines": [{"line": n, "reason": why} for n, why in self.bad_lines[:10]],
        }


def read_log(path: str | os.PathLike[str], fmt: str = "combined") -> Log:
    """Reads the log at ``path`` (plain or gzip) in the format ``fmt``; a ConfigError naming the
    file if it cannot be read, is empty or has no line in that format."""
    p = Path(path)
    if p.is_dir():
        raise ConfigError(f"log `{p}` is a directory", "give the access log file itself")
    if not p.exists():
        raise ConfigError(f"log `{p}` does not exist", "check the path")
    try:
        with p.open("rb"):
            pass
    except OSError as e:
        raise ConfigError(
            f"log `{p}` cannot be read: {e.strerror}", "check its permissions"
        ) from None
    try:
        reader = _engine.LogRead(str(p), fmt)
    except ConfigError as e:
        raise ConfigError(f"--format `{fmt}`: {e.message}", FORMAT_HINT) from None
    # Parsing starts before pyarrow is imported, so the import costs no time of its own.
    reader.start()
    import pyarrow as pa

    _engine.drive([reader])
    raw = reader.result()
    if not raw["blocks"]:
        _no_requests(p, fmt, raw)
    table = pa.Table.from_batches([_batch(block) for block in raw["blocks"]], schema=schema())
    return Log(
        path=p,
        format=fmt,
        table=table,
        lines=raw["lines"],
        bad=raw["bad"],
        out_of_order=raw["out_of_order"],
        bad_lines=[(int(n), str(why)) for n, why in raw["bad_lines"]],
    )


def schema() -> pa.Schema:
    """The columns of a log's table (see the module docstring)."""
    import pyarrow as pa

    return pa.schema(
        [
            ("time_s", pa.int64()),
            ("zone_s", pa.int32()),
            ("line", pa.uint64()),
            ("host", pa.large_string()),
            ("method", pa.large_string()),
            ("target", pa.large_string()),
            ("status", pa.uint16()),
            ("bytes", pa.int64()),
            ("vhost", pa.large_string()),
        ]
    )


def _batch(block: dict[str, Any]) -> pa.RecordBatch:
    """One block of the parser's columns, as Arrow arrays over its buffers (no copy)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    n = block["count"]

    def column(kind: pa.DataType, data: bytes) -> pa.Array:
        return pa.Array.from_buffers(kind, n, [None, pa.py_buffer(data)])

    def strings(parts: tuple[bytes, bytes]) -> pa.Array:
        offsets, data = parts
        return pa.Array.from_buffers(
            pa.large_string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data)]
        )

    sent = column(pa.int64(), block["bytes"])
    vhost = strings(block["vhost"])
    return pa.record_batch(
        [
            column(pa.int64(), block["time"]),
            column(pa.int32(), block["zone"]),
            column(pa.uint64(), block["line"]),
            strings(block["host"]),
            strings(block["method"]),
            strings(block["target"]),
            column(pa.uint16(), block["status"]),
            # -1 is the parser's `-`: null, so sums and means skip it.
            pc.if_else(pc.less(sent, 0), None, sent),
            pc.if_else(pc.equal(vhost, ""), None, vhost),
        ],
        schema=schema(),
    )


def _no_requests(path: Path, fmt: str, raw: dict[str, Any]) -> None:
    if raw["bad"] == 0:
        raise ConfigError(f"log `{path}` is empty", "give a log with at least one request line")
    line, why = raw["bad_lines"][0]
    raise ConfigError(
        f"no line of log `{path}` is in the `{fmt}` format (line {line}: {why})", FORMAT_HINT
    )
