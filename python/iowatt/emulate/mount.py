"""``iowatt emulate mount``: BACKING served at MOUNT as a disk of a model, in the foreground,
until Ctrl-C, SIGTERM or SIGHUP; then what is queued is answered, MOUNT unmounted and the
``emulate`` run written. A guardian process unmounts and commits the journaled run if this
process is killed outright."""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from iowatt import _engine
from iowatt.emulate import mounts
from iowatt.emulate.array import ArraySetup
from iowatt.emulate.bmc import BmcFollow, DutyReader, Follower
from iowatt.emulate.guard import JOURNAL, Guardian
from iowatt.emulate.tails import Tails
from iowatt.emulate.vibration import Player, Schedule, StimulusCurve
from iowatt.errors import ConfigError, IowattError, TargetError
from iowatt.live.board import Counts, board
from iowatt.sim.disks import disk_model
from iowatt.store.writer import RunWriter, new_run_id
from iowatt.warnings import WarningSink

KIND = "emulate"
JOURNAL_EVERY_S = 1.0
# The power channel the counters stand for (the `emulated` power source's).
CHANNEL = {"source": "emulated", "channel": "disk", "unit": "J"}


@dataclass
class MountConfig:
    backing: Path
    mount: Path
    model_name: str
    disk_models: Path | None = None
    spin_down_s: float | None = None
    seed: int = 1
    page_cache: bool = False
    results: Path = Path("results")
    labels: dict[str, str] = field(default_factory=dict)
    report: bool = True
    scheduler: str = "fifo"
    # CFQ's: one process's slice, and how long the disk idles for its next request.
    slice_s: float = 0.1
    idle_window_s: float = 0.008
    curve: StimulusCurve | None = None
    # A sweep run's measured tails (--tails): None, every slowed request adds S / r − S.
    tails: Tails | None = None
    at: float | None = None
    schedule: Schedule | None = None
    speedup: float = 1.0
    stall_cap_s: float = 30.0
    # --at-from bmc: the BMC whose fan duty the stimulus follows.
    bmc: BmcFollow | None = None
    # --array: an array of disks under a RAID personality instead of one disk.
    array: ArraySetup | None = None

    @property
    def start_at(self) -> float | None:
        """The stimulus in force at the mount: --at, the schedule's first row, or the curve's
        first point."""
        if self.curve is None:
            return None
        if self.at is not None:
            return self.at
        if self.schedule is not None:
            return self.schedule.rows[0][1]
        return self.curve.low


SCHEDULERS = ("fifo", "elevator", "cfq")
_COUNT = {2: "two", 3: "three"}


def check(config: MountConfig) -> dict[str, Any]:
    """Refuses what cannot be mounted, before anything is; returns the disk model."""
    backing, mount = config.backing, config.mount
    if not backing.is_dir():
        what = "does not exist" if not backing.exists() else "is not a directory"
        raise ConfigError(f"BACKING `{backing}` {what}", "give the directory whose files to serve")
    if mounts.is_stale(mount):
        raise TargetError(
            f"MOUNT `{mount}` is a stale mount (Transport endpoint is not connected)",
            f"take it down with: iowatt emulate unmount {mount}",
        )
    if not mount.is_dir():
        what = "does not exist" if not mount.exists() else "is not a directory"
        raise ConfigError(f"MOUNT `{mount}` {what}", f"create it: mkdir -p {mount}")
    if os.path.ismount(mount):
        raise ConfigError(
            f"MOUNT `{mount}` is a mount point already",
            f"unmount it first (iowatt emulate unmount {mount}, if it is an emulated disk)",
        )
    if any(mount.iterdir()):
        raise ConfigError(f"MOUNT `{mount}` is not empty", "mount over an empty directory")
    b, m = backing.resolve(), mount.resolve()
    if b == m or b.is_relative_to(m) or m.is_relative_to(b):
        raise ConfigError(
            f"BACKING `{backing}` and MOUNT `{mount}` are inside one another",
            "give two separate directories",
        )
    if config.spin_down_s is not None and not config.spin_down_s > 0:
        raise ConfigError(f"--spin-down `{config.spin_down_s:g}s` must be above 0", "e.g. 10s")
    _check_array(config)
    _check_vibration(config)
    if not os.path.exists("/dev/fuse"):
        raise TargetError("/dev/fuse is missing: this kernel has no FUSE", "load it: modprobe fuse")
    if os.geteuid() != 0 and shutil.which("fusermount3") is None:
        raise TargetError(
            "fusermount3 is missing: a user other than root mounts through it",
            "install it: apt-get install fuse3",
        )
    return disk_model(config.model_name, config.disk_models)


def _check_array(config: MountConfig) -> None:
    # An array's disks spin down and pick requests as its personality says.
    if config.array is None:
        return
    given = [
        option
        for option, set_ in (
            ("--spin-down", config.spin_down_s is not None),
            ("--scheduler", config.scheduler != "fifo"),
            ("--curve", config.curve is not None),
        )
        if set_
    ]
    if given:
        raise ConfigError(
            f"{given[0]} sets one disk; --array {config.array.personality} serves several",
            "an array's spin-down and timeouts are raid.toml's (--params); drop the option",
        )


def _check_vibration(config: MountConfig) -> None:
    if config.scheduler not in SCHEDULERS:
        raise ConfigError(
            f"--scheduler `{config.scheduler}` is not a scheduler",
            f"schedulers: {', '.join(SCHEDULERS)}",
        )
    for option, value in (("--slice", config.slice_s), ("--idle-window", config.idle_window_s)):
        if not (0 < value < math.inf):
            raise ConfigError(f"{option} `{value:g}s` must be above 0", "e.g. 100ms and 8ms")
    if not (0 < config.stall_cap_s < math.inf):
        raise ConfigError(f"--stall-cap `{config.stall_cap_s:g}s` must be above 0", "e.g. 30s")
    if not (0 < config.speedup < math.inf):
        raise ConfigError(f"--speedup `{config.speedup:g}` must be above 0", "e.g. --speedup 24")
    given = [
        flag
        for flag, v in (("--at", config.at), ("--schedule", config.schedule),
                        ("--at-from bmc", config.bmc))
        if v is not None
    ]  # fmt: skip
    if len(given) > 1:
        raise ConfigError(
            f"{' and '.join(given)} are {_COUNT[len(given)]} stimulus sources; the disk"
            " follows one",
            "give --at VALUE, --schedule FILE|RUN or --at-from bmc",
        )
    curve = config.curve
    if curve is None:
        if given:
            raise ConfigError(f"{given[0]} needs a curve to follow", "add --curve REF")
        return
    if config.bmc is not None:
        config.bmc.check()
        if curve.kind != "fan":
            raise ConfigError(
                f"--at-from bmc follows a fan duty; the curve is a {curve.kind} curve",
                "give a fan curve (--curve REF of a fan sweep, or a profile's fan curve)",
            )
        DutyReader(config.bmc, 1.0)  # checks the connection's options
    if config.at is not None:
        curve.check(config.at, "--at")
    if config.schedule is not None:
        config.schedule.check(curve)


@contextmanager
def _hangup_as_interrupt() -> Iterator[None]:
    # A closed terminal stops the disk as Ctrl-C does: answered, unmounted, written.
    def stop(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGHUP, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGHUP, old)


def serve(config: MountConfig, say: Callable[[str], None], sink: WarningSink) -> Path:
    """Mounts, serves until stopped, and commits the ``emulate`` run; returns its directory."""
    model = check(config)
    array = None
    if config.array is not None:
        from iowatt.emulate.array import plan

        array = plan(config.array, config.backing, config.model_name, model)
    # Made (and its configuration checked) before anything is written.
    disk = _engine.Emulation(
        str(config.backing),
        str(config.mount),
        model,
        name=config.model_name,
        spin_down_s=config.spin_down_s,
        seed=config.seed,
        page_cache=config.page_cache,
        scheduler=config.scheduler,
        slice_s=config.slice_s,
        idle_window_s=config.idle_window_s,
        curve=None if config.curve is None else list(config.curve.points),
        at=config.start_at,
        stall_cap_s=config.stall_cap_s,
        tails=None if config.tails is None else config.tails.tables,
        array=array,
    )
    config.results.mkdir(parents=True, exist_ok=True)
    writer = RunWriter(config.results, new_run_id(KIND))
    started_ns = time.time_ns()
    anchor = (started_ns, time.monotonic_ns())
    settings = _settings(config, array)
    guardian = Guardian(writer.tmp, writer.run_id, config.mount, config.report)
    failure: IowattError | None = None
    board().begin(writer.run_id, KIND, config.labels)
    board().watch(lambda: _counts(disk), device="disk")
    journal = _Journal(writer, anchor, config, settings)
    ready = False
    player: Player | None = None
    follower: Follower | None = None

    def tick() -> None:
        nonlocal ready, player, follower
        p = disk.progress()
        if not p["ready"]:
            return
        if not ready:
            ready = True
            epoch_ns = p["t0_ns"]  # the mount's clock zero on CLOCK_MONOTONIC
            if config.schedule is not None:
                player = Player(
                    config.schedule.rows[1:], config.speedup, epoch_ns, disk.set_stimulus, say
                )
                player.start()
            if config.bmc is not None and config.curve is not None:
                # Locked from the mount on: `iowatt emulate set` is refused before the BMC's
                # first answer too.
                disk.lock(True)
                follower = Follower(config.bmc, disk.follow, say, config.curve.unit)
                follower.start()
            what = f"{config.model_name} ({model['label']})"
            if config.array is not None:
                what = f"{config.array.personality} over {config.array.disks} × {what}"
            say(
                f"{what} mounted at {config.mount}, files in"
                f" {config.backing}{_vibration_text(config)}; Ctrl-C unmounts"
            )
        if follower is not None:
            follower.check()
        t = time.monotonic_ns()
        board().readings([CHANNEL], {"mono_ns": [t], "channel": [0], "value": [p["energy_j"]]})
        if config.curve is not None and p.get("stimulus") is not None:
            kind = config.curve.kind
            value = p["stimulus"] / 100 if kind == "fan" else p["stimulus"]  # duty as a ratio
            board().set_stimulus(kind, value, 1, 1)
            board().set_speed(p["speed"])
        journal.write(p)

    try:
        with _hangup_as_interrupt():
            _engine.drive([disk], tick)
    except KeyboardInterrupt:
        failure = None  # the way a mount ends
    except IowattError as e:
        failure = e
    except BaseException:
        for source in (player, follower):
            if source is not None:
                source.stop()
        guardian.done()
        writer.abandon()
        raise
    for source in (player, follower):
        if source is not None:
            source.stop()
    board().end()
    extra = [] if follower is None else follower.events
    run_dir = _write(writer, disk, model, config, settings, anchor, failure, sink, say, extra)
    guardian.done()
    if failure is not None:
        raise failure
    return run_dir


def _vibration_text(config: MountConfig) -> str:
    curve = config.curve
    if curve is None:
        return ""
    if config.schedule is not None:
        source = f"following {config.schedule.source} at ×{config.speedup:g}"
    elif config.bmc is not None:
        b = config.bmc
        host = b.bmc.options.get("host", "the local BMC")
        source = f"following the fan duty of {host} ({b.reads}, every {b.poll_s:g} s)"
    else:
        source = f"at {config.start_at:g} {curve.unit}"
        if config.at is None:
            source += " (the curve's first point)"
    return f", slowed by {curve.source}'s {curve.kind} curve {source}"


def _counts(disk: _engine.Emulation) -> Counts:
    p = disk.progress()
    if not p["ready"]:
        return Counts()
    return Counts(ops=p["read_ops"] + p["write_ops"], bytes=p["read_bytes"] + p["write_bytes"])


def _settings(config: MountConfig, array: dict[str, Any] | None) -> dict[str, Any]:
    return {
        "array": None
        if config.array is None or array is None
        else {"personality": config.array.personality, **array},
        "backing": str(config.backing.resolve()),
        "mount": str(config.mount.resolve()),
        "disk_model": config.model_name,
        "disk_models": None if config.disk_models is None else str(config.disk_models),
        "spin_down_s": config.spin_down_s,
        "page_cache": config.page_cache,
        "scheduler": config.scheduler,
        "slice_s": config.slice_s if config.scheduler == "cfq" else None,
        "idle_window_s": config.idle_window_s if config.scheduler == "cfq" else None,
        "curve": None if config.curve is None else config.curve.as_dict(),
        "at": config.start_at,
        "schedule": None
        if config.schedule is None
        else {"source": config.schedule.source, "rows": len(config.schedule.rows)},
        "speedup": config.speedup if config.schedule is not None else None,
        "stall_cap_s": config.stall_cap_s if config.curve is not None else None,
        "at_from": None if config.bmc is None else "bmc",
        "bmc": None if config.bmc is None else config.bmc.describe(),
    }


class _Journal:
    """The counters so far, in the run's temporary directory once a second: what the guardian
    commits if this process is killed."""

    def __init__(
        self,
        writer: RunWriter,
        anchor: tuple[int, int],
        config: MountConfig,
        settings: Mapping[str, Any],
    ) -> None:
        self.path = writer.tmp / JOURNAL
        self.base = {
            "started_ns": anchor[0],
            "clock_anchor": list(anchor),
            "seed": config.seed,
            "labels": config.labels,
            "config": dict(settings),
        }
        self.last = 0.0

    def write(self, counters: Mapping[str, Any]) -> None:
        now = time.monotonic()
        if now - self.last < JOURNAL_EVERY_S:
            return
        self.last = now
        tmp = self.path.with_suffix(".new")
        tmp.write_text(json.dumps({**self.base, "counters": counters}))
        os.replace(tmp, self.path)


def _write(
    writer: RunWriter,
    disk: _engine.Emulation,
    model: Mapping[str, Any],
    config: MountConfig,
    settings: Mapping[str, Any],
    anchor: tuple[int, int],
    failure: IowattError | None,
    sink: WarningSink,
    say: Callable[[str], None],
    extra_events: list[dict[str, Any]] | None = None,
) -> Path:
    started_ns = anchor[0]
    from iowatt.emulate import record
    from iowatt.store.catalog import publish
    from iowatt.store.schemas import event_table

    (writer.tmp / JOURNAL).unlink(missing_ok=True)
    try:
        result = disk.result()
    except IowattError as e:
        # It never mounted: nothing was served, and the run says why.
        writer.finish(
            KIND,
            e.message,
            started_ns=started_ns,
            seed=config.seed,
            labels=config.labels,
            config=settings,
            summary={},
            clock_anchor=anchor,
        )
        publish(writer, sink)
        raise
    if result["lazy_unmount"]:
        say(f"files under {config.mount} are still open: it is detached, gone once they close")
    if config.array is not None:
        return _write_array(writer, result, model, config, settings, anchor, failure, sink)
    cols = record.columns(result)
    t0 = result["t0_ns"]
    end_ns = round(result["counters"]["t_s"] * 1e9)
    writer.write_table("disk_requests.parquet", record.request_table(writer.run_id, cols))
    writer.write_table("intervals.parquet", record.interval_table(writer.run_id, t0, end_ns, cols))
    events = record.events(writer.run_id, t0, result["changes"], result["stimuli"], config.curve)
    if extra_events:
        # The BMC's silences and returns beside the stimuli it set, in time order.
        rows = sorted([*events.to_pylist(), *extra_events], key=lambda e: e["mono_ns"])
        events = event_table(writer.run_id, t0, rows)
    writer.write_table("events.parquet", events)
    vibration = record.vibration_summary(result, cols, settings)
    if vibration is not None and config.bmc is not None:
        vibration["source"] = "bmc"
    if vibration is not None:
        vibration["tails"] = None if config.tails is None else config.tails.as_dict()

    writer.finish(
        KIND,
        None if failure is None else failure.message,
        started_ns=started_ns,
        seed=config.seed,
        labels=config.labels,
        config=settings,
        summary={
            "disk": record.summary(result, cols, model),
            "model": dict(model),
            "vibration": vibration,
        },
        clock_anchor=anchor,
    )
    return _publish(writer, config, sink)


def _publish(writer: RunWriter, config: MountConfig, sink: WarningSink) -> Path:
    """Commits the run, with its report unless --no-report."""
    from iowatt.store.catalog import publish

    run_dir = publish(writer, sink)
    if config.report:
        from iowatt.report import write_report

        write_report([run_dir], run_dir / "report.html")
    return run_dir


def _write_array(
    writer: RunWriter,
    result: dict[str, Any],
    model: Mapping[str, Any],
    config: MountConfig,
    settings: Mapping[str, Any],
    anchor: tuple[int, int],
    failure: IowattError | None,
    sink: WarningSink,
) -> Path:
    from iowatt.emulate import array_record

    assert config.array is not None
    params = settings["array"]
    summary = array_record.write(
        writer,
        result,
        config.array.personality,
        config.seed,
        params["array"]["bin_s"],
        float(model["start_stop_cycles"]) / (5 * 365),
    )
    writer.finish(
        KIND,
        None if failure is None else failure.message,
        started_ns=anchor[0],
        seed=config.seed,
        labels=config.labels,
        config=dict(settings),
        summary={"array": summary, "model": dict(model)},
        clock_anchor=anchor,
    )
    return _publish(writer, config, sink)
