"""Vibration on the emulated disk: the throughput curve it follows (``--curve``) and where its
stimulus comes from — a fixed value (``--at``) or a schedule replayed on the mount's clock
(``--schedule``: a CSV of time and value, or a sweep run's steps at the times they were set).

The curve is r(s), the fraction of its speed the disk keeps at stimulus s (fan PWM %, g RMS,
Hz), linear between points; the engine charges each request S / r at the value in force when
it starts."""

from __future__ import annotations

import csv
import itertools
import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from iowatt.errors import ConfigError, IowattError, RunNotFoundError

_CURVE_HINT = "give a curve file, a sweep run (RUN or RUN:DISK, or `latest`) or a disk profile"
_SCHEDULE_HINT = "a CSV of time,value rows (seconds from the start, or ISO 8601) or a sweep run"


@dataclass(frozen=True)
class StimulusCurve:
    """One disk's throughput curve: (stimulus, r) points ascending, r within 0..1."""

    source: str
    kind: str
    unit: str
    band: str | None
    points: tuple[tuple[float, float], ...]

    @property
    def low(self) -> float:
        return self.points[0][0]

    @property
    def high(self) -> float:
        return self.points[-1][0]

    def speed(self, s: float) -> float:
        """r at ``s``: linear between the curve's points (the engine's rule)."""
        from iowatt.sweep.profiles import interpolate

        return interpolate(self.points, s)

    def check(self, value: float, what: str) -> None:
        if not (math.isfinite(value) and self.low <= value <= self.high):
            raise ConfigError(
                f"{what} {value:g} is outside the curve's {self.low:g}..{self.high:g} {self.unit}",
                f"give a value the curve ({self.source}) covers",
            )

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "kind": self.kind,
            "unit": self.unit,
            "band": self.band,
            "points": [list(p) for p in self.points],
        }


def _checked(source: str, kind: str, unit: str, band: str | None, points: Any) -> StimulusCurve:
    pts = tuple((float(x), float(r)) for x, r in points)
    for x, r in pts:
        if not (math.isfinite(x) and math.isfinite(r) and 0 <= r <= 1):
            raise ConfigError(
                f"curve {source} has r = {r:g} at {x:g} {unit}, outside 0..1", _CURVE_HINT
            )
    if not pts or any(b[0] <= a[0] for a, b in itertools.pairwise(pts)):
        raise ConfigError(f"curve {source} has no points in ascending order", _CURVE_HINT)
    return StimulusCurve(source, kind, unit, band, pts)


def _file_curve(path: Path, kind: str | None) -> StimulusCurve:
    from iowatt.curve import read_curve

    doc = read_curve(path)
    stim = doc["stimulus"]
    if kind is not None and stim["kind"] != kind:
        raise ConfigError(
            f"curve file `{path}` is a {stim['kind']} curve, not --stimulus {kind}",
            f"drop --stimulus, or give a {kind} curve",
        )
    if doc["max_mib_s"] == 0:
        raise ConfigError(
            f"curve file `{path}` is of a disk that never moved (0 MiB/s)", _CURVE_HINT
        )
    source = f"{doc['run_id']}/{doc['disk']['name']}"
    points = [(p["value"], p["norm"]) for p in doc["points"]]
    return _checked(source, stim["kind"], stim["unit"], stim.get("band"), points)


def _run_curve(run_dir: Path, disk: str | None, kind: str | None) -> StimulusCurve:
    from iowatt.sim.curves import disk_names, run_curve_files

    files = run_curve_files(run_dir, disk)
    if len(files) > 1:
        names = disk_names(files)
        raise ConfigError(
            f"run `{run_dir.name}` has curves of {len(files)} disks: {', '.join(names)}",
            f"pick one: --curve {run_dir.name}:{names[0]}",
        )
    return _file_curve(files[0], kind)


def _profile_curve(name: str, kind: str | None, band: str | None) -> StimulusCurve:
    from iowatt.sweep.profiles import load_profiles
    from iowatt.sweep.stimulus import make_stimulus

    profiles = load_profiles()
    if name not in profiles:
        raise ConfigError(f"--curve `{name}` is not a file, a run or a disk profile", _CURVE_HINT)
    stim = make_stimulus(kind or "fan", band, None)
    profile = profiles[name]
    key = profile.curve_key(stim)
    band = key.split(" ", 1)[1] if key.startswith("amplitude ") else None
    return _checked(f"profile {name} ({key})", stim.kind, stim.unit, band, profile.curves[key])


def resolve_curve(
    ref: str, results: Path, kind: str | None = None, band: str | None = None
) -> StimulusCurve:
    """The one curve ``--curve REF`` names: a curve file, a sweep run of one disk or
    ``RUN:DISK`` (``latest``: the last sweep, of ``kind`` when given), or a disk profile's
    curve of ``kind`` (fan unless said) and ``band``."""
    if band is not None and kind != "amplitude":
        raise ConfigError("--band belongs to --stimulus amplitude", "drop --band")
    path = Path(ref)
    if path.is_file():
        return _file_curve(path, kind)
    found = curve_run(ref, results, kind)
    if found is None:
        return _profile_curve(ref, kind, band)
    return _run_curve(*found, kind)


def curve_run(ref: str, results: Path, kind: str | None = None) -> tuple[Path, str | None] | None:
    """The sweep run (and disk) ``--curve REF`` names: ``RUN``, ``RUN:DISK`` or ``latest``
    (the last sweep, of ``kind`` when given); None for a curve file or a disk profile's name."""
    from iowatt.sim.curves import latest_sweep, split_disk
    from iowatt.store.runs import resolve_run

    if Path(ref).is_file():
        return None
    run, disk = split_disk(ref)
    if run == "latest":
        return latest_sweep(results, kind), disk
    try:
        return resolve_run(results, run), disk
    except RunNotFoundError:
        if disk is not None:
            raise
        return None


# --- the schedule ------------------------------------------------------------------------------

Row = tuple[float, float]  # (seconds from the start, stimulus)


@dataclass(frozen=True)
class Schedule:
    source: str
    rows: tuple[Row, ...]

    def check(self, curve: StimulusCurve) -> None:
        for i, (t, v) in enumerate(self.rows):
            curve.check(v, f"--schedule row {i + 1} (at {t:g} s): stimulus")


def _time(text: str) -> float | datetime:
    try:
        return float(text)
    except ValueError:
        pass
    try:
        return datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"`{text}` is neither seconds nor an ISO 8601 time") from None


def _csv_schedule(path: Path) -> Schedule:
    try:
        with path.open(newline="", encoding="utf-8") as f:
            lines = [r for r in csv.reader(f) if r and any(c.strip() for c in r)]
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"--schedule `{path}` cannot be read ({e})", _SCHEDULE_HINT) from None
    raw: list[tuple[float | datetime, float]] = []
    for n, cells in enumerate(lines, 1):
        if len(cells) != 2:
            raise ConfigError(
                f"--schedule `{path}` row {n} has {len(cells)} columns, not two (time, value)",
                _SCHEDULE_HINT,
            )
        try:
            raw.append((_time(cells[0]), float(cells[1])))
        except ValueError as e:
            if n == 1 and not raw:
                continue  # a header
            raise ConfigError(f"--schedule `{path}` row {n}: {e}", _SCHEDULE_HINT) from None
    if not raw:
        raise ConfigError(f"--schedule `{path}` has no rows", _SCHEDULE_HINT)
    if len({isinstance(t, datetime) for t, _ in raw}) > 1:
        raise ConfigError(
            f"--schedule `{path}` mixes seconds and ISO 8601 times", "use one or the other"
        )
    first = raw[0][0]
    rows: list[Row] = []
    for t, v in raw:
        if isinstance(t, datetime) and isinstance(first, datetime):
            try:
                rows.append(((t - first).total_seconds(), v))
            except TypeError:
                raise ConfigError(
                    f"--schedule `{path}` mixes times with and without a time zone",
                    "give every time with one, or none",
                ) from None
        else:
            assert isinstance(t, float)
            rows.append((t, v))
    return _increasing(Schedule(str(path), tuple(rows)))


def _increasing(schedule: Schedule) -> Schedule:
    rows = schedule.rows
    if not all(math.isfinite(t) and t >= 0 for t, _ in rows):
        raise ConfigError(
            f"--schedule `{schedule.source}` has a time that is not a number of seconds ≥ 0",
            _SCHEDULE_HINT,
        )
    for i in range(1, len(rows)):
        if not rows[i][0] > rows[i - 1][0]:
            raise ConfigError(
                f"--schedule `{schedule.source}` times do not increase: row {i + 1} at"
                f" {rows[i][0]:g} s after {rows[i - 1][0]:g} s",
                "sort the rows by time, one row per time",
            )
    return schedule


def _run_schedule(run_dir: Path, curve: StimulusCurve | None) -> Schedule:
    """A sweep run's steps at the times they were set: each step's value, at the last
    ``stimulus`` event at or before its hold window (the step's start without events)."""
    import pyarrow.parquet as pq

    from iowatt.store.runs import read_manifest

    manifest = read_manifest(run_dir)
    steps_path = run_dir / "steps.parquet"
    if manifest.get("kind") != "sweep" or not steps_path.is_file():
        raise ConfigError(f"run `{run_dir.name}` is not a sweep with steps", _SCHEDULE_HINT)
    kind = ((manifest.get("config") or {}).get("stimulus") or {}).get("kind")
    if curve is not None and kind is not None and kind != curve.kind:
        raise ConfigError(
            f"--schedule run `{run_dir.name}` steps the {kind}; the curve is a {curve.kind} curve",
            f"give a {curve.kind} sweep, or a curve of the {kind}",
        )
    seen: dict[tuple[int, int], tuple[int, float]] = {}
    for r in pq.read_table(steps_path).to_pylist():
        key = (r["pass_no"], r["step"])
        if r["value"] is None or r["start_mono_ns"] is None:
            continue
        start = int(r["start_mono_ns"])
        if key not in seen or start < seen[key][0]:
            seen[key] = (start, float(r["value"]))
    marks: list[int] = []
    events = run_dir / "events.parquet"
    if events.is_file():
        table = pq.read_table(events).to_pylist()
        marks = sorted(int(e["mono_ns"]) for e in table if e.get("kind") == "stimulus")
    timed: list[tuple[int, float]] = []
    for _, (start, value) in sorted(seen.items()):
        before = [m for m in marks if m <= start]
        timed.append((before[-1] if before else start, value))
    if not timed:
        raise ConfigError(f"run `{run_dir.name}` has no steps", _SCHEDULE_HINT)
    t0 = timed[0][0]
    rows = tuple(((t - t0) / 1e9, v) for t, v in timed)
    return _increasing(Schedule(f"run {run_dir.name}", rows))


def load_schedule(ref: str, results: Path, curve: StimulusCurve | None) -> Schedule:
    """``--schedule FILE|RUN``: a CSV of time and value, or a sweep run's steps."""
    from iowatt.sim.curves import latest_sweep
    from iowatt.store.runs import resolve_run

    path = Path(ref)
    if path.is_file():
        return _csv_schedule(path)
    if ref == "latest":
        return _run_schedule(latest_sweep(results, None if curve is None else curve.kind), curve)
    try:
        run_dir = resolve_run(results, ref)
    except RunNotFoundError:
        raise ConfigError(
            f"--schedule `{ref}` is neither a file nor a run", _SCHEDULE_HINT
        ) from None
    return _run_schedule(run_dir, curve)


class Player:
    """Sets each schedule row's value at its time ÷ ``speedup`` on the mount's clock (whose
    zero is ``epoch_ns`` on CLOCK_MONOTONIC), on a thread of its own; rows already past when it
    starts are set at once, in order."""

    def __init__(
        self,
        rows: Sequence[Row],
        speedup: float,
        epoch_ns: int,
        set_stimulus: Callable[[float], float],
        failed: Callable[[str], None],
    ) -> None:
        self.rows, self.speedup, self.epoch_ns = list(rows), speedup, epoch_ns
        self.set_stimulus, self.failed = set_stimulus, failed
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._play, name="iowatt-schedule", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.stopped.set()
        self.thread.join(timeout=5)

    def _play(self) -> None:
        for t, value in self.rows:
            due_ns = self.epoch_ns + round(t / self.speedup * 1e9)
            while (left := due_ns - time.monotonic_ns()) > 0:
                if self.stopped.wait(left / 1e9):
                    return
            if self.stopped.is_set():
                return
            try:
                self.set_stimulus(value)
            except IowattError as e:
                self.failed(f"schedule row at {t:g} s not set: {e.message}")
