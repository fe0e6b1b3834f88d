"""FileBench workload files in ``iowatt bench``: a ``.f`` file, or the built-in FileMacro suite
(fileserver, varmail, webproxy, webserver, oltp), planned into :class:`WorkloadConfig` and
turned into the engine's model for the directory a run works in.

A workload's ``wml`` names its file and ``overrides`` are the ``--set`` values; the file is
parsed once, when planning, in a stand-in directory, and its filesets are moved into the work
directory when the run knows it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from iowatt.bench.config import Options, WorkloadConfig, resolve_common
from iowatt.errors import ConfigError, TargetError
from iowatt.target import available_bytes
from iowatt.units import format_bytes, parse_pairs, parse_size
from iowatt.warnings import Kind, RunWarning, WarningSink

if TYPE_CHECKING:
    # The WML parser is imported where a workload file is read: a personality's bench, which
    # every run of ``iowatt bench`` imports this module for, never needs it.
    from iowatt.bench.steps import Steps
    from iowatt.wml import Program

SUITE = "filemacro"
DEFAULT_RUNTIME_S = 60.0  # FileBench's `run` without a duration
# bench options that map onto the variables FileBench's files use for them
_VARIABLE_OPTIONS = {"nthreads": "nthreads", "iosize": "iosize", "filesize": "filesize"}
# bench options a workload file decides for itself
_FILE_DECIDES = ("engine", "iodepth", "directio", "dsync", "rate")
# Where a file is evaluated while planning (and what --check shows as `$dir`): its filesets
# are placed for real at run time.
_PLAN_DIR = Path("/TARGET/iowatt-RUN")


def parse_file(source: Path, overrides: Mapping[str, str], dir: Path) -> Program:
    """:func:`iowatt.wml.parse_file`, the parser imported the first time a file is read."""
    from iowatt.wml import parse_file as parse

    return parse(source, overrides, dir=dir)


def _shipped(name: str) -> Path:
    # The suite's own files (iowatt.wml.builtin_path), found without loading the parser.
    return Path(str(resources.files("iowatt.workloads").joinpath(f"{name}.f")))


def is_wml(what: str) -> bool:
    """A FileBench workload: a `.f` file, or a personality of the suite by name (`oltp`)."""
    return what.endswith(".f") or Path(what).is_file() or _shipped(what).is_file()


def source(what: str) -> Path:
    """The file a workload argument names: as given, or the suite's file of that name."""
    given = Path(what)
    return given if given.exists() or what.endswith(".f") else _shipped(what)


def parse_sets(items: tuple[str, ...]) -> dict[str, str]:
    """``("nthreads=32",)`` → ``{"nthreads": "32"}`` (a leading ``$`` is allowed)."""
    pairs = parse_pairs(items, "--set", "--set nthreads=32 --set nfiles=1000")
    return {name.removeprefix("$"): value for name, value in pairs.items()}


def _overrides(opts: Options, defined: Mapping[str, str], strict: bool) -> dict[str, str]:
    """--set values, plus --nthreads/--iosize/--filesize, for the variables a file defines.
    With ``strict`` (one file the user named) a value for a variable it lacks is an error; in
    a suite it applies to the files that have the variable."""
    for opt in _FILE_DECIDES:
        if getattr(opts, opt) not in (None, False):
            raise ConfigError(
                f"--{opt} does not apply to FileBench workload files",
                "set it in the file, or with --set if the file has a variable for it",
            )
    wanted = parse_sets(opts.sets)
    for opt, var in _VARIABLE_OPTIONS.items():
        value = getattr(opts, opt)
        if value is not None:
            wanted.setdefault(var, str(value))
    if strict:
        return wanted  # the parser names a variable the file lacks
    return {k: v for k, v in wanted.items() if k in defined}


def plan_file(source: Path, opts: Options, seed: int) -> WorkloadConfig:
    """One workload from a user's ``.f`` file."""
    if not source.is_file():
        raise ConfigError(
            f"workload file `{source}` does not exist",
            "give the path of a FileBench .f file, or a personality name",
        )
    return _plan(source, opts, seed, strict=True)


def plan_suite(opts: Options, seed: int) -> list[WorkloadConfig]:
    from iowatt.wml import BUILTIN, builtin_path

    workloads = [_plan(builtin_path(name), opts, seed, strict=False) for name in BUILTIN]
    applied = {k for wl in workloads for k in wl.overrides}
    unknown = sorted(set(parse_sets(opts.sets)) - applied)
    if unknown:
        known = sorted({k for wl in workloads for k in wl.variables})
        raise ConfigError(
            f"--set {unknown[0]}: no workload of the {SUITE} suite has `${unknown[0]}`",
            f"their variables are: {', '.join(known)}",
        )
    return workloads


def _plan(source: Path, opts: Options, seed: int, strict: bool) -> WorkloadConfig:
    defined = {} if strict else parse_file(source, {}, dir=_PLAN_DIR).variables
    overrides = _overrides(opts, defined, strict)
    program = parse_file(source, overrides, dir=_PLAN_DIR)
    if opts.no_system:
        _refuse_commands(program)
    runtime_s = program.runtime_s or DEFAULT_RUNTIME_S
    common = resolve_common(
        opts,
        default_runtime=f"{runtime_s}s",
        default_ramp=program.ramp_s,
        scheduled=scheduled(program),
    )
    v = program.variables
    return WorkloadConfig(
        name=program.name,
        personality=program.name,
        iosize=_size(v.get("iosize")),
        filesize=_size(v.get("filesize")),
        nthreads=sum(t["instances"] for t in program.threads),
        directio=v.get("directio", "0") not in ("0", "false", ""),
        dsync=False,
        engine="psync",
        iodepth=1,
        rate=None,
        seed=seed,
        wml=str(source.resolve()),
        overrides=overrides,
        variables=dict(v),
        program=program,
        **common,
    )


# Flowops that take events from the generator: with one of them, `eventgen rate=N` is the
# run's schedule (the engine's `Workload::schedule`).
_LIMITS = ("eventlimit", "opslimit", "iopslimit", "bwlimit")


def scheduled(program: Program) -> bool:
    """Whether the file keeps a schedule: an event generator some flowop takes from."""
    limited = any(f["kind"] in _LIMITS for t in program.threads for f in t["flowops"])
    return bool(program.eventgen_rate) and limited and bool(program.filesets)


def _refuse_commands(program: Program) -> None:
    lines = [st.line for st in program.steps if st.kind == "system"]
    if lines:
        where = ", ".join(str(n) for n in lines)
        raise ConfigError(
            f"{program.source}:{lines[0]}: the file runs shell commands (`system`, line "
            f"{where}) and --no-system is given",
            "read them with --check; drop --no-system to run them",
        )


def _size(text: str | None) -> int:
    try:
        return parse_size(text, "size") if text else 0
    except ConfigError:
        return 0  # a distribution, not one size


def _program(wl: WorkloadConfig) -> Program:
    if wl.program is None:  # a config built by hand, not by plan()
        assert wl.wml is not None
        wl.program = parse_file(Path(wl.wml), wl.overrides, dir=_PLAN_DIR)
    return wl.program


def messages(wl: WorkloadConfig) -> list[str]:
    """What a workload file says when loaded: its `echo` lines."""
    return list(_program(wl).messages)


def warnings(wl: WorkloadConfig) -> list[RunWarning]:
    """The settings of a workload file iowatt accepts but does not apply."""
    return [RunWarning(Kind.WML_IGNORED, w) for w in _program(wl).warnings]


def steps(
    wl: WorkloadConfig, workdir: Path, note: Callable[[str], None], sink: WarningSink
) -> Steps:
    """The file's commands around its run, with ``$dir`` the work directory: a file with
    commands is read again there, as their text may hold ``$dir`` anywhere."""
    from iowatt.bench.steps import Steps

    assert wl.wml is not None
    program = _program(wl)
    if program.steps:
        program = parse_file(Path(wl.wml), wl.overrides, dir=workdir)

    def record(kind: str, message: str) -> None:
        sink.event(program.name, kind, message)

    return Steps(program, Path(wl.wml).parent, note, record)


def model(wl: WorkloadConfig, workdir: Path) -> dict[str, Any]:
    """The engine's model of a workload file run in ``workdir``."""
    out = (
        _program(wl)
        .placed(workdir)
        .model(
            seed=wl.seed,
            runtime_ns=round(wl.runtime_s * 1e9),
            ramp_ns=round(wl.ramp_s * 1e9),
            slow_ns=wl.slow_ns,
        )
    )
    out["name"] = wl.name
    if wl.drain_s is not None:
        out["drain_ns"] = round(wl.drain_s * 1e9)
    return out


def model_for_check(wl: WorkloadConfig) -> tuple[Program, dict[str, Any]]:
    """The program and its model, placed where planning placed it (``--check``)."""
    return _program(wl), model(wl, _PLAN_DIR)


def check_space(wl: WorkloadConfig, target: Path) -> None:
    """Refuses, before anything is created, filesets that would not fit on the target: the
    error names the define of the largest."""
    program = _program(wl)
    per_set = program.fileset_bytes()
    needed = sum(per_set.values())
    available = available_bytes(target)
    if available is not None and needed > available:
        name = max(per_set, key=lambda k: per_set[k])
        line = program.fileset_lines.get(name, 0)
        raise TargetError(
            f"{program.source}:{line}: fileset `{name}` needs {format_bytes(per_set[name])} "
            f"({format_bytes(needed)} in all) but `{target}` has {format_bytes(available)} "
            "available",
            "use fewer or smaller files (e.g. --set nfiles=1000), or free some space",
        )
