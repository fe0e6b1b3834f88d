"""parse(format(x)) = x: logs that hypothesis makes up, written the way Apache writes them
(quotes and backslashes escaped, `-` for no body, each line's own zone, lines out of order),
read back to the same requests in time order."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from tempfile import TemporaryDirectory

from hypothesis import given
from hypothesis import strategies as st

from iowatt.trace.log import read_log

MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

ipv4 = st.tuples(*[st.integers(0, 255)] * 4).map(lambda t: ".".join(map(str, t)))
ipv6 = st.lists(st.integers(0, 0xFFFF), min_size=8, max_size=8).map(
    lambda g: ":".join(f"{x:x}" for x in g)
)
hostname = st.from_regex(r"[a-z][a-z0-9-]{0,20}(\.[a-z]{2,6}){1,2}", fullmatch=True)
# A target as a server logs it: no raw space or control character; quotes and backslashes
# escaped by the writer below.
target = st.text(
    st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=60
).map(lambda t: "/" + t)
quoted = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=40)

request = st.fixed_dictionaries(
    {
        "host": st.one_of(ipv4, ipv6, hostname),
        "user": st.one_of(st.just("-"), st.from_regex(r"[a-z]{1,8}", fullmatch=True)),
        "time": st.integers(946_684_800, 2_000_000_000),  # 2000 .. 2033
        "zone": st.integers(-12 * 60, 14 * 60).map(lambda m: m - m % 15),
        "method": st.sampled_from(["GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS"]),
        "target": target,
        "protocol": st.sampled_from(["HTTP/1.0", "HTTP/1.1", "HTTP/2.0", ""]),
        "status": st.integers(100, 599),
        "bytes": st.one_of(st.none(), st.integers(0, 2**53)),
        "referer": quoted,
        "agent": quoted,
    }
)


def escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def clf_time(epoch: int, zone_min: int) -> str:
    local = dt.datetime.fromtimestamp(epoch, dt.timezone.utc) + dt.timedelta(minutes=zone_min)
    sign, m = ("+", zone_min) if zone_min >= 0 else ("-", -zone_min)
    return (
        f"{local.day:02d}/{MONTHS[local.month - 1]}/{local.year}:"
        f"{local.hour:02d}:{local.minute:02d}:{local.second:02d} {sign}{m // 60:02d}{m % 60:02d}"
    )


def combined(r: dict) -> str:
    line = " ".join(x for x in (r["method"], escape(r["target"]), r["protocol"]) if x)
    sent = "-" if r["bytes"] is None else str(r["bytes"])
    return (
        f'{r["host"]} - {r["user"]} [{clf_time(r["time"], r["zone"])}] "{line}" {r["status"]} '
        f'{sent} "{escape(r["referer"])}" "{escape(r["agent"])}"'
    )


@given(st.lists(request, min_size=1, max_size=40))
def test_reading_what_apache_writes_gives_back_the_requests(requests):
    with TemporaryDirectory() as tmp:
        path = Path(tmp) / "access.log"
        path.write_text("".join(combined(r) + "\n" for r in requests))
        log = read_log(path)
    assert log.bad == 0, log.bad_lines
    expected = sorted(
        (
            (
                r["time"],
                r["zone"] * 60,
                n,
                r["host"],
                r["method"],
                r["target"],
                r["status"],
                r["bytes"],
            )
            for n, r in enumerate(requests, 1)
        ),
        key=lambda row: row[0],
    )
    columns = ["time_s", "zone_s", "line", "host", "method", "target", "status", "bytes"]
    got = [tuple(row.values()) for row in log.table.select(columns).to_pylist()]
    assert got == expected
