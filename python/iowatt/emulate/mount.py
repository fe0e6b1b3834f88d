"""``iowatt emulate mount``: BACKING served at MOUNT as a disk of a model, in the foreground,
until Ctrl-C, SIGTERM or SIGHUP; then what is queued is answered, MOUNT unmounted and the
``emulate`` run written. A guardian process unmounts and commits the journaled run if this
process is killed outright."""

from __future__ import annotations

import json
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
from iowatt.emulate.guard import JOURNAL, Guardian
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
    if not os.path.exists("/dev/fuse"):
        raise TargetError("/dev/fuse is missing: this kernel has no FUSE", "load it: modprobe fuse")
    if os.geteuid() != 0 and shutil.which("fusermount3") is None:
        raise TargetError(
            "fusermount3 is missing: a user other than root mounts through it",
            "install it: apt-get install fuse3",
        )
    return disk_model(config.model_name, config.disk_models)


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
    config.results.mkdir(parents=True, exist_ok=True)
    writer = RunWriter(config.results, new_run_id(KIND))
    started_ns = time.time_ns()
    anchor = (started_ns, time.monotonic_ns())
    settings = _settings(config)
    guardian = Guardian(writer.tmp, writer.run_id, config.mount, config.report)
    disk = _engine.Emulation(
        str(config.backing),
        str(config.mount),
        model,
        name=config.model_name,
        spin_down_s=config.spin_down_s,
        seed=config.seed,
        page_cache=config.page_cache,
    )
    failure: IowattError | None = None
    board().begin(writer.run_id, KIND, config.labels)
    board().watch(lambda: _counts(disk), device="disk")
    journal = _Journal(writer, anchor, config, settings)
    ready = False

    def tick() -> None:
        nonlocal ready
        p = disk.progress()
        if not p["ready"]:
            return
        if not ready:
            ready = True
            say(
                f"{config.model_name} ({model['label']}) mounted at {config.mount}, files in"
                f" {config.backing}; Ctrl-C unmounts"
            )
        t = time.monotonic_ns()
        board().readings([CHANNEL], {"mono_ns": [t], "channel": [0], "value": [p["energy_j"]]})
        journal.write(p)

    try:
        with _hangup_as_interrupt():
            _engine.drive([disk], tick)
    except KeyboardInterrupt:
        failure = None  # the way a mount ends
    except IowattError as e:
        failure = e
    except BaseException:
        guardian.done()
        writer.abandon()
        raise
    board().end()
    run_dir = _write(writer, disk, model, config, settings, anchor, failure, sink, say)
    guardian.done()
    if failure is not None:
        raise failure
    return run_dir


def _counts(disk: _engine.Emulation) -> Counts:
    p = disk.progress()
    if not p["ready"]:
        return Counts()
    return Counts(ops=p["read_ops"] + p["write_ops"], bytes=p["read_bytes"] + p["write_bytes"])


def _settings(config: MountConfig) -> dict[str, Any]:
    return {
        "backing": str(config.backing.resolve()),
        "mount": str(config.mount.resolve()),
        "disk_model": config.model_name,
        "disk_models": None if config.disk_models is None else str(config.disk_models),
        "spin_down_s": config.spin_down_s,
        "page_cache": config.page_cache,
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
) -> Path:
    started_ns = anchor[0]
    from iowatt.emulate import record
    from iowatt.store.catalog import publish

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
    cols = record.columns(result)
    t0 = result["t0_ns"]
    end_ns = round(result["counters"]["t_s"] * 1e9)
    writer.write_table("disk_requests.parquet", record.request_table(writer.run_id, cols))
    writer.write_table("intervals.parquet", record.interval_table(writer.run_id, t0, end_ns, cols))
    writer.write_table("events.parquet", record.state_events(writer.run_id, t0, result["changes"]))
    writer.finish(
        KIND,
        None if failure is None else failure.message,
        started_ns=started_ns,
        seed=config.seed,
        labels=config.labels,
        config=settings,
        summary={"disk": record.summary(result, cols, model), "model": dict(model)},
        clock_anchor=anchor,
    )
    run_dir = publish(writer, sink)
    if config.report:
        from iowatt.report import write_report

        write_report([run_dir], run_dir / "report.html")
    return run_dir
