"""Hostile input to ``iowatt import``: mutated real fio output and FileBench text, and files
that are not files. Whatever it is given, an import ends one of two ways a user can rely on:
a run with sane numbers that ``iowatt runs`` lists (exit 0), or one ``error:`` line naming
the offending value, a ``hint:`` (exit 2), and the results directory as it was."""

from __future__ import annotations

import copy
import itertools
import json
import math
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from iowatt.imports import model
from iowatt.imports.model import MAX_INPUT_BYTES
from support.cli import Result, assert_user_error, iowatt, manifest
from support.tool_output import FILEBENCH_15, FILEBENCH_149, run_fio

INT64_MAX = 2**63 - 1
# capsys is function-scoped, and reused by every example on purpose: iowatt() drains it.
FUZZ = settings(suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def fio_docs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Real fio output, run once: json+ of a read/write job with both latencies' percentiles
    and bins, and plain json of two jobs (read, then write)."""
    where = tmp_path_factory.mktemp("fio")
    quick = ("--number_ios=200",)
    plus = run_fio(where, "json+", "randrw", extra=(*quick, "--lat_percentiles=1"), size="1m")
    plain = run_fio(where, "json", "randread", "write", extra=quick, size="1m")
    return {"json+": json.loads(plus.read_text()), "json": json.loads(plain.read_text())}


@pytest.fixture(scope="module")
def results_dirs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The results directory of each example: the same one for 100 examples (most then find
    runs and a catalog there, as a user's would), then a new one, so a long
    HYPOTHESIS_PROFILE=fuzz search does not slow down as runs pile up."""
    root = tmp_path_factory.mktemp("fuzz")
    return (root / f"results-{n // 100}" for n in itertools.count())


# --- what every import must end in ------------------------------------------------------------

_tags = itertools.count()


def _listing(results: Path) -> dict[str, tuple[int, int]]:
    """What the results directory holds, by size and mtime (empty when it does not exist).

    The top level is enough: committed runs are never rewritten, and anything new (a run, a
    `.tmp-*` directory, a catalog write) shows there."""
    if not results.exists():
        return {}
    return {e.name: (e.stat().st_size, e.stat().st_mtime_ns) for e in os.scandir(results)}


def assert_run_or_user_error(
    capsys: pytest.CaptureFixture[str], results: Path, file: Path, *args: str
) -> Result:
    before = _listing(results)
    tag = str(next(_tags))
    r = iowatt(capsys, "import", file, *args, "--label", f"fuzz={tag}", "--json",
               "--results", results)  # fmt: skip
    event(f"exit {r.code}")  # --hypothesis-show-statistics: how many were runs, how many refused
    if r.code == 0:
        _assert_sane_run(capsys, results, Path(json.loads(r.out)["path"]), tag)
    else:
        assert_user_error(r)
        assert _listing(results) == before, "a refused file changed the results directory"
    assert not list(results.glob(".tmp-*")), "a temporary run directory was left behind"
    return r


def _assert_sane_run(
    capsys: pytest.CaptureFixture[str], results: Path, run_dir: Path, tag: str
) -> None:
    m = manifest(run_dir)
    assert (m["kind"], m["status"]) == ("import", "complete")
    assert 0 <= m["started_ns"] <= m["ended_ns"] <= INT64_MAX
    summary = json.loads((run_dir / "summary.json").read_text(), parse_constant=_not_json)
    configs = [w["name"] for w in m["config"]["workloads"]]
    assert summary["workloads"] and sorted(configs) == sorted(summary["workloads"]), "one lost"
    for w in summary["workloads"].values():
        _assert_sane_numbers(w)
    listed = iowatt(capsys, "runs", "--label", f"fuzz={tag}", "--results", results, "--json")
    assert [json.loads(line)["run_id"] for line in listed.out.splitlines()] == [run_dir.name]


def _not_json(constant: str) -> None:
    raise AssertionError(f"summary.json has {constant}, which is not JSON")


def _assert_sane_numbers(value: Any) -> None:
    """Every figure of a workload summary is a count, a finite rate or null."""
    for number in _numbers(value):
        if isinstance(number, int):
            assert 0 <= number <= INT64_MAX, number
        else:
            assert math.isfinite(number) and number >= 0, number


def _numbers(value: Any) -> Iterator[int | float]:
    if isinstance(value, dict):
        for member in value.values():
            yield from _numbers(member)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        yield value


# --- mutating real fio output -----------------------------------------------------------------


@dataclass(frozen=True)
class Raw:
    """Text put into the JSON as it is: numbers Python would never write (``1e999``)."""

    token: str


JsonPath = tuple[str | int, ...]

_HOSTILE: st.SearchStrategy[Any] = st.one_of(
    st.none(),
    st.booleans(),
    st.sampled_from([0, -1, 2**31, 2**53 + 1, INT64_MAX, 2**63, 2**64, -(2**63) - 1, 10**30]),
    st.integers(),
    st.floats(),
    st.sampled_from([math.nan, math.inf, -math.inf, 1e308, 2.0**63, 0.5]),
    st.text(max_size=6),
    st.sampled_from(["", "99", "4k", "1e999", "\ud800", "a\nb", "9" * 30]),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.sampled_from(
        [
            Raw("1e999"),
            Raw("-1E400"),
            Raw("NaN"),
            Raw("-Infinity"),
            Raw("9" * 5000),
            Raw("[" * 3000 + "]" * 3000),
            Raw("-0"),
            Raw("1e-400"),
        ]
    ),
)
_KEYS = st.sampled_from(["", "-1", "abc", "1e3", "99.5", "101", "9" * 25, "a\nb", "\ud800"])


def _paths(doc: Any, prefix: JsonPath = ()) -> Iterator[JsonPath]:
    """Every value's path; of long objects (bins, percentiles) only the first few, so the
    mutations spread over the document instead of landing mostly in buckets."""
    yield prefix
    if isinstance(doc, dict):
        for key in list(doc)[:4] if len(doc) > 12 else doc:
            yield from _paths(doc[key], (*prefix, key))
    elif isinstance(doc, list):
        for i, member in enumerate(doc):
            yield from _paths(member, (*prefix, i))


def _parent(doc: Any, path: JsonPath) -> Any | None:
    """The container of ``path`` in ``doc``, None when an earlier mutation removed it."""
    for key in path[:-1]:
        try:
            doc = doc[key]
        except (KeyError, IndexError, TypeError):
            return None
    return doc


@st.composite
def mutated_fio(draw: st.DrawFn, docs: dict[str, dict[str, Any]]) -> str:
    doc = copy.deepcopy(docs[draw(st.sampled_from(sorted(docs)))])
    paths = [p for p in _paths(doc) if p]
    for _ in range(draw(st.integers(1, 3))):
        _mutate(draw, doc, draw(st.sampled_from(paths)))
    text = _dumps(doc)
    if draw(st.integers(0, 9)) == 0:  # cut short, as by a full disk or a killed fio
        text = text[: draw(st.integers(0, len(text)))]
    return text


def _mutate(draw: st.DrawFn, doc: dict[str, Any], path: JsonPath) -> None:
    parent, key = _parent(doc, path), path[-1]
    if not _holds(parent, key):
        return
    action = draw(st.sampled_from(["replace", "replace", "replace", "delete", "rename", "copy"]))
    if action == "replace":
        parent[key] = draw(_HOSTILE)
    elif action == "delete":
        del parent[key]
    elif action == "rename" and isinstance(parent, dict):
        parent[draw(_KEYS)] = parent.pop(key)
    elif action == "copy" and isinstance(parent, list):  # a duplicated job, or list member
        parent.append(copy.deepcopy(parent[key]))


def _holds(parent: Any, key: str | int) -> bool:
    """Whether ``parent[key]`` is there: an earlier mutation may have replaced or removed what
    the path leads through."""
    if isinstance(parent, dict):
        return key in parent
    return isinstance(parent, list) and isinstance(key, int) and key < len(parent)


def _dumps(doc: Any) -> str:
    raws: list[str] = []

    def encode(value: Any) -> Any:
        if isinstance(value, Raw):
            raws.append(value.token)
            return f"@raw{len(raws) - 1}@"
        if isinstance(value, dict):
            return {k: encode(v) for k, v in value.items()}
        if isinstance(value, list):
            return [encode(v) for v in value]
        return value

    text = json.dumps(encode(doc), indent=1)
    for i, token in enumerate(raws):
        text = text.replace(f'"@raw{i}@"', token)
    return text


@pytest.mark.fuzz
@FUZZ
@given(data=st.data())
def test_mutated_fio_output_imports_as_a_sane_run_or_is_refused_in_one_line(
    data, fio_docs, results_dirs, tmp_path_factory, capsys
):
    text = data.draw(mutated_fio(fio_docs))
    file = tmp_path_factory.getbasetemp() / "mutated.json"
    file.write_text(text)
    assert_run_or_user_error(capsys, next(results_dirs), file)


# --- mutating FileBench text ------------------------------------------------------------------

_NUMBER = r"\d+(?:\.\d+)?"
_HOSTILE_FIGURES = st.one_of(
    st.sampled_from(["0", "0.000", "9223372036854775807", "9223372036854775808", "1" * 30,
                     "18446744073709551616", "99999999999999999999.999", "9" * 400]),
    st.integers(0, 2**70).map(str),
    st.from_regex(r"\A[0-9]{1,25}(\.[0-9]{1,5})?\Z"),
)  # fmt: skip


@st.composite
def mutated_filebench(draw: st.DrawFn) -> str:
    lines = draw(st.sampled_from([FILEBENCH_15, FILEBENCH_149])).splitlines()
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(lines) - 1))
        action = draw(st.sampled_from(["figure", "figure", "figure", "delete", "copy", "text"]))
        if action == "figure":
            lines[i] = _replace_figure(draw, lines[i])
        elif action == "delete":
            del lines[i]
        elif action == "copy":
            lines.insert(i, lines[i])
        else:
            lines[i] = draw(st.text(max_size=40))
        if not lines:
            break
    return "\n".join(lines) + "\n"


def _replace_figure(draw: st.DrawFn, line: str) -> str:
    figures = list(re.finditer(_NUMBER, line))
    if not figures:
        return line
    m = draw(st.sampled_from(figures))
    return line[: m.start()] + draw(_HOSTILE_FIGURES) + line[m.end() :]


@pytest.mark.fuzz
@FUZZ
@given(text=mutated_filebench(), fmt=st.sampled_from(["auto", "filebench"]))
def test_mutated_filebench_output_imports_as_a_sane_run_or_is_refused_in_one_line(
    text, fmt, results_dirs, tmp_path_factory, capsys
):
    file = tmp_path_factory.getbasetemp() / "mutated-filebench.txt"
    file.write_text(text)
    assert_run_or_user_error(capsys, next(results_dirs), file, "--format", fmt)


# --- one test per way the importers used to crash, and files that are not files --------------


def _with(doc: dict[str, Any], path: JsonPath, value: Any) -> str:
    """``doc`` with the value at ``path`` set (added if absent), as fio-like JSON text."""
    doc = copy.deepcopy(doc)
    parent = _parent(doc, path)
    parent[path[-1]] = value
    return _dumps(doc)


def _import_text(capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str) -> Result:
    file = tmp_path / "fio.json"
    file.write_text(text)
    return iowatt(capsys, "import", file, "--results", tmp_path / "results")


def _refused(r: Result, tmp_path: Path, *fragments: str) -> None:
    """Refused in one line naming the value, and nothing written: no run, no catalog."""
    assert_user_error(r, *fragments)
    assert not (tmp_path / "results").exists()


def test_an_infinite_latency_is_refused_with_its_json_path(fio_docs, tmp_path, capsys):
    text = _with(fio_docs["json+"], ("jobs", 0, "read", "clat_ns", "min"), Raw("1e999"))
    r = _import_text(capsys, tmp_path, text)
    _refused(r, tmp_path, "`jobs[0].read.clat_ns.min` is Infinity, not a whole number")


@pytest.mark.parametrize("key", ["percentile", "bins"])
def test_percentiles_or_bins_given_as_a_list_are_refused_with_their_path(
    fio_docs, tmp_path, capsys, key
):
    text = _with(fio_docs["json+"], ("jobs", 0, "write", "clat_ns", key), [1, 2])
    r = _import_text(capsys, tmp_path, text)
    _refused(r, tmp_path, f"`jobs[0].write.clat_ns.{key}` is a list, not an object")


@pytest.mark.parametrize("groupid", [[0], {"id": 0}, "0", -1, 0.5])
def test_a_group_id_that_is_not_a_count_is_refused_with_its_path(
    fio_docs, tmp_path, capsys, groupid
):
    r = _import_text(capsys, tmp_path, _with(fio_docs["json"], ("jobs", 1, "groupid"), groupid))
    _refused(r, tmp_path, "`jobs[1].groupid` is ", "not a whole number from 0 to 2^63 − 1")


def test_a_latency_bucket_of_2_63_ns_or_more_is_refused_with_its_path(fio_docs, tmp_path, capsys):
    doc = copy.deepcopy(fio_docs["json+"])
    bins = doc["jobs"][0]["read"]["clat_ns"]["bins"]
    bins[str(2**63)] = bins.pop(next(iter(bins)))
    r = _import_text(capsys, tmp_path, _dumps(doc))
    _refused(r, tmp_path, f'`jobs[0].read.clat_ns.bins["{2**63}"]` is not under a latency')


@pytest.mark.parametrize(
    ("path", "value", "named"),
    [
        (("jobs", 0, "read", "total_ios"), 2**63,
         "`jobs[0].read.total_ios` is 9223372036854775808, not a whole number"),
        (("jobs", 0, "job options", "iodepth"), "4294967296",
         '`jobs[0]["job options"].iodepth` is "4294967296", not a number from 0 to 2^31 − 1'),
        (("jobs", 0, "job options", "bs"), "99999999999999999999k",
         '`jobs[0]["job options"].bs` is "99999999999999999999k", not a block size'),
        (("timestamp_ms",), 10**13, "`timestamp_ms` is 10000000000000, not a time before 2262"),
        (("jobs", 0, "read", "clat_ns", "max"), -1, "`jobs[0].read.clat_ns.max` is -1"),
    ],
)  # fmt: skip
def test_a_value_the_catalog_cannot_hold_is_refused_before_any_run_is_written(
    fio_docs, tmp_path, capsys, path, value, named
):
    r = _import_text(capsys, tmp_path, _with(fio_docs["json+"], path, value))
    _refused(r, tmp_path, named)


def test_counts_that_add_up_past_64_bits_are_refused(fio_docs, tmp_path, capsys):
    doc = copy.deepcopy(fio_docs["json+"])
    for direction in ("read", "write"):
        doc["jobs"][0][direction]["total_ios"] = 2**62 + 1
    r = _import_text(capsys, tmp_path, _dumps(doc))
    _refused(r, tmp_path, "`jobs[0]` has `total_ios` adding up to more than 2^63 − 1")


def test_nan_iops_is_refused_not_imported_as_a_complete_run(fio_docs, tmp_path, capsys):
    r = _import_text(
        capsys, tmp_path, _with(fio_docs["json"], ("jobs", 0, "read", "iops"), Raw("NaN"))
    )
    _refused(r, tmp_path, "`jobs[0].read.iops` is NaN, not a finite number")


def test_a_job_name_that_is_not_unicode_text_is_refused(fio_docs, tmp_path, capsys):
    r = _import_text(capsys, tmp_path, _with(fio_docs["json"], ("jobs", 0, "jobname"), "\ud800"))
    _refused(r, tmp_path, '`jobs[0].jobname` is "\\ud800", not Unicode text')


@pytest.mark.parametrize(
    ("raw", "named"),
    [("[" * 40 + "]" * 40, "is nested more than 32 levels deep"),
     ("[" * 5000 + "]" * 5000, "is not fio JSON output: it nests too deep"),
     ("9" * 5000, "is not fio JSON output: it has a number of thousands of digits")],
)  # fmt: skip
def test_json_no_fio_writes_is_refused_in_one_line(fio_docs, tmp_path, capsys, raw, named):
    r = _import_text(capsys, tmp_path, _with(fio_docs["json"], ("jobs", 0, "eta"), Raw(raw)))
    _refused(r, tmp_path, named)


def test_jobs_that_would_share_a_workload_name_are_refused(fio_docs, tmp_path, capsys):
    doc = copy.deepcopy(fio_docs["json"])
    job = doc["jobs"][0]
    doc["jobs"] = [job, job, {**job, "jobname": f"{job['jobname']}.0"}]
    r = _import_text(capsys, tmp_path, _dumps(doc))
    _refused(r, tmp_path, f"`jobs[2]` and `jobs[0]` would both be workload `{job['jobname']}.0`")


def test_more_jobs_than_fio_runs_are_refused_from_their_count(tmp_path, capsys):
    r = _import_text(capsys, tmp_path, json.dumps({"jobs": [{}] * 65537}))
    _refused(r, tmp_path, "`jobs` has 65537 jobs, more than fio runs")


def test_more_flowops_than_filebench_has_are_refused_with_their_line(tmp_path, capsys):
    flowops = "".join(f"f{i} 1ops 1ops/s 1.0mb/s 1.000ms/op\n" for i in range(4097))
    file = tmp_path / "run.txt"
    file.write_text(flowops + FILEBENCH_15)
    r = iowatt(capsys, "import", file, "--results", tmp_path / "results")
    _refused(r, tmp_path, f"`{file}` line 4097: more than 4096 flowops in one run")


def test_a_name_with_a_newline_is_shown_escaped_on_the_one_error_line(fio_docs, tmp_path, capsys):
    text = json.dumps({"jobs": [{"jobname": "evil\nerror: forged", "groupid": 0}]})
    r = _import_text(capsys, tmp_path, text)
    _refused(r, tmp_path, "job `evil\\u000aerror: forged` in ")


def test_filebench_figures_beyond_64_bits_are_refused_with_their_line(tmp_path, capsys):
    file = tmp_path / "run.txt"
    file.write_text(FILEBENCH_15.replace("1171302ops", f"{2**64}ops"))
    r = iowatt(capsys, "import", file, "--results", tmp_path / "results")
    _refused(r, tmp_path, f"`{file}` line 11: ops {2**64} is more than 2^63 − 1")


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path, capsys):
    fifo = tmp_path / "fio.json"
    os.mkfifo(fifo)
    r = iowatt(capsys, "import", fifo, "--results", tmp_path / "results")
    _refused(r, tmp_path, f"`{fifo}` is a FIFO, not a regular file")


def test_a_symlink_to_dev_urandom_is_refused_without_reading_it(tmp_path, capsys):
    link = tmp_path / "fio.json"
    link.symlink_to("/dev/urandom")
    r = iowatt(capsys, "import", link, "--results", tmp_path / "results")
    _refused(r, tmp_path, f"`{link}` (a symlink to `/dev/urandom`) is a character device")


def test_a_symlink_to_a_directory_is_refused(tmp_path, capsys):
    link = tmp_path / "fio.json"
    link.symlink_to(tmp_path)
    r = iowatt(capsys, "import", link, "--results", tmp_path / "results")
    _refused(r, tmp_path, f"`{link}` (a symlink to `{tmp_path}`) is a directory")


def test_a_file_over_the_size_bound_is_refused(tmp_path, capsys):
    big = tmp_path / "fio.json"
    with open(big, "wb") as f:  # sparse: no 256 MiB written
        f.truncate(MAX_INPUT_BYTES + 1)
    r = iowatt(capsys, "import", big, "--results", tmp_path / "results")
    _refused(r, tmp_path, f"`{big}` is larger than 256 MiB")


def test_a_file_that_reports_no_size_is_read_only_up_to_the_bound(tmp_path, capsys, monkeypatch):
    """/proc files say they are empty: the bound holds on what is read, not on st_size."""
    status = Path("/proc/self/status")
    assert status.stat().st_size == 0 and len(status.read_bytes()) > 100
    monkeypatch.setattr(model, "MAX_INPUT_BYTES", 100)
    r = iowatt(capsys, "import", status, "--results", tmp_path / "results")
    _refused(r, tmp_path, f"`{status}` is larger than 100 bytes")
