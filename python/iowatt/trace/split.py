"""``iowatt trace split``: a log into the study's two files — the master schedule (each second
of the trace and how many requests it issued) and the ordered request list — plus a record of
how they were made, in a directory the replay engine reads.

``DIR/schedule.parquet``: ``second`` (from the trace's start), ``time_s`` (epoch seconds, UTC),
``requests``. ``DIR/requests.parquet``: ``seq`` (issue order), ``offset_ns`` (when it goes out,
from the first second's start, after the ``--spread`` policy), ``time_s``, ``method``,
``target``, ``status``, ``bytes``, ``host``, ``line``, ``vhost``. ``DIR/trace.json``: the source
log, its format, the filters and spread, what reading found, and what each filter dropped.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from iowatt.errors import ConfigError, TargetError
from iowatt.trace.filters import Filters
from iowatt.trace.log import Log
from iowatt.trace.schedule import offsets_ns, per_second

TRACE_FORMAT = "iowatt-trace/1"


def check_out_dir(out: Path) -> None:
    """OUT must be new or an empty directory, in a directory that exists."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ConfigError(
            f"-o `{out}` already exists and is not an empty directory",
            "give a new directory name (split never overwrites)",
        )
    if not out.parent.is_dir():
        raise ConfigError(f"-o `{out}`: directory `{out.parent}` does not exist", "create it first")


def split(log: Log, filters: Filters, spread: str, out: Path) -> dict[str, Any]:
    """Writes OUT atomically (a temporary sibling renamed into place); returns trace.json."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    check_out_dir(out)
    table, dropped = filters.apply(log.table)
    time_s = table["time_s"].to_numpy()
    seconds, counts = per_second(time_s)
    offsets = offsets_ns(time_s, spread)
    requests = pa.table(
        {
            "seq": np.arange(table.num_rows, dtype=np.int64),
            "offset_ns": offsets,
            "time_s": table["time_s"],
            "method": table["method"],
            "target": table["target"],
            "status": table["status"],
            "bytes": table["bytes"],
            "host": table["host"],
            "line": table["line"],
            "vhost": table["vhost"],
        }
    )
    schedule = pa.table(
        {
            "second": seconds - (seconds[0] if len(seconds) else 0),
            "time_s": seconds,
            "requests": counts,
        }
    )
    record = {
        "format": TRACE_FORMAT,
        "source": str(log.path.resolve()),
        "log_format": log.format,
        "spread": spread,
        "filters": filters.describe(),
        "read": log.counts(),
        "dropped": dropped,
        "requests": table.num_rows,
        "start_s": int(seconds[0]) if len(seconds) else None,
        "duration_s": len(seconds),
        "peak_per_s": int(counts.max()) if len(counts) else 0,
    }
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        umask = os.umask(0)
        os.umask(umask)
        tmp.chmod(0o777 & ~umask)  # mkdtemp's 0700 is for its own privacy, not the output's
        pq.write_table(requests, tmp / "requests.parquet")
        pq.write_table(schedule, tmp / "schedule.parquet")
        (tmp / "trace.json").write_text(json.dumps(record, indent=2) + "\n")
        if out.exists():
            out.rmdir()  # empty, checked above
        os.rename(tmp, out)
    except OSError as e:
        shutil.rmtree(tmp, ignore_errors=True)
        raise TargetError(
            f"-o `{out}` cannot be written: {e.strerror}", "free some space or choose another DIR"
        ) from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return record
