"""Everything a replay needs, checked before anything is sent: the trace, the target, the
speed-up, the connection cap, the warm-up and cool-down, the timeout, power."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from iowatt.errors import ConfigError
from iowatt.limits import open_files_limit, raise_open_files_limit
from iowatt.power.sources import DEFAULT_HZ, SourceSpec, power_options
from iowatt.replay.source import Trace, load
from iowatt.units import check_finite, check_int, parse_duration

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

# A speed-up past this leaves nothing of a trace's think time (a day in under a second).
MAX_SPEEDUP = 1_000_000.0
# Connections at once: beyond a loopback port range and any server's limit.
MAX_CONNS = 1_000_000
MAX_THREADS = 1024
# Descriptors kept for everything but connections (the runtime, logs, power sources, Parquet).
FILES_RESERVE = 64
_URL = re.compile(r"^https?://[^/?#@\s]+(/[^?#\s]*)?$")


@dataclass
class ReplayConfig:
    trace: Trace
    target: str
    results: Path
    speedup: float = 1.0
    max_conns: int | None = None
    # The cap the engine runs with: --max-conns, else what the open-files limit allows.
    conn_limit: int = 0
    keep_alive: bool = False
    timeout_s: float = 30.0
    warmup_s: float = 0.0
    cooldown_s: float = 0.0
    duration_s: float | None = None
    host_header: str | None = None
    # https: PEM certificates trusted beside the Mozilla roots, or no certificate check at all
    ca_file: Path | None = None
    ca_pem: bytes | None = None
    insecure: bool = False
    threads: int = 1
    labels: dict[str, str] = field(default_factory=dict)
    power: list[SourceSpec] = field(default_factory=list)
    power_hz: float = DEFAULT_HZ
    idle_s: float = 0.0
    report: bool = True
    clock_anchor: tuple[int, int] | None = None

    def recorded(self) -> dict[str, Any]:
        """The manifest's ``config``."""
        return {
            "target": self.target,
            "trace": self.trace.described,
            "spread": self.trace.spread,
            "speedup": self.speedup,
            "max_conns": self.max_conns,
            "conn_limit": self.conn_limit,
            "keep_alive": self.keep_alive,
            "timeout_s": self.timeout_s,
            "warmup_s": self.warmup_s,
            "cooldown_s": self.cooldown_s,
            "duration_s": self.duration_s,
            "host_header": self.host_header,
            "ca_file": str(self.ca_file) if self.ca_file else None,
            "insecure": self.insecure,
            "threads": self.threads,
            "workloads": [{"name": "replay", "personality": "replay"}],
            "power": {
                "sources": [s.describe() for s in self.power],
                "hz": self.power_hz,
                "idle_s": self.idle_s,
            }
            if self.power
            else None,
        }


def plan(
    source: Path,
    target: str,
    results: Path,
    *,
    fmt: str = "combined",
    spread: str = "start",
    speedup: float = 1.0,
    max_conns: int | None = None,
    keep_alive: bool = False,
    timeout: str = "30s",
    warmup: str | None = None,
    cooldown: str | None = None,
    duration: str | None = None,
    host_header: str | None = None,
    ca_file: Path | None = None,
    insecure: bool = False,
    threads: int = 1,
    labels: dict[str, str] | None = None,
    power: tuple[str, ...] = (),
    power_hz: float = DEFAULT_HZ,
    idle: str | None = None,
    report: bool = True,
) -> ReplayConfig:
    """Checks every option, then reads the trace (the slow part) last."""
    if not _URL.match(target):
        raise ConfigError(
            f"--target `{target}` is not an http:// or https:// URL",
            "give the server as http[s]://HOST[:PORT][/PREFIX], e.g. --target "
            "http://127.0.0.1:8080",
        )
    if (ca_file or insecure) and not target.startswith("https://"):
        raise ConfigError(
            f"--ca-file and --insecure are for https targets, and `{target}` is http",
            "drop them, or give the server's https URL",
        )
    if ca_file and insecure:
        raise ConfigError("--ca-file and --insecure contradict each other", "give one of them")
    ca_pem = _read_ca(ca_file) if ca_file else None
    speedup = check_finite(speedup, "--speedup", "--speedup 8")
    if not 0 < speedup <= MAX_SPEEDUP:
        raise ConfigError(
            f"--speedup `{speedup:g}` must be above 0 and at most {MAX_SPEEDUP:,.0f}",
            "e.g. --speedup 8 (the study's), or 1 for the log's own pace",
        )
    if max_conns is not None:
        check_int(max_conns, "--max-conns", 1, MAX_CONNS, "--max-conns 1022")
    conn_limit = connection_limit(max_conns)
    check_int(threads, "--threads", 1, MAX_THREADS, "--threads 1")
    timeout_s = parse_duration(timeout, "--timeout")
    if timeout_s <= 0:
        raise ConfigError(f"--timeout `{timeout}` must be longer than 0", "e.g. --timeout 30s")
    if host_header is not None and not re.fullmatch(r"[\x21-\x7e]+", host_header):
        raise ConfigError(
            f"--host-header `{host_header}` cannot be a Host header", "e.g. www.example.org"
        )
    sources, power_hz, idle_s = power_options(power, power_hz, idle)
    config = ReplayConfig(
        trace=load(source, fmt, spread),
        target=target,
        results=results,
        speedup=speedup,
        max_conns=max_conns,
        conn_limit=conn_limit,
        keep_alive=keep_alive,
        timeout_s=timeout_s,
        warmup_s=parse_duration(warmup, "--warmup") if warmup else 0.0,
        cooldown_s=parse_duration(cooldown, "--cooldown") if cooldown else 0.0,
        duration_s=parse_duration(duration, "--duration") if duration else None,
        host_header=host_header,
        ca_file=ca_file,
        ca_pem=ca_pem,
        insecure=insecure,
        threads=threads,
        labels=labels or {},
        power=sources,
        power_hz=power_hz,
        idle_s=idle_s,
        report=report,
    )
    if config.duration_s is not None:
        config.trace.requests = config.trace.requests.filter(
            _offsets(config) < int(config.duration_s * 1e9)
        )
    if config.trace.requests.num_rows == 0:
        raise ConfigError(f"`{source}` leaves no request to replay", "check --duration")
    start, end = window(config)
    if start >= end:
        raise ConfigError(
            f"--warmup and --cooldown leave nothing of the trace's "
            f"{_span_s(config):,.0f} s to measure",
            "shorten them",
        )
    return config


def _read_ca(path: Path) -> bytes:
    hint = "give the PEM file of the CA (or self-signed certificate) the server's is signed by"
    try:
        if not path.is_file():
            raise ConfigError(f"--ca-file `{path}` is not a file", hint)
        data = path.read_bytes()
    except OSError as e:
        raise ConfigError(f"--ca-file `{path}` cannot be read: {e.strerror}", hint) from None
    if len(data) > 1 << 20 or b"-----BEGIN CERTIFICATE-----" not in data:
        raise ConfigError(f"--ca-file `{path}` holds no PEM certificate", hint)
    return data


def connection_limit(max_conns: int | None) -> int:
    """The connections a replay may hold open: ``--max-conns``, else as many as the open-files
    limit allows less a reserve."""
    _, hard = open_files_limit()
    available = min(hard, MAX_CONNS + FILES_RESERVE) - FILES_RESERVE
    want = (available if max_conns is None else max_conns) + FILES_RESERVE
    raise_open_files_limit(
        want,
        f"--max-conns `{max_conns}` needs {want:,} descriptors under the open-files limit (one "
        f"per connection, {FILES_RESERVE} for the rest)",
        f"use --max-conns {available} or less",
    )
    return max(available, 1) if max_conns is None else max_conns


def _offsets(config: ReplayConfig) -> npt.NDArray[np.int64]:
    return config.trace.requests["offset_ns"].to_numpy()


def _span_s(config: ReplayConfig) -> float:
    """The trace's length in log time: to the end of its last second."""
    offsets = _offsets(config)
    return float(offsets[-1] // 1_000_000_000 + 1) if len(offsets) else 0.0


def window(config: ReplayConfig) -> tuple[int, int]:
    """Rows ``[start, end)`` of the measured window: the warm-up's log time cut from the
    start, the cool-down's from the end of the trace's last second."""
    import numpy as np

    offsets = _offsets(config)
    start = int(np.searchsorted(offsets, int(config.warmup_s * 1e9), side="left"))
    cut = int((_span_s(config) - config.cooldown_s) * 1e9)
    end = int(np.searchsorted(offsets, cut, side="left"))
    return start, end


def buffers(config: ReplayConfig) -> tuple[int, dict[str, bytes], list[str], list[str]]:
    """The plan as the engine takes it: row count, little-endian column buffers, methods and
    the Host headers ``host_index`` points into (none: every request gets the same one)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    requests = config.trace.requests
    n = requests.num_rows
    due = (_offsets(config) / config.speedup).astype(np.uint64)
    methods = pc.dictionary_encode(requests["method"].combine_chunks())
    if len(methods.dictionary) > 256:
        raise ConfigError(
            f"the trace has {len(methods.dictionary)} different methods, more than 256",
            "keep the usual ones with `iowatt trace split --method GET --method HEAD`",
        )
    targets = requests["target"].combine_chunks().cast(pa.large_string())
    offsets = np.frombuffer(targets.buffers()[1], np.int64)[targets.offset : targets.offset + n + 1]
    clients = pc.dictionary_encode(requests["host"].combine_chunks()).indices
    columns = {
        "due_ns": due.tobytes(),
        "method": methods.indices.to_numpy(zero_copy_only=False).astype(np.uint8).tobytes(),
        "target_offsets": offsets.tobytes(),
        "target_data": targets.buffers()[2].to_pybytes() if n else b"",
        "client": clients.to_numpy(zero_copy_only=False).astype(np.uint32).tobytes(),
    }
    hosts: list[str] = []
    vhost = requests["vhost"]
    if vhost.null_count < n:
        # The log's own Host header (%v or %{Host}i), "" where a line has none: the engine
        # sends --host-header over it, and the target's host where it is "".
        encoded = pc.dictionary_encode(pc.fill_null(vhost, "").combine_chunks())
        columns["host_index"] = (
            encoded.indices.to_numpy(zero_copy_only=False).astype(np.uint32).tobytes()
        )
        hosts = [str(h) for h in encoded.dictionary.to_pylist()]
    return n, columns, [str(m) for m in methods.dictionary.to_pylist()], hosts
