"""``iowatt trace anonymize`` through the CLI: every parseable line kept and nothing private
left, paths hashed like tree snapshot's names, the same key giving the same bytes, and bad input
refused with one error line and nothing written."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from iowatt.keys import load_keys
from support.cli import assert_user_error, iowatt

LOGSTALGIA = Path("/usr/share/logstalgia/example.log")
T = "[10/Oct/2000:13:55:36 -0700]"

# One line per trap of docs/trace.md: a user, a referer with a query, IPv6 and IPv4-mapped
# clients, a host name, escaped quotes, `*`, an absolute target, HTTP/0.9, an extra field, a
# percent-encoded name, the log's own \xhh escapes, a query and a fragment.
TRAPS = [
    f'192.0.2.7 - frank {T} "GET /docs/exams/q1.pdf HTTP/1.0" 200 2326 '
    '"http://www.example.edu/docs/index.html?from=mailbox" "Mozilla/4.08 [en] (Win98; I ;Nav)"',
    f'2001:db8::1 - - {T} "GET /x/a%20b.html HTTP/1.1" 200 10 "-" "curl/8.5.0"',
    f'::ffff:198.51.100.4 - - {T} "GET /search?q=secretword#topanchor HTTP/1.1" 200 5 "-" "-"',
    f'dialup-12.privateisp.net - - {T} "GET /docs/say\\"hello\\"/x.html HTTP/1.1" 404 - '
    '"-" "agent \\"quoted\\""',
    f'192.0.2.8 - - {T} "OPTIONS * HTTP/1.1" 200 - "-" "-"',
    f'192.0.2.9 - - {T} "GET http://www.example.edu/docs/exams/q1.pdf HTTP/1.1" 200 5 "-" "-"',
    f'192.0.2.10 - - {T} "GET /people/caf\\xc3\\xa9.html" 200 5 "-" "-"',
    "privatehost.example garbage that is not a log line /docs/leaked",
    "",
    f'192.0.2.7 - - {T} "GET /docs/exams/q1.pdf HTTP/1.0" 200 2326 "-" "-" "extra field"',
]
# What must not survive: hosts, users, path components, queries, fragments.
PRIVATE = [
    "192.0.2.7", "2001:db8", "198.51.100.4", "privateisp", "192.0.2.8", "192.0.2.9",
    "192.0.2.10", "frank", "docs", "exams", "q1.pdf", "a%20b", "a b.html", "search",
    "secretword", "topanchor", "hello", "x.html", "www.example.edu", "index", "mailbox",
    "people", "caf", "privatehost", "leaked", "extra field",
]  # fmt: skip


@pytest.fixture
def key(tmp_path: Path) -> Path:
    path = tmp_path / "site.key"
    path.write_bytes(bytes(range(32)))
    return path


@pytest.fixture
def traps(tmp_path: Path) -> Path:
    path = tmp_path / "access.log"
    path.write_text("\n".join(TRAPS) + "\n")
    return path


def run(capsys, log: Path, key: Path, out: Path, *args: str) -> str:
    r = iowatt(capsys, "trace", "anonymize", log, "--key-file", key, "-o", out, *args)
    assert r.code == 0, r.err
    return r.err


def target(line: str) -> str:
    return line.split('"')[1].split(" ")[1]


def test_every_trap_is_rewritten_and_bad_lines_are_left_out_and_named(capsys, tmp_path, key, traps):
    out = tmp_path / "shared.log"
    err = run(capsys, traps, key, out)
    lines = out.read_text().splitlines()
    assert len(lines) == 8  # ten lines: one blank, one that does not parse
    text = out.read_text()
    for private in PRIVATE:
        assert private not in text, private
    assert "line 8 (" in err and "1 line did not parse" in err
    # What is not private stays byte for byte.
    assert '" 200 2326 "http://' in lines[0]
    assert lines[0].endswith('"Mozilla/4.08 [en] (Win98; I ;Nav)"')
    assert T in lines[0] and '" 404 - "-" "agent \\"quoted\\""' in lines[3]
    assert '"OPTIONS * HTTP/1.1"' in lines[4]
    assert lines[7].endswith('"-" "-" "' + lines[7].split('"')[-2] + '"')  # an extra field
    assert re.fullmatch(r"[0-9a-f]{24}", lines[7].split('"')[-2])
    assert re.fullmatch(r"::ffff:\d+\.\d+\.\d+\.\d+", lines[2].split(" ")[0])
    assert re.fullmatch(r"[0-9a-f]{24}", lines[3].split(" ")[0])  # a host name, hashed
    # One path, one hash, wherever it appears (the referer's /docs too).
    assert target(lines[0]) == target(lines[7])
    assert target(lines[5]).endswith(target(lines[0]))
    assert lines[0].split('"')[3].split("/")[3] == target(lines[0]).split("/")[1]
    # HTTP/0.9 (no protocol) is a request too.
    assert target(lines[6] + " ").count("/") == 2


def test_a_request_names_the_hash_tree_snapshot_gives_the_file_on_disk(
    capsys, tmp_path, key, traps
):
    keys = load_keys(key)
    out = tmp_path / "shared.log"
    run(capsys, traps, key, out)
    x, ab = keys.hash_names(["x", "a b.html"])
    assert target(out.read_text().splitlines()[1]) == f"/{x}/{ab}"
    run(capsys, traps, key, out, "--keep-extensions")
    x, ab = keys.hash_names(["x", "a b.html"], keep_extensions=True)
    assert ab.endswith(".html")
    assert target(out.read_text().splitlines()[1]) == f"/{x}/{ab}"


def test_the_same_key_gives_the_same_bytes_and_another_key_others(capsys, tmp_path, key, traps):
    a, b, c = tmp_path / "a.log.gz", tmp_path / "b.log.gz", tmp_path / "c.log.gz"
    run(capsys, traps, key, a)
    run(capsys, traps, key, b)
    assert a.read_bytes() == b.read_bytes()
    other = tmp_path / "other.key"
    other.write_bytes(bytes(range(1, 33)))
    run(capsys, traps, other, c)
    first = [gzip.decompress(p.read_bytes()).decode().split("\n")[0] for p in (a, c)]
    assert first[0].split(" ")[0] != first[1].split(" ")[0]
    assert target(first[0]) != target(first[1])


def test_gzip_logs_are_read_and_the_default_output_is_named_after_the_log(
    capsys, tmp_path, key, traps, monkeypatch
):
    packed = tmp_path / "access.log.gz"
    packed.write_bytes(gzip.compress(traps.read_bytes()))
    monkeypatch.chdir(tmp_path)
    r = iowatt(capsys, "trace", "anonymize", packed, "--key-file", key)
    assert r.code == 0, r.err
    plain = tmp_path / "plain.log"
    run(capsys, traps, key, plain)
    assert gzip.decompress((tmp_path / "access.log.anon.gz").read_bytes()) == plain.read_bytes()
    assert [p.name for p in tmp_path.glob(".*")] == []  # no temporary file left


def test_dash_writes_to_stdout_and_the_summary_goes_to_stderr(capsysbinary, tmp_path, key, traps):
    from iowatt.cli import main

    main(["trace", "anonymize", str(traps), "--key-file", str(key), "-o", "-"])
    captured = capsysbinary.readouterr()
    plain = tmp_path / "plain.log"
    main(["trace", "anonymize", str(traps), "--key-file", str(key), "-o", str(plain), "-q"])
    assert captured.out == plain.read_bytes()
    assert b"anonymised 8 lines" in captured.err


@pytest.mark.skipif(not LOGSTALGIA.exists(), reason="logstalgia's example log is not installed")
def test_logstalgias_real_log_keeps_every_line_and_no_host_or_name(capsys, tmp_path, key):
    out = tmp_path / "shared.log"
    err = run(capsys, LOGSTALGIA, key, out)
    original = LOGSTALGIA.read_text().splitlines()
    shared = out.read_text().splitlines()
    assert len(shared) == len(original) == 3260 and "did not parse" not in err
    text = out.read_text()
    hosts = {line.split(" ")[0] for line in original}
    names = {part for line in original for part in target(line).split("/") if len(part) > 3}
    for private in hosts | names:
        assert private not in text, private
    # One original path, one hashed path, and the reverse; the rest of each line unchanged.
    mapping: dict[str, str] = {}
    for before, after in zip(original, shared, strict=True):
        assert mapping.setdefault(target(before), target(after)) == target(after)
        assert before.split(" ", 1)[1].split('"', 2)[2] == after.split(" ", 1)[1].split('"', 2)[2]
    assert len(set(mapping.values())) == len(mapping) >= 100


def test_a_key_file_is_needed_and_must_be_long_enough(capsys, tmp_path, traps):
    out = tmp_path / "shared.log"
    r = iowatt(capsys, "trace", "anonymize", traps, "-o", out)
    assert_user_error(r, "--key-file")
    for content in (None, b"short\n"):
        key = tmp_path / "bad.key"
        if content is not None:
            key.write_bytes(content)
        r = iowatt(capsys, "trace", "anonymize", traps, "--key-file", key, "-o", out)
        assert_user_error(r, str(key))
    assert not out.exists()


@pytest.mark.parametrize(
    ("content", "fragment"),
    [(None, "does not exist"), (b"", "is empty"), ("dir", "not a regular file")],
)
def test_a_log_that_cannot_be_read_is_named(capsys, tmp_path, key, content, fragment):
    log = tmp_path / "access.log"
    if content == "dir":
        log.mkdir()
    elif content is not None:
        log.write_bytes(content)
    out = tmp_path / "shared.log"
    r = iowatt(capsys, "trace", "anonymize", log, "--key-file", key, "-o", out)
    assert_user_error(r, str(log), fragment)
    assert not out.exists()


def test_a_log_of_blank_lines_or_of_no_line_in_the_format_writes_nothing(capsys, tmp_path, key):
    out = tmp_path / "shared.log"
    for content, fragments in [
        ("\n\n", ("holds no lines",)),
        ("not a log line /private/path\n" * 3, ("no line of", "line 1")),
    ]:
        log = tmp_path / "access.log"
        log.write_text(content)
        r = iowatt(capsys, "trace", "anonymize", log, "--key-file", key, "-o", out)
        assert_user_error(r, str(log), *fragments)
        assert not out.exists()
        assert [p.name for p in tmp_path.glob(".*")] == []
    r = iowatt(capsys, "trace", "anonymize", log, "--key-file", key, "-o", "-")
    assert_user_error(r, "no line of")
    assert r.out == ""


def test_a_format_with_an_unknown_directive_is_named(capsys, tmp_path, key, traps):
    out = tmp_path / "shared.log"
    args = ("trace", "anonymize", traps, "--key-file", key, "-o", out)
    r = iowatt(capsys, *args, "--format", '%h %Q %t "%r"')
    assert_user_error(r, "--format", "%Q")
    r = iowatt(capsys, *args, "--format", "common")  # combined lines do parse as common
    assert r.code == 0
    out.unlink()
    r = iowatt(capsys, *args, "--format", '%t %h "%r"')
    assert_user_error(r, "no line of")
    assert not out.exists()


def test_an_output_in_a_missing_directory_or_over_the_log_is_refused(capsys, tmp_path, key, traps):
    missing = tmp_path / "nowhere" / "shared.log"
    r = iowatt(capsys, "trace", "anonymize", traps, "--key-file", key, "-o", missing)
    assert_user_error(r, str(missing), "does not exist")
    before = traps.read_bytes()
    r = iowatt(capsys, "trace", "anonymize", traps, "--key-file", key, "-o", traps)
    assert_user_error(r, "is the log itself")
    assert traps.read_bytes() == before


LINE_PIECES = [
    "192.0.2.7", "::1", "host.example", " ", "-", T, '"', '\\"', "GET ", "/a", "%2", "%zz",
    "?q", "#f", "http://x", "@", ":", "*", "200", "\\x", "é", "\t",
]  # fmt: skip


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(st.sampled_from(LINE_PIECES), max_size=14).map("".join), max_size=6))
def test_any_log_gives_a_log_or_one_error_line(capsys, tmp_path, key, lines):
    log = tmp_path / "fuzz.log"
    log.write_text("\n".join(lines))
    out = tmp_path / "fuzz.anon"
    r = iowatt(capsys, "trace", "anonymize", log, "--key-file", key, "-o", out)
    if r.code:
        assert_user_error(r)
        assert not out.exists()
    else:
        assert len(out.read_text().splitlines()) <= len(lines)
        out.unlink()


def test_a_truncated_gzip_log_is_an_error_and_writes_nothing(capsys, tmp_path, key, traps):
    log = tmp_path / "access.log.gz"
    log.write_bytes(gzip.compress(traps.read_bytes() * 50)[:-300])
    out = tmp_path / "shared.log.gz"
    r = iowatt(capsys, "trace", "anonymize", log, "--key-file", key, "-o", out)
    assert_user_error(r, str(log), "stops being readable")
    assert "gzip -t" in r.err
    assert not out.exists() and [p.name for p in tmp_path.glob(".*")] == []


@pytest.mark.parametrize("extensions", [(), ("--keep-extensions",)])
def test_requests_name_the_files_of_a_tree_snapshot_made_with_the_same_key(
    capsys, tmp_path, key, extensions
):
    import pyarrow.parquet as pq

    www = tmp_path / "www"
    (www / "x").mkdir(parents=True)
    (www / "x" / "a b.html").write_text("<html>")
    (www / "café").mkdir()
    (www / "café" / "été.pdf").write_bytes(b"%PDF")
    manifest = tmp_path / "www.parquet"
    r = iowatt(capsys, "tree", "snapshot", www, "--key-file", key, "-o", manifest, *extensions)
    assert r.code == 0, r.err
    files = {row["path"] for row in pq.read_table(manifest).to_pylist() if row["type"] == "file"}
    log = tmp_path / "access.log"
    log.write_text(
        f'192.0.2.7 - - {T} "GET /x/a%20b.html HTTP/1.1" 200 6 "-" "-"\n'
        f'192.0.2.7 - - {T} "GET /caf%C3%A9/%C3%A9t%C3%A9.pdf HTTP/1.1" 200 4 "-" "-"\n'
    )
    out = tmp_path / "shared.log"
    run(capsys, log, key, out, *extensions)
    requested = {target(line).removeprefix("/") for line in out.read_text().splitlines()}
    assert requested == files
