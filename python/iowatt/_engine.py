"""The Rust engines, as Python sees them: the only module that imports ``iowatt._core``.

Each engine is a handle that runs on its own thread without the GIL: :class:`WorkloadRun` (the
workload engine), :class:`PowerSampler` (the power samplers), :class:`LogRead` (the access-log
parser), :class:`TreeRecreate` (the tree recreation), :class:`Replay` (the trace replayer),
:class:`ServerSim` (the server cooling simulator) and :class:`Emulation` (the emulated disk).
:func:`drive` is the one loop that starts handles, forwards their progress, stops them on Ctrl-C
or when asked, and waits for them to end, so every verb stops the same way. Results are
typed (:class:`WorkloadResult`); the engine's errors arrive as :mod:`iowatt.errors` exceptions,
with the hints that name iowatt's options added here rather than in the bindings.
"""

from __future__ import annotations

import contextlib
import json
import queue
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, TypedDict, cast

from iowatt import _core
from iowatt.errors import ConfigError, IowattError, RunInterrupted, TargetError

POLL_S = 0.1

PERSONALITIES: tuple[str, ...] = tuple(_core.PERSONALITIES)

# What a user can do about an engine error, by its kind (the bindings attach none: they do
# not know iowatt's options).
_HINTS = {
    "unknown_personality": f"personalities are {', '.join(PERSONALITIES)}",
    "direct_io_unsupported": "this file system has no O_DIRECT (tmpfs before Linux 6.6, ramfs, "
    "some FUSE); pass --buffered to measure through the page cache",
    "no_space": "free some space or use a smaller --filesize",
    "target": "give the server as http://HOST[:PORT][/PREFIX], e.g. --target http://127.0.0.1:8080",
    "unreachable": "start the server first, or check --target's host and port",
    "model": "docs/sim-server.md gives every parameter of the server model and its range",
    "workload": "the shipped workloads.toml defines the jobs; --jobs FILE adds yours",
    "curve": "a curve's values are fractions of the disk's best throughput, within 0..1",
    "uring": "io_uring may be disabled here (/proc/sys/kernel/io_uring_disabled); "
    "use --engine psync",
}


def parse_size(text: str) -> int:
    """``"4k"`` → 4096 (powers of 1024, FileBench style)."""
    return _core.parse_size(text)


def parse_duration_ns(text: str) -> int:
    """``"1.5s"``, ``"2m"``, ``"500ms"`` → nanoseconds."""
    return _core.parse_duration_ns(text)


def ipmitool_command(source: Mapping[str, Any]) -> dict[str, Any]:
    """The checked ipmitool command line for an IPMI source's options."""
    return _core.ipmitool_command(json.dumps(source))


def derive_keys(secret: bytes) -> tuple[bytes, bytes, str]:
    """(names key, addresses key, key id) from a key file's bytes (HKDF-SHA-256)."""
    return _core.derive_keys(secret)


def hash_names(key: bytes, names: list[bytes], keep_extensions: bool) -> list[str]:
    """Each name's keyed hash (HMAC-SHA-256, 24 hex digits, extension kept on request)."""
    return _core.hash_names(key, names, keep_extensions)


# Output handed over per call when anonymising a log: big enough to amortise the call, small
# enough that Ctrl-C is seen at once.
ANONYMIZE_CHUNK_BYTES = 4 << 20


def anonymize_log(
    path: str,
    log_format: str,
    names_key: bytes,
    addresses_key: bytes,
    keep_extensions: bool,
    hash_agents: bool,
    write: Callable[[bytes], object],
) -> dict[str, Any]:
    """Anonymises the log at ``path`` chunk by chunk into ``write``; the counts of lines read,
    written, blank and bad (with the first bad ones), addresses and host names. A format that
    does not parse is a ConfigError of kind ``format``."""
    anonymizer = _core.LogAnonymizer(
        path, log_format, names_key, addresses_key, keep_extensions, hash_agents
    )
    # Two chunks in flight: the core rewrites the next one while this thread writes (and
    # compresses) the last; both release the GIL, so a gzip output takes two cores.
    chunks: queue.Queue[bytes | BaseException | None] = queue.Queue(maxsize=2)
    done = threading.Event()

    def produce() -> None:
        item: bytes | BaseException | None = None
        try:
            while not done.is_set() and (chunk := anonymizer.read(ANONYMIZE_CHUNK_BYTES)):
                chunks.put(chunk)
        except BaseException as e:  # raised again in the writing thread
            item = e
        chunks.put(item)

    producer = threading.Thread(target=produce, name="iowatt-anonymize", daemon=True)
    producer.start()
    try:
        while (item := chunks.get()) is not None:
            if isinstance(item, BaseException):
                raise item
            write(item)
    finally:
        done.set()
        while producer.is_alive():  # it may wait to put a chunk nobody will write
            with contextlib.suppress(queue.Empty):
                chunks.get(timeout=POLL_S)
    return anonymizer.stats()


class Progress(TypedDict):
    phase: str  # "preparing" | "ramp" | "measuring" | "done"
    prepared_bytes: int
    prepare_total: int
    ops: int
    bytes: int
    errors: int
    measure_start_ns: int  # CLOCK_MONOTONIC
    measure_end_ns: int


class LiveLatency(TypedDict):
    bands: list[int]  # operations per latency band of the edges asked for
    count: int
    sum_ns: float


class _EveryLiveCount(TypedDict):
    ops: int  # completed so far, ramp included
    bytes: int
    errors: int
    errors_by_kind: dict[str, int]  # EIO, ENOSPC … (workloads); timeout, reset … (replay)
    bands: list[int]  # measured operations per latency band of the edges asked for
    count: int  # measured operations whose latency is in ``bands``
    sum_ns: float


class LiveCounts(_EveryLiveCount, total=False):
    # The replayer's alone, beside its completion time from the due time (``bands``): time to
    # first byte from the due time (``ttfb``) and completion from the send (``service``)
    beside: dict[str, LiveLatency]


class Histogram(TypedDict):
    value_ns: list[int]  # each bucket's highest value
    count: list[int]
    min_ns: int
    max_ns: int
    mean_ns: float
    stdev_ns: float
    saturated: int


class FlowopResult(Histogram):
    name: str
    kind: str  # FileBench's flowop type, e.g. "read", "appendfilerand"
    io: bool  # counts in the whole-run I/O figures
    ops: int
    bytes: int
    errors: int


class Intervals(TypedDict):
    """One entry per interval (one second by default), as columns."""

    t_ns: list[int]
    duration_ns: list[int]
    ops: list[int]
    bytes: list[int]
    errors: list[int]
    p50_ns: list[int]
    p99_ns: list[int]
    p999_ns: list[int]
    max_ns: list[int]
    slow_ns: list[int]  # the thresholds
    slow_ops: list[list[int]]  # per interval, operations above each threshold


class OpenLoop(TypedDict):
    """How a run with a schedule kept it to its deadline."""

    rate: float  # requested: I/O operations/s (a rate), or events/s (an event generator)
    events: int | None  # events taken from the generator before the deadline
    drained: int  # completed (or failed) after the deadline, within the drain
    not_issued: int  # due before the deadline and never issued
    outstanding: int  # still in flight when the drain ended


class WorkloadResult(TypedDict):
    name: str
    status: str  # "complete" | "cancelled" | "failed"
    reason: str | None
    measure_start_ns: int
    measured_ns: int
    cpu_usr_ns: int
    cpu_sys_ns: int
    errors_by_kind: dict[str, int]
    histogram: Histogram  # with an open loop's lateness of what it never completed
    flowops: list[FlowopResult]
    intervals: Intervals
    open_loop: OpenLoop | None  # None for a closed loop


class Handle(Protocol):
    """What :func:`drive` needs of an engine run."""

    def start(self) -> None: ...
    def cancel(self) -> None: ...
    def wait(self, timeout_s: float) -> bool: ...


class _EngineJob:
    """An engine's job thread (``iowatt_metrics::Handle`` behind the binding): the :class:`Handle`
    methods, passed through."""

    _run: (
        _core.WorkloadRun
        | _core.TreeRecreate
        | _core.LogRead
        | _core.Replay
        | _core.ServerSim
        | _core.Emulation
    )

    def start(self) -> None:
        self._run.start()

    def cancel(self) -> None:
        self._run.cancel()

    def wait(self, timeout_s: float) -> bool:
        return self._run.wait(timeout_s)


class _Counted(_EngineJob):
    """An engine that counts operations (the workload engine; the replayer's requests)."""

    _run: _core.WorkloadRun | _core.Replay

    def live(self, edges_ns: Sequence[int]) -> LiveCounts:
        """What a metrics scrape reads, without stopping the run (see :class:`LiveCounts`)."""
        return cast(LiveCounts, self._run.live(list(edges_ns)))


class WorkloadRun(_Counted):
    """One workload on the engine: build it, :func:`drive` it, then read its result."""

    _run: _core.WorkloadRun

    def __init__(self, run: _core.WorkloadRun, name: str = "") -> None:
        self._run = run
        self.name = name

    @classmethod
    def fileio(cls, spec: Mapping[str, Any]) -> WorkloadRun:
        """A FileIO personality's parameters (``crates/iowatt-workload/src/personality.rs``)."""
        sent = Encoded(spec)
        name = str(spec.get("name", ""))
        return cls(_engine_call(lambda: _core.WorkloadRun(sent.text), name, sent), name)

    @classmethod
    def model(cls, model: Mapping[str, Any]) -> WorkloadRun:
        """A whole workload model (files, filesets, threads, flowops), as ``iowatt.wml`` builds
        from a ``.f`` file."""
        sent = Encoded(model)
        name = str(model.get("name", ""))
        return cls(_engine_call(lambda: _core.WorkloadRun.from_model(sent.text), name, sent), name)

    def model_dict(self) -> dict[str, Any]:
        """The model the engine runs (recorded in the manifest)."""
        return cast(dict[str, Any], json.loads(self._run.model_json()))

    def check(self) -> None:
        """Raises the error the engine would stop this model with, without running it."""
        _engine_call(self._run.check, self.name)

    def hold(self) -> None:
        """Once started, wait prepared (phase ``ready``) until :meth:`release`."""
        self._run.hold()

    def release(self, realtime_ns: int) -> None:
        """Start measuring at ``realtime_ns`` (``time.time_ns()``'s clock), or at once if past."""
        self._run.release(realtime_ns)

    def progress(self) -> Progress:
        return cast(Progress, self._run.progress())

    def result(self) -> WorkloadResult:
        return cast(WorkloadResult, _engine_call(self._run.result, self.name))


class LogRead(_EngineJob):
    """An access log read by the Rust parser on its own threads, as column buffers (see
    :mod:`iowatt.trace.log`). Starting it twice is harmless, so a caller can start it early,
    do other work, then :func:`drive` it."""

    _run: _core.LogRead

    def __init__(self, path: str, fmt: str) -> None:
        self._run = _core.LogRead(path, fmt)

    def start(self) -> None:
        self._run.start()

    def result(self) -> dict[str, Any]:
        return self._run.result()


def drive(
    handles: Sequence[Handle],
    on_tick: Callable[[], None] | None = None,
    *,
    stop: Callable[[], bool] | None = None,
    poll_s: float = POLL_S,
    started: bool = False,
) -> None:
    """Starts every handle (unless ``started`` already) and waits until all have ended, calling
    ``on_tick`` about every ``poll_s``. When ``stop`` says so, on Ctrl-C or on any error the
    handles are cancelled and waited for (an engine stops within one operation), so their
    results are always there to read; the interrupt or error is raised again after."""
    for h in handles if not started else ():
        h.start()
    try:
        while not all(h.wait(poll_s / len(handles)) for h in handles):
            if on_tick is not None:
                on_tick()
            if stop is not None and stop():
                break
    finally:
        for h in handles:
            h.cancel()
        for h in handles:
            while not h.wait(poll_s):
                pass


def result_failure(result: WorkloadResult) -> IowattError:
    """The error to raise for a workload that did not complete."""
    if result["status"] == "cancelled":
        return RunInterrupted("interrupted")
    errors = result["errors_by_kind"]
    no_space = "ENOSPC" in errors or "EDQUOT" in errors
    return TargetError(
        f"workload `{result['name']}` stopped: {result['reason']}",
        "free some space or use a smaller --filesize"
        if no_space
        else "the failed operations are counted by kind in the run's summary.json",
    )


class PowerSampler:
    """The power samplers of a set of sources (``iowatt.power.sources.recorder_config``)."""

    def __init__(self, config_json: str) -> None:
        self._rec = _engine_call(lambda: _core.PowerRecorder(config_json))

    def channels(self) -> list[dict[str, Any]]:
        """Each channel: source, channel, unit, scope, parent."""
        return self._rec.channels()

    def clock_anchor(self) -> tuple[int, int]:
        return self._rec.clock_anchor()

    def start(self) -> None:
        self._rec.start()

    def drain(self) -> dict[str, Any]:
        """Samples since the last drain: ``mono_ns``, ``channel``, ``value``, ``events``."""
        return self._rec.drain()

    def stop(self) -> None:
        self._rec.stop()

    def stats(self) -> list[dict[str, Any]]:
        return self._rec.stats()


class TreeProgress(TypedDict):
    phase: str  # "idle" | "creating" | "finishing" (directories' modes and times) | "done"
    entries: int  # made, or found complete by --resume
    total: int
    files: int
    dirs: int
    links: int
    bytes: int
    total_bytes: int
    skipped: int


class TreeResult(TypedDict):
    status: str  # "complete" | "cancelled"
    entries: int
    files: int
    dirs: int
    links: int
    bytes: int
    skipped: int
    elapsed_ns: int


class TreeRecreate(_EngineJob):
    """A tree recreation (``crates/iowatt-tree``): the manifest's columns as Arrow buffers
    (see ``iowatt.tree.recreate.buffers``), checked when built (a ConfigError names the row),
    then :func:`drive` it and read its result."""

    _run: _core.TreeRecreate

    def __init__(
        self,
        dest: str,
        n: int,
        buffers: Mapping[str, bytes],
        *,
        sparse: bool,
        resume: bool,
        threads: int,
        seed: int,
    ) -> None:
        b = buffers
        self._run = _engine_call(
            lambda: _core.TreeRecreate(
                dest,
                n,
                b["path_offsets"],
                b["path_data"],
                b["kind"],
                b["size"],
                b["mode"],
                b["mtime_ns"],
                b["atime_ns"],
                b["target_offsets"],
                b["target_data"],
                sparse=sparse,
                resume=resume,
                threads=threads,
                seed=seed,
            )
        )

    def progress(self) -> TreeProgress:
        return cast(TreeProgress, self._run.progress())

    def result(self) -> TreeResult:
        return cast(TreeResult, _engine_call(self._run.result))


class ReplayProgress(TypedDict):
    issued: int  # requests sent so far
    completed: int  # ended, with a response or an error
    failed: int  # ended without a response
    open: int  # in flight
    bytes: int  # response body bytes received
    lateness_ns: int  # send time minus due time of the last request sent
    max_lateness_ns: int
    total: int


class ReplayResult(TypedDict):
    status: str  # "complete" | "cancelled"
    t0_ns: int  # the schedule's zero on CLOCK_MONOTONIC
    elapsed_ns: int
    # due_ns, sent_ns, connected_ns, first_byte_ns, done_ns (int64, ns after t0, -1: never),
    # bytes (uint64), status (uint16, 0: no response), error (uint8 codes into ``errors``)
    columns: dict[str, bytes]
    errors: list[str]
    # ttfb, completion (from the due time), ttfb_sent, completion_sent
    histograms: dict[str, Histogram]


class Replay(_Counted):
    """A web trace replayed against a server (``crates/iowatt-replay``): the plan's columns
    as little-endian buffers (see ``iowatt.replay.plan``), checked when built, then
    :func:`drive` it and read its result."""

    _run: _core.Replay

    def __init__(
        self,
        n: int,
        buffers: Mapping[str, bytes],
        methods: list[str],
        hosts: list[str],
        **config: Any,
    ) -> None:
        b = buffers
        self._run = _engine_call(
            lambda: _core.Replay(
                n,
                b["due_ns"],
                b["method"],
                methods,
                b["target_offsets"],
                b["target_data"],
                b["client"],
                b.get("host_index", b""),
                hosts,
                **config,
            )
        )

    def progress(self) -> ReplayProgress:
        return cast(ReplayProgress, self._run.progress())

    def result(self) -> ReplayResult:
        return cast(ReplayResult, _engine_call(self._run.result))


def _engine_call(
    call: Callable[[], Any], workload: str | None = None, sent: Encoded | None = None
) -> Any:
    try:
        return call()
    except IowattError as e:
        if e.hint is None and e.kind in _HINTS:
            e.hint = _HINTS[e.kind]
        # Serde's errors carry no kind; the engine's own validation says "invalid".
        if workload is not None and isinstance(e, ConfigError) and e.kind in (None, "invalid"):
            raise _workload_error(e, workload, sent) from None
        raise


# --- the engine's own validation, in the user's terms ---------------------------------------
#
# iowatt checks every value before the engine sees it; these translate what slips through (the
# engine reading its JSON, or refusing a workload) into a message that names the workload and
# the field, never serde's "expected value at line 1 column 214".

# A FileIO field → the bench option it comes from.
_OPTIONS = {
    "iosize": "--iosize",
    "filesize": "--filesize",
    "nthreads": "--nthreads",
    "rate": "--rate",
    "seed": "--seed",
    "runtime_ns": "--runtime",
    "ramp_ns": "--ramp",
    "iodepth": "--iodepth",
    "slow_ns": "--slow",
    "engine": "--engine",
    "directio": "--directio",
    "dsync": "--dsync",
}
_SERDE_PLACE = re.compile(r"^(?:invalid workload(?: model)?: )?(.*) at line (\d+) column (\d+)$")
_SHOWN = 40  # characters of a value quoted in a message


class Encoded:
    """A workload as the JSON text sent to the engine, with where each value sits in it, so a
    position in the engine's error can be traced back to the field it is in."""

    def __init__(self, value: Any) -> None:
        self._parts: list[str] = []
        self._pos = 0
        self.spans: list[tuple[int, int, tuple[str | int, ...]]] = []
        self._walk(value, ())
        self.text = "".join(self._parts)
        self.value = value

    def _emit(self, text: str) -> None:
        self._parts.append(text)
        self._pos += len(text)

    def _walk(self, value: Any, path: tuple[str | int, ...]) -> None:
        start = self._pos
        if isinstance(value, Mapping):
            self._emit("{")
            for i, (key, item) in enumerate(value.items()):
                self._emit(("," if i else "") + json.dumps(str(key)) + ":")
                self._walk(item, (*path, str(key)))
            self._emit("}")
        elif isinstance(value, list | tuple):
            self._emit("[")
            for i, item in enumerate(value):
                self._emit("," if i else "")
                self._walk(item, (*path, i))
            self._emit("]")
        else:
            self._emit(json.dumps(value))
        self.spans.append((start, self._pos, path))

    def field_at(self, line: int, column: int) -> tuple[tuple[str | int, ...], str] | None:
        """The path of the innermost value at serde's (1-based) line and column, and its text."""
        if line != 1:  # the text is one line
            return None
        offset = column - 1
        inside = [s for s in self.spans if s[0] <= offset < s[1]]
        if not inside:
            return None
        start, end, path = min(inside, key=lambda s: s[1] - s[0])
        return path, self.text[start:end]

    def describe(self, path: tuple[str | int, ...]) -> str:
        """``thread `shadow` instances``, ``fileset `data` size``, ``rate``."""
        words: list[str] = []
        node: Any = self.value
        for i, key in enumerate(path):
            if isinstance(key, int) and isinstance(node, Sequence):
                node = node[key] if key < len(node) else None
                name = node.get("name") if isinstance(node, Mapping) else None
                within = str(path[i - 1]) if i else ""
                # "threads", 3 → thread `shadow`; an unnamed item stays slow_ns[1]
                words[-1:] = [
                    f"{within.removesuffix('s')} `{name}`" if name else f"{within}[{key}]"
                ]
            else:
                node = node.get(key) if isinstance(node, Mapping) else None
                words.append(str(key))
        return " ".join(words) or "the workload"


_SIM_PLACE = re.compile(r"^the configuration: (.*) at line (\d+) column (\d+)$")


def _sim_error(e: ConfigError, sent: Encoded, hint: str = _HINTS["model"]) -> ConfigError:
    """A simulator configuration the engine cannot read, naming the value's dotted path."""
    m = _SIM_PLACE.match(e.message)
    found = m and sent.field_at(int(m.group(2)), int(m.group(3)))
    if not m or not found or not found[0]:
        return e
    path, text = found
    shown = text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"
    dotted = ".".join(str(p) for p in path)
    return ConfigError(
        f"`{dotted}` = `{shown}` is not a value the simulator takes ({m.group(1)})",
        hint,
    )


def _workload_error(e: ConfigError, workload: str, sent: Encoded | None) -> ConfigError:
    """The engine's ConfigError about ``workload``, naming the field and the option."""
    m = _SERDE_PLACE.match(e.message)
    if m is None or sent is None:
        what = e.message.removeprefix("invalid workload: ")
        return ConfigError(
            f"workload `{workload}`: {what}",
            e.hint
            or "iowatt's own checks let this through: change the option or the "
            "workload file line it names, and please report it",
        )
    reason, line, column = m.group(1), int(m.group(2)), int(m.group(3))
    found = sent.field_at(line, column)
    if found is None or not found[0]:
        return ConfigError(
            f"workload `{workload}`: the engine cannot read its parameters: {reason}",
            "please report it, with the command line",
        )
    path, text = found
    shown = text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"
    option = _OPTIONS.get(str(path[0]))
    field = sent.describe(path)
    if option:
        field = f"{option} ({field})"
    return ConfigError(
        f"workload `{workload}`: {field} `{shown}` is not a value the engine takes ({reason})",
        f"give {option} a value in range (`iowatt bench --help`)"
        if option
        else "change that value in the workload file; iowatt should have refused it: "
        "please report it",
    )


class ServerSimProgress(TypedDict):
    runs_done: int
    runs: int  # workloads × policies × seeds
    simulated_s: float  # over every run so far


class ServerSim(_EngineJob):
    """The server cooling simulator (``crates/iowatt-sim/src/server``) on a whole
    configuration (``iowatt.sim.server``), checked when built; :func:`drive` it, then read one
    dict per run."""

    _run: _core.ServerSim

    def __init__(self, config: Mapping[str, Any]) -> None:
        sent = Encoded(config)
        try:
            self._run = _engine_call(lambda: _core.ServerSim(sent.text))
        except ConfigError as e:
            raise _sim_error(e, sent) from None

    def progress(self) -> ServerSimProgress:
        return cast(ServerSimProgress, self._run.progress())

    def result(self) -> list[dict[str, Any]]:
        return cast(list[dict[str, Any]], _engine_call(self._run.result))


class Emulation(_EngineJob):
    """The emulated disk (``crates/iowatt-emulate``): BACKING served at MOUNT by FUSE as a disk
    of ``model`` (a ``disks.toml`` table, checked when built). :func:`drive` it: it serves until
    cancelled, then answers what is queued and unmounts; :meth:`progress` has the counters
    (``ready`` once mounted), :meth:`result` every request's charge, the state changes and the
    stimuli set. With ``curve`` ((stimulus, r) points, ascending) each request is charged S / r
    at the stimulus in force when it starts, ``at`` at the mount (default: the first point).
    ``scheduler`` is ``fifo``, ``elevator`` or ``cfq`` (with ``slice_s`` and ``idle_window_s``);
    ``tails`` (iowatt.emulate.tails) scale each slowed request's added time by a seeded draw.
    With ``array`` (iowatt.emulate.array's plan) the mount is served by an array of such disks
    under a RAID personality: the counters and result are the array's."""

    _run: _core.Emulation

    def __init__(
        self,
        backing: str,
        mount: str,
        model: Mapping[str, Any],
        *,
        name: str,
        spin_down_s: float | None,
        seed: int,
        page_cache: bool,
        scheduler: str = "fifo",
        slice_s: float = 0.1,
        idle_window_s: float = 0.008,
        curve: Sequence[tuple[float, float]] | None = None,
        at: float | None = None,
        stall_cap_s: float = 30.0,
        tails: Sequence[tuple[float, Sequence[float]]] | None = None,
        array: Mapping[str, Any] | None = None,
    ) -> None:
        sent = Encoded(model)
        array_sent = None if array is None else Encoded(array)
        points = None if curve is None else [(float(x), float(r)) for x, r in curve]
        self._run = _engine_call(
            lambda: _core.Emulation(
                backing,
                mount,
                sent.text,
                name=name,
                spin_down_s=spin_down_s,
                seed=seed,
                page_cache=page_cache,
                scheduler=scheduler,
                slice_s=slice_s,
                idle_window_s=idle_window_s,
                curve=points,
                at=at,
                stall_cap_s=stall_cap_s,
                tails=None if tails is None else [(float(s), list(q)) for s, q in tails],
                array_json=None if array_sent is None else array_sent.text,
            )
        )

    def progress(self) -> dict[str, Any]:
        return self._run.progress()

    def set_stimulus(self, value: float) -> float:
        """Sets the stimulus in force; the speed r it gives. :class:`ConfigError` outside the
        curve, without one, or while a followed source holds it."""
        return float(_engine_call(lambda: self._run.set_stimulus(value)))

    def lock(self, locked: bool) -> None:
        """While ``locked``, :meth:`set_stimulus` is refused: a followed source sets it."""
        _engine_call(lambda: self._run.lock(locked))

    def follow(self, value: float) -> float:
        """Sets the stimulus from the followed source (clamped to the curve)."""
        return float(_engine_call(lambda: self._run.follow(value)))

    def result(self) -> dict[str, Any]:
        return cast(dict[str, Any], _engine_call(self._run.result))


def raid_simulate(
    config: Mapping[str, Any], columns: Mapping[str, bytes], n: int, seed: int
) -> dict[str, Any]:
    """One RAID personality on a trace (``crates/iowatt-sim/src/raid``): ``config`` holds
    ``array`` and ``spec``; ``columns`` the trace's ``t_ns``, ``offset`` and ``bytes`` as
    little-endian uint64 buffers, ``write`` (uint8 flags; absent: all read), and a web trace's
    ``dir_at`` and ``inode_at`` (its files' metadata blocks; absent: a block trace). Refused
    input raises :class:`ConfigError`."""
    sent = Encoded(config)
    try:
        return cast(
            dict[str, Any],
            _engine_call(
                lambda: _core.raid_simulate(
                    sent.text,
                    n,
                    columns["t_ns"],
                    columns["offset"],
                    columns["bytes"],
                    columns.get("write", b""),
                    columns.get("dir_at", b""),
                    columns.get("inode_at", b""),
                    seed,
                )
            ),
        )
    except ConfigError as e:
        if "beyond the array" in e.message:
            hint = (
                "more --disks or a larger --disk-model hold it; else the trace is another array's"
            )
        else:
            hint = "docs/sim-raid.md gives the disk models' and personalities' keys and ranges"
        err = _sim_error(e, sent, hint)
        err.hint = err.hint or hint
        raise err from None


def tasks_simulate(config: Mapping[str, Any]) -> dict[str, Any]:
    """The task-packing simulator (``crates/iowatt-sim/src/tasks``) on one configuration:
    makespan, energy (the disk's part too), the disk's and the cores' busy seconds, requests
    served and tasks. Refused input raises :class:`ConfigError`."""
    sent = Encoded(config)
    try:
        return cast(dict[str, Any], _engine_call(lambda: _core.tasks_simulate(sent.text)))
    except ConfigError as e:
        err = _sim_error(e, sent, "docs/sim-tasks.md gives the node model's keys and ranges")
        err.hint = err.hint or "docs/sim-tasks.md gives the node model's keys and ranges"
        raise err from None
