"""Hostile input, case by case and generated: every value a user can get wrong is refused with
one ``error:`` line naming the option (or the file and line) and the value, a ``hint:`` line
and exit code 2 — before the engine sees it, before any memory or file is taken, and leaving
nothing in the results directory or the target."""

from __future__ import annotations

import json
import math
import os
import resource
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from iowatt import campaign
from iowatt._engine import WorkloadRun, drive
from iowatt.bench import limits
from iowatt.errors import ConfigError
from iowatt.sweep import drivers, runner
from iowatt.target import supports_odirect
from support.cli import Result, assert_user_error, iowatt, manifest, runs_in

QUICK = ("--runtime", "0.1s", "--quiet", "--no-report")
GIB = 1 << 30


@contextmanager
def scratch_dir() -> Iterator[Path]:
    """A target directory in /dev/shm (memory: quick, no disk wear), else in the temp dir."""
    base = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    path = Path(tempfile.mkdtemp(prefix="iowatt-test-", dir=base))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def target() -> Iterator[Path]:
    with scratch_dir() as path:
        yield path


def assert_one_error(r: Result, *fragments: str) -> None:
    """Exit 2, one ``error:`` line holding every fragment, a hint, no traceback, nothing that
    reads as iowatt's own failure."""
    assert_user_error(r, *fragments)
    assert "internal failure" not in r.err and "Traceback" not in r.err, r.err
    assert "line 1 column" not in r.err, r.err  # serde's words never reach the user


def assert_nothing_left(target: Path, results: Path, committed_ok: bool = False) -> None:
    """No work files in the target; in the results, no half-written run (``.tmp-*``) and, unless
    ``committed_ok``, no run at all."""
    assert list(target.iterdir()) == [], list(target.iterdir())
    if not results.exists():
        return
    names = sorted(p.name for p in results.iterdir())
    assert not [n for n in names if n.startswith(".tmp-")], names
    if committed_ok:
        for run in (p for p in results.iterdir() if p.is_dir()):
            assert (run / "manifest.json").exists(), run
    else:
        assert names == [], names


def bench(capsys: pytest.CaptureFixture[str], target: Path, results: Path, *args: Any) -> Result:
    return iowatt(capsys, "bench", *QUICK, *args, "--target", target, "--results", results)


def workload_file(directory: Path, name: str, body: str) -> Path:
    path = directory / name
    path.write_text(body)
    return path


ONE_THREAD = """\
set $dir=/tmp
set $filesize={filesize}
set $nthreads={nthreads}
define fileset name=files,path=$dir,size=$filesize,entries=4,dirwidth=4,prealloc
define process name=p,instances=1
{{
  thread name=reader,instances=$nthreads
  {{
    flowop read name=read1,filesetname=files,iosize=4k{extra}
  }}
}}
run 60
"""


def one_thread(filesize: str = "16k", nthreads: int = 1, extra: str = "") -> str:
    return ONE_THREAD.format(filesize=filesize, nthreads=nthreads, extra=extra)


# --- bench options ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (("--filesize", "0"), ("--filesize", "`0`")),
        (("--filesize", "16777216t"), ("--filesize", "`16777216t`")),  # 2^64: beyond u64
        (("--iosize", "1m", "--filesize", "8k"), ("--iosize", "`1m`", "--filesize", "`8k`")),
        (("--iosize", "3", "--directio"), ("--iosize", "`3`", "O_DIRECT")),
        (("--rate", "nan"), ("--rate", "`nan`")),
        (("--rate", "inf"), ("--rate", "`inf`")),
        (("--rate", "1e-300"), ("--rate", "`1e-300`")),  # was silently no limit at all
        (("--seed", "-1"), ("--seed", "`-1`")),
        (("--seed", str(2**64)), ("--seed", f"`{2**64}`")),
        (("--nthreads", "0"), ("--nthreads", "`0`")),  # was run as one thread
        (("--iodepth", "0", "--engine", "io_uring"), ("--iodepth", "`0`")),
        (("--runtime", "9000h"), ("--runtime", "`9000h`")),
        (("--power-hz", "nan"), ("--power-hz", "`nan`")),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, tuple) and v[0].startswith("--") else "",
)
def test_bench_values_the_engine_cannot_take_are_refused(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    target: Path,
    args: tuple[str, ...],
    fragments: tuple[str, ...],
) -> None:
    results = tmp_path / "results"
    r = bench(capsys, target, results, "randomread", "--filesize", "8m", *args)
    assert_one_error(r, *fragments)
    assert_nothing_left(target, results)


@pytest.mark.parametrize("how", ["in the file", "with --set"])
def test_a_size_beyond_the_engine_in_a_workload_file_names_its_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, target: Path, how: str
) -> None:
    huge = "99999999999999999999g"
    in_file = huge if how == "in the file" else "1k"
    f = workload_file(tmp_path, "big.f", one_thread(filesize=in_file))
    extra = ("--set", f"filesize={huge}") if how == "with --set" else ()
    r = bench(capsys, target, tmp_path / "results", f, *extra)
    assert_one_error(r, f"{f}:4:", "`size=$filesize`", f"`{huge}`")
    assert_nothing_left(target, tmp_path / "results")


def test_a_workload_file_thread_count_the_memory_cannot_hold_is_refused_before_allocating(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    target: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(limits, "mem_available", lambda: 8 * GIB)
    f = workload_file(tmp_path, "threads.f", one_thread(nthreads=100_000))
    r = bench(capsys, target, tmp_path / "results", f)
    # 100,000 × (a 64 KiB buffer + two 224 KiB histograms) is 48.8 GiB.
    assert_one_error(r, f"{f}:7:", "100,000 threads", "48.8 GiB", "8 GiB is available")
    assert_nothing_left(target, tmp_path / "results")


def test_fileio_threads_the_memory_cannot_hold_are_refused(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    target: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(limits, "mem_available", lambda: 8 * GIB)
    r = bench(capsys, target, tmp_path / "results", "randomread", "--filesize", "8m",
              "--nthreads", "100000")  # fmt: skip
    assert_one_error(r, "`randomread`", "100,000 threads", "8 GiB is available")
    assert "--nthreads" in r.err
    assert_nothing_left(target, tmp_path / "results")


def test_more_open_files_than_the_limit_asks_to_raise_it(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    target: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(limits, "open_files_limit", lambda: (1024, 2048))
    # With opennext each of the 20 threads ends up holding a file in all 128 slots.
    f = workload_file(tmp_path, "many.f", one_thread(nthreads=20, extra=",opennext"))
    r = bench(capsys, target, tmp_path / "results", f)
    assert_one_error(r, f"{f}:7:", "2,560 files", "hard limit is 2,048", "RLIMIT_NOFILE")
    assert "ulimit -Hn" in r.err
    assert_nothing_left(target, tmp_path / "results")


def test_a_soft_open_files_limit_below_the_need_is_raised_to_fit(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, target: Path
) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 4096:
        pytest.skip(f"the hard limit here ({hard}) is below what the test needs")
    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, hard))
    try:
        f = workload_file(tmp_path, "many.f", one_thread(nthreads=20, extra=",opennext"))
        r = bench(capsys, target, tmp_path / "results", f)
        assert r.code == 0, r.err
        assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] >= 2560
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_more_threads_than_the_system_can_start_are_refused(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    target: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(limits, "threads_available", lambda: 50)
    r = bench(capsys, target, tmp_path / "results", "randomread", "--filesize", "8m",
              "--nthreads", "100")  # fmt: skip
    assert_one_error(r, "100 threads", "50 more")
    assert_nothing_left(target, tmp_path / "results")


# --- the engine's own checks, the second line ---------------------------------------------

FILEIO = {
    "name": "handmade", "personality": "randomread", "target": "/nonexistent", "iosize": 4096,
    "filesize": 1 << 20, "nthreads": 1, "directio": False, "dsync": False, "engine": "psync",
    "iodepth": 1, "runtime_ns": 10**8, "ramp_ns": 0, "rate": None, "seed": 1,
}  # fmt: skip


@pytest.mark.parametrize(
    ("field", "value", "named"),
    [
        ("rate", math.nan, "--rate (rate) `NaN`"),
        ("seed", -1, "--seed (seed) `-1`"),
        ("filesize", 10**21, "--filesize (filesize) `1000000000000000000000`"),
        ("slow_ns", [1, "x"], '--slow (slow_ns[1]) `"x"`'),
    ],
)
def test_a_hand_built_spec_the_engine_cannot_read_names_the_workload_and_the_field(
    field: str, value: Any, named: str
) -> None:
    with pytest.raises(ConfigError) as e:
        WorkloadRun.fileio({**FILEIO, field: value})
    assert e.value.message.startswith(f"workload `handmade`: {named}"), e.value.message
    assert "column" not in e.value.message and e.value.hint


def test_a_hand_built_model_the_engine_cannot_read_names_the_thread() -> None:
    model = {
        "name": "handmade", "files": [], "filesets": [], "engine": "psync", "iodepth": 1,
        "runtime_ns": 10**8, "ramp_ns": 0, "rate": None, "seed": 1,
        "threads": [{"name": "t", "instances": -1, "flowops": []}],
    }  # fmt: skip
    with pytest.raises(ConfigError, match=r"^workload `handmade`: thread `t` instances `-1`"):
        WorkloadRun.model(model)


def test_a_hand_built_spec_the_engine_refuses_names_the_workload(tmp_path: Path) -> None:
    run = WorkloadRun.fileio({**FILEIO, "target": str(tmp_path), "filesize": 1024})
    drive([run])
    with pytest.raises(ConfigError) as e:
        run.result()
    assert e.value.message.startswith("workload `handmade`: flowop `rand-read1`"), e.value
    assert e.value.hint


# --- sweep ---------------------------------------------------------------------------------

SWEEP = ("--settle", "0.1s", "--hold", "0.1s", "--iosize", "64k", "--size", "1m",
         "--driver", "cmd", "--allow-boot-disk", "--no-report", "--quiet")  # fmt: skip


def sweep(capsys: pytest.CaptureFixture[str], disk: Path, results: Path, *args: str) -> Result:
    return iowatt(capsys, "sweep", "--disk", disk, "--results", results, *SWEEP, *args)


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        # 10^11 values: refused by counting, before a list of them is built.
        (("--from", "100", "--to", "0", "--step", "1e-9"), ("--step", "1e-09", "10,000")),
        (("--from", "nan", "--to", "0", "--step", "10"), ("--from", "`nan`")),
        (("--from", "0", "--to", "inf", "--step", "10"), ("--to", "`inf`")),
        (("--steps", "100,nan,50"), ("--steps", "`nan`")),
        (("--steps", "1,2", "--passes", "6000"), ("--passes", "12,000 steps")),
        (("--steps", "50", "--max-temp", "nan"), ("--max-temp", "`nan`")),
        (("--steps", "50", "--sensor-hz", "0"), ("--sensor-hz", "`0`")),
    ],
)
def test_sweep_values_out_of_range_are_refused(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    target: Path,
    args: tuple[str, ...],
    fragments: tuple[str, ...],
) -> None:
    r = sweep(capsys, target, tmp_path / "results", *args, "--set", "echo {value}")
    assert_one_error(r, *fragments)
    assert_nothing_left(target, tmp_path / "results")


@pytest.mark.parametrize(
    ("stimulus", "template", "fragments"),
    [
        ("fan", "echo {value:zz}", ("--set", "`echo {value:zz}`")),
        ("amplitude", "echo {value:#04x}", ("--set", "the value 0.5")),  # a hex byte of 0.5
        ("fan", "echo {value} {}", ("--set", "`echo {value} {}`")),
    ],
)
def test_a_set_template_that_cannot_take_a_value_is_refused_before_the_sweep_starts(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    target: Path,
    stimulus: str,
    template: str,
    fragments: tuple[str, ...],
) -> None:
    r = sweep(capsys, target, tmp_path / "results", "--stimulus", stimulus, "--steps", "0.5,1",
              "--no-watchdog", "--set", template)  # fmt: skip
    assert_one_error(r, *fragments)
    assert_nothing_left(target, tmp_path / "results")


def test_a_sweep_that_fails_at_its_first_step_is_never_recorded_complete(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    disk = tmp_path / "disk"  # on a disk file system: the generator writes with O_DIRECT
    disk.mkdir()
    if not supports_odirect(disk):
        pytest.skip(f"{disk} has no O_DIRECT")

    def broken(self: drivers.CmdDriver, value: float) -> None:
        raise RuntimeError("the driver broke")

    monkeypatch.setattr(drivers.CmdDriver, "apply", broken)
    monkeypatch.setattr(runner, "LAYOUT_S", 0.1)
    results = tmp_path / "results"
    r = sweep(capsys, disk, results, "--stimulus", "amplitude", "--steps", "0.5,1",
              "--set", "true {value}")  # fmt: skip
    assert r.code == 1 and "the driver broke" in r.err
    (run,) = runs_in(results)
    m = manifest(run)
    assert m["status"] == "incomplete" and "the driver broke" in m["reason"]
    assert list(disk.iterdir()) == []


# --- campaign and energy -------------------------------------------------------------------

CAMPAIGN = """\
[defaults]
runtime = "0.1s"
filesize = "1m"
[[workload]]
run = "randomread"
{workload}
[[env]]
name = "a"
"""


@pytest.mark.parametrize(
    ("workload", "fragments"),
    [
        ('nthreads = "many"', ("c.toml", "[[workload]] #1", "nthreads", "`many`")),
        ("nthreads = 0", ("nthreads", "`0`")),
        ("rate = nan", ("rate", "`nan`")),
        ("iosize = -4096", ("iosize", "`-4096`")),
        ('runtime = "9000h"', ("runtime", "`9000h`")),
        ("directio = 1", ("directio", "`1`")),
        ('sets = "nthreads=4"', ("sets", "`nthreads=4`")),
    ],
)
def test_campaign_values_of_the_wrong_type_or_range_name_the_key(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, workload: str, fragments: tuple[str, ...]
) -> None:
    f = workload_file(tmp_path, "c.toml", CAMPAIGN.format(workload=workload))
    r = iowatt(capsys, "campaign", f, "--results", tmp_path / "results")
    assert_one_error(r, *fragments)
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        (b"\x89PNG\r\n\x1a\n\x00\x00", "byte 0x89 at offset 0"),
        (b'name = "x"\nrepetitions = 2\xff\n', "byte 0xff at offset 26"),
        (b"x = " + b"[" * 5000 + b"]" * 5000, "too deep"),
    ],
)
def test_a_campaign_file_that_is_not_toml_text_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, data: bytes, fragment: str
) -> None:
    f = tmp_path / "c.toml"
    f.write_bytes(data)
    r = iowatt(capsys, "campaign", f, "--results", tmp_path / "results")
    assert_one_error(r, "c.toml", fragment)
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("watts", ["-50", "nan", "inf"])
def test_energy_compare_refuses_an_idle_power_that_is_no_power(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, watts: str
) -> None:
    results = tmp_path / "results"
    r = iowatt(capsys, "power", "record", "--results", results, "--no-report", "--hz", "20",
               "--source", "cmd:command=echo 10", "--", "true")  # fmt: skip
    assert r.code == 0, r.err
    (run,) = runs_in(results)
    r = iowatt(capsys, "energy", "compare", run.name, run.name, "--idle-watts", watts,
               "--results", results)  # fmt: skip
    assert_one_error(r, "--idle-watts", f"`{watts}`")
    assert runs_in(results) == [run]


# --- generated ----------------------------------------------------------------------------


def _garbage() -> st.SearchStrategy[str]:
    return st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=8)


SIZES = {
    "iosize": st.sampled_from(["512", "4k", "8k", "64k", "1m"]),
    "filesize": st.sampled_from(["1m", "4m", "8m"]),
}
HOSTILE_SIZES = st.one_of(
    st.sampled_from(["0", "-4k", "16777216t", "99999999999999999999g", "1e3", "nan", "4q", ""]),
    st.integers(min_value=2**62 + 1, max_value=10**30).map(str),
    _garbage(),
)
OPTIONS: dict[str, tuple[st.SearchStrategy[Any], st.SearchStrategy[Any]]] = {
    # option: (values that run quickly, values that must be refused)
    "iosize": (SIZES["iosize"], HOSTILE_SIZES),
    "filesize": (SIZES["filesize"], HOSTILE_SIZES),
    "nthreads": (
        st.integers(min_value=1, max_value=3),
        st.one_of(st.integers(max_value=0), st.integers(min_value=10**7, max_value=10**30)),
    ),
    "rate": (
        st.floats(min_value=100, max_value=1e6),
        st.one_of(
            st.sampled_from([math.nan, math.inf, -math.inf, 0.0, 1e-300, 1e300]),
            st.floats(max_value=0, allow_nan=False),
        ),
    ),
    "seed": (
        st.integers(min_value=0, max_value=2**64 - 1),
        st.one_of(st.integers(max_value=-1), st.integers(min_value=2**64)),
    ),
    "runtime": (
        st.sampled_from(["20ms", "50ms", "0.1s"]),
        st.one_of(
            st.sampled_from(["0", "-1s", "nan", "inf", "9000h", "1e30s", "1e-300s", "3parsecs"]),
            _garbage(),
        ),
    ),
    # Valid only beside a valid --rate: a bench without a schedule has nothing to drain.
    "drain": (
        st.sampled_from(["0s", "50ms", "1s"]),
        st.one_of(st.sampled_from(["-1s", "nan", "inf", "1e30s", "soon"]), _garbage()),
    ),
}


@st.composite
def bench_arguments(draw: st.DrawFn) -> tuple[list[str], bool]:
    """Options as a user may type them, and whether every one of them is valid."""
    args = ["--runtime=0.1s", "--filesize=4m"]  # overridden when drawn
    valid = True
    kinds = {}
    for option, (good, bad) in OPTIONS.items():
        kind = kinds[option] = draw(st.sampled_from(["absent", "good", "bad"]))
        if kind == "absent":
            continue
        value = draw(good if kind == "good" else bad)
        valid &= kind == "good"
        args.append(f"--{option}={value}")
    valid &= kinds["drain"] == "absent" or kinds["rate"] == "good"
    return args, valid


@pytest.mark.fuzz
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(arguments=bench_arguments(), personality=st.sampled_from(["randomread", "randomwrite"]),
       directio=st.booleans())  # fmt: skip
def test_any_bench_option_values_run_or_are_refused_with_one_line(
    capsys: pytest.CaptureFixture[str],
    arguments: tuple[list[str], bool],
    personality: str,
    directio: bool,
) -> None:
    args, valid = arguments
    with scratch_dir() as target, tempfile.TemporaryDirectory() as tmp:
        results = Path(tmp) / "results"
        if directio and supports_odirect(target):
            args.append("--directio")
        r = iowatt(capsys, "bench", personality, *args, "--target", target,
                   "--results", results, "--quiet", "--no-report")  # fmt: skip
        event("ran" if r.code == 0 else "refused")
        if r.code == 0:
            (run,) = runs_in(results)
            assert manifest(run)["status"] == "complete"
            assert not [p for p in results.iterdir() if p.name.startswith(".tmp-")]
            assert list(target.iterdir()) == []
        else:
            assert not valid, r.err
            assert_one_error(r)
            assert_refusal_recorded_at_most(r, target, results)


def assert_refusal_recorded_at_most(r: Result, target: Path, results: Path) -> None:
    """Refused while planning, nothing is written; refused by the target once the run began
    (a file larger than the free space), the attempt is one committed, incomplete run saying
    why, as for any run that stops."""
    assert_nothing_left(target, results, committed_ok=True)
    runs = runs_in(results)
    assert len(runs) <= 1, runs
    for run in runs:
        m = manifest(run)
        assert m["status"] == "incomplete" and m["reason"] in r.err, (m["reason"], r.err)


# A campaign that runs in well under a second; mutations replace, drop or add its keys.
BASE_CAMPAIGN: dict[str, Any] = {
    "name": "fuzz",
    "repetitions": 1,
    "order": "interleaved",
    "cooldown": "0s",
    "seed": 7,
    "labels": {"site": "lab"},
    "defaults": {"runtime": "0.05s", "filesize": "1m", "iosize": "4k"},
    "workload": [{"run": "randomread", "nthreads": 1}],
    "env": [{"name": "a", "labels": {"rack": "r1"}}],
}
# Other values each key takes, so that some mutated files are valid and run.
OTHER_VALID: dict[str, list[Any]] = {
    "name": ["other", "b-2"], "repetitions": [1, 2], "order": ["blocked", "random"],
    "cooldown": ["0s", 0], "seed": [0, 2**64 - 2], "labels": [{}, {"x": "y"}],
    "runtime": ["20ms", 0.05], "filesize": ["2m", 1 << 20], "iosize": ["512", "8k", 4096],
    "run": ["randomwrite", "singlestreamread"], "nthreads": [2, 3],
}  # fmt: skip


def _nested(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    # A named function: hypothesis reads a lambda's source to check that it recurses, and a
    # lambda spread over lines is sometimes read wrong (a deprecation warning, an error here).
    return st.one_of(st.lists(inner, max_size=3), st.dictionaries(_garbage(), inner, max_size=3))


TOML_VALUES = st.recursive(
    st.one_of(
        st.booleans(),
        st.integers(min_value=-(2**63), max_value=2**63 - 1),
        st.floats(),
        _garbage(),
        st.sampled_from(["0s", "4k", "1", "randomwrite", "interleaved", "psync", "many"]),
    ),
    _nested,
    max_leaves=6,
)


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return "{" + ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items()) + "}"


def _campaign_text(doc: dict[str, Any]) -> str:
    """TOML for ``doc``: [defaults] and arrays of tables where they still are tables (a
    mutation may have made them plain values)."""

    def pairs(table: dict[str, Any]) -> list[str]:
        return [f"{json.dumps(k)} = {_toml(v)}" for k, v in table.items()]

    def is_tables(v: Any) -> bool:
        return isinstance(v, list) and all(isinstance(t, dict) for t in v)

    plain = {
        k: v
        for k, v in doc.items()
        if not (k == "defaults" and isinstance(v, dict)) and not (k != "labels" and is_tables(v))
    }
    lines = pairs(plain)
    if isinstance(doc.get("defaults"), dict):
        lines += ["[defaults]", *pairs(doc["defaults"])]
    for key in ("workload", "env"):
        if is_tables(doc.get(key)):
            for table in doc[key]:
                lines += [f"[[{key}]]", *pairs(table)]
    return "\n".join(lines) + "\n"


@st.composite
def campaign_files(draw: st.DrawFn) -> bytes:
    doc = json.loads(json.dumps(BASE_CAMPAIGN))
    tables = [doc, doc["defaults"], doc["workload"][0], doc["env"][0]]
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        table = draw(st.sampled_from(tables))
        if not table:  # every key dropped already
            table[draw(_garbage())] = draw(TOML_VALUES)
            continue
        key = draw(st.sampled_from(sorted(table)))
        action = draw(st.sampled_from(["other", "replace", "replace", "drop", "add"]))
        if action == "other" and key in OTHER_VALID:
            table[key] = draw(st.sampled_from(OTHER_VALID[key]))
        elif action == "replace":
            table[key] = draw(TOML_VALUES)
        elif action == "drop":
            del table[key]
        else:
            table[draw(_garbage())] = draw(TOML_VALUES)
    data = _campaign_text(doc).encode()
    if draw(st.integers(min_value=0, max_value=3)) == 0:
        at = draw(st.integers(min_value=0, max_value=len(data)))
        data = data[:at] + draw(st.binary(min_size=1, max_size=6)) + data[at:]
    return data


def _tiny(path: Path, target: Path) -> bool:
    """Whether an accepted campaign runs in about a second: few, short, small runs (a valid
    file may as well ask for 5,000 repetitions of an hour)."""
    c = campaign.load(path, target=target)
    if len(campaign.schedule(c)) > 3 or c.cooldown_s > 0.1:
        return False
    for no in range(1, len(c.entries) + 1):
        for wl in campaign.bench_config(c, no, c.envs[0], 1, target).workloads:
            if wl.runtime_s + wl.ramp_s > 0.3 or wl.nthreads > 4 or wl.filesize > 8 << 20:
                return False
    return True


@pytest.mark.fuzz
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=campaign_files())
def test_any_campaign_file_runs_or_is_refused_with_one_line(
    capsys: pytest.CaptureFixture[str], data: bytes
) -> None:
    with scratch_dir() as target, tempfile.TemporaryDirectory() as tmp:
        f, results = Path(tmp) / "c.toml", Path(tmp) / "results"
        f.write_bytes(data)
        where = ("--target", target, "--results", results)
        r = iowatt(capsys, "campaign", f, *where, "--dry-run")
        event("refused" if r.code else "accepted")
        if r.code != 0:
            assert_one_error(r)
            assert_nothing_left(target, results)
            return
        if not _tiny(f, target):
            return
        event("ran")
        r = iowatt(capsys, "campaign", f, *where, "--quiet", "--no-report")
        assert r.code == 0, r.err
        assert runs_in(results)
        assert all(manifest(run)["status"] == "complete" for run in runs_in(results))
        assert list(target.iterdir()) == []
