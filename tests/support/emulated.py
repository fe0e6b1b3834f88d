"""A real emulated disk (``crates/iowatt-emulate``) mounted for a test: FUSE over a directory,
its counters under ``MOUNT/.iowatt``, unmounted when the block ends, and what it did (every
state change) to check a recording against."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest
import tomllib

from iowatt._engine import Emulation
from support.cli import runs_in
from support.wait import stderr_lines, wait_for


@dataclass
class EmulatedDisk:
    mount: Path
    emulation: Emulation
    # The emulation's result once unmounted: t0_ns, the state changes, the final counters.
    result: dict[str, Any] = field(default_factory=dict)

    def counters(self) -> dict[str, Any]:
        """``counters.json`` now (``energy_j``, ``state`` …)."""
        return self.emulation.progress()

    def energy_j(self, mono_ns: int) -> float:
        """The disk's energy from its mount up to ``mono_ns`` (CLOCK_MONOTONIC), from its state
        changes: each state's watts (its joules over its seconds) times its time. Only once
        unmounted."""
        c = self.result["counters"]
        watts = {s: c["state_j"][s] / t for s, t in c["state_s"].items() if t > 0}
        t = mono_ns - self.result["t0_ns"]
        changes = self.result["changes"]
        total = 0.0
        for (start, state), (end, _) in zip(changes, [*changes[1:], (t, None)], strict=True):
            if start >= t:
                break
            total += watts[state] * (min(end, t) - start) / 1e9
        return total


@contextmanager
def emulated_disk(
    root: Path, model: str = "ultrastar-36z15", *, seed: int = 1, timeout_s: float = 30.0
) -> Iterator[EmulatedDisk]:
    """``model`` (a ``disks.toml`` table) mounted at ``root/mount`` over ``root/backing``,
    without spin-down or page cache; skips the test where FUSE is absent."""
    if not os.path.exists("/dev/fuse"):
        pytest.skip("no /dev/fuse")
    models = tomllib.loads(files("iowatt.sim").joinpath("disks.toml").read_text())
    backing, mount = root / "backing", root / "mount"
    backing.mkdir(parents=True, exist_ok=True)
    mount.mkdir(parents=True, exist_ok=True)
    e = Emulation(str(backing), str(mount), models[model], name=model, spin_down_s=None,
                  seed=seed, page_cache=False)  # fmt: skip
    e.start()
    disk = EmulatedDisk(mount, e)
    try:
        deadline = time.monotonic() + timeout_s
        while not e.progress()["ready"]:
            if e.wait(0.0):
                e.result()  # raises why it ended
                pytest.fail("the emulated disk ended before it was mounted")
            if time.monotonic() > deadline:
                pytest.fail(f"the emulated disk at {mount} was not mounted in {timeout_s} s")
            time.sleep(0.01)
        yield disk
    finally:
        e.cancel()
        if not e.wait(timeout_s):
            pytest.fail(f"the emulated disk at {mount} did not unmount in {timeout_s} s")
    disk.result = e.result()


def mounted(path: Path) -> bool:
    """Whether ``path`` is a mount point (live or stale) in /proc/self/mountinfo."""
    with open("/proc/self/mountinfo") as f:
        return any(line.split()[4] == str(path) for line in f)


def mount_dirs(tmp_path: Path) -> Iterator[tuple[Path, Path, Path]]:
    """BACKING, an empty MOUNT and RESULTS under ``tmp_path`` (a fixture's body): a mount a
    failed test left there is taken down lazily after it."""
    backing, mount, results = tmp_path / "backing", tmp_path / "mount", tmp_path / "results"
    backing.mkdir()
    mount.mkdir()
    yield backing, mount, results
    # A test that failed before stopping its mount leaves neither the process nor the mount.
    for m in [m for m in _RUNNING if m.mount == mount]:
        if m.proc.poll() is None:
            m.proc.kill()
            m.proc.wait(timeout=30)
        _RUNNING.remove(m)
    if mounted(mount):
        subprocess.run(["umount", "-l", str(mount)], check=False)


# Mounts started and not yet stopped, for mount_dirs to take down after a failed test.
_RUNNING: list[MountProcess] = []


class MountProcess:
    """`iowatt emulate mount BACKING MOUNT --results RESULTS ARGS` in the background (with
    --no-report unless ``report``), ready once it says so."""

    def __init__(
        self, backing: Path, mount: Path, results: Path, *args: str, report: bool = False
    ) -> None:
        self.mount, self.results = mount, results
        quiet = [] if report else ["--no-report"]
        self.proc = subprocess.Popen(
            ["iowatt", "emulate", "mount", str(backing), str(mount), "--results", str(results),
             *quiet, *args],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        _RUNNING.append(self)
        self.err, self.reader = stderr_lines(self.proc)
        wait_for(lambda: any("mounted at" in line for line in self.err), self.proc,
                 what="the mount")  # fmt: skip

    def control(self, name: str) -> str:
        """A counter file under MOUNT/.iowatt, stripped."""
        return (self.mount / ".iowatt" / name).read_text().strip()

    def stop(self, sig: int = signal.SIGTERM) -> tuple[int, str, str]:
        """Sends ``sig`` and waits: exit code, stdout, stderr."""
        self.proc.send_signal(sig)
        self.proc.wait(timeout=60)
        if self in _RUNNING:
            _RUNNING.remove(self)
        # stderr is the reader thread's alone: communicate() would take lines from it.
        assert self.proc.stdout is not None and self.proc.stderr is not None
        with self.proc.stdout:
            out = self.proc.stdout.read()
        self.reader.join(timeout=10)
        self.proc.stderr.close()
        return self.proc.returncode, out, "".join(self.err)

    def finish(self) -> Path:
        """Stops it as Ctrl-C would and returns its run, which must be its only one."""
        code, _, err = self.stop()
        assert code == 0, err
        (run,) = runs_in(self.results)
        return run
