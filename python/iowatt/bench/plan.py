"""From what a user asked for to a :class:`BenchConfig` with every value resolved and checked.

Everything a run needs is validated here — workloads, timing, power sources, the idle baseline
— so ``run(plan(...))`` from a notebook gets the same checks as ``iowatt bench``.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from iowatt.bench import filemacro, limits
from iowatt.bench.config import (
    ENGINES,
    BenchConfig,
    Options,
    WorkloadConfig,
    check_drain,
    check_options,
    resolve_common,
)
from iowatt.bench.fileio import (
    DEFAULT_RUNTIME,
    PERSONALITIES,
    PERSONALITY_DEFAULTS,
    QUICK_DEFAULTS,
    SUITE_DEFAULTS,
    SUITE_ENTRIES,
    SUITES,
    SuiteEntry,
)
from iowatt.errors import ConfigError
from iowatt.power.sources import DEFAULT_HZ, power_options
from iowatt.units import parse_positive_size


def plan(
    what: str | None,
    opts: Options,
    *,
    suite: str | None = None,
    target: Path | None = None,
    results: Path,
    labels: dict[str, str] | None = None,
    destroy_data: bool = False,
    power: Sequence[str] = (),
    power_hz: float = DEFAULT_HZ,
    idle: str | None = None,
    report: bool = True,
    machine_limits: bool = True,
) -> BenchConfig:
    """Resolves a personality, a suite workload, a FileBench workload file (``.f``) or a whole
    suite into a BenchConfig.

    With neither ``what`` nor ``suite``, runs the quick FileIO suite (2 s per workload, 64 MiB).
    ``power`` names power sources as ``--power`` does (``rapl``, ``meter:path=…``), sampled
    ``power_hz`` times a second; ``idle`` measures idle power that long first (needs ``power``).
    Without ``machine_limits``, a workload this machine cannot hold (memory, threads, open
    files) is planned anyway, for ``--check`` to say so.
    """
    check_options(opts)
    seed = opts.seed if opts.seed is not None else secrets.randbits(32)
    if what and suite:
        raise ConfigError(
            f"give a workload `{what}` or --suite `{suite}`, not both",
            "drop one of them",
        )
    wml = suite == filemacro.SUITE or (what is not None and filemacro.is_wml(what))
    if opts.sets and not wml:
        raise ConfigError(
            "--set applies to FileBench workload files",
            "e.g. iowatt bench fileserver.f --set nthreads=8, or --suite filemacro",
        )
    if suite == filemacro.SUITE:
        workloads = filemacro.plan_suite(opts, seed)
    elif what is not None and wml:
        workloads = [filemacro.plan_file(filemacro.source(what), opts, seed)]
    elif what is None:
        name = suite or "fileio"
        if name not in SUITES:
            known = ", ".join((*SUITES, filemacro.SUITE))
            raise ConfigError(f"unknown suite `{name}`", f"suites are: {known}")
        defaults: dict[str, Any] = SUITE_DEFAULTS if suite else QUICK_DEFAULTS
        workloads = [_from_entry(e, opts, defaults, seed) for e in SUITES[name]]
        suite = name
    elif what in SUITE_ENTRIES:
        workloads = [_from_entry(SUITE_ENTRIES[what], opts, SUITE_DEFAULTS, seed)]
    elif what in PERSONALITIES:
        workloads = [_from_personality(what, opts, seed)]
    else:
        known = ", ".join((*PERSONALITIES, *SUITE_ENTRIES))
        raise ConfigError(
            f"unknown personality `{what}`",
            f"choose one of: {known}; or give a FileBench workload file (.f)",
        )
    check_drain(opts, workloads)
    sources, power_hz, idle_s = power_options(power, power_hz, idle)
    for wl in workloads if machine_limits else ():
        limits.check_workload(wl)
    return BenchConfig(
        workloads=workloads,
        target=target,
        results=results,
        suite=suite,
        labels=labels or {},
        seed=seed,
        destroy_data=destroy_data,
        report=report,
        power=sources,
        power_hz=power_hz,
        idle_s=idle_s,
    )


def _from_entry(
    e: SuiteEntry, opts: Options, defaults: dict[str, Any], seed: int
) -> WorkloadConfig:
    nthreads = e.nthreads
    if e.nthreads != 1:  # a single stream stays one thread
        nthreads = _given(opts.nthreads, defaults.get("nthreads", e.nthreads))
    return _resolve(
        e.name,
        e.personality,
        opts,
        iosize=_given(opts.iosize, e.iosize),
        filesize=_given(opts.filesize, defaults["filesize"]),
        nthreads=nthreads,
        runtime=opts.runtime or defaults["runtime"],
        directio=e.directio if opts.directio is None else opts.directio,
        seed=seed,
    )


def _from_personality(personality: str, opts: Options, seed: int) -> WorkloadConfig:
    d = PERSONALITY_DEFAULTS[personality]
    return _resolve(
        personality,
        personality,
        opts,
        iosize=_given(opts.iosize, d["iosize"]),
        filesize=_given(opts.filesize, d["filesize"]),
        nthreads=_given(opts.nthreads, 1),
        runtime=opts.runtime or DEFAULT_RUNTIME,
        directio=bool(opts.directio),
        seed=seed,
    )


def _given(value: Any, default: Any) -> Any:
    """The option's value when the user gave one (0 included: it is refused, not replaced)."""
    return default if value is None else value


def _resolve(
    name: str,
    personality: str,
    opts: Options,
    *,
    iosize: str | int,
    filesize: str | int,
    nthreads: int,
    runtime: str,
    directio: bool,
    seed: int,
) -> WorkloadConfig:
    engine = (opts.engine or "psync").replace("-", "_")
    if engine not in ENGINES:
        raise ConfigError(f"unknown engine `{opts.engine}`", f"engines are: {', '.join(ENGINES)}")
    iodepth = _given(opts.iodepth, 32 if engine == "io_uring" else 1)
    if engine == "psync" and iodepth != 1:
        raise ConfigError(
            f"--iodepth `{iodepth}` needs an asynchronous engine",
            "psync keeps one operation in flight per thread; add --engine io_uring",
        )
    wl = WorkloadConfig(
        name=name,
        personality=personality,
        iosize=parse_positive_size(iosize, "--iosize", "--iosize 4k"),
        filesize=parse_positive_size(filesize, "--filesize", "--filesize 256m"),
        nthreads=nthreads,
        directio=directio,
        dsync=opts.dsync,
        engine=engine,
        iodepth=iodepth,
        rate=opts.rate,
        seed=seed,
        **resolve_common(opts, default_runtime=runtime, scheduled=opts.rate is not None),
    )
    _check_io_fits(wl, iosize, filesize)
    return wl


def _check_io_fits(wl: WorkloadConfig, iosize: str | int, filesize: str | int) -> None:
    """The engine's own rules for a FileIO flowop (``run.rs`` ``validate_files``), checked with
    the options' names: reads and random writes need a file holding one I/O, and O_DIRECT
    moves whole logical blocks (512 bytes at least; 4k on most newer disks)."""
    grows = wl.personality.endswith("streamwrite")  # sequential writes grow from empty
    if not grows and wl.iosize > wl.filesize:
        raise ConfigError(
            f"--iosize `{iosize}` is larger than --filesize `{filesize}` ({wl.name})",
            "use a smaller --iosize or a larger --filesize",
        )
    if wl.directio and wl.iosize % 512:
        raise ConfigError(
            f"--iosize `{iosize}` is not a multiple of 512 bytes, which O_DIRECT needs ({wl.name})",
            "use a multiple of the disk's logical block size, e.g. --iosize 4k, or --buffered",
        )
