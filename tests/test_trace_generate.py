"""``iowatt trace generate``: synthetic access logs, read back line by line.

Tolerances come from the sampling noise of the model, not from taste: a count with expectation
E drawn from a Poisson process (or a multinomial share of a fixed total) has a standard
deviation of at most √E, so a ratio of counts C₁/C₂ has a log standard deviation of about
√(1/C₁ + 1/C₂); a share p of N requests has a standard deviation of √(p(1−p)/N). Every check
allows Z = 4 standard deviations (a false alarm about once in 16,000 checks; the logs are seeded,
so a pass stays a pass).
"""

from __future__ import annotations

import datetime as dt
import gzip
import json
import math
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

from iowatt.errors import ConfigError
from iowatt.trace import generate as gen
from iowatt.trace.log import read_log
from iowatt.trace.synth import profile
from support.cli import Result, assert_user_error, iowatt

Z = 4.0
MONTHS = "Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec"
_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
_HOST = rf"(?P<host>{_OCTET}(?:\.{_OCTET}){{3}}|[0-9a-f]{{1,4}}(?::[0-9a-f]{{0,4}}){{2,7}})"
_TIME = (
    rf"\[(?P<day>[0-3]\d)/(?P<mon>{MONTHS})/(?P<year>\d{{4}}):(?P<h>[0-2]\d):(?P<m>[0-5]\d):"
    r"(?P<s>[0-5]\d) (?P<zone>[+-]\d{4})\]"
)
_REQ = r'"(?P<method>GET|HEAD) (?P<path>/[!#-\[\]-~]*) (?P<proto>HTTP/(?:1\.0|1\.1|2\.0))"'
_TAIL = r' "(?P<referer>-|https?://[!#-\[\]-~]+)" "(?P<agent>[ -!#-\[\]-~]+)"'
# Strict: every field as Apache writes it, nothing else on the line.
LINE = {
    "common": re.compile(
        rf"{_HOST} - - {_TIME} {_REQ} (?P<status>200|304|404) (?P<size>-|[1-9]\d*)"
    ),
    "combined": re.compile(
        rf"{_HOST} - - {_TIME} {_REQ} (?P<status>200|304|404) (?P<size>-|[1-9]\d*){_TAIL}"
    ),
    "vhost_combined": re.compile(
        rf"(?P<vhost>[a-z0-9.-]+):443 {_HOST} - - {_TIME} {_REQ} (?P<status>200|304|404) "
        rf"(?P<size>[1-9]\d*){_TAIL}"
    ),
}  # fmt: skip


@dataclass
class Log:
    lines: list[re.Match[str]]
    sidecar: dict[str, object]

    def column(self, name: str) -> list[str]:
        return [m[name] for m in self.lines]


def read(path: Path, fmt: str = "combined") -> Log:
    """Every line of ``path``, each matched in full by the strict pattern of ``fmt``."""
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", encoding="ascii", newline="") as f:
        text = f.read()
    assert text == "" or text.endswith("\n")
    matches = []
    for n, line in enumerate(text.splitlines(), 1):
        m = LINE[fmt].fullmatch(line)
        assert m, f"line {n} is not {fmt}: {line!r}"
        matches.append(m)
    return Log(matches, json.loads(gen.sidecar_path(path).read_text()))


def run(tmp_path: Path, name: str = "access.log", **options: object) -> tuple[Path, dict]:
    out = tmp_path / name
    config = gen.GenerateConfig.parse(**options)  # type: ignore[arg-type]
    return out, gen.generate(config, out)


def seconds(m: re.Match[str]) -> int:
    """Seconds since the log's first midnight (logs here start on 2 March 2026)."""
    day = int(m["day"]) - 2 + (28 if m["mon"] == "Feb" else 0)
    return day * 86400 + int(m["h"]) * 3600 + int(m["m"]) * 60 + int(m["s"])


# --- determinism and layout -----------------------------------------------------------------


def test_same_seed_same_bytes_other_seed_other_bytes(tmp_path: Path) -> None:
    a, _ = run(tmp_path, "a.log", duration="1h", rate=5)
    b, _ = run(tmp_path, "b.log", duration="1h", rate=5)
    c, _ = run(tmp_path, "c.log", duration="1h", rate=5, seed=2)
    assert a.read_bytes() == b.read_bytes()
    assert a.read_bytes() != c.read_bytes()
    # The sidecar is reproducible too (it names the output, not the run's time).
    side_a = json.loads(gen.sidecar_path(a).read_text())
    side_b = json.loads(gen.sidecar_path(b).read_text())
    assert {**side_a, "output": "", "command": ""} == {**side_b, "output": "", "command": ""}


def test_gzip_holds_the_same_log_and_is_reproducible(tmp_path: Path) -> None:
    plain, _ = run(tmp_path, "a.log", duration="30m", rate=5)
    gz1, _ = run(tmp_path, "a.log.gz", duration="30m", rate=5)
    first = gz1.read_bytes()
    gz2, _ = run(tmp_path, "a.log.gz", duration="30m", rate=5)
    assert gz2.read_bytes() == first  # no time or name in the gzip header
    assert gzip.decompress(first) == plain.read_bytes()


@pytest.mark.parametrize("fmt", ["common", "combined", "vhost_combined"])
def test_every_line_is_valid_and_in_time_order(tmp_path: Path, fmt: str) -> None:
    out, s = run(tmp_path, duration="2h", rate=3, fmt=fmt, tz="+0100", start="2026-03-07T23:00")
    log = read(out, fmt)
    assert len(log.lines) == s["lines"] > 10_000
    assert set(log.column("zone")) == {"+0100"}
    t = [seconds(m) for m in log.lines]
    assert t == sorted(t)
    assert t[0] >= 5 * 86400 + 23 * 3600 and t[-1] < 6 * 86400 + 3600  # across midnight
    # Many requests share a second, as in any busy log with 1-second resolution.
    assert max(Counter(t).values()) > 1
    hosts = log.column("host")
    v6 = sum(":" in h for h in hosts)
    assert 0 < v6 < len(hosts) / 2
    assert s["first"] == log.lines[0][0][log.lines[0][0].index("[") :].split("]")[0] + "]"
    if fmt == "vhost_combined":
        assert set(log.column("vhost")) == {"www.example.com"}


def test_rate_gives_the_mean_number_of_requests(tmp_path: Path) -> None:
    _, s = run(tmp_path, duration="6h", rate=2)
    expected = 2 * 6 * 3600
    assert abs(s["lines"] - expected) <= Z * math.sqrt(expected)
    _, s = run(tmp_path, "n.log", duration="6h", requests=12_345)
    assert s["lines"] == 12_345


# --- the load's shape -----------------------------------------------------------------------


@pytest.mark.slow
def test_daily_profile_and_weekend(tmp_path: Path) -> None:
    """A week from Monday: each hour of the weekdays, the busiest against the quietest, and
    weekend days against weekdays, as the profile promises."""
    peak, weekend, total = 8.0, 0.6, 300_000
    out, _ = run(tmp_path, duration="7d", requests=total, peak_ratio=peak, weekend=weekend,
                 fmt="common")  # fmt: skip
    t = np.array([seconds(m) for m in read(out, "common").lines])
    per_day = np.bincount(t // 86400, minlength=7)
    hour_of_weekday = np.bincount((t % 86400)[t < 5 * 86400] // 3600, minlength=24)

    # What the model expects: a multinomial share of the total per second.
    w = profile.second_weights(1772409600, 7 * 86400, peak, weekend)
    p_day = w.reshape(7, 86400).sum(axis=1) / w.sum()
    p_hour = w[: 5 * 86400].reshape(5, 24, 3600).sum(axis=(0, 2)) / w.sum()
    for observed, p in [(per_day, p_day), (hour_of_weekday, p_hour)]:
        e = total * p
        assert np.all(np.abs(observed - e) <= Z * np.sqrt(e * (1 - p))), (observed, e)

    shape = profile.hourly_shape(peak)
    quiet, busy = int(shape.argmin()), int(shape.argmax())
    assert 3 <= quiet <= 5 and 11 <= busy <= 15  # quiet nights, busy middays
    assert shape.max() / shape.min() == pytest.approx(peak)
    c_busy, c_quiet = hour_of_weekday[busy], hour_of_weekday[quiet]
    assert abs(math.log(c_busy / c_quiet / peak)) <= Z * math.sqrt(1 / c_busy + 1 / c_quiet)

    we, wd = per_day[5:].sum(), per_day[:5].sum()
    ratio = (we / 2) / (wd / 5)
    assert abs(math.log(ratio / weekend)) <= Z * math.sqrt(1 / we + 1 / wd)


def test_flat_profile(tmp_path: Path) -> None:
    """--peak-ratio 1 and --weekend 1: a homogeneous Poisson process."""
    out, _ = run(tmp_path, duration="4h", requests=20_000, peak_ratio=1, fmt="common",
                 start="2026-03-02T02:00")  # fmt: skip
    per_hour = np.bincount([seconds(m) // 3600 - 2 for m in read(out, "common").lines])
    e = 20_000 / 4
    assert np.all(np.abs(per_hour - e) <= Z * math.sqrt(e * 0.75))


# --- what is requested ----------------------------------------------------------------------


def test_zipf_popularity(tmp_path: Path) -> None:
    """Requests per file against its rank, on log-log axes: a slope of −alpha. The fit is weighted
    least squares over the ranks expected to get at least 50 requests (log C has variance 1/E),
    so the slope's standard error is 1/√(Σ Eᵢ (xᵢ − x̄)²)."""
    alpha, total, files = 0.8, 200_000, 2_000
    options = dict(duration="1d", requests=total, zipf=alpha, files=files, not_found=0,
                   slow_share=0, fmt="common")  # fmt: skip
    out, _ = run(tmp_path, **options)  # type: ignore[arg-type]
    counts = Counter(m["path"] for m in read(out, "common").lines)
    ranked = gen.targets(gen.GenerateConfig.parse(**options)).paths[:files]  # type: ignore[arg-type]
    assert set(counts) <= set(ranked)
    p = np.arange(1, files + 1) ** -alpha
    e = total * p / p.sum()
    keep = e >= 50
    x = np.log(np.arange(1, files + 1)[keep])
    y = np.log([max(counts[path], 1) for path, k in zip(ranked, keep, strict=True) if k])
    wts = e[keep]
    xm = np.average(x, weights=wts)
    slope = np.sum(wts * (x - xm) * (y - np.average(y, weights=wts))) / np.sum(wts * (x - xm) ** 2)
    se = 1 / math.sqrt(np.sum(wts * (x - xm) ** 2))
    assert abs(slope + alpha) <= Z * se, (slope, se)
    # Popularity is not path order: the busiest file is anywhere in the listing.
    assert sorted(ranked)[:10] != ranked[:10]


def test_shares_of_404_slow_304_and_head(tmp_path: Path) -> None:
    nf, slow, nm, total = 0.05, 0.01, 0.1, 60_000
    out, s = run(tmp_path, duration="1d", requests=total, not_found=nf, slow_share=slow,
                 not_modified=nm, slow_path="/api/slow?wait=1")  # fmt: skip
    log = read(out)
    site = set(gen.targets(gen.GenerateConfig.parse(files=10_000)).paths[:10_000])

    def within(count: int, share: float, n: int) -> bool:
        return abs(count / n - share) <= Z * math.sqrt(share * (1 - share) / n)

    status = Counter(log.column("status"))
    assert s["status"] == dict(sorted(status.items()))
    slow_lines = [m for m in log.lines if m["path"] == "/api/slow?wait=1"]
    missing = [m for m in log.lines if m["status"] == "404"]
    assert within(len(slow_lines), slow, total) and within(len(missing), nf, total)
    assert {(m["status"], m["method"]) for m in slow_lines} == {("200", "GET")}
    assert not {m["path"] for m in missing} & site
    assert all(m["size"] == "-" or 150 <= int(m["size"]) <= 520 for m in missing)
    gets = [m for m in log.lines if m["path"] in site and m["method"] == "GET"]
    n304 = sum(m["status"] == "304" for m in gets)
    assert within(n304, nm, len(gets))
    assert all(m["size"] == "-" for m in log.lines if m["status"] == "304" or m["method"] == "HEAD")
    heads = s["methods"]["HEAD"]
    assert 0 < heads < total * 0.02


def test_sizes_from_a_tree_manifest(tmp_path: Path) -> None:
    """The contract of `iowatt tree snapshot`: path, type and size, with iowatt-tree/1 in the
    schema's metadata. Only files are requested; 200s carry the file's size."""
    rows = [("a", "dir", 0), ("a/index.html", "file", 5120), ("a/b c.jpg", "file", 77),
            ("a/empty.txt", "file", 0), ("a/link", "symlink", 6), ("d/é.pdf", "file", 1 << 20),
            ("top.css", "file", 900)]  # fmt: skip
    table = pa.table({"path": [r[0] for r in rows], "type": [r[1] for r in rows],
                      "size": pa.array([r[2] for r in rows], pa.int64())})  # fmt: skip
    table = table.replace_schema_metadata({b"iowatt": json.dumps({"format": "iowatt-tree/1"})})
    manifest = tmp_path / "tree.parquet"
    pq.write_table(table, manifest)
    out, s = run(tmp_path, duration="1h", requests=5_000, tree=str(manifest))
    sizes = {"/" + p: n for p, t, n in rows if t == "file"}
    log = read(out)
    served = [m for m in log.lines if m["status"] == "200" and m["path"] != "/slow"]
    paths = {unquote(m["path"]) for m in served}
    assert paths == set(sizes)  # every file, at 5,000 requests over 5 files
    for m in served:
        size = sizes[unquote(m["path"])]
        expected = "-" if m["method"] == "HEAD" or size == 0 else str(size)
        assert m["size"] == expected, m[0]
    assert "/a/b%20c.jpg" in {m["path"] for m in served}
    assert read_log(out).bad == 0
    assert s["site"] == {"source": "manifest", "files": 5, "bytes": 5120 + 77 + 900 + (1 << 20)}


def test_sizes_from_a_directory(tmp_path: Path) -> None:
    root = tmp_path / "site"
    (root / "img").mkdir(parents=True)
    files = {"index.html": 3000, "img/a b.png": 123, "img/ü.gif": 45, ".hidden": 7}
    for name, size in files.items():
        (root / name).write_bytes(b"x" * size)
    (root / "img" / "link.png").symlink_to(root / "index.html")
    (root / "empty-dir").mkdir()
    out, s = run(tmp_path, duration="1h", requests=3_000, tree=str(root), not_modified=0)
    served = {
        unquote(m["path"]): m["size"]
        for m in read(out).lines
        if m["status"] == "200" and m["method"] == "GET" and m["path"] != "/slow"
    }
    assert served == {"/" + name: str(size) for name, size in files.items()}
    assert s["site"]["source"] == "directory"


def test_the_recorded_command_writes_the_same_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "first.log"
    options = "--duration 2h --rate 1.5 --tz -0500 --format vhost_combined --seed 7 --zipf 0.7"
    r = iowatt(capsys, "trace", "generate", "-o", out, *options.split())
    assert r.code == 0, r.err
    assert "wrote" in r.out and "the same log again: iowatt trace generate" in r.out
    side = json.loads(gen.sidecar_path(out).read_text())
    args = shlex.split(side["command"])
    again = tmp_path / "again.log"
    args[args.index("-o") + 1] = str(again)
    r = iowatt(capsys, *args[1:])
    assert r.code == 0, r.err
    assert again.read_bytes() == out.read_bytes()
    assert side["params"]["seed"] == 7 and side["lines"] == len(read(out, "vhost_combined").lines)


def test_json_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    r = iowatt(capsys, "trace", "generate", "-o", tmp_path / "x.log", "--duration", "10m", "--json")
    s = json.loads(r.out)
    assert s["lines"] > 0 and s["bytes"] == (tmp_path / "x.log").stat().st_size
    assert r.err == ""


# --- what is refused ------------------------------------------------------------------------


def _refused(capsys: pytest.CaptureFixture[str], tmp_path: Path, *args: str | Path) -> Result:
    before = sorted(os.listdir(tmp_path))
    r = iowatt(capsys, "trace", "generate", "-o", tmp_path / "out.log", *args)
    assert sorted(os.listdir(tmp_path)) == before  # nothing written, no temporary left
    return r


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("--duration", "1x"), "1x"),
        (("--duration", "0s"), "0s"),
        (("--duration", "1.5s"), "1.5s"),
        (("--duration", "400d"), "400d"),
        (("--rate", "abc"), "abc"),
        (("--rate", "0"), "--rate `0`"),
        (("--rate", "-3"), "-3"),
        (("--rate", "nan"), "nan"),
        (("--rate", "1", "--requests", "5"), "--requests"),
        (("--requests", "0"), "--requests `0`"),
        (("--rate", "100000", "--duration", "365d"), "100000"),
        (("--peak-ratio", "0.5"), "0.5"),
        (("--weekend", "-1"), "-1"),
        (("--zipf", "x"), "--zipf"),
        (("--not-found", "0.7", "--slow-share", "0.5"), "more than 1"),
        (("--not-modified", "2"), "--not-modified `2`"),
        (("--slow-path", "slow"), "slow"),
        (("--slow-path", "/a b"), "/a b"),
        (("--slow-path", "/index.html"), "/index.html"),
        (("--tz", "+25:00"), "+25:00"),
        (("--tz", "CET"), "CET"),
        (("--start", "yesterday"), "yesterday"),
        (("--start", "9999-12-31T12:00"), "9999-12-31T12:00"),
        (("--start", "0900-01-01"), "0900-01-01"),
        (("--start", "2026-03-02T00:00+01:00", "--tz", "+0200"), "+0200"),
        (("--format", "nginx"), "nginx"),
        (("--files", "0"), "--files `0`"),
        (("--clients", "many"), "many"),
        (("--seed", "-1"), "-1"),
        (("--host", "a b"), "a b"),
        (("--weekend", "0", "--start", "2026-03-07T00:00", "--duration", "2d"), "weekend"),
    ],
)
def test_bad_options(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: tuple[str, ...], fragment: str
) -> None:
    assert_user_error(_refused(capsys, tmp_path, *args), fragment)


def test_output_in_a_missing_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    r = iowatt(capsys, "trace", "generate", "-o", tmp_path / "no" / "x.log")
    assert_user_error(r, "no/x.log")
    assert not (tmp_path / "no").exists()


def test_trees_that_are_not_trees(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inputs = tmp_path / "in"
    inputs.mkdir()
    text = inputs / "paths.txt"
    text.write_text("index.html\n")
    other = inputs / "other.parquet"
    pq.write_table(pa.table({"path": ["a"], "type": ["file"], "size": [1]}), other)
    wrong = inputs / "wrong.parquet"
    pq.write_table(
        pa.table({"x": [1]}).replace_schema_metadata({b"iowatt": b'{"format": "iowatt-run/1"}'}),
        wrong,
    )
    columns = inputs / "columns.parquet"
    pq.write_table(
        pa.table({"path": ["a"]}).replace_schema_metadata(
            {b"iowatt": b'{"format": "iowatt-tree/1"}'}
        ),
        columns,
    )
    empty = inputs / "empty"
    empty.mkdir()
    for tree in (text, other, wrong, columns, empty, inputs / "missing"):
        assert_user_error(_refused(capsys, tmp_path, "--tree", tree), str(tree))


def test_files_and_tree_exclude_each_other(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert_user_error(_refused(capsys, tmp_path, "--tree", tmp_path, "--files", "5"), "--tree")


def test_the_verb_starts_without_numpy() -> None:
    script = (
        "import sys\nfrom iowatt.cli import main\ntry:\n"
        "    main(['trace', 'generate', '--help'])\nexcept SystemExit:\n    pass\n"
        "print('\\n' + ' '.join(m for m in ('numpy', 'pyarrow', 'rich') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.splitlines()[-1] == "", out


_OPTIONS = ("start", "tz", "duration", "rate", "requests", "peak_ratio", "weekend", "zipf",
            "files", "not_found", "slow_path", "slow_share", "not_modified", "clients", "fmt",
            "host", "seed", "preset", "scale")  # fmt: skip
_TEXT = st.one_of(
    st.text(max_size=12),
    st.sampled_from(
        [
            "0",
            "-1",
            "1e400",
            "nan",
            "inf",
            "1d",
            "0.5",
            "+0100",
            "/x",
            "7",
            "9999-12-31",
            "0001-01-01T00:00",
            "2026-03-02T00:00-05:00",
        ]
    ),
    st.integers(-10, 10**12).map(str),
    st.floats(allow_nan=True).map(str),
)


@pytest.mark.fuzz
@given(st.dictionaries(st.sampled_from(_OPTIONS), _TEXT, max_size=4))
def test_any_option_text_parses_or_is_one_config_error(options: dict[str, str]) -> None:
    try:
        config = gen.GenerateConfig.parse(**options)  # type: ignore[arg-type]
    except ConfigError as e:
        assert e.message and e.hint and "\n" not in e.message
        return
    assert config.duration_s >= 1 and (config.rate or 0) * config.duration_s <= 2e9
    assert shlex.split(config.command(Path("x.log")))[:3] == ["iowatt", "trace", "generate"]


@pytest.mark.parametrize(
    ("fmt", "name"),
    [("common", "a.log"), ("combined", "a.log.gz"), ("vhost_combined", "a.log")],
)
def test_iowatts_own_parser_reads_every_line(tmp_path: Path, fmt: str, name: str) -> None:
    """The Rust parser behind `trace stats` and `trace split` takes every line: none bad, none
    out of order, and the same fields as the strict pattern above."""
    out, s = run(tmp_path, name, duration="3h", rate=2, fmt=fmt, tz="-0330",
                 start="2026-03-01T22:30")  # fmt: skip
    log = read_log(out, fmt)
    assert (log.bad, log.out_of_order, log.lines) == (0, 0, s["lines"])
    t = log.table
    assert t.num_rows == s["lines"]
    ours = read(out, fmt).lines
    assert t["host"].to_pylist() == [m["host"] for m in ours]
    assert t["target"].to_pylist() == [m["path"] for m in ours]
    assert t["method"].to_pylist() == [m["method"] for m in ours]
    assert t["status"].to_pylist() == [int(m["status"]) for m in ours]
    assert t["bytes"].to_pylist() == [None if m["size"] == "-" else int(m["size"]) for m in ours]
    assert set(t["zone_s"].to_pylist()) == {-(3 * 3600 + 30 * 60)}
    # 22:30 local at -03:30 is 02:00 UTC the next day.
    first = int(dt.datetime(2026, 3, 2, 2, 0, tzinfo=dt.timezone.utc).timestamp())
    assert first <= t["time_s"][0].as_py() < first + 60
    assert t["time_s"][-1].as_py() < first + 3 * 3600


@pytest.mark.slow
def test_a_long_gzip_log_is_one_stream_of_members(tmp_path: Path) -> None:
    """Batches are compressed side by side, each its own gzip member: gzip, Python and iowatt's
    reader see one log, the same as the plain one."""
    options = dict(duration="1h", requests=gen.BATCH + 1_000, fmt="common")
    plain, _ = run(tmp_path, "a.log", **options)  # type: ignore[arg-type]
    gz, _ = run(tmp_path, "a.log.gz", **options)  # type: ignore[arg-type]
    data = gz.read_bytes()
    assert data.count(b"\x1f\x8b\x08\x00\x00\x00\x00\x00") >= 2  # member headers, mtime 0
    assert gzip.decompress(data) == plain.read_bytes()
    log = read_log(gz, "common")
    assert (log.lines, log.bad) == (gen.BATCH + 1_000, 0)


@pytest.mark.slow
def test_ctrl_c_leaves_nothing(tmp_path: Path) -> None:
    out = tmp_path / "big.log.gz"
    script = "from iowatt.cli import entry; entry()"
    args = ["trace", "generate", "-o", str(out), "--requests", "50000000", "--duration", "7d"]
    proc = subprocess.Popen([sys.executable, "-c", script, *args], stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not list(tmp_path.glob(".big.log.gz.*")) and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert os.listdir(tmp_path) == []


def test_a_snapshot_made_by_iowatt_tree(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The real thing: `iowatt tree snapshot` of a directory, then a log of its hashed files."""
    src = tmp_path / "www"
    (src / "img").mkdir(parents=True)
    for name, size in {"index.html": 2048, "img/logo.png": 333, "about.html": 999}.items():
        (src / name).write_bytes(b"x" * size)
    (src / "img" / "alias.png").symlink_to("logo.png")
    key = tmp_path / "tree.key"
    key.write_bytes(bytes(range(32)))
    manifest = tmp_path / "www.parquet"
    r = iowatt(capsys, "tree", "snapshot", src, "--key-file", key, "-o", manifest,
               "--keep-extensions", "-q")  # fmt: skip
    assert r.code == 0, r.err
    rows = pq.read_table(manifest).to_pylist()
    sizes = {"/" + row["path"]: row["size"] for row in rows if row["type"] == "file"}
    assert len(sizes) == 3
    out, s = run(tmp_path, duration="1h", requests=2_000, tree=str(manifest), not_modified=0)
    served = {
        m["path"]: m["size"]
        for m in read(out).lines
        if m["status"] == "200" and m["method"] == "GET" and m["path"] != "/slow"
    }
    assert served == {path: str(size) for path, size in sizes.items()}
    assert s["site"] == {"source": "manifest", "files": 3, "bytes": 2048 + 333 + 999}
