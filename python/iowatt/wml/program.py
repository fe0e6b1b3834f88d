"""A parsed workload file: what the manifest records and the engine's workload model."""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from iowatt.bands import HEAT_EDGES_NS
from iowatt.wml.dists import mean_of
from iowatt.wml.script import Step


@dataclass
class Program:
    """A `.f` file, evaluated: its variables, run settings and the workload model's parts."""

    source: str  # the file name as given (for messages)
    name: str  # the file's stem, e.g. "fileserver"
    variables: dict[str, str]  # every $var's final value as text, after overrides
    runtime_s: float | None  # from `run N`, `run` (60), `psrun` or the sleeps of 1.4's
    # `create processes` ... `shutdown`; None when the file never runs its processes
    quit: str  # "timeout" | "alldone" | "firstdone"
    messages: list[str]  # `echo` text, in order, variables substituted
    usage: list[str]  # `usage` text
    filesets: list[dict[str, Any]] = field(default_factory=list, repr=False)  # FilesetSpec
    fileset_lines: dict[str, int] = field(default_factory=dict)  # name → line of its define
    threads: list[dict[str, Any]] = field(default_factory=list, repr=False)  # ThreadSpec
    thread_lines: list[int] = field(default_factory=list)  # each thread's `thread` line
    eventgen_rate: float | None = None  # events/s of `eventgen rate=N`; None when 0 or absent
    # "FILE:LINE: ..." what iowatt ignores or maps
    warnings: list[str] = field(default_factory=list)
    ramp_s: float = 0.0  # seconds the processes run before 1.4's `stats clear`
    origins: dict[str, str] = field(default_factory=dict)  # where each variable's value is from
    steps: list[Step] = field(default_factory=list)  # commands around the run, in order

    def model(
        self,
        *,
        seed: int,
        runtime_ns: int,
        ramp_ns: int,
        slow_ns: list[int],
        interval_ns: int = 1_000_000_000,
    ) -> dict[str, Any]:
        """The engine's ``Workload`` (crates/iowatt-workload/src/spec.rs) as a JSON-able dict."""
        return {
            "name": self.name,
            "files": [],
            "filesets": copy.deepcopy(self.filesets),
            "threads": copy.deepcopy(self.threads),
            "engine": "psync",
            "iodepth": 1,
            "runtime_ns": runtime_ns,
            "ramp_ns": ramp_ns,
            "rate": None,
            "seed": seed,
            "interval_ns": interval_ns,
            "slow_ns": list(slow_ns),
            "heat_ns": list(HEAT_EDGES_NS),
            "eventgen_rate": self.eventgen_rate,
            "quit": self.quit,
        }

    def placed(self, directory: Path) -> Program:
        """The same program run in ``directory``: ``$dir`` becomes it, and every fileset (the
        evaluator keeps them all under ``$dir``) moves with it."""
        old = Path(os.path.normpath(Path(self.variables["dir"]).absolute()))
        new = Path(os.path.normpath(directory.absolute()))
        filesets = [
            {**fs, "path": str(new / Path(fs["path"]).relative_to(old))} for fs in self.filesets
        ]
        return replace(self, filesets=filesets, variables={**self.variables, "dir": str(new)})

    def bytes_needed(self) -> int:
        """Bytes the filesets are expected to occupy before the clock starts."""
        return sum(self.fileset_bytes().values())

    def fileset_bytes(self) -> dict[str, int]:
        """Per fileset: entries x prealloc % x the mean file size."""
        return {
            fs["name"]: round(fs["entries"] * fs["prealloc"] / 100 * mean_of(fs["size"]))
            for fs in self.filesets
        }
