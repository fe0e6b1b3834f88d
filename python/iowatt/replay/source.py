"""What a replay reads: an access log (any format ``iowatt trace`` reads), or the directory
``iowatt trace split`` wrote (its ``requests.parquet``, checked against ``schedule.parquet``).
Either way: the requests in order with their offsets from the trace's first second."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from iowatt.errors import ConfigError

if TYPE_CHECKING:
    import pyarrow as pa

# The columns a replay needs of a split's requests.parquet (`vhost`, the log's Host header, is
# added where it is missing: splits made before it was kept).
COLUMNS = ("offset_ns", "time_s", "method", "target", "status", "bytes", "host", "line", "vhost")


@dataclass
class Trace:
    path: Path
    # offset_ns (int64, from the first second's start, after the spread policy), time_s, method,
    # target, status (the log's), bytes (the log's), host (the client), line, vhost (or null)
    requests: pa.Table
    spread: str
    described: dict[str, Any]


def load(path: Path, fmt: str, spread: str) -> Trace:
    """The trace at ``path``: a split directory, or a log read in ``fmt`` with ``spread``."""
    if path.is_dir():
        return _split(path)
    return _log(path, fmt, spread)


def _log(path: Path, fmt: str, spread: str) -> Trace:
    import pyarrow as pa

    from iowatt.trace.log import read_log
    from iowatt.trace.schedule import check_spread, offsets_ns

    check_spread(spread)
    log = read_log(path, fmt)
    table = log.table
    requests = pa.table(
        {
            "offset_ns": offsets_ns(table["time_s"].to_numpy(), spread),
            **{name: table[name] for name in COLUMNS[1:]},
        }
    )
    described = {"source": str(path.resolve()), "log_format": fmt, "read": log.counts()}
    return Trace(path, requests, spread, described)


def _split(path: Path) -> Trace:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from iowatt.trace.split import TRACE_FORMAT

    hint = "give a directory written by `iowatt trace split`, or the log itself"
    try:
        record = json.loads((path / "trace.json").read_text())
        have = set(pq.read_schema(path / "requests.parquet").names)
        requests = pq.read_table(
            path / "requests.parquet", columns=[c for c in COLUMNS if c in have]
        )
        if "vhost" not in have:
            requests = requests.append_column("vhost", pa.nulls(requests.num_rows, pa.string()))
        schedule = pq.read_table(path / "schedule.parquet", columns=["requests"])
    except FileNotFoundError as e:
        raise ConfigError(f"`{path}` has no {Path(str(e.filename)).name}", hint) from None
    except (OSError, ValueError, KeyError, pa.ArrowException) as e:
        raise ConfigError(f"`{path}` is not a readable split ({e})", hint) from None
    if not isinstance(record, dict) or record.get("format") != TRACE_FORMAT:
        raise ConfigError(f"`{path}/trace.json` is not an {TRACE_FORMAT} record", hint)
    scheduled = pc.sum(schedule["requests"]).as_py() or 0
    if scheduled != requests.num_rows:
        raise ConfigError(
            f"`{path}`: schedule.parquet counts {scheduled} requests but requests.parquet "
            f"holds {requests.num_rows}",
            "split the log again with `iowatt trace split`",
        )
    offsets = requests["offset_ns"].to_numpy()
    if len(offsets) and ((offsets[1:] < offsets[:-1]).any() or offsets[0] < 0):
        raise ConfigError(f"`{path}/requests.parquet`: offsets are not in order", hint)
    spread = str(record.get("spread", "start"))
    described = {"source": str(path.resolve()), "split": record}
    return Trace(path, requests, spread, described)
