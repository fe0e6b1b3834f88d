"""A replay has no run deadline: `--duration` picks the log's requests, each is sent, and each
ends within its own `--timeout`. A server that stops answering for the last requests therefore
shows in them, counted from when each was due, however long after the schedule they end."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from iowatt import replay
from iowatt._engine import ReplayProgress
from support.cli import summary

# Log seconds of the requests; the last three, at 3 s, find the server stalled. The one at 5 s
# is past `--duration 4s` and is not replayed.
SECONDS = [0, 0, 1, 1, 2, 2, 3, 3, 3, 5]
STALLED = 3


class Stalling(ThreadingHTTPServer):
    """Answers `/ok` at once and holds each `/stall` until `release` is set."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.release = threading.Event()
        self.held = 0
        self.lock = threading.Lock()


class _Handler(BaseHTTPRequestHandler):
    server: Stalling

    def do_GET(self) -> None:
        if self.path == "/stall":
            with self.server.lock:
                self.server.held += 1
            # Bounded, so a test that fails cannot leave the replay waiting for ever.
            self.server.release.wait(60)
        body = b"ok"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[Stalling]:
    s = Stalling()
    thread = threading.Thread(target=s.serve_forever, daemon=True)
    thread.start()
    try:
        yield s
    finally:
        s.release.set()
        s.shutdown()
        s.server_close()


def test_requests_a_server_stops_answering_at_the_end_are_recorded_from_their_due_time(
    tmp_path: Path, server: Stalling
) -> None:
    log = tmp_path / "access.log"
    paths = ["ok"] * (len(SECONDS) - 1 - STALLED) + ["stall"] * STALLED + ["ok"]
    log.write_text(
        "".join(
            f'10.0.0.{i} - - [02/Mar/2026:00:00:0{second} +0000] "GET /{path} HTTP/1.1" 200 2 '
            '"-" "-"\n'
            for i, (second, path) in enumerate(zip(SECONDS, paths, strict=True))
        )
    )
    port = server.server_address[1]
    config = replay.plan(
        log,
        f"http://127.0.0.1:{port}",
        tmp_path / "results",
        speedup=10,
        duration="4s",
        report=False,
    )
    released: list[int] = []

    def on_progress(p: ReplayProgress) -> None:
        # Every request sent, every one answered but those the server holds: only now does
        # it answer them, long after the schedule's last due time.
        if not released and p["issued"] == p["total"] and p["open"] == server.held == STALLED:
            released.append(time.monotonic_ns())
            server.release.set()

    run = replay.run(config, on_progress)
    assert released, "the replay ended without waiting for the held requests"
    rows = pq.read_table(run / "requests.parquet").to_pylist()
    assert len(rows) == len(SECONDS) - 1, "--duration 4s selects the first four log seconds"
    assert [row["error"] for row in rows] == [None] * len(rows)
    assert [row["status"] for row in rows] == [200] * len(rows)
    t0 = summary(run)["replay"]["t0_ns"]
    for row in rows:
        assert row["completion_ns"] == row["done_ns"] - row["due_ns"]
        assert row["completion_ns"] - row["completion_sent_ns"] == row["lateness_ns"] >= 0
    # The held requests ended after the server answered them, and each counts from its due
    # time, not from the schedule's end nor from its send.
    for row in rows[-STALLED:]:
        assert row["target"] == "/stall"
        assert t0 + row["done_ns"] >= released[0]
        assert row["completion_ns"] >= released[0] - (t0 + row["due_ns"])
    s = summary(run)["replay"]
    assert (s["measured"], s["answered"], s["failed"]) == (len(rows), len(rows), 0)
    hists = pq.read_table(run / "latency.parquet").to_pylist()
    completion = [h for h in hists if h["flowop"] == "completion"]
    assert sum(h["count"] for h in completion) == len(rows)
    # The slowest completion is a held request's, from its due time, to the histogram's
    # three significant digits.
    slowest = max(row["completion_ns"] for row in rows[-STALLED:])
    assert max(h["value_ns"] for h in completion) == pytest.approx(slowest, rel=1e-3)
