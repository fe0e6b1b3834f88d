"""iowatt.wml: FileBench's workload language read into the engine's workload model."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest

from iowatt._engine import WorkloadRun
from iowatt.errors import EXIT_USAGE, ConfigError
from iowatt.units import MAX_SIZE
from iowatt.wml import BUILTIN, Program, WmlError, builtin_path, parse_file, parse_text
from iowatt.wml.dists import mean_of

HERE = Path(__file__).parent
FIXTURES = HERE / "wml"
FILEBENCH = FIXTURES / "filebench"
SPEC_RS = HERE.parent / "crates" / "iowatt-workload" / "src" / "spec.rs"
UNSUPPORTED = "iowatt does not run this FileBench construct"
TARGET = Path("/srv/iowatt-target")


# --- the contract: field names and enums of crates/iowatt-workload/src/spec.rs ---


def _spec() -> tuple[dict[str, tuple[set[str], set[str]]], dict[str, set[str]]]:
    """Per struct: (all fields, fields without a serde default); per enum: serde names."""
    text = SPEC_RS.read_text()
    structs: dict[str, tuple[set[str], set[str]]] = {}
    for name, body in re.findall(r"pub struct (\w+) \{(.*?)\n\}", text, re.S):
        fields, required, default = set(), set(), False
        for line in body.splitlines():
            line = line.strip()
            if line.startswith("#[serde(default"):
                default = True
            elif m := re.match(r"pub (\w+): (.*),", line):
                fields.add(m.group(1))
                if not default and not m.group(2).startswith("Option<"):
                    required.add(m.group(1))
                default = False
        structs[name] = (fields, required)
    enums: dict[str, set[str]] = {}
    for name, body in re.findall(r"pub enum (\w+) \{(.*?)\n\}", text, re.S):
        variants = re.findall(r"^\s*(\w+)\b(?!:)", body, re.M)
        enums[name] = {v.lower() for v in variants if v[0].isupper()}
    return structs, enums


STRUCTS, ENUMS = _spec()


def check_keys(obj: dict[str, Any], struct: str) -> None:
    fields, required = STRUCTS[struct]
    assert set(obj) <= fields, f"{struct}: unknown fields {set(obj) - fields}"
    assert required <= set(obj), f"{struct}: missing fields {required - set(obj)}"


def check_size(dist: Any) -> None:
    assert isinstance(dist, dict) and len(dist) == 1
    (kind, v), *_ = dist.items()
    assert kind in ENUMS["SizeDist"]
    if kind == "bounded":
        assert set(v) == {"of", "round", "min", "max"} and 0 <= v["min"] <= v["max"]
        check_size(v["of"])
    elif kind == "fixed":
        assert isinstance(v, int) and v >= 0
    elif kind == "gamma":
        assert set(v) == {"mean", "shape", "min"} and v["mean"] >= 0 and v["shape"] > 0
    elif kind == "uniform":
        assert set(v) == {"min", "max"} and 0 <= v["min"] <= v["max"]
    else:
        assert v and all(len(r) == 3 and r[0] >= 0 and 0 <= r[1] <= r[2] for r in v)


def check_model(model: dict[str, Any]) -> None:
    """The structural check every model must pass (what serde would accept, and more)."""
    model = json.loads(json.dumps(model))
    check_keys(model, "Workload")
    assert model["quit"] in ENUMS["Quit"] and model["engine"] in {"psync", "io_uring"}
    assert model["files"] == [] and model["threads"]
    for fs in model["filesets"]:
        check_keys(fs, "FilesetSpec")
        check_size(fs["size"])
        assert fs["path"].startswith("/") and 0 <= fs["prealloc"] <= 100
    names = {op["name"] for t in model["threads"] for op in t["flowops"]}
    for t in model["threads"]:
        check_keys(t, "ThreadSpec")
        assert t["instances"] >= 1 and t["flowops"]
        for op in t["flowops"]:
            check_keys(op, "Flowop")
            assert op["kind"] in ENUMS["OpKind"]
            assert op["fileset"] is None or 0 <= op["fileset"] < len(model["filesets"])
            assert op["target"] is None or op["target"] in names
            if op["iosize_dist"] is not None:
                check_size(op["iosize_dist"])
                assert op["iosize"] > 0
            assert op["iters"] >= 1 and min(op["fd"], op["srcfd"], op["value"]) >= 0
    # The Rust structs themselves: the engine deserializes the model without running it.
    WorkloadRun.model(model)


def model_of(program: Program) -> dict[str, Any]:
    model = program.model(seed=7, runtime_ns=2 * 10**9, ramp_ns=0, slow_ns=[10**8, 2 * 10**8])
    check_model(model)
    return model


def parse(text: str, overrides: dict[str, str] | None = None) -> Program:
    return parse_text(text, "t.f", overrides or {}, dir=TARGET)


def wml_error(text: str, overrides: dict[str, str] | None = None) -> WmlError:
    with pytest.raises(WmlError) as info:
        parse(text, overrides)
    return info.value


HEAD = "set $dir=/tmp\ndefine file name=f,path=$dir,size=1m,prealloc\n"  # lines 1-2


def one_thread(*flowops: str, head: str = HEAD) -> str:
    """A file whose flowops start at line 7 (an item starting with a space continues one)."""
    body = "\n".join(f"    {f}" if f.startswith(" ") else f"    flowop {f}" for f in flowops)
    return f"{head}define process name=p\n{{\n  thread name=t\n  {{\n{body}\n  }}\n}}\nrun 5\n"


def test_the_contract_is_read_from_spec_rs() -> None:
    assert len(ENUMS["OpKind"]) == 31 and "composite" in ENUMS["OpKind"]
    assert ENUMS["Quit"] == {"timeout", "alldone", "firstdone"}
    assert {"name", "kind", "iosize_dist"} <= STRUCTS["Flowop"][0]
    assert STRUCTS["ThreadSpec"][1] == {"name", "instances", "flowops"}


# --- FileBench's own workload files ---

FILEBENCH_FILES = sorted(p.name for p in FILEBENCH.glob("*.f"))


def test_the_filebench_copies_keep_their_license_headers() -> None:
    assert len(FILEBENCH_FILES) == 46
    for name in FILEBENCH_FILES:
        text = (FILEBENCH / name).read_text()
        assert name == "cvar_example.f" or "CDDL HEADER START" in text


@pytest.mark.parametrize("name", FILEBENCH_FILES)
def test_every_filebench_workload_models(name: str) -> None:
    program = parse_file(FILEBENCH / name, dir=Path("/tmp"))
    model_of(program)
    assert program.name == name.removesuffix(".f") and program.variables["dir"] == "/tmp"


def test_filebench_run_modes_and_rates() -> None:
    def load(name: str) -> Program:
        return parse_file(FILEBENCH / name, dir=Path("/tmp"))

    assert load("randomread.f").runtime_s is None  # FileIO personalities have no `run`
    assert load("filemicro_writefsync.f").runtime_s == 60.0  # a bare `run`
    assert load("filemicro_writefsync.f").quit == "firstdone"
    assert load("videoserver.f").eventgen_rate == 96.0
    assert load("oltp.f").eventgen_rate is None  # rate=0 disables the generator
    wsfs = load("filemicro_seqwriterandvartab.f").threads[0]["flowops"][1]
    assert wsfs["iosize_dist"] == {
        "tabular": [[80.0, 1024, 4096], [15.0, 4096, 16384], [5.0, 16384, 65536]]
    }
    assert wsfs["iosize"] == 65536 and wsfs["iters"] == 128 * 1024
    cvar = load("cvar_example.f").threads[0]["flowops"][1]
    assert cvar["iosize_dist"] == {"uniform": {"min": 4096, "max": 8192}}
    single = load("singlestreamwrite.f").filesets[0]
    assert single["size"] == {"fixed": 1024} and single["single"]  # FileBench's default size
    tpcso = load("tpcso.f")
    assert len(tpcso.filesets) == 30 and tpcso.filesets[0]["name"] == "aux.df"


# --- the built-in personalities ---


def test_builtins_ship_as_package_data() -> None:
    for name in BUILTIN:
        path = builtin_path(name)
        assert path.is_file() and path.name == f"{name}.f"
        assert "CDDL" not in path.read_text()
    with pytest.raises(ConfigError, match="unknown built-in workload `nope`"):
        builtin_path("nope")


@pytest.mark.parametrize("name", BUILTIN)
def test_builtin_matches_filebench_definition(name: str) -> None:
    ours = parse_file(builtin_path(name), dir=Path("/tmp"))
    theirs = parse_file(FILEBENCH / f"{name}.f", dir=Path("/tmp"))
    assert ours.source == f"{name}.f" and ours.name == name
    assert model_of(ours) == model_of(theirs)
    assert ours.runtime_s == theirs.runtime_s
    assert {k: v for k, v in ours.variables.items() if k != "runtime"} == {
        k: v for k, v in theirs.variables.items() if k != "runtime"
    }


def flow(program: Program, thread: int = 0) -> list[tuple[str, str]]:
    return [(op["kind"], op["name"]) for op in program.threads[thread]["flowops"]]


def test_fileserver() -> None:
    p = parse_file(builtin_path("fileserver"), dir=TARGET)
    assert (p.runtime_s, p.quit, p.eventgen_rate) == (60.0, "timeout", None)
    [fs] = p.filesets
    assert fs == {
        "name": "bigfileset",
        "path": str(TARGET),
        "entries": 10000,
        "size": {"gamma": {"mean": 131072.0, "shape": 1.5, "min": 0}},
        "dirwidth": 20,
        "dirgamma": 1.5,
        "leafdirs": 0,
        "prealloc": 80,
        "reuse": False,
        "paralloc": False,
        "readonly": False,
        "writeonly": False,
        "single": False,
        "entropy": None,
    }
    [t] = p.threads
    assert (t["name"], t["process"], t["instances"], t["memsize"]) == (
        "filereaderthread",
        "filereader",
        50,
        10 << 20,
    )
    assert [k for k, _ in flow(p)] == [
        "createfile", "writewholefile", "closefile", "openfile", "appendfilerand", "closefile",
        "openfile", "readwholefile", "closefile", "deletefile", "statfile",
    ]  # fmt: skip
    ops = t["flowops"]
    assert ops[0]["fileset"] == 0 and ops[0]["fd"] == 1
    assert (ops[1]["srcfd"], ops[1]["iosize"]) == (1, 1 << 20)
    assert ops[4]["iosize"] == 16384 and ops[4]["iosize_dist"] is None
    assert p.bytes_needed() == 10000 * 80 // 100 * 131072
    assert p.variables["filesize"] == "cvar(type=cvar-gamma,parameters=mean:131072;gamma:1.5)"


def test_varmail_webproxy_webserver() -> None:
    vm = parse_file(builtin_path("varmail"), dir=TARGET)
    assert vm.threads[0]["instances"] == 16 and len(vm.threads[0]["flowops"]) == 13
    assert [k for k, _ in flow(vm)][:5] == [
        "deletefile", "createfile", "appendfilerand", "fsync", "closefile",
    ]  # fmt: skip
    assert vm.filesets[0]["size"] == {"gamma": {"mean": 16384.0, "shape": 1.5, "min": 0}}
    assert vm.filesets[0]["dirwidth"] == 1_000_000

    wp = parse_file(builtin_path("webproxy"), dir=TARGET)
    assert wp.runtime_s is None  # FileBench's webproxy.f has no `run`
    assert wp.threads[0]["instances"] == 100 and len(wp.threads[0]["flowops"]) == 20
    assert flow(wp)[-1] == ("opslimit", "limit") and wp.eventgen_rate is None
    assert wp.filesets[0]["size"] == {"fixed": 16384} and wp.filesets[0]["prealloc"] == 80

    ws = parse_file(builtin_path("webserver"), dir=TARGET)
    assert [f["name"] for f in ws.filesets] == ["bigfileset", "logfiles"]
    assert ws.filesets[0]["readonly"] and ws.filesets[0]["prealloc"] == 100
    assert ws.filesets[1]["entries"] == 1 and ws.filesets[1]["prealloc"] == 100
    ops = ws.threads[0]["flowops"]
    assert len(ops) == 31 and ops[-1]["kind"] == "appendfilerand"
    assert (ops[-1]["fileset"], ops[-1]["fd"], ops[-1]["iosize"]) == (1, 2, 16384)


def test_oltp() -> None:
    p = parse_file(builtin_path("oltp"), dir=TARGET)
    assert [(t["process"], t["name"], t["instances"]) for t in p.threads] == [
        ("lgwr", "lgwr", 1),
        ("dbwr", "dbwr", 10),
        ("shadow", "shadow", 200),
    ]
    assert all(t["memsize"] == 1 << 20 for t in p.threads)
    lgwr, dbwr, shadow = (t["flowops"] for t in p.threads)
    assert lgwr[0]["kind"] == "aiowrite" and lgwr[0]["iosize"] == 256 << 10
    assert lgwr[0]["random"] and lgwr[0]["dsync"] and not lgwr[0]["directio"]
    assert (lgwr[2]["kind"], lgwr[2]["value"], lgwr[2]["highwater"]) == ("semblock", 3200, 1000)
    assert (dbwr[0]["iters"], dbwr[0]["opennext"], dbwr[0]["iosize"]) == (100, True, 2048)
    assert (dbwr[1]["kind"], dbwr[1]["value"]) == ("hog", 10000)
    assert shadow[1]["value"] == 200000
    assert [(op["target"], op["blocking"]) for op in shadow[2:4]] == [
        ("lg-block", True),
        ("dbwr-block", True),
    ]
    assert [f["entries"] for f in p.filesets] == [10, 1] and p.eventgen_rate is None
    assert parse_file(builtin_path("oltp"), {"runtime": "90"}, dir=TARGET).runtime_s == 90.0
    on = parse_file(builtin_path("oltp"), {"directio": "1", "eventrate": "50"}, dir=TARGET)
    assert on.threads[2]["flowops"][0]["directio"] and on.eventgen_rate == 50.0


# --- the hand-written fixture with every flowop ---


def test_every_flowop() -> None:
    p = parse_file(FIXTURES / "every_flowop.f", dir=TARGET)
    model = model_of(p)
    kinds = {op["kind"] for t in model["threads"] for op in t["flowops"]}
    assert kinds == ENUMS["OpKind"] - {"composite"}  # tests/test_wml_script.py has those
    assert (p.runtime_s, p.quit, p.eventgen_rate) == (2.0, "timeout", 1000.0)
    assert p.messages == ["every_flowop: 2 churn threads, I/O size 4096"]
    assert p.usage == ["set $nthreads to change the churn threads"]
    fs = {f["name"]: f for f in model["filesets"]}
    assert fs["bigfileset"]["size"] == {"gamma": {"mean": 16384.0, "shape": 1.5, "min": 0}}
    assert (fs["bigfileset"]["prealloc"], fs["bigfileset"]["paralloc"]) == (80, True)
    assert (fs["readset"]["dirgamma"], fs["readset"]["prealloc"]) == (0.0, 100)
    assert fs["readset"]["readonly"] and fs["readset"]["reuse"]
    assert (fs["dirset"]["leafdirs"], fs["dirset"]["prealloc"]) == (16, 50)
    assert fs["datafile"]["single"] and fs["datafile"]["entries"] == 1
    assert fs["logfile"]["size"] == {"fixed": 1024}
    threads = {t["name"]: t for t in model["threads"]}
    assert threads["churn"]["instances"] == 2 and threads["randio"]["instances"] == 2
    assert threads["dirs"]["memsize"] == 64 << 10
    ops = {op["name"]: op for t in model["threads"] for op in t["flowops"]}
    assert ops["appendrand1"]["iosize_dist"] == {"uniform": {"min": 1024, "max": 7168}}
    assert ops["randread1"]["iosize_dist"] == {"tabular": [[60.0, 2048, 4096], [40.0, 4096, 16384]]}
    assert ops["randread1"]["iosize"] == 16384 and ops["randread1"]["noreadahead"]
    assert ops["randwrite1"]["directio"] and ops["randwrite1"]["workingset"] == 256 << 10
    assert (ops["seqwrite1"]["iters"], ops["seqwrite1"]["fd"], ops["seqwrite1"]["dsync"]) == (
        8,
        2,
        False,
    )
    assert ops["seqdone"]["value"] == 64 << 20 and ops["pause"]["value"] == 1
    assert ops["shadow-post"]["blocking"] and ops["lg-block"]["highwater"] == 16
    assert ops["wake"]["target"] == "nap" and ops["enough"]["target"] == "peek"
    assert ops["lg-aiowait"]["highwater"] == 1  # FileBench's default


# --- variables and --set ---


def test_overrides_replace_the_files_values() -> None:
    p = parse_file(builtin_path("fileserver"), {"nthreads": "32", "filesize": "16k"}, dir=TARGET)
    assert p.threads[0]["instances"] == 32
    assert p.filesets[0]["size"] == {"fixed": 16384}
    assert p.variables["nthreads"] == "32" and p.variables["filesize"] == "16k"
    assert p.variables["dir"] == str(TARGET)
    gamma = "cvar(type=cvar-gamma,parameters=mean:8192;gamma:2)"
    p = parse_file(builtin_path("fileserver"), {"$meanappendsize": gamma}, dir=TARGET)
    op = p.threads[0]["flowops"][4]
    assert op["iosize_dist"] == {"gamma": {"mean": 8192.0, "shape": 2.0, "min": 0}}
    assert op["iosize"] == 32768


def test_unknown_override_lists_the_files_variables() -> None:
    with pytest.raises(WmlError) as info:
        parse_file(builtin_path("varmail"), {"nthread": "4"}, dir=TARGET)
    assert info.value.message == "varmail.f: --set nthread: the file never uses `$nthread`"
    assert info.value.hint is not None and "nthreads" in info.value.hint
    assert info.value.exit_code == EXIT_USAGE and isinstance(info.value, ConfigError)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"nthreads": "4 5"}, "t.f: --set nthreads=4 5: unexpected `5`"),
        ({"nthreads": ""}, "t.f: --set nthreads=: expected a value"),
        ({"nthreads": "many"}, "t.f:6: `instances` needs a whole number, not `many`"),
        ({"dir": "/x"}, "t.f: --set dir: `$dir` is the directory iowatt runs in"),
        ({"n-threads": "4"}, "t.f: --set `n-threads` is not a variable name"),
        ({"nthreads": "$nosuch"}, "t.f: --set nthreads=$nosuch: undefined variable `$nosuch`"),
        (
            {"nthreads": "cvar(type=cvar-gamma,parameters=mu:2)"},
            "t.f: --set nthreads=cvar(type=cvar-gamma,parameters=mu:2): unknown cvar-gamma",
        ),
    ],
)
def test_bad_overrides(overrides: dict[str, str], message: str) -> None:
    text = "set $nthreads=2\n" + one_thread("hog name=h,value=1").replace(
        "name=t", "name=t,instances=$nthreads"
    )
    assert wml_error(text, overrides).message.startswith(message)


def test_variables_bind_late_and_substitute_in_echo() -> None:
    p = parse(
        'set $n=1\necho "n is $n, \\$n stays"\n'
        + one_thread("read name=r,filename=f,iosize=$io", head=HEAD + "set $n=3\nset $io=8k\n")
    )
    assert p.messages == ["n is 3, $n stays"]  # the value `run` sees
    assert p.threads[0]["flowops"][0]["iosize"] == 8192


# --- errors, each at its line ---


@pytest.mark.parametrize(
    ("text", "message", "hint"),
    [
        (one_thread("read name=r,filename=f,iosize=$nosuch"),
         "t.f:7: variable used but never set: `$nosuch` (line 7)", "--set nosuch=..."),
        (one_thread("read name=r,filename=f,", "  iosz=8k"),
         "t.f:8: unknown flowop attribute `iosz`",
         "flowop attributes are name, filename, fd, srcfd, iosize,"),
        (one_thread("raed name=r,filename=f"), "t.f:7: unknown flowop `raed`", "flowops are read,"),
        (one_thread("read name=r,filename=nosuch"), "t.f:7: unknown file or fileset `nosuch`",
         "defined: f"),
        (one_thread("read filename=f"), "t.f:7: the `read` flowop has no name", None),
        (one_thread("read name=r,filename=f,rotatefd"),
         "t.f:7: unknown flowop attribute `rotatefd`", "FileBench spells it `opennext`"),
        (one_thread("sempost name=s,target=nosuch,value=1"),
         "t.f:7: target `nosuch` is not the name of a flowop", None),
        (one_thread("sempost name=s,value=1", "hog name=h,value=1"),
         "t.f:7: `sempost` needs target=<a semblock flowop>", None),
        (one_thread("sempost name=s,value=1,target=h", "hog name=h,value=1"),
         "t.f:7: the target of `sempost` must be a `semblock` flowop", None),
        (one_thread("read name=r,filename=f,fd=200"),
         "t.f:7: `fd` must be between 0 and 128", None),
        ("set $a=1\nset $b=\n", "t.f:2: expected a value after `set $...=`, found the end", None),
        ("set $a=1\ndefine filesett name=s\n",
         "t.f:2: expected file, fileset, process or randvar after `define`", None),
        ("define fileset name=s\n  path=$dir,entries=1,dirwidth=2\n", "t.f:2: unexpected `path=`",
         "is a comma missing before it?"),
        ("set $a 1\n", "t.f:1: expected `=` after `set $a`, found `1`", None),
        ('echo "open\n\n', "t.f:1: unterminated quoted string", None),
        ("set $a=1 @\n", "t.f:1: illegal character `@`", None),
        ("set $a=1\n/* never closed\n", "t.f:2: unterminated `/*` comment", None),
        ("enable multi master=a,client=b\n",
         "t.f:1: `enable multi` (FileBench's multi-client runs) is not supported", "--cluster"),
        ("domultisync value=1\n",
         "t.f:1: `domultisync` (FileBench's multi-client runs) is not supported", "--cluster"),
        ("frobnicate all\n", "t.f:1: unknown statement `frobnicate`", UNSUPPORTED),
        ("set $a=1\nflowop hog name=h\n", "t.f:2: `flowop` outside a thread's { }", None),
        ("set $a=1\ndefine flowop name=c\n{\n}\n",
         "t.f:4: expected `flowop` in the composite flowop, found `}`", None),
        ("define fileset name=s,\n  path=$dir/../x,entries=1,dirwidth=2\n",
         "t.f:1: path `/srv/iowatt-target/../x` leads out of the work directory", "path=$dir"),
        ('define fileset name=s,\n  path="$dir/../x",entries=1,dirwidth=2\n',
         "t.f:1: path `/srv/iowatt-target/../x` leads out of the work directory", None),
        ("define fileset name=s,path=$dir,entries=1,dirwidth=2,\n  iosize=1k\n",
         "t.f:2: unknown fileset attribute `iosize`", "fileset attributes are name, path,"),
        ("define fileset name=s,path=$dir,dirwidth=20\n",
         "t.f:1: fileset `s` has no entries and no leafdirs", None),
        ("define fileset name=s,path=$dir,entries=1,dirwidth=2,\n  dirgamma=1.5\n",
         "t.f:2: `dirgamma` needs a whole number, not `1.5`", "dirgamma is in thousandths"),
        ("define fileset name=s,path=$dir,entries=1,dirwidth=2,prealloc=120\n",
         "t.f:1: `prealloc` must be between 0 and 100, not 120", None),
        ("define file name=s,path=$dir\ndefine file name=s,path=$dir\n",
         "t.f:2: a second file or fileset named `s`", None),
        ("set $s=cvar(type=cvar-gamma,parameters=mean:1024;shape:2)\n",
         "t.f:1: unknown cvar-gamma parameter `shape`", "cvar-gamma takes mean and gamma"),
        ("set $s=cvar(type=cvar-gamma,parameters=mean:1k)\n",
         "t.f:1: cvar-gamma parameter `mean` needs a number, not `1k`", "plain numbers"),
        ("set $s=cvar(type=cvar-zipf)\n", "t.f:1: unknown cvar type `cvar-zipf`", None),
        ("define randvar name=$r,type=tabular,randtable={{50,1,2},{40,3,4}}\n",
         "t.f:1: randtable percentages must add up to 100, not 90", None),
        ("run 5\nrun 6\n", "t.f:2: a second `run` (the processes start at line 1)", None),
        ("run\nset $late=1\n", "t.f:2: `set` after the run (line 1) never takes effect", None),
    ],
)  # fmt: skip
def test_errors_name_the_line(text: str, message: str, hint: str | None) -> None:
    e = wml_error(text)
    assert e.message.startswith(message), e.message
    if hint is not None:
        assert e.hint is not None and hint in e.hint, e.hint


def test_random_sizes_are_rounded_clamped_and_drawn_from_every_cvar_type() -> None:
    clamp = HEAD + "set $io=cvar(type=cvar-gamma,parameters=mean:8192,max=64k,round=512)\n"
    op = parse(one_thread("read name=r,filename=f,iosize=$io", head=clamp)).threads[0]["flowops"][0]
    gamma = {"gamma": {"mean": 8192.0, "shape": 1.5, "min": 0}}
    assert op["iosize_dist"] == {"bounded": {"of": gamma, "round": 512, "min": 0, "max": 65536}}
    assert op["iosize"] == 4 * 8192 + 512  # buffers: 4 means of a gamma, rounded up
    head = HEAD + "set $io=8k\n"
    rounded = {"io": "randvar(type=uniform,min=1k,mean=2k,round=512)"}
    p = parse(one_thread("read name=r,filename=f,iosize=$io", head=head), rounded)
    uniform = {"uniform": {"min": 1024, "max": 3072}}
    assert p.threads[0]["flowops"][0]["iosize_dist"] == {
        "bounded": {"of": uniform, "round": 512, "min": 0, "max": MAX_SIZE}
    }
    assert p.warnings == []


# --- what the file says besides its entities ---


@pytest.mark.parametrize(
    ("tail", "runtime"),
    [("", None), ("run", 60.0), ("run 30", 30.0), ("set $t=45\nrun $t", 45.0), ("psrun", 60.0),
     ("psrun 10", 60.0), ("psrun -10 30", 30.0), ("psrun 5 20", 20.0)],
)  # fmt: skip
def test_runtime(tail: str, runtime: float | None) -> None:
    text = one_thread("hog name=h,value=1").replace("run 5\n", tail + "\n")
    assert parse(text).runtime_s == runtime


def test_modes_eventgen_comments_and_ignored_commands() -> None:
    text = (
        "/* a comment\n   over lines */ set mode quit alldone\nset mode nousestats\n"
        "debug 1\nversion\nenable lathist\ncreate files\neventgen rate=0\n"
        + one_thread("hog name=h,value=1 # trailing comment")
    )
    p = parse(text)
    assert (p.quit, p.eventgen_rate, p.messages) == ("alldone", None, [])
    assert p.threads[0]["flowops"][0]["value"] == 1


@pytest.mark.parametrize(
    ("cvar", "mean"),
    [
        ("cvar-exponential,parameters=mean:8192", 8192),
        ("cvar-erlang,parameters=shape:3;rate:8192", 8192),  # rate is the mean (rds_erlang)
        ("cvar-lognormal,parameters=shape:0.5;scale:9", math.exp(9 + 0.5**2 / 2)),
        ("cvar-normal,parameters=mean:8192;sigma:1024", 8192),
        ("cvar-triangular,parameters=lower:1024;upper:8192;mode:2048", (1024 + 8192 + 2048) / 3),
        ("cvar-weibull,parameters=shape:2;scale:8192", 8192 * math.gamma(1.5)),
    ],
)
def test_the_other_cvar_types_are_tables_of_their_quantiles(cvar: str, mean: float) -> None:
    """Each is 256 equally likely pieces between quantiles; the pieces keep the mean within
    1 % (the cut tails, 1e-4 each side, are what it loses)."""
    p = parse(one_thread("read name=r,filename=f,iosize=$io",
                         head=HEAD + f"set $io=cvar(type={cvar})\n"))  # fmt: skip
    rows = p.threads[0]["flowops"][0]["iosize_dist"]["tabular"]
    assert len(rows) == 256 and all(lo <= hi for _, lo, hi in rows)
    assert [lo for _, lo, _ in rows[1:]] == [hi for _, _, hi in rows[:-1]]  # contiguous
    assert mean_of({"tabular": rows}) == pytest.approx(mean, rel=0.01)


def test_randvars_follow_filebench() -> None:
    head = (
        HEAD
        + "define randvar name=$g,type=gamma,mean=8k\n"  # gamma shape defaults to 1.5
        + "set $u=randvar(type=uniform,min=1k,mean=2k)\n"  # uniform in [min, 2 mean - min]
        + "set $tab=randvar(type=tabular,randtable={{50,1k,1k},{50,3k,3k}})\n"  # min 0: rescaled
        + "set $r=randvar(type=tabular,min=1k,round=1k,randtable={{100,1k,3k}})\n"
    )
    p = parse(
        one_thread(
            *(f"read name={v},filename=f,iosize=${v}" for v in ("g", "u", "tab", "r")), head=head
        )
    )
    dists = [op["iosize_dist"] for op in p.threads[0]["flowops"]]
    assert dists[0] == {"gamma": {"mean": 8192.0, "shape": 1.5, "min": 0}}
    assert dists[1] == {"uniform": {"min": 1024, "max": 3072}}
    # The table's lowest value maps to min (0) and its mean (2k) stays the mean.
    assert dists[2] == {"tabular": [[50.0, 0, 0], [50.0, 4096, 4096]]}
    rows = {"tabular": [[100.0, 1024, 3072]]}
    assert dists[3] == {"bounded": {"of": rows, "round": 1024, "min": 0, "max": MAX_SIZE}}
    assert p.warnings == []
    assert p.variables["g"] == "randvar(type=gamma,mean=8k)"


def test_paths_inside_the_target() -> None:
    p = parse('define fileset name=s,path="$dir/sub",entries=4,dirwidth=2,size=1k,prealloc\n')
    assert p.filesets[0]["path"] == str(TARGET / "sub") and p.bytes_needed() == 4096
    rel = parse_text("define file name=s,path=.\n", "t.f", dir=Path("."))
    assert rel.filesets[0]["path"] == str(Path.cwd())


def test_parse_file_reports_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(WmlError, match="cannot read the workload file"):
        parse_file(tmp_path / "missing.f", dir=tmp_path)
