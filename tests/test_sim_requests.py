"""The RAID simulator's trace reading (``iowatt.sim.requests``): MSR with or without its header,
unreadable block-trace lines counted and refused past ``max_bad``, a replay run's own
speed-up, and seeded arrival jitter within a web trace's seconds."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iowatt.errors import ConfigError
from iowatt.sim.requests import load_requests

HEADER = "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime\n"
MSR_ROWS = [
    "128166372000000000,web,0,Read,0,4096,100\n",
    "128166372000100000,web,0,Write,1048576,65536,120\n",
    "128166372000200000,web,1,read,8192,512,80\n",
    "128166372010000000,web,0,WRITE,0x1000,4096,90\n",
]


def load(path: Path, *args, **kwargs):
    return load_requests(path, "combined", *args, **kwargs)


def user_error(path: Path, *args, **kwargs) -> ConfigError:
    with pytest.raises(ConfigError) as e:
        load(path, *args, **kwargs)
    assert "\n" not in e.value.message
    return e.value


# MSR-Cambridge CSV


def test_msr_with_and_without_its_header_gives_the_same_requests(tmp_path):
    bare = tmp_path / "bare.csv"
    bare.write_text("".join(MSR_ROWS))
    headed = tmp_path / "headed.csv"
    headed.write_text(HEADER + "".join(MSR_ROWS))
    a, b = load(bare, 1.0), load(headed, 1.0)
    for name in ("t_ns", "offset", "size", "write"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert a.t_ns.tolist() == [0, 10_000_000, 20_000_000, 1_000_000_000]
    assert a.offset.tolist() == [0, 1 << 20, 8192, 4096]
    assert a.write.tolist() == [False, True, False, True]
    assert (a.described["header"], b.described["header"]) == (False, True)
    assert a.described["bad_lines"] == b.described["bad_lines"] == 0
    assert a.described["first_bad"] is None
    # A header and a bad row: the header is still not a bad line.
    bad = tmp_path / "bad.csv"
    bad.write_text(HEADER + MSR_ROWS[0] + "oops\n" + "".join(MSR_ROWS[1:]))
    c = load(bad, 1.0, max_bad=1)
    assert c.described["bad_lines"] == 1 and c.described["first_bad"]["line"] == 3
    assert np.array_equal(c.t_ns, a.t_ns)


def test_msr_bad_rows_are_counted_named_and_refused_past_max_bad(tmp_path):
    rows = list(MSR_ROWS)
    rows.insert(2, "128166372000150000,web,0,Trim,0,4096,100\n")  # line 3
    rows.insert(4, "128166372000250000,web,0,Read,-4096,4096\n")  # line 5
    path = tmp_path / "t.csv"
    path.write_text("".join(rows))
    for max_bad in (0, 1):
        e = user_error(path, 1.0, max_bad=max_bad)
        assert e.message == (
            f"block trace `{path}`: 2 unreadable lines "
            "(first: line 3, Type `Trim` is not Read or Write)"
        )
        assert e.hint == "fix them or allow them with --max-bad 2"
    req = load(path, 1.0, max_bad=2)
    assert len(req) == len(MSR_ROWS)
    assert req.described["bad_lines"] == 2
    assert req.described["first_bad"] == {"line": 3, "reason": "Type `Trim` is not Read or Write"}


@pytest.mark.parametrize(
    ("row", "reason"),
    [
        ("1,web,0,Read,0,4096\n", "6 fields, not the 7 of an MSR row"),
        ("x,web,0,Read,0,4096,1\n", "Timestamp `x` is not a whole number"),
        ("1,web,0,Read,0,4096,1.5\n", "ResponseTime `1.5` is not a whole number"),
        ("1,web,0,Read,10000000000000000000,4096,1\n", "Offset `10000000000000000000` is out"),
    ],
)
def test_an_msr_row_s_reason_names_its_field(tmp_path, row, reason):
    path = tmp_path / "t.csv"
    path.write_text(MSR_ROWS[0] + row + "".join(MSR_ROWS[1:]))
    assert f"(first: line 2, {reason}" in user_error(path, 1.0).message


def test_an_unreadable_first_row_is_counted_not_taken_for_another_layout(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("128166372000000000,web,0,Trim,0,4096,100\n" + "".join(MSR_ROWS))
    assert "(first: line 1, Type `Trim`" in user_error(path, 1.0).message
    assert len(load(path, 1.0, max_bad=1)) == len(MSR_ROWS)


def test_a_gzipped_msr_file_reads_as_the_plain_one(tmp_path):
    import gzip

    plain = tmp_path / "t.csv"
    plain.write_text(HEADER + "".join(MSR_ROWS))
    packed = tmp_path / "t.csv.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    assert np.array_equal(load(plain, 1.0).t_ns, load(packed, 1.0).t_ns)


def test_blank_lines_are_not_bad_and_line_numbers_count_them(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("\n" + MSR_ROWS[0] + "\n  \n" + "junk\n" + "".join(MSR_ROWS[1:]))
    req = load(path, 1.0, max_bad=1)
    assert len(req) == len(MSR_ROWS)
    assert req.described["first_bad"]["line"] == 5


def test_an_msr_file_of_only_its_header_has_no_requests(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text(HEADER)
    assert "has no requests" in user_error(path, 1.0).message


def test_a_negative_max_bad_is_refused_by_name(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("".join(MSR_ROWS))
    e = user_error(path, 1.0, max_bad=-1)
    assert "--max-bad `-1`" in e.message and e.hint


# blkparse

BLK_PREAMBLE = ["Input file sda.blktrace.0 added", "Input file sda.blktrace.1 added"]
BLK_EVENTS = [
    "  8,0    1        1     0.000000000  4102  Q   R 2048 + 8 [cat]",
    "  8,0    1        2     0.000001000  4102  G   R 2048 + 8 [cat]",
    "  8,0    1        3     0.000001500  4102  P   N [cat]",
    "  8,0    1        4     0.000002000  4102  I   R 2048 + 8 [cat]",
    "  8,0    1        0     0.000002100     0  m   N cfq4102S / insert_request",
    "  8,0    1        0     0.000002200     0 1a,0  m   N a message with its cgroup",
    "  8,0    1        5     0.000003000  4102  U   N [cat] 1",
    "  8,0    1        6     0.000003500  4102  D   R 2048 + 8 [cat]",
    "  8,0    0        1     0.000100000     0  C   R 2048 + 8 [0]",
    "  8,0    1        7     0.500000000  4102  Q  WS 409600 + 256 [dd]",
    "  8,0    1        8     0.600000000  4102  Q FWS [kworker/0:1H]",
    "  8,0    1        9     0.700000000  4102  Q   R 32768 (12 34 56) [sg_dd]",
    "  8,0    1       10     0.800000000  4102  Q   W 1000 + 8 [Web Content]",
    "  8,0    1       11     0.900000000  4102  X   W 1000 / 1004 [Web Content]",
]
BLK_SUMMARY = [
    "CPU0 (8,0):",
    " Reads Queued:           0,        0KiB\t Writes Queued:           0,        0KiB",
    " Read Dispatches:        0,        0KiB\t Write Dispatches:        0,        0KiB",
    "CPU1 (8,0):",
    " Reads Queued:           1,        4KiB\t Writes Queued:           2,      132KiB",
    "",
    "Total (8,0):",
    " Reads Queued:           1,        4KiB\t Writes Queued:           2,      132KiB",
    "",
    "Throughput (R/W): 40KiB/s / 0KiB/s",
    "Events (8,0): 13 entries",
    "Skips: 0 forward (0 -   0.0%)",
    "Trace started at Fri Nov 27 11:00:00 2026",
    "",
]


def blkparse(path: Path, events: list[str], summary: list[str] = BLK_SUMMARY) -> Path:
    path.write_text("\n".join(BLK_PREAMBLE + events + summary) + "\n")
    return path


def test_blkparse_reads_its_queue_lines_and_passes_over_the_rest(tmp_path):
    req = load(blkparse(tmp_path / "t.txt", BLK_EVENTS), 1.0)
    assert req.t_ns.tolist() == [0, 500_000_000, 800_000_000]
    assert req.offset.tolist() == [2048 * 512, 409600 * 512, 1000 * 512]
    assert req.size.tolist() == [8 * 512, 256 * 512, 8 * 512]
    assert req.write.tolist() == [False, True, True]
    assert req.described["bad_lines"] == 0 and req.described["first_bad"] is None
    # Per-process statistics (blkparse -s) are summary too.
    per_process = ["cat (4102)", " Reads Queued:           1,        4KiB", ""]
    assert load(blkparse(tmp_path / "p.txt", BLK_EVENTS, per_process + BLK_SUMMARY), 1.0)


def test_blkparse_bad_lines_are_counted_named_and_refused_past_max_bad(tmp_path):
    events = list(BLK_EVENTS)
    events.insert(3, "  8,0    1        x     0.000001700  4102  Q   R 4096 + 8 [cat]")
    events.insert(10, "a line cut sh")
    path = blkparse(tmp_path / "t.txt", events)
    for max_bad in (0, 1):
        e = user_error(path, 1.0, max_bad=max_bad)
        assert e.message == (
            f"block trace `{path}`: 2 unreadable lines "
            "(first: line 6, sequence `x` is not a whole number)"
        )
        assert e.hint == "fix them or allow them with --max-bad 2"
    req = load(path, 1.0, max_bad=2)
    assert len(req) == 3
    assert req.described["bad_lines"] == 2
    assert req.described["first_bad"]["line"] == 6


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("  8,0    1       99     0.100000000  4102  Q   R 2048 + y [cat]", "count `y` is not"),
        ("  8,0    1       99     0.1  4102  Q   R 2048 +", "a Q line without `sector +"),
        ("  8,0    1       99     1e-3  4102  Q   R 2048 + 8 [cat]", "time `1e-3` is not"),
        (
            "  8,0    1       99     0.1  4102  Q   R 99999999999999999 + 8 [c]",
            "sector `99999999999999999` is past",
        ),
        ("hello", "not a blkparse event line"),
    ],
)
def test_a_blkparse_line_s_reason_says_what_is_wrong(tmp_path, line, reason):
    path = blkparse(tmp_path / "t.txt", [BLK_EVENTS[0], line, *BLK_EVENTS[1:]])
    assert f"(first: line 4, {reason}" in user_error(path, 1.0).message


def test_blkparse_without_queue_lines_is_one_error(tmp_path):
    path = blkparse(tmp_path / "t.txt", [e for e in BLK_EVENTS if "  Q  " not in e])
    assert "no Q (queue) lines" in user_error(path, 1.0).message


# A replay run's speed-up


def replay_run(
    path: Path, offsets_ns: list[int], speedup: object = 8, spread: str = "start"
) -> Path:
    """A replay run's directory as the store keeps it: the manifest's config and the columns
    of requests.parquet the simulator reads."""
    n = len(offsets_ns)
    path.mkdir(parents=True)
    table = pa.table(
        {
            "offset_ns": pa.array(offsets_ns, pa.int64()),
            "method": ["GET"] * n,
            "target": [f"/f{i % 7}.html" for i in range(n)],
            "log_status": pa.array([200] * n, pa.int32()),
            "log_bytes": pa.array([1000 + i for i in range(n)], pa.int64()),
        }
    )
    pq.write_table(table, path / "requests.parquet")
    config = {"speedup": speedup, "spread": spread}
    (path / "manifest.json").write_text(json.dumps({"kind": "replay", "config": config}))
    return path


def seconds(counts: list[int]) -> list[int]:
    """Offsets (ns) of a whole-second trace with counts[k] requests in second k."""
    return [k * 1_000_000_000 for k, n in enumerate(counts) for _ in range(n)]


def test_a_replay_run_takes_its_own_speedup_unless_one_is_given(tmp_path):
    run = replay_run(tmp_path / "run", seconds([2, 0, 1, 3]))
    own = load(run, None)
    assert own.t_ns.tolist() == [0, 0, 250_000_000] + [375_000_000] * 3
    assert own.described["speedup"] == 8
    assert own.described["speedup_from"] == "the replay run's manifest"
    given = load(run, 2.0)
    assert given.t_ns.tolist() == [0, 0, 1_000_000_000] + [1_500_000_000] * 3
    assert (given.described["speedup"], given.described["speedup_from"]) == (2.0, "--speedup")


def test_any_other_trace_takes_speedup_one_by_default(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("".join(MSR_ROWS))
    req = load(path, None)
    assert req.t_ns[-1] == 1_000_000_000
    assert (req.described["speedup"], req.described["speedup_from"]) == (1.0, "default")


@pytest.mark.parametrize("speedup", [None, 0, -8, "fast", True])
def test_a_replay_run_without_a_speedup_of_its_own_is_one_error(tmp_path, speedup):
    run = replay_run(tmp_path / "run", seconds([1, 1]), speedup=speedup)
    e = user_error(run, None)
    assert "speed-up" in e.message and "--speedup" in (e.hint or "")
    assert len(load(run, 4.0)) == 2


# Arrival jitter


def test_jitter_keeps_order_and_seconds_and_draws_by_seed(tmp_path):
    counts = [3, 0, 5, 1, 4, 2]
    req = load(replay_run(tmp_path / "run", seconds(counts)), None)
    second_ns = 1_000_000_000 // 8
    k = np.repeat(np.arange(len(counts)), counts)
    a = req.arrivals(1, "uniform")
    assert a.dtype == np.uint64 and a.size == len(req)
    assert (a[1:] >= a[:-1]).all()
    assert ((a >= k * second_ns) & (a < (k + 1) * second_ns)).all()
    assert np.array_equal(a, req.arrivals(1, "uniform"))
    assert not np.array_equal(a, req.arrivals(2, "uniform"))
    assert req.described["arrival_jitter"] == "uniform"
    assert np.array_equal(req.arrivals(1, "none"), k * second_ns)
    assert req.described["arrival_jitter"] == "none"
    assert np.array_equal(req.t_ns, k * second_ns), "t_ns stays the seconds' starts"


def test_block_traces_and_spread_traces_keep_their_own_times(tmp_path):
    msr = tmp_path / "t.csv"
    msr.write_text("".join(MSR_ROWS))
    blk = blkparse(tmp_path / "t.txt", BLK_EVENTS)
    even = replay_run(tmp_path / "run", [0, 500_000_000, 1_000_000_000], spread="even")
    for path in (msr, blk, even):
        req = load(path, None)
        for rule in ("uniform", "none"):
            assert np.array_equal(req.arrivals(7, rule), req.t_ns), (path, rule)
    assert load(msr, None).described["arrival_jitter"] == "block trace: own times"
    assert load(even, None).described["arrival_jitter"] == "the trace's own times"


def test_an_unknown_jitter_rule_is_one_error(tmp_path):
    req = load(replay_run(tmp_path / "run", seconds([2])), None)
    with pytest.raises(ConfigError) as e:
        req.arrivals(1, "gaussian")
    assert e.value.message == "--arrival-jitter `gaussian` is unknown"
    assert e.value.hint == "uniform or none"


@pytest.mark.fuzz
@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, 40), min_size=1, max_size=30).filter(any),
    st.sampled_from([1.0, 3.0, 8.0, 1000.0, 0.25]),
    st.integers(0, 2**63),
)
def test_jitter_keeps_each_request_in_order_and_in_its_second(counts, speedup, seed):
    with tempfile.TemporaryDirectory() as tmp:
        req = load(replay_run(Path(tmp) / "run", seconds(counts)), speedup)
        a = req.arrivals(seed, "uniform")
    k = np.repeat(np.arange(len(counts)), counts)
    k -= k[0]  # from the first second with a request
    start = np.round(k * 1e9 / speedup).astype(np.uint64)
    end = np.round((k + 1) * 1e9 / speedup).astype(np.uint64)
    assert (a[1:] >= a[:-1]).all()
    assert ((a >= start) & ((a < end) | (end == start))).all()
    assert np.array_equal(req.arrivals(seed, "none"), start)


_GOOD = st.builds(
    "{},web,{},{},{},{},{}\n".format,
    st.integers(0, 10**12), st.integers(0, 9), st.sampled_from(["Read", "Write", "write"]),
    st.integers(0, 2**40), st.integers(0, 2**20), st.integers(0, 10**6),
)  # fmt: skip
_BAD = st.one_of(
    st.text(st.characters(blacklist_characters="\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"),
            min_size=1, max_size=40).filter(str.strip),
    st.builds("1,web,0,{},0,4096,1\n".format, st.sampled_from(["Trim", "R", " Read"])),
    st.builds("1,web,0,Read,{},4096,1\n".format, st.sampled_from(["-1", "1.5", "", "2e3"])),
)  # fmt: skip


@pytest.mark.fuzz
@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.booleans(), _GOOD, _BAD), min_size=1, max_size=12),
       st.integers(0, 12), st.booleans())  # fmt: skip
def test_msr_rows_are_requests_or_counted_bad_never_lost(rows, max_bad, header):
    """Every row is a request or a bad line (whichever reader read it), or one error."""
    good = sorted(rows, key=lambda r: int(r[1].split(",")[0]))
    lines = [g if ok else b.rstrip("\n") + "\n" for ok, g, b in good]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "t.csv"
        path.write_text((HEADER if header else "") + "".join(lines))
        try:
            req = load(path, 1.0, max_bad=max_bad)
        except ConfigError as e:
            assert "\n" not in e.message
            return
    assert len(req) + req.described["bad_lines"] == len(lines)
    assert req.described["bad_lines"] <= max_bad
    assert len(req) <= sum(ok for ok, _, _ in rows)
