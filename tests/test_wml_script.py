"""FileBench's constructs beyond one `run`: commands in order, 1.4's spelled-out run, composite
flowops, old and forked spellings, variables a wrapper supplies, `--check` and `--no-system`
(tests/wml/constructs holds a small file for each)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from iowatt.wml import Program, WmlError, parse_file, parse_text
from support.cli import assert_user_error, iowatt, runs_in
from support.wmlfile import one_thread

HERE = Path(__file__).parent
CONSTRUCTS = HERE / "wml" / "constructs"
TARGET = Path("/srv/iowatt-target")


def load(name: str, overrides: dict[str, str] | None = None) -> Program:
    return parse_file(CONSTRUCTS / name, overrides or {}, dir=TARGET)


def one(text: str, overrides: dict[str, str] | None = None) -> Program:
    return parse_text(text, "t.f", overrides or {}, dir=TARGET)


PROCESS = (
    "define fileset name=f,path=$dir,entries=4,dirwidth=4,size=1k,prealloc\n"
    "define process name=p\n{\n  thread name=t\n  {\n"
    "    flowop statfile name=s1,filesetname=f\n  }\n}\n"
)


# --- the order of a file's commands ---


def test_a_14_file_runs_from_create_processes_to_shutdown() -> None:
    p = load("script14.f")
    # sleep 1, stats clear, sleep 2, stats snap: 2 s measured after 1 s unmeasured.
    assert (p.runtime_s, p.ramp_s) == (2.0, 1.0)
    steps = [(s.line, s.phase, s.kind, s.at_s) for s in p.steps]
    assert steps == [
        (5, "setup", "system", 0.0),
        (7, "laid_out", "system", 0.0),
        (19, "running", "stats", 1.0),
        (20, "running", "system", 1.0),
        (22, "running", "stats", 3.0),
        (23, "running", "stats", 3.0),
        (25, "after", "system", 0.0),
    ]
    # $dir inside a command is iowatt's work directory; $LOG, never set, is the shell's.
    assert p.steps[1].text == f"find {TARGET}/logs -type f | wc -l >> $LOG"
    assert any("stats dump stats.txt" in w for w in p.warnings)


@pytest.mark.parametrize(
    ("tail", "runtime", "ramp"),
    [
        ("create processes\nsleep 5\nshutdown processes", 5.0, 0.0),
        ("create processes\nsleep 2\nstats clear\nsleep 3\nsleep 4\nquit", 7.0, 2.0),
        ("create files\ncreate processes\nsleep 2\nstats snap\nsleep 9", 2.0, 0.0),
        ("sleep 3\nrun 4", 4.0, 0.0),  # a pause before the run is not part of it
        ("run 4 10 10", 4.0, 0.0),
        ("psrun -10 ", 60.0, 0.0),
        ("psrun -10 30", 30.0, 0.0),
    ],
)
def test_the_run_length_comes_from_the_commands(tail: str, runtime: float, ramp: float) -> None:
    p = one(PROCESS + tail + "\n")
    assert (p.runtime_s, p.ramp_s) == (runtime, ramp)


def test_sleeps_outside_the_run_are_steps_and_quit_ends_the_file() -> None:
    p = one(PROCESS + 'system "sync"\nsleep 2\nrun 3\nsleep 1\nquit\nset $never=1\n')
    assert [(s.kind, s.phase, s.seconds) for s in p.steps] == [
        ("system", "setup", 0.0),
        ("sleep", "setup", 2.0),
        ("sleep", "after", 1.0),
    ]


@pytest.mark.parametrize(
    ("tail", "message"),
    [
        ("create processes\nsleep 1\nrun 5",
         "t.f:11: a second `run` (the processes start at line 9)"),
        ("run 5\ncreate processes", "t.f:10: a second `create processes` (the processes start"),
        ("run 1\ndefine fileset name=g,path=$dir,entries=1,dirwidth=1",
         "t.f:10: `define fileset` after the run (line 9) never takes effect"),
        ("sleep many\nrun 1", "t.f:9: `sleep` needs a whole number, not `many`"),
    ],
)  # fmt: skip
def test_commands_out_of_order_are_refused_at_their_line(tail: str, message: str) -> None:
    with pytest.raises(WmlError) as info:
        one(PROCESS + tail + "\n")
    assert info.value.message.startswith(message), info.value.message


# --- composite flowops ---


def test_a_composite_flowop_becomes_a_repeated_body() -> None:
    p = load("composite.f")
    t1, t2 = ([(op["kind"], op["name"]) for op in t["flowops"]] for t in p.threads)

    def body(w: str) -> list[tuple[str, str]]:  # named after the composites, as in FileBench
        return [("composite", w), ("composite", f"{w}.inner"), ("openfile", f"{w}.inner.open1"),
                ("readwholefile", f"{w}.inner.read1"), ("closefile", f"{w}.inner.close1"),
                ("statfile", f"{w}.stat1")]  # fmt: skip

    assert t1 == body("w1") and t2 == body("w2")
    w1, inner = p.threads[0]["flowops"][:2]
    assert (w1["iters"], w1["value"]) == (2, 5) and (inner["iters"], inner["value"]) == (3, 3)
    # $which defaults to fileset a; w2 passes b, whose path joins $dir to text.
    sets = [p.threads[i]["flowops"][2]["fileset"] for i in (0, 1)]
    assert [p.filesets[i]["name"] for i in sets] == ["a", "b"]
    assert p.filesets[1]["path"] == str(TARGET / "sub")


@pytest.mark.parametrize(
    ("flowops", "message"),
    [
        ("flowop c name=c1", "t.f:10: composite flowop `c` (line 2) needs `$x`"),
        ("flowop c name=c1, $x=f, $y=2", None),  # a variable it does not declare is its own
        ("flowop hog name=h, $x=1", "t.f:10: `$x=`: only a composite flowop takes variables"),
        ("flowop cc name=c1", "t.f:10: unknown flowop `cc`"),
    ],
)
def test_composite_flowop_variables(flowops: str, message: str | None) -> None:
    text = (
        "define fileset name=f,path=$dir,entries=4,dirwidth=4,size=1k,prealloc\n"
        "define flowop name=c, $x\n{\n  flowop statfile name=s,filesetname=$x\n}\n"
        "define process name=p\n{\n  thread name=t\n  {\n" + f"    {flowops}\n  }}\n}}\nrun 1\n"
    )
    if message is None:
        assert one(text).threads[0]["flowops"][1]["kind"] == "statfile"
        return
    with pytest.raises(WmlError) as info:
        one(text)
    assert info.value.message.startswith(message), info.value.message


# --- spellings of 1.4 and of forks, arithmetic, shapes ---


def test_old_spellings_model() -> None:
    p = load("old_spellings.f")
    assert p.variables["nfiles"] == "8"  # $per * $nthreads
    flat, deep = p.filesets
    assert flat["size"] == {"gamma": {"mean": 16384.0, "shape": 1.5, "min": 0}}  # filesizegamma
    assert (flat["dirwidth"], deep["dirwidth"], deep["paralloc"]) == (0, 1, True)
    [t] = p.threads  # the thread of 0 instances is gone, and its unknown fileset unread
    assert t["instances"] == 2
    open1, read1 = t["flowops"][:2]
    assert open1["index"] == {"fixed": 3}
    rounded = {"uniform": {"min": 1024, "max": 3072}}
    assert read1["iosize_dist"]["bounded"]["of"] == rounded
    assert read1["iosize_dist"]["bounded"]["round"] == 1024
    notices = "\n".join(p.warnings)
    for said in ("has no dirwidth", "useism", "0 instances", "bar and delete times"):
        assert said in notices


@pytest.mark.parametrize(
    ("expr", "value"),
    [("$a * $b", "42"), ("$a + $b", "13"), ("$a - $b", "-1"), ("$b / $a", "1"),
     ("$a * 2.5", "15"), ("$a * $b + 1", "43")],
)  # fmt: skip
def test_arithmetic(expr: str, value: str) -> None:
    p = one(f"set $a=6\nset $b=7\nset $x = {expr}\n" + PROCESS)
    assert p.variables["x"] == value


def test_arithmetic_errors_name_the_line() -> None:
    with pytest.raises(WmlError, match=r"t.f:2: `\$a / 0` divides by zero"):
        one("set $a=6\nset $x = $a / 0\n" + PROCESS)


def test_paths_outside_the_work_directory_are_mapped_under_it() -> None:
    p = one(PROCESS.replace("path=$dir", "path=/mnt/data"))
    assert p.filesets[0]["path"] == str(TARGET / "mnt" / "data")
    assert "t.f:1: path `/mnt/data` is mapped to `$dir/mnt/data`" in p.warnings[0]


# --- variables the file uses but never sets ---


def test_every_unset_variable_is_named_at_once_and_set_supplies_them() -> None:
    with pytest.raises(WmlError) as info:
        load("unset_vars.f")
    e = info.value
    assert e.message.endswith(
        "unset_vars.f:2: 4 variables used but never set: `$nfiles` (line 2), `$filesize` "
        "(line 2), `$nthreads` (line 5), `$runtime` (line 10)"
    )
    assert e.hint == "give them values: --set nfiles=... --set filesize=... --set nthreads=... " \
        "--set runtime=..."  # fmt: skip
    sets = {"nfiles": "10", "filesize": "4k", "nthreads": "3", "runtime": "7"}
    p = load("unset_vars.f", sets)
    assert (p.runtime_s, p.threads[0]["instances"], p.filesets[0]["entries"]) == (7.0, 3, 10)
    assert p.origins["nthreads"] == "--set"


def test_what_iowatt_does_not_run_is_named_all_at_once() -> None:
    with pytest.raises(WmlError) as info:
        load("multi.f")
    message = info.value.message
    assert "multi.f:3: `enable multi` (FileBench's multi-client runs) is not supported" in message
    assert "line 10: the `testrandvar` flowop is not supported" in message
    assert "line 13: `domultisync`" in message
    assert "--cluster" in (info.value.hint or "")


# --- running the commands ---


def test_commands_run_in_order_around_the_run_and_are_events(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "order.log"
    monkeypatch.setenv("LOG", str(log))
    results = tmp_path / "results"
    r = iowatt(capsys, "bench", CONSTRUCTS / "script14.f", "--target", tmp_path,
               "--results", results, "--no-report")  # fmt: skip
    assert r.code == 0, r.err
    # After `create fileset` the 20 files are there; `during` runs while the processes do.
    assert log.read_text().split() == ["setup", "20", "during", "after"]
    [run] = runs_in(results)
    summary = json.loads((run / "summary.json").read_text())["workloads"]["script14"]
    assert summary["status"] == "complete" and summary["runtime_s"] == pytest.approx(2.0, abs=0.1)
    events = pq.read_table(run / "events.parquet").to_pylist()
    system = [e for e in events if e["kind"] == "system"]
    assert [e["message"].split(":")[1] for e in system] == ["5", "7", "20", "25"]
    assert all("exited with status 0 after" in e["message"] for e in system)
    during = next(e for e in system if ":20:" in e["message"])
    assert during["t_s"] > system[1]["t_s"] + 0.9  # a second into the processes' run
    assert "IO Summary:" in r.out


def test_a_failing_command_stops_the_run_at_its_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    f = tmp_path / "fail.f"
    f.write_text(PROCESS + 'create files\nsystem "echo going; exit 3"\nrun 1\n')
    results = tmp_path / "results"
    r = iowatt(capsys, "bench", f, "--target", tmp_path, "--results", results)
    assert_user_error(r, f"{f}:10: system `echo going; exit 3` exited with status 3 (going)")
    assert "|| true" in r.err
    [run] = runs_in(results)  # written, and marked incomplete
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["status"] != "complete"
    assert not list(tmp_path.glob("iowatt-*"))  # iowatt's work directory is gone
    f.write_text(PROCESS + 'system "false || true"\nrun 1\n')
    r = iowatt(capsys, "bench", f, "--target", tmp_path, "--results", results, "--no-report")
    assert r.code == 0, r.err


def test_no_system_refuses_a_file_with_commands(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    r = iowatt(capsys, "bench", CONSTRUCTS / "script14.f", "--no-system", "--target", tmp_path,
               "--results", tmp_path / "results")  # fmt: skip
    assert_user_error(r, "script14.f:5: the file runs shell commands (`system`, line 5, 7, 20, 25)")
    assert not (tmp_path / "results").exists() or not runs_in(tmp_path / "results")


# --- --check ---


def test_check_lists_variables_filesets_commands_and_notices(
    capsys: pytest.CaptureFixture[str],
) -> None:
    r = iowatt(capsys, "bench", CONSTRUCTS / "script14.f", "--check", "--set", "nfiles=30")
    assert r.code == 0, r.err
    assert "$nfiles  30" in r.out and "--set (line 3 sets it)" in r.out
    assert "logs (line 4): 30 files of 4 KiB on average" in r.out
    assert "run: 2 s after a 1 s warm-up" in r.out
    assert "line 20   running +1 s system echo during >> $LOG" in r.out
    r = iowatt(capsys, "bench", CONSTRUCTS / "composite.f", "--check", "--json")
    found = json.loads(r.out)
    assert found["status"] == "models" and [f["bytes"] for f in found["filesets"]] == [409600] * 2
    assert {v["name"]: v["from"] for v in found["variables"]}["nfiles"] == "line 3"


def test_check_refuses_with_exit_2_and_json_for_scripts(
    capsys: pytest.CaptureFixture[str],
) -> None:
    r = iowatt(capsys, "bench", CONSTRUCTS / "unset_vars.f", "--check", "--json")
    assert_user_error(r, "4 variables used but never set")
    refused = json.loads(r.out)
    assert refused["status"] == "refused" and "--set nfiles=..." in refused["hint"]
    r = iowatt(capsys, "bench", "randomread", "--check")
    assert_user_error(r, "--check reads FileBench workload files")


def test_an_echo_while_the_processes_run_is_said_at_its_second(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    f = tmp_path / "echo.f"
    f.write_text(
        "define fileset name=a,path=/tmp,entries=4,dirwidth=4,size=4k,prealloc\n"
        + one_thread("statfile name=s,filesetname=a")
        + 'echo "loaded"\ncreate files\ncreate processes\nsleep 1\necho "one second in"\n'
        "sleep 1\nshutdown processes\n"
    )
    r = iowatt(capsys, "bench", f, "--check", "--json")
    found = json.loads(r.out)
    assert found["messages"] == ["loaded"]
    assert found["commands"] == [
        {"line": 13, "phase": "running", "kind": "echo", "text": "one second in", "at_s": 1.0}
    ]
    # (path=/tmp is mapped under the run's work directory, which must be made for it.)
    r = iowatt(capsys, "bench", f, "--target", tmp_path, "--results", tmp_path / "r")
    assert r.code == 0, r.err
    said = r.err.splitlines()
    assert said.count("loaded") == 1 and said.count("one second in") == 1
    assert said.index("loaded") < said.index("one second in")


def test_a_template_placeholder_is_refused_with_the_set_that_fills_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    template = tmp_path / "micro.f"
    template.write_text(
        "set $dir=MOUNTDIR\nset $filesize=FILESZ\n"
        "define fileset name=a,path=$dir,entries=4,dirwidth=4,size=$filesize,prealloc\n"
        + one_thread("read name=r,filesetname=a,iosize=4k")
        + "run 1\n"
    )
    r = iowatt(capsys, "bench", template, "--check")
    assert_user_error(r, "micro.f:3: `size` needs a size such as 16k, not `FILESZ`")
    assert "hint: give $filesize a value: --set filesize=16k" in r.err
    r = iowatt(capsys, "bench", template, "--check", "--set", "filesize=16k")
    assert r.code == 0, r.err
    assert "a (line 3): 4 files of 16 KiB on average" in r.out


def test_check_models_a_file_this_machine_could_not_run_and_says_why(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # A host whose open-file limit is 1,000: oltp's 200 shadows keep up to 128 files each.
    monkeypatch.setattr("iowatt.bench.limits.open_files_limit", lambda: (1000, 1000))
    oltp = HERE / "wml" / "filebench" / "oltp.f"
    r = iowatt(capsys, "bench", oltp, "--check", "--json")
    assert r.code == 0, r.err
    found = json.loads(r.out)
    assert found["status"] == "models"
    assert "keeps up to 26,881 files open" in found["this_machine"]
    assert "hard limit is 1,000" in found["this_machine"]
    r = iowatt(capsys, "bench", oltp, "--target", tmp_path, "--results", tmp_path / "results")
    assert_user_error(r, "oltp.f:", "keeps up to 26,881 files open")


@pytest.mark.parametrize("path", sorted(HERE.rglob("*.f")), ids=lambda p: str(p.relative_to(HERE)))
def test_check_models_or_refuses_every_workload_file_in_the_tests(
    capsys: pytest.CaptureFixture[str], path: Path
) -> None:
    """The corpus: --check never crashes; it models a file or names FILE:LINE."""
    r = iowatt(capsys, "bench", path, "--check")
    if r.code == 0:
        assert r.out.startswith(f"{path}: models")
    else:
        assert_user_error(r, f"{path}:")


@pytest.mark.parametrize(
    "name", ["compflow_demo.f", "netsfs.f", "networkfs.f", "randomfileaccess.f"]
)
def test_filebench_files_that_need_these_constructs_run(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str
) -> None:
    """Composite flowops, arithmetic and `indexed`: the shipped files refused before run."""
    results = tmp_path / "results"
    r = iowatt(capsys, "bench", HERE / "wml" / "filebench" / name, "--target", tmp_path,
               "--set", "nfiles=100", "--set", "nthreads=2", "--runtime", "1s",
               "--results", results, "--no-report")  # fmt: skip
    assert r.code == 0, r.err
    [run] = runs_in(results)
    workload = json.loads((run / "summary.json").read_text())["workloads"][name[:-2]]
    assert workload["status"] == "complete" and workload["ops"] > 0
    if name == "compflow_demo.f":
        # Each pass of dowork runs readwrite's body $rwiters times (5, 4 and 3 by thread).
        f = workload["flowops"]
        for n, rwiters in ((1, 5), (2, 4), (3, 3)):
            passes = f[f"dowork{n}"]["ops"] * rwiters
            inner = f[f"dowork{n}.rw1.openfile4"]["ops"]
            assert passes <= inner <= passes + 2 * rwiters  # each thread's last pass may be cut


def test_a_file_with_commands_is_refused_in_a_fleet_before_any_host_starts(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    r = iowatt(capsys, "bench", CONSTRUCTS / "script14.f", "--cluster", "local:1",
               "--target", tmp_path, "--results", tmp_path / "results")  # fmt: skip
    assert_user_error(
        r, "script14.f:5: a workload file's commands (`system`) do not run in a fleet"
    )


def test_aiowrite_submits_and_aiowait_reaps_real_asynchronous_writes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    f = tmp_path / "aio.f"
    f.write_text(
        "define file name=data,path=$dir,size=1m,prealloc\n"
        "define process name=p\n{\n  thread name=t,instances=2\n  {\n"
        "    flowop aiowrite name=aw,filename=data,iosize=4k,random,iters=16\n"
        "    flowop aiowait name=wait1\n    flowop aiowait name=wait2\n  }\n}\nrun 1\n"
    )
    results = tmp_path / "results"
    r = iowatt(capsys, "bench", f, "--target", tmp_path, "--results", results, "--no-report")
    assert r.code == 0, r.err
    [run] = runs_in(results)
    flowops = json.loads((run / "summary.json").read_text())["workloads"]["aio"]["flowops"]
    aw, w1, w2 = flowops["aw"], flowops["wait1"], flowops["wait2"]
    assert aw["ops"] > 0 and aw["bytes"] == aw["ops"] * 4096 and aw["errors"] == 0
    # Each pass waits twice for every thread: wait1 for 8 of 16 in flight, wait2 for half
    # of what is left. They move no data, and count as I/O: FileBench's AIO flowops do.
    assert w1["ops"] == pytest.approx(aw["ops"] / 16, abs=2) and w1["bytes"] == 0
    assert w2["ops"] == pytest.approx(w1["ops"], abs=2) and w1["io"]


def test_entropy_sets_how_well_the_data_compresses(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The FSL fork's datasource/entropy: 2 bits per byte compresses about 4:1 with gzip, the
    default random data not at all; files laid out and data appended alike."""
    log = tmp_path / "sizes.log"
    gz = f"find $dir/{{name}} -type f | xargs cat | gzip -c | wc -c >> {log}"
    f = tmp_path / "entropy.f"
    f.write_text(
        "define fileset name=low,path=$dir,entries=2,dirwidth=2,size=1m,prealloc,\n"
        "  datasource=entro,entropy=2\n"
        "define fileset name=high,path=$dir,entries=2,dirwidth=2,size=1m,prealloc\n"
        "define process name=p\n{\n  thread name=t\n  {\n"
        "    flowop appendfile name=a,filesetname=low,iosize=64k\n"
        "    flowop finishonbytes name=done,value=4m\n  }\n}\n"
        "create files\n"
        f'system "{gz.format(name="low")}"\nsystem "{gz.format(name="high")}"\n'
        f'run 1\nsystem "{gz.format(name="low")}"\n'
    )
    r = iowatt(capsys, "bench", f, "--target", tmp_path, "--results", tmp_path / "results",
               "--no-report")  # fmt: skip
    assert r.code == 0, r.err
    low, high, low_after = (int(n) for n in log.read_text().split())
    assert (2 << 20) / 5 < low < (2 << 20) / 3  # 2 MiB of 2-bit data: about a quarter
    assert high > 2 << 20  # random bytes do not compress
    # 4 MiB more appended, of the same entropy
    assert (6 << 20) / 5 < low_after < (6 << 20) / 3


def test_a_filemacro_personality_is_named_without_its_file(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # `iowatt bench oltp` runs the suite's own oltp.f, as `--suite filemacro` does.
    r = iowatt(capsys, "bench", "oltp", "--check", "--json", "--set", "nshadows=20")
    assert r.code == 0, r.err
    found = json.loads(r.out)
    assert found["status"] == "models"
    assert {v["name"]: v["value"] for v in found["variables"]}["nshadows"] == "20"
    r = iowatt(capsys, "bench", "oltpx", "--check")
    assert_user_error(r, "oltpx")
