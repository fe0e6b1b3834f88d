"""A real emulated disk (``crates/iowatt-emulate``) mounted for a test: FUSE over a directory,
its counters under ``MOUNT/.iowatt``, unmounted when the block ends, and what it did (every
state change) to check a recording against."""

from __future__ import annotations

import os
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
