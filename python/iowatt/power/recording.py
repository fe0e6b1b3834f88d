"""Power recording: the sources a user named, sampled by the Rust core, kept as tables.

:class:`Recording` opens every source (:mod:`iowatt.power.sources`) at once, so every problem
is reported before anything runs, samples each on its own thread on CLOCK_MONOTONIC — the clock
of the workload engine's interval rows — and returns :class:`PowerData`: the readings, the
channels, events and counters, from which the run's ``power.parquet``, ``sensors.parquet`` and
``events.parquet`` are written. Energy arithmetic is in :mod:`iowatt.power.energy`; meter
channel maps in :mod:`iowatt.power.meter_map`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from iowatt._engine import PowerSampler
from iowatt.live.board import board
from iowatt.power import meter_map
from iowatt.power.energy import Series, counter_series, power_series
from iowatt.power.sources import DEFAULT_HZ, SourceSpec, recorder_config
from iowatt.store.schemas import POWER_SCHEMA, SENSOR_SCHEMA

DRAIN_S = 0.5
POWER_UNITS = ("W", "J")


class Recording:
    """Opens every source at once (so all errors show before any work), then samples them."""

    def __init__(
        self, specs: list[SourceSpec], hz: float = DEFAULT_HZ, anchor: tuple[int, int] | None = None
    ) -> None:
        self.specs = specs
        self.hz = hz
        self._rec = PowerSampler(recorder_config(specs, hz, anchor))
        self.channels = self._rec.channels()
        self.maps = {s.name: meter_map.load(s.map) for s in specs if s.map}
        for spec in specs:
            if spec.map:
                header = [c["channel"] for c in self.channels if c["source"] == spec.name]
                self.maps[spec.name].check_columns(header, str(spec.options["path"]))
        self._chunks: list[dict[str, Any]] = []
        self._marks: list[dict[str, Any]] = []

    def start(self) -> None:
        self._rec.start()

    def clock_anchor(self) -> tuple[int, int]:
        """(CLOCK_REALTIME ns, CLOCK_MONOTONIC ns) read together when the sources opened."""
        return self._rec.clock_anchor()

    def mark(self, message: str) -> int:
        """A phase mark (``idle``, ``work``, ``end``) in the run's events; returns its time."""
        now = time.monotonic_ns()
        self._marks.append(
            {"mono_ns": now, "source": "iowatt", "kind": "phase", "message": message}
        )
        return now

    def drain(self) -> dict[str, Any]:
        """Moves what the sampler collected into Python (call every ~0.5 s on long runs);
        returns what it moved: ``mono_ns``, ``channel`` and ``value`` lists, and ``events``."""
        chunk = self._rec.drain()
        self._chunks.append(chunk)
        board().readings(self.channels, chunk)
        return chunk

    def halt(self) -> dict[str, Any]:
        """Stops sampling and returns the last readings (like :meth:`drain`)."""
        self._rec.stop()
        return self.drain()

    def wait(self, seconds: float) -> None:
        """Sleeps while the sources sample (an idle baseline), draining as it goes."""
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            time.sleep(min(left, DRAIN_S))
            self.drain()

    def stop(self) -> PowerData:
        self._rec.stop()
        self.drain()
        chunks = self._chunks
        return PowerData(
            channels=self.channels,
            mono_ns=np.concatenate([np.asarray(c["mono_ns"], np.int64) for c in chunks]),
            channel=np.concatenate([np.asarray(c["channel"], np.int64) for c in chunks]),
            value=np.concatenate([np.asarray(c["value"], np.float64) for c in chunks]),
            events=sorted(
                [e for c in chunks for e in c["events"]] + self._marks, key=lambda e: e["mono_ns"]
            ),
            stats=self._rec.stats(),
            anchor=self._rec.clock_anchor(),
            maps=self.maps,
            specs=self.specs,
        )


@dataclass
class Channel:
    """A power channel ready for arithmetic: measured, derived from a counter, or mapped."""

    source: str
    channel: str
    scope: str
    series: Series
    parent: str | None = None

    @property
    def key(self) -> str:
        return f"{self.source}/{self.channel}"


@dataclass
class PowerData:
    channels: list[dict[str, Any]]
    mono_ns: np.ndarray
    channel: np.ndarray
    value: np.ndarray
    events: list[dict[str, Any]]
    stats: list[dict[str, Any]]
    anchor: tuple[int, int]
    maps: dict[str, meter_map.ChannelMap] = field(default_factory=dict)
    specs: list[SourceSpec] = field(default_factory=list)

    def _readings(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        sel = self.channel == index
        return self.mono_ns[sel], self.value[sel]

    def power_channels(self) -> list[Channel]:
        """Every channel in watts or joules, plus what the meter maps derive."""
        out = []
        for i, c in enumerate(self.channels):
            if c["unit"] not in POWER_UNITS:
                continue
            t, v = self._readings(i)
            series = counter_series(t, v) if c["unit"] == "J" else power_series(t, v)
            out.append(Channel(c["source"], c["channel"], c["scope"], series, c.get("parent")))
        for source, cmap in self.maps.items():
            out.extend(self._mapped(source, cmap))
        return out

    def _mapped(self, source: str, cmap: meter_map.ChannelMap) -> list[Channel]:
        # Every column of one log line carries the same timestamp: pivot on it.
        idx = {c["channel"]: i for i, c in enumerate(self.channels) if c["source"] == source}
        sel = np.isin(self.channel, list(idx.values()))
        times = np.unique(self.mono_ns[sel])
        columns = {}
        for name in cmap.columns():
            t, v = self._readings(idx[name])
            col = np.full(len(times), np.nan)
            col[np.searchsorted(times, t)] = v
            columns[name] = col
        return [
            Channel(source, d.channel, d.scope, power_series(times, d.watts))
            for d in meter_map.apply(cmap, columns)
        ]

    def sensor_channels(self) -> list[tuple[dict[str, Any], np.ndarray, np.ndarray]]:
        mapped = {(s, c) for s, m in self.maps.items() for c in m.columns()}
        return [
            (c, *self._readings(i))
            for i, c in enumerate(self.channels)
            if c["unit"] not in POWER_UNITS and (c["source"], c["channel"]) not in mapped
        ]

    # --- tables ---------------------------------------------------------------------------

    def power_table(self, run_id: str, t0_ns: int) -> pa.Table:
        cols: dict[str, list[Any]] = {name: [] for name in POWER_SCHEMA.names}
        for ch in self.power_channels():
            s = ch.series
            n = len(s.mono_ns)
            cols["run_id"] += [run_id] * n
            cols["source"] += [ch.source] * n
            cols["channel"] += [ch.channel] * n
            cols["scope"] += [ch.scope] * n
            cols["mono_ns"] += s.mono_ns.tolist()
            cols["t_s"] += ((s.mono_ns - t0_ns) / 1e9).tolist()
            cols["watts"] += _nullable(s.watts)
            cols["joules"] += _nullable(s.joules) if s.joules is not None else [None] * n
        return pa.table(cols, schema=POWER_SCHEMA)

    def sensor_table(self, run_id: str, t0_ns: int) -> pa.Table:
        cols: dict[str, list[Any]] = {name: [] for name in SENSOR_SCHEMA.names}
        for c, t, v in self.sensor_channels():
            cols["run_id"] += [run_id] * len(t)
            cols["source"] += [c["source"]] * len(t)
            cols["channel"] += [c["channel"]] * len(t)
            cols["unit"] += [c["unit"]] * len(t)
            cols["mono_ns"] += t.tolist()
            cols["t_s"] += ((t - t0_ns) / 1e9).tolist()
            cols["value"] += _nullable(v)
        return pa.table(cols, schema=SENSOR_SCHEMA)


def _nullable(a: np.ndarray) -> list[float | None]:
    return [None if not np.isfinite(x) else float(x) for x in a]
