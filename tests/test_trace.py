"""Reading access logs as users have them: the real logstalgia example log checked line by line
against an independent parse, every trap of the format, filters and spread, the split files, the
stats, and every bad input named with a hint."""

from __future__ import annotations

import datetime as dt
import gzip
import json
import re
import subprocess
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from iowatt.trace.log import read_log
from support.cli import assert_user_error, iowatt

EXAMPLE = Path("/usr/share/logstalgia/example.log")
needs_example = pytest.mark.skipif(not EXAMPLE.exists(), reason="Debian package logstalgia")

# An independent reading of Combined lines, for lines without escaped quotes.
COMBINED = re.compile(
    r'(?P<host>\S+) \S+ \S+ \[(?P<time>[^\]]+)\] "(?P<method>\S+) (?P<target>\S+)(?: \S+)?" '
    r'(?P<status>\d{3}) (?P<bytes>\d+|-) "[^"]*" "[^"]*"'
)


def epoch(clf: str) -> int:
    return int(dt.datetime.strptime(clf, "%d/%b/%Y:%H:%M:%S %z").timestamp())


@needs_example
def test_the_logstalgia_example_log_reads_line_for_line_like_an_independent_parse():
    log = read_log(EXAMPLE)
    expected = []
    for number, line in enumerate(EXAMPLE.read_text().splitlines(), 1):
        m = COMBINED.match(line)
        assert m, line
        sent = None if m["bytes"] == "-" else int(m["bytes"])
        expected.append((epoch(m["time"]), number, m["host"], m["method"], m["target"],
                         int(m["status"]), sent))  # fmt: skip
    expected.sort(key=lambda row: row[0])  # stable, like the parser
    rows = log.table.select(["time_s", "line", "host", "method", "target", "status", "bytes"])
    assert [tuple(r.values()) for r in rows.to_pylist()] == expected
    assert (log.lines, log.bad) == (len(expected), 0)


@needs_example
def test_stats_of_the_example_log(capsys):
    r = iowatt(capsys, "trace", "stats", EXAMPLE, "--json")
    assert r.code == 0, r.err
    figures = json.loads(r.out)
    times = [epoch(m["time"]) for m in map(COMBINED.match, EXAMPLE.read_text().splitlines()) if m]
    per_second = np.bincount(np.array(times) - min(times))
    assert figures["requests"] == len(times)
    assert figures["duration_s"] == len(per_second)
    assert figures["peak_per_s"] == per_second.max()
    assert sum(figures["methods"].values()) == len(times)
    assert figures["top_targets"][0]["requests"] >= figures["top_targets"][1]["requests"]
    text = iowatt(capsys, "trace", "stats", EXAMPLE)
    assert "daily profile" in text.out and "█" in text.out


LOG = """\
2001:db8::1 - alice [02/Mar/2026:10:00:01 +0100] "GET /a.html HTTP/1.1" 200 100 "-" "x \\"y\\""
10.0.0.1 - - [02/Mar/2026:10:00:00 +0100] "GET /cgi-bin/q?x=1 HTTP/1.1" 200 5 "-" "-" "extra"
not a log line
10.0.0.2 - - [02/Mar/2026:10:00:01 +0100] "HEAD /a.html HTTP/1.1" 304 - "-" "-"

10.0.0.3 - - [02/Mar/2026:10:00:01 +0100] "GET /b.jpg HTTP/1.1" 404 0 "-" "-"
10.0.0.4 - - [03/Mar/2026:00:30:00 +0100] "POST /form HTTP/1.1" 500 7 "-" "-"
10.0.0.5 - - [02/Mar/2026:10:00:04 +0100] "GET /c HTTP/1.0" 200 9 "-" "-"
"""


@pytest.fixture
def log(tmp_path: Path) -> Path:
    path = tmp_path / "access.log"
    path.write_text(LOG)
    return path


def test_split_writes_the_schedule_and_the_ordered_requests(tmp_path, log, capsys):
    out = tmp_path / "t"
    r = iowatt(capsys, "trace", "split", log, "-o", out, "--spread", "even",
               "--until", "2026-03-02T23:00")  # fmt: skip
    assert r.code == 0, r.err
    requests = pq.read_table(out / "requests.parquet").to_pylist()
    schedule = pq.read_table(out / "schedule.parquet").to_pylist()
    record = json.loads((out / "trace.json").read_text())
    # Line 2 goes back in time: sorted first; the three of 10:00:01 keep their log order.
    assert [q["line"] for q in requests] == [2, 1, 4, 6, 8]
    assert [q["offset_ns"] for q in requests] == [0, 1e9, 1e9 + 1e9 // 3, 1e9 + 2e9 // 3, 4e9]
    assert [s["requests"] for s in schedule] == [1, 3, 0, 0, 1]
    assert requests[2]["bytes"] is None and requests[1]["host"] == "2001:db8::1"
    assert record["spread"] == "even" and record["dropped"] == {"after --until": 1}
    assert record["read"]["bad"] == 1 and record["read"]["bad_lines"][0]["line"] == 3
    assert record["read"]["out_of_order"] == 2  # line 2, and line 8 after the next day's 7
    assert "line 3:" in r.err  # the bad line is reported, not dropped silently


@pytest.mark.parametrize(
    ("options", "lines", "dropped"),
    [
        (("--method", "GET"), [2, 1, 6, 8], {"method": 2}),
        (("--status", "2xx,304"), [2, 1, 4, 8], {"status": 2}),
        (("--exclude", r"\?|^/cgi-bin/"), [1, 4, 6, 8, 7], {r"--exclude \?|^/cgi-bin/": 1}),
        (("--exclude-day", "2026-03-03"), [2, 1, 4, 6, 8], {"--exclude-day": 1}),
        (("--from", "2026-03-02T09:00:01Z"), [1, 4, 6, 8, 7], {"before --from": 1}),
    ],
)
def test_each_filter_keeps_what_it_names_and_counts_what_it_drops(
    tmp_path, log, capsys, options, lines, dropped
):
    r = iowatt(capsys, "trace", "split", log, "-o", tmp_path / "t", "--json", *options)
    assert r.code == 0, r.err
    kept = pq.read_table(tmp_path / "t" / "requests.parquet")["line"].to_pylist()
    assert kept == lines
    assert json.loads(r.out)["dropped"] == dropped


def test_a_gzip_log_reads_like_the_plain_one(tmp_path, log):
    gz = tmp_path / "access.log.gz"
    gz.write_bytes(gzip.compress(log.read_bytes()))
    assert read_log(gz).table.equals(read_log(log).table)


def test_a_format_string_reads_other_layouts(tmp_path, capsys):
    path = tmp_path / "timed.log"
    path.write_text('h 1234 [02/Mar/2026:10:00:00 +0000] "GET /x HTTP/1.1" 200 5\n')
    log = read_log(path, '%h %D %t "%r" %>s %b')
    assert log.table["target"].to_pylist() == ["/x"] and log.bad == 0


@pytest.mark.parametrize(
    ("content", "args", "named"),
    [
        (None, (), "does not exist"),
        ("", (), "is empty"),
        ("\n\n", (), "is empty"),
        ("garbage\nmore garbage\n", (), "no line"),
        (LOG, ("--format", "%h %Q %t"), "`%Q`"),
        (LOG, ("--status", "2yy"), "`2yy`"),
        (LOG, ("--from", "yesterday"), "`yesterday`"),
        (LOG, ("--exclude", "(unclosed"), "`(unclosed`"),
        (LOG, ("--exclude-day", "03/03/2026"), "`03/03/2026`"),
        (LOG, ("--spread", "random"), "`random`"),
    ],
)
def test_bad_input_is_named_with_a_hint_and_nothing_is_written(
    tmp_path, capsys, content, args, named
):
    log = tmp_path / "access.log"
    if content is not None:
        log.write_text(content)
    r = iowatt(capsys, "trace", "split", log, "-o", tmp_path / "t", *args)
    assert_user_error(r, named)
    assert sorted(p.name for p in tmp_path.iterdir()) == ([] if content is None else ["access.log"])


def test_an_existing_output_or_a_missing_parent_is_refused(tmp_path, log, capsys):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep").write_text("mine")
    assert_user_error(iowatt(capsys, "trace", "split", log, "-o", tmp_path / "full"), "full")
    assert (tmp_path / "full" / "keep").read_text() == "mine"
    missing = tmp_path / "no" / "t"
    assert_user_error(iowatt(capsys, "trace", "split", log, "-o", missing), str(missing))


def test_a_directory_or_unreadable_log_is_named(tmp_path, capsys):
    assert_user_error(iowatt(capsys, "trace", "stats", tmp_path), "is a directory")


def test_stats_count_requests_per_local_day(log, capsys):
    r = iowatt(capsys, "trace", "stats", log, "--json")
    assert r.code == 0, r.err
    figures = json.loads(r.out)
    # Line 7 is 23:30 UTC on the 2nd but 00:30 on the 3rd where the server was.
    assert figures["per_day"] == {"2026-03-02": 5, "2026-03-03": 1}
    assert figures["days"] == 2 and figures["bad"] == 1


def test_a_full_disk_while_splitting_is_named_and_leaves_nothing(tmp_path, log, capsys):
    # A 64 KiB tmpfs cannot hold the Parquet files: the error names DIR, and no partial
    # directory is left.
    small = tmp_path / "small"
    small.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(small)]).returncode:
        pytest.skip("mounting a tmpfs needs root")
    try:
        (small / "filler").write_bytes(b"x" * 60_000)
        r = iowatt(capsys, "trace", "split", log, "-o", small / "t")
        assert_user_error(r, str(small / "t"), "cannot be written")
        assert sorted(p.name for p in small.iterdir()) == ["filler"]
    finally:
        subprocess.run(["umount", str(small)], check=True)
