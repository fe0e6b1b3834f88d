"""A board as Prometheus metric families, built afresh on each scrape (a custom collector, as
prometheus_client's docs advise for values another system keeps).

Names follow Prometheus's naming practice: an ``iowatt_`` prefix, base units (seconds, bytes,
joules, ratio 0..1), ``_total`` on counters. Latency is a classic histogram whose buckets are
the report's heatmap bands (:data:`iowatt.histogram.HEAT_EDGES_NS`), so Grafana's heatmap, the
terminal dashboard and the HTML report draw the same bands; a replay's time to first byte and
service time beside it are histograms of the same buckets.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    InfoMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector, CollectorRegistry

from iowatt.histogram import HEAT_EDGES_NS
from iowatt.live.board import Board, Snapshot

# A sweep's stimulus by kind (the board holds it in these units: fan duty as a ratio).
STIMULUS_METRICS = {
    "fan": ("iowatt_stimulus_fan_duty_ratio", "Commanded fan duty of the sweep step, 0..1"),
    "amplitude": (
        "iowatt_stimulus_vibration_amplitude_grms",
        "Commanded random-vibration amplitude of the sweep step, g RMS (the shaker's unit)",
    ),
    "frequency": (
        "iowatt_stimulus_vibration_frequency_hertz",
        "Commanded sine vibration frequency of the sweep step",
    ),
}
# The histograms a series may carry beside its latency (a replay's), by their name in
# ``Counts.beside``.
BESIDE_METRICS = {
    "ttfb": (
        "iowatt_io_ttfb_seconds",
        "Time to first byte from the due time (a replay's answered requests)",
    ),
    "service": (
        "iowatt_io_service_time_seconds",
        "Completion time from the send, the server's service time (a replay's answered requests)",
    ),
}
# `le` values, as Prometheus writes bucket bounds: seconds.
BUCKET_BOUNDS = [f"{edge / 1e9:g}" for edge in HEAT_EDGES_NS]


class BoardCollector(Collector):
    """Reads the board on each scrape; the first failure is told to ``failed`` (once), and
    that scrape answers 500 while the run goes on."""

    def __init__(self, board: Board, failed: Callable[[str], None] | None = None) -> None:
        self.board, self.failed = board, failed

    def collect(self) -> Iterator[Metric]:
        try:
            return iter(list(families(self.board.snapshot())))
        except Exception as e:
            if self.failed is not None:
                self.failed(f"{type(e).__name__}: {e}")
                self.failed = None
            raise


def registry_of(board: Board, failed: Callable[[str], None] | None = None) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(BoardCollector(board, failed))
    return registry


def families(s: Snapshot) -> Iterator[Metric]:
    yield from _run(s)
    yield from _io(s)
    yield from _power(s)
    yield from _sweep(s)


def _run(s: Snapshot) -> Iterator[Metric]:
    if s.run:
        info = InfoMetricFamily("iowatt_run", "The run being measured", labels=list(s.run))
        info.add_metric(list(s.run.values()), {})
        yield info
    if s.started_s is not None:
        yield GaugeMetricFamily(
            "iowatt_run_start_timestamp_seconds", "When the run began", value=s.started_s
        )
    yield GaugeMetricFamily(
        "iowatt_run_ended", "1 once the run has ended (the endpoint lingers)", value=float(s.ended)
    )


def _io(s: Snapshot) -> Iterator[Metric]:
    names = sorted({name for key in s.series for name, _ in key})
    ops = CounterMetricFamily("iowatt_io_operations", "Operations completed", labels=names)
    nbytes = CounterMetricFamily("iowatt_io_bytes", "Bytes read or written", labels=names)
    errors = CounterMetricFamily("iowatt_io_errors", "Operations that failed", labels=names)
    by_kind = CounterMetricFamily(
        "iowatt_io_errors_by_kind", "Operations that failed, by how", labels=[*names, "kind"]
    )
    latency = HistogramMetricFamily(
        "iowatt_io_latency_seconds",
        "Latency of the measured operations (a replay's: completion from the due time)",
        labels=names,
    )
    beside = {
        name: HistogramMetricFamily(metric, doc, labels=names)
        for name, (metric, doc) in BESIDE_METRICS.items()
    }
    for key, c in sorted(s.series.items()):
        given = dict(key)
        values = [given.get(n, "") for n in names]
        ops.add_metric(values, c.ops)
        nbytes.add_metric(values, c.bytes)
        errors.add_metric(values, c.errors)
        for kind, n in sorted(c.errors_by_kind.items()):
            by_kind.add_metric([*values, kind], n)
        latency.add_metric(values, _buckets(c.bands), c.latency_sum_s)
        for name, h in c.beside.items():
            beside[name].add_metric(values, _buckets(h.bands), h.sum_s)
    yield from (ops, nbytes, errors, by_kind, latency)
    # Only the series that keep them (a replay's), so a bench's exposition is as it was.
    yield from (family for family in beside.values() if family.samples)


def _buckets(bands: list[int]) -> list[tuple[str, float]]:
    """Per-band counts as a histogram's cumulative buckets, +Inf last."""
    cumulative = 0
    buckets: list[tuple[str, float]] = []
    for bound, n in zip(BUCKET_BOUNDS, bands, strict=False):
        cumulative += n
        buckets.append((bound, cumulative))
    buckets.append(("+Inf", sum(bands)))
    return buckets


def _power(s: Snapshot) -> Iterator[Metric]:
    for name, doc, unit_label, values in (
        ("iowatt_energy_joules", "Energy used, per power channel", "channel", s.joules),
        ("iowatt_power_watts", "Power, last sample, per channel", "channel", s.watts),
        ("iowatt_fan_duty_ratio", "Fan duty, 0..1", "fan", s.fan_duty),
        ("iowatt_fan_speed_rpm", "Fan speed", "fan", s.fan_rpm),
        ("iowatt_temperature_celsius", "Temperature", "sensor", s.celsius),
    ):
        if not values:
            continue
        family: Metric = (
            CounterMetricFamily(name, doc, labels=[unit_label])
            if name.endswith("_joules")
            else GaugeMetricFamily(name, doc, labels=[unit_label])
        )
        for label, v in sorted(values.items()):
            family.add_metric([label], v)  # type: ignore[attr-defined]
        yield family


def _sweep(s: Snapshot) -> Iterator[Metric]:
    for kind, value in s.stimulus.items():
        name, doc = STIMULUS_METRICS[kind]
        yield GaugeMetricFamily(name, doc, value=value)
    if s.step is not None:
        step, steps = s.step
        yield GaugeMetricFamily("iowatt_sweep_step", "The step under way, from 1", value=step)
        yield GaugeMetricFamily("iowatt_sweep_steps", "The sweep's steps, all passes", value=steps)
    if s.speed is not None:
        yield GaugeMetricFamily(
            "iowatt_disk_speed_ratio",
            "An emulated disk's speed at its stimulus, from its curve: r in 0..1",
            value=s.speed,
        )
