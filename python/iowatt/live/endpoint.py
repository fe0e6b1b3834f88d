"""Serving a board: an HTTP endpoint in Prometheus's text format (``--serve``), or node_exporter's
textfile collector (``--textfile``), written atomically once a second.

Both are opened before the run starts, so a port in use or a directory that cannot be written
stops the command at once with one line; once the run is under way, a failure of either is said
once and the run goes on.
"""

from __future__ import annotations

import errno
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from iowatt.errors import ConfigError
from iowatt.live.board import Board, fresh_board

DEFAULT_ADDR = "127.0.0.1"
TEXTFILE_NAME = "iowatt.prom"  # node_exporter reads *.prom
TEXTFILE_EVERY_S = 1.0


@dataclass(frozen=True)
class Serve:
    """What the user asked for: ``--serve``, ``--serve-linger``, ``--textfile``."""

    address: tuple[str, int] | None = None
    linger_s: float = 0.0
    textfile: Path | None = None

    @property
    def wanted(self) -> bool:
        return self.address is not None or self.textfile is not None


def parse_address(text: str) -> tuple[str, int]:
    """``9464`` → (127.0.0.1, 9464); ``0.0.0.0:9464``, ``[::1]:9464``, ``localhost:9464``;
    port 0 picks one."""
    host, sep, port = text.rpartition(":")
    host = host.strip("[]") if sep else DEFAULT_ADDR
    if not port.isdigit() or int(port) > 65535:
        raise ConfigError(
            f"--serve `{text}` has no port number (0..65535)",
            "give a port, or ADDR:PORT, e.g. --serve 9464 or --serve 0.0.0.0:9464",
        )
    return host or DEFAULT_ADDR, int(port)


class Endpoint:
    """The open endpoint and/or textfile of one command."""

    def __init__(self, board: Board, serve: Serve, note: Callable[[str], None]) -> None:
        from iowatt.live.exposition import registry_of

        self.board, self.serve, self.note = board, serve, note
        self.registry = registry_of(board, lambda why: note(f"metrics endpoint failed: {why}"))
        self.url: str | None = None
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._writer: threading.Thread | None = None
        self._textfile_failed = False
        # The textfile is checked first: a refused one leaves no listener behind.
        if serve.textfile is not None:
            self._check_textfile(serve.textfile)
        if serve.address is not None:
            self._listen(*serve.address)
        if serve.textfile is not None:
            path = serve.textfile / TEXTFILE_NAME
            self.note(f"writing metrics to {path} every {TEXTFILE_EVERY_S:g} s")
            self._writer = threading.Thread(target=self._keep_writing, daemon=True)
            self._writer.start()

    def _listen(self, host: str, port: int) -> None:
        try:
            self._server = _server(host, port, self._app())
        except OSError as e:
            where = f"{host}:{port}"
            if e.errno == errno.EADDRINUSE:
                raise ConfigError(
                    f"--serve `{where}`: the port is in use",
                    "pick another port, or --serve 0 for a free one",
                ) from None
            if e.errno == errno.EACCES:
                raise ConfigError(
                    f"--serve `{where}`: not allowed to listen on port {port}",
                    "ports below 1024 need root; use one above, e.g. 9464",
                ) from None
            raise ConfigError(
                f"--serve `{where}`: {e.strerror or e}",
                "give an address of this machine, e.g. 127.0.0.1 or 0.0.0.0",
            ) from None
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        bound_host, bound_port = self._server.server_address[:2]
        shown = f"[{bound_host}]" if ":" in bound_host else bound_host
        self.url = f"http://{shown}:{bound_port}/metrics"
        self.note(f"serving metrics on {self.url}")

    def _app(self) -> Any:
        """prometheus_client's WSGI app; a scrape that fails answers 500 in one line (the
        failure was said once already), not a traceback on the terminal per scrape."""
        from prometheus_client import make_wsgi_app

        metrics = make_wsgi_app(self.registry)

        def app(environ: dict[str, Any], start_response: Any) -> Any:
            try:
                return metrics(environ, start_response)
            except Exception:
                start_response(
                    "500 Internal Server Error", [("Content-Type", "text/plain")], sys.exc_info()
                )
                return [b"iowatt: reading the run's metrics failed; the run goes on\n"]

        return app

    def _check_textfile(self, directory: Path) -> None:
        if not directory.is_dir():
            raise ConfigError(
                f"--textfile `{directory}` is not a directory",
                "give node_exporter's --collector.textfile.directory",
            )
        try:
            self._write_textfile()
        except OSError as e:
            raise ConfigError(
                f"--textfile `{directory}` cannot be written: {e.strerror or e}",
                "give a directory this user may write, e.g. /var/lib/node_exporter/textfile",
            ) from None

    def _write_textfile(self) -> None:
        from prometheus_client import write_to_textfile

        assert self.serve.textfile is not None
        # write_to_textfile writes a temporary file beside it and renames it (atomic).
        write_to_textfile(str(self.serve.textfile / TEXTFILE_NAME), self.registry)

    def _keep_writing(self) -> None:
        while not self._stop.wait(TEXTFILE_EVERY_S):
            self._write_quietly()

    def _write_quietly(self) -> None:
        try:
            self._write_textfile()
        except Exception as e:
            if not self._textfile_failed:
                self._textfile_failed = True
                self.note(f"writing the metrics textfile failed: {e}; the run goes on")

    def close(self) -> None:
        """Ends the run's metrics: a last textfile, then the endpoint after the linger."""
        self.board.end()
        self._stop.set()
        if self._writer is not None:
            self._writer.join()
            self._write_quietly()
        if self._server is not None:
            if self.serve.linger_s > 0:
                self.note(f"serving the final metrics for {self.serve.linger_s:g} s (Ctrl-C ends)")
                with suppress(KeyboardInterrupt):
                    threading.Event().wait(self.serve.linger_s)
            self._server.shutdown()
            self._server.server_close()
            assert self._thread is not None
            self._thread.join()


@contextmanager
def serving(serve: Serve, note: Callable[[str], None]) -> Iterator[Board]:
    """A fresh board for the command, served as asked while the block runs."""
    board = fresh_board(serve.wanted)
    if not serve.wanted:
        yield board
        return
    endpoint = Endpoint(board, serve, note)
    try:
        yield board
    finally:
        endpoint.close()


def _server(host: str, port: int, app: Any) -> Any:
    """A threading WSGI server on ``host:port`` (IPv4 or IPv6, as the address resolves),
    logging nothing."""
    from socketserver import ThreadingMixIn
    from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

    family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0][0]

    class Server(ThreadingMixIn, WSGIServer):
        address_family = family
        daemon_threads = True

    class Quiet(WSGIRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

    return make_server(host, port, app, Server, handler_class=Quiet)
