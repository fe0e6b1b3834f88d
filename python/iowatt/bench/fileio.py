"""FileBench's FileIO personalities and the ``fileio`` suite, as parameters.

The workload structure (files, threads, flowops) is built by the Rust engine; this module owns
the parameter defaults, so the manifest can record every value a run used. Defaults follow
FileBench's personality files (``randomread.f``: 5g file, 8k I/O, 1 thread) and the FileIO
profile of the storage-workloads study (120 s, 10g file, 16 threads for random I/O).
"""

from __future__ import annotations

from dataclasses import dataclass

from iowatt import _engine

PERSONALITIES: tuple[str, ...] = _engine.PERSONALITIES
# FileBench's own variable defaults per personality file.
PERSONALITY_DEFAULTS: dict[str, dict[str, str]] = {
    "randomread": {"iosize": "8k", "filesize": "5g"},
    "randomwrite": {"iosize": "8k", "filesize": "5g"},
    "singlestreamread": {"iosize": "1m", "filesize": "5g"},
    "singlestreamwrite": {"iosize": "1m", "filesize": "5g"},
    "multistreamread": {"iosize": "1m", "filesize": "1g"},
    "multistreamwrite": {"iosize": "1m", "filesize": "1g"},
}
DEFAULT_RUNTIME = "60s"  # FileBench's `run` default


@dataclass(frozen=True)
class SuiteEntry:
    name: str
    personality: str
    iosize: str
    nthreads: int
    directio: bool = False


# The ten FileIO configs of the storage-workloads study (fileio.prof without multistream).
FILEIO_SUITE: tuple[SuiteEntry, ...] = (
    SuiteEntry("randomread2k", "randomread", "2k", 16),
    SuiteEntry("randomread8k", "randomread", "8k", 16),
    SuiteEntry("randomread1m", "randomread", "1m", 16),
    SuiteEntry("randomwrite2k", "randomwrite", "2k", 16),
    SuiteEntry("randomwrite8k", "randomwrite", "8k", 16),
    SuiteEntry("randomwrite1m", "randomwrite", "1m", 16),
    SuiteEntry("singlestreamread1m", "singlestreamread", "1m", 1),
    SuiteEntry("singlestreamreaddirect1m", "singlestreamread", "1m", 1, directio=True),
    SuiteEntry("singlestreamwrite1m", "singlestreamwrite", "1m", 1),
    SuiteEntry("singlestreamwritedirect1m", "singlestreamwrite", "1m", 1, directio=True),
)
SUITES: dict[str, tuple[SuiteEntry, ...]] = {"fileio": FILEIO_SUITE}
SUITE_DEFAULTS = {"runtime": "120s", "filesize": "10g"}
# `iowatt bench` with no arguments: the same suite, short enough to try on a laptop.
QUICK_DEFAULTS = {"runtime": "2s", "filesize": "64m", "nthreads": 4}

SUITE_ENTRIES: dict[str, SuiteEntry] = {e.name: e for s in SUITES.values() for e in s}
