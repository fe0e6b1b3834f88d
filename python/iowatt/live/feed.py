"""Where ``iowatt live`` reads from: a running iowatt's endpoint, scraped and read back into a
:class:`~iowatt.live.board.Snapshot`, or a finished run in the store, replayed second by second
through a :class:`~iowatt.live.board.Board` as the verb fed it when it ran.
"""

from __future__ import annotations

import itertools
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from iowatt.errors import ConfigError
from iowatt.histogram import HEAT_EDGES_NS, heat_bands
from iowatt.live.board import Board, Counts, Latency, Snapshot, labels_of
from iowatt.live.exposition import BESIDE_METRICS, BUCKET_BOUNDS, STIMULUS_METRICS

SCRAPE_TIMEOUT_S = 2.0
NS = 1_000_000_000
# A histogram's metric name → its name in ``Counts.beside``.
_BESIDE = {metric: name for name, (metric, _) in BESIDE_METRICS.items()}
Apply = Callable[[Board], None]
# The dashboard's next snapshot; None once a stored run is over. A scrape that fails raises
# EndpointGone.
Source = Callable[[], Snapshot | None]


class EndpointGone(Exception):
    """The endpoint stopped answering (the run ended, or its host went away)."""


def endpoint_url(text: str) -> str:
    """``host:port``, ``http://host:port`` or a full URL → the metrics URL."""
    url = text if "://" in text else f"http://{text}"
    path = url.partition("://")[2].partition("/")[2]
    return url if path else url.rstrip("/") + "/metrics"


def scrape(url: str) -> Snapshot:
    """One scrape of an iowatt endpoint, read back into a snapshot."""
    try:
        with urllib.request.urlopen(url, timeout=SCRAPE_TIMEOUT_S) as response:
            text = response.read().decode()
    except (urllib.error.URLError, OSError) as e:
        raise EndpointGone(str(getattr(e, "reason", e))) from None
    return parse(text)


def from_endpoint(url: str) -> Source:
    """Scrapes of ``url``; the first one is made now, and its failure is the user's to fix."""
    try:
        first = [scrape(url)]
    except EndpointGone as e:
        raise ConfigError(
            f"nothing answers at `{url}` ({e})",
            "start the run with --serve PORT first, or give its address: iowatt live HOST:PORT",
        ) from None
    return lambda: first.pop() if first else scrape(url)


def from_store(run_dir: Path) -> Source:
    """A stored run's seconds, one per call, then None."""
    seconds = iter(stored(run_dir))
    return lambda: next(seconds, None)


def parse(text: str) -> Snapshot:
    """The Prometheus text of :mod:`iowatt.live.exposition`, back into a snapshot."""
    from prometheus_client.parser import text_string_to_metric_families

    s = Snapshot(time.monotonic())
    gauges = {
        "iowatt_power_watts": s.watts,
        "iowatt_fan_duty_ratio": s.fan_duty,
        "iowatt_fan_speed_rpm": s.fan_rpm,
        "iowatt_temperature_celsius": s.celsius,
    }
    stimuli = {name: kind for kind, (name, _) in STIMULUS_METRICS.items()}
    step = steps = 0
    bounds = {b: i for i, b in enumerate(BUCKET_BOUNDS)}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            name, labels, value = sample.name, dict(sample.labels), sample.value
            if name == "iowatt_run_info":
                s.run = labels
            elif name == "iowatt_run_start_timestamp_seconds":
                s.started_s = value
            elif name == "iowatt_run_ended":
                s.ended = value >= 1
            elif name.startswith("iowatt_io_"):
                _io_sample(s, name, labels, value, bounds)
            elif name == "iowatt_energy_joules_total":
                s.joules[labels["channel"]] = value
            elif name in gauges:
                gauges[name][next(iter(labels.values()))] = value
            elif name in stimuli:
                s.stimulus[stimuli[name]] = value
            elif name == "iowatt_sweep_step":
                step = int(value)
            elif name == "iowatt_sweep_steps":
                steps = int(value)
    if steps:
        s.step = (step, steps)
    if s.started_s is not None:
        s.elapsed_s = time.time() - s.started_s
    return s


def _io_sample(
    s: Snapshot, name: str, labels: dict[str, str], value: float, bounds: dict[str, int]
) -> None:
    le = labels.pop("le", None)
    kind = labels.pop("kind", None) if name == "iowatt_io_errors_by_kind_total" else None
    c = s.series.setdefault(labels_of(labels), Counts())
    if name == "iowatt_io_operations_total":
        c.ops = int(value)
    elif name == "iowatt_io_bytes_total":
        c.bytes = int(value)
    elif name == "iowatt_io_errors_total":
        c.errors = int(value)
    elif kind is not None:
        c.errors_by_kind[kind] = int(value)
    elif name == "iowatt_io_latency_seconds_sum":
        c.latency_sum_s = value
    elif name == "iowatt_io_latency_seconds_bucket":
        c.bands = _bucket(c.bands, le, value, bounds)
    elif (metric := name.rpartition("_")[0]) in _BESIDE:
        h = c.beside.setdefault(_BESIDE[metric], Latency())
        if name.endswith("_sum"):
            h.sum_s = value
        elif name.endswith("_bucket"):
            h.bands = _bucket(h.bands, le, value, bounds)


def _bucket(bands: list[int], le: str | None, value: float, bounds: dict[str, int]) -> list[int]:
    """A histogram's next cumulative bucket into its bands. Buckets arrive in order; at the
    last (+Inf) each band becomes its bucket less the one before."""
    i = bounds.get(le or "", len(HEAT_EDGES_NS))
    bands[i] = int(value)
    if i < len(HEAT_EDGES_NS):
        return bands
    return [bands[0]] + [b - a for a, b in itertools.pairwise(bands)]


def stored(run_dir: Path) -> list[Snapshot]:
    """A finished run, one snapshot per second of it: what its endpoint would have said."""
    import pyarrow.parquet as pq

    from iowatt.store.runs import read_manifest

    manifest = read_manifest(run_dir)
    tables = {
        name: pq.read_table(run_dir / f"{name}.parquet")
        for name in ("intervals", "requests", "power", "sensors")
        if (run_dir / f"{name}.parquet").exists()
    }
    events = sorted(_stored_events(manifest, tables))
    if not events:
        return []
    t0 = events[0][0]
    board = Board()
    labels = manifest.get("labels") or {}
    board.begin(manifest.get("run_id", run_dir.name), manifest.get("kind", ""), labels)
    out: list[Snapshot] = []
    second = 1
    for t_ns, _, apply in events:
        while t_ns - t0 >= second * 1_000_000_000:
            out.append(_at(board, second))
            second += 1
        apply(board)
    out.append(_at(board, second))
    board.end()
    out[-1].ended = True
    return out


def _at(board: Board, second: int) -> Snapshot:
    snap = board.snapshot()
    snap.t_s = snap.elapsed_s = float(second)
    return snap


def _stored_events(
    manifest: dict[str, Any], tables: dict[str, Any]
) -> Iterator[tuple[int, int, Apply]]:
    """(mono_ns, order, apply-to-board) for every stored interval and reading."""
    intervals, requests = tables.get("intervals"), tables.get("requests")
    if manifest.get("kind") == "replay" and requests is not None and intervals is not None:
        # Its intervals hold only the time to first byte; its endpoint served more. Their
        # first second starts at the schedule's zero, where the requests' times count from.
        yield from _requests_by_second(requests, intervals["mono_ns"][0].as_py())
    elif intervals is not None:
        kind = ((manifest.get("config") or {}).get("stimulus") or {}).get("kind")
        columns = intervals.to_pydict()
        steps = sorted(set(zip(columns.get("pass_no", []), columns.get("step", []), strict=True)))
        for i, workload in enumerate(columns["workload"]):
            end = columns["mono_ns"][i] + round(columns["duration_s"][i] * 1e9)
            yield end, 1, _interval(columns, i, workload, kind, steps)
    for name in ("power", "sensors"):
        table = tables.get(name)
        if table is None:
            continue
        c = table.to_pydict()
        units = c["unit"] if "unit" in c else ["W"] * len(c["mono_ns"])
        values = c["value"] if "value" in c else c["watts"]
        for i, t in enumerate(c["mono_ns"]):
            channel = {"source": c["source"][i], "channel": c["channel"][i], "unit": units[i]}
            chunk = {"mono_ns": [t], "channel": [0], "value": [values[i]]}
            yield t, 0, _reading(channel, chunk)


def _requests_by_second(requests: Any, t0_ns: int) -> Iterator[tuple[int, int, Apply]]:
    """A replay's requests as its endpoint counted them, by the second they ended in: each
    ended request an operation, those without a response its errors, the answered ones'
    completion from the due time its latency, their time to first byte from the due time and
    completion from the send beside it."""
    import numpy as np
    import pyarrow.compute as pc

    c = {
        name: pc.fill_null(requests[name], -1).to_numpy()
        for name in ("done_ns", "completion_ns", "ttfb_ns", "completion_sent_ns", "bytes")
    }
    error = np.array(requests["error"].to_pylist(), dtype=object)
    ended = np.flatnonzero(c["done_ns"] >= 0)
    ended = ended[np.argsort(c["done_ns"][ended] // NS, kind="stable")]
    second = c["done_ns"][ended] // NS
    starts = np.flatnonzero(np.r_[True, second[1:] != second[:-1]]) if len(ended) else ()
    for begin, stop in itertools.pairwise([*starts, len(ended)]):
        rows = ended[begin:stop]
        failed = [str(e) for e in error[rows] if e is not None]
        answered = rows[[e is None for e in error[rows]]]
        completion, ttfb, service = (
            _latency(c[name][answered])
            for name in ("completion_ns", "ttfb_ns", "completion_sent_ns")
        )
        counts = Counts(
            ops=len(rows),
            bytes=int(c["bytes"][rows].sum()),
            errors=len(failed),
            bands=completion.bands,
            latency_sum_s=completion.sum_s,
            errors_by_kind={kind: failed.count(kind) for kind in sorted(set(failed))},
            beside={"ttfb": ttfb, "service": service},
        )
        yield t0_ns + (int(second[begin]) + 1) * NS, 1, _added(counts)


def _latency(values_ns: Any) -> Latency:
    return Latency(heat_bands(values_ns, [1] * len(values_ns)), int(values_ns.sum()) / NS)


def _added(counts: Counts) -> Apply:
    return lambda board: board.add(counts, workload="requests")


def _reading(channel: dict[str, str], chunk: dict[str, list[Any]]) -> Apply:
    return lambda board: board.readings([channel], chunk)


def _interval(
    columns: dict[str, list[Any]], i: int, workload: str, kind: Any, steps: list[Any]
) -> Apply:
    heat = columns.get("heat_ops", [None] * (i + 1))[i] or []
    counts = Counts(
        ops=columns["ops"][i],
        bytes=columns["bytes"][i],
        errors=columns["errors"][i],
        bands=list(heat) if heat else [0] * (len(HEAT_EDGES_NS) + 1),
    )
    stimulus = None
    if kind in STIMULUS_METRICS and "value" in columns:
        value = columns["value"][i]
        at = steps.index((columns["pass_no"][i], columns["step"][i])) + 1
        stimulus = (kind, value / 100 if kind == "fan" else value, at, len(steps))

    def apply(board: Board) -> None:
        board.add(counts, workload=workload)
        if stimulus is not None:
            board.set_stimulus(*stimulus)

    return apply
