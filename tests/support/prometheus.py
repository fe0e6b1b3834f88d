"""Prometheus (Debian's ``prometheus`` package) on loopback for the live-metrics tests: scrapes
the targets it is given once a second, keeps its TSDB in a temporary directory and answers
PromQL through its HTTP API. Started in the foreground, ready once ``/-/ready`` answers 200,
stopped and its directory removed at the end."""

from __future__ import annotations

import contextlib
import json
import shutil
import signal
import subprocess
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from support.nginx import free_port
from support.wait import wait_for

SCRAPE_INTERVAL = "1s"
JOB = "iowatt"
HTTP_TIMEOUT_S = 10.0


def target_of(url: str) -> str:
    """``http://127.0.0.1:PORT/metrics`` → ``127.0.0.1:PORT``, as a static target names it."""
    return urllib.parse.urlsplit(url).netloc


def config(targets: list[str], interval: str = SCRAPE_INTERVAL) -> dict[str, Any]:
    """One job scraping ``targets`` (``host:port``) at ``/metrics`` every ``interval``.
    Prometheus reads YAML, and JSON is YAML."""
    return {
        "global": {
            "scrape_interval": interval,
            "scrape_timeout": interval,  # may not exceed the interval
            "evaluation_interval": interval,
        },
        "scrape_configs": [{"job_name": JOB, "static_configs": [{"targets": targets}]}],
    }


@dataclass
class Prometheus:
    url: str  # http://127.0.0.1:PORT
    proc: subprocess.Popen[str]
    log: Path

    def api(self, path: str, **params: str | float) -> Any:
        """GET ``/api/v1/PATH``; its ``data``, or the test fails with Prometheus's error."""
        query = urllib.parse.urlencode(params)
        try:
            with urllib.request.urlopen(
                f"{self.url}/api/v1/{path}?{query}", timeout=HTTP_TIMEOUT_S
            ) as response:
                body = json.load(response)
        except urllib.error.HTTPError as e:  # a bad query answers 400 with the reason
            body = json.load(e)
        if body.get("status") != "success":
            pytest.fail(
                f"prometheus: {path} {params}: {body.get('errorType')}: {body.get('error')}"
            )
        return body["data"]

    def query(self, expr: str, time: float | None = None) -> list[dict[str, Any]]:
        """An instant query at ``time`` (Unix seconds; now if None): its series, each with
        ``metric`` (labels) and ``value`` ([time, "value"]). A scalar answers one series."""
        params: dict[str, str | float] = {"query": expr}
        if time is not None:
            params["time"] = time
        data = self.api("query", **params)
        if data["resultType"] in ("scalar", "string"):
            return [{"metric": {}, "value": data["result"]}]
        return list(data["result"])

    def query_range(
        self, expr: str, start: float, end: float, step: float = 1.0
    ) -> list[dict[str, Any]]:
        """A range query: its series, each with ``metric`` and ``values`` ([[time, "value"], …])."""
        data = self.api("query_range", query=expr, start=start, end=end, step=step)
        return list(data["result"])

    def wait_until(
        self,
        expr: str,
        proc: subprocess.Popen[Any] | None = None,
        *,
        timeout_s: float = 60.0,
    ) -> list[dict[str, Any]]:
        """Polls ``expr`` until it has a result (a scrape brought it in); returns that result.
        Fails if Prometheus, or ``proc`` (the process being scraped), exits first."""
        found: list[dict[str, Any]] = []

        def answered() -> bool:
            self.check_running()
            if proc is not None and proc.poll() is not None:
                pytest.fail(f"the scraped process exited ({proc.returncode}) before `{expr}`")
            found[:] = self.query(expr)
            return bool(found)

        wait_for(answered, what=f"prometheus to answer `{expr}`", timeout_s=timeout_s)
        return found

    def check_running(self) -> None:
        if self.proc.poll() is not None:
            pytest.fail(f"prometheus exited ({self.proc.returncode}):\n{self.log.read_text()}")


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/-/ready", timeout=HTTP_TIMEOUT_S) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):  # not listening yet, or 503 while starting
        return False


@contextlib.contextmanager
def prometheus(*targets: str, interval: str = SCRAPE_INTERVAL) -> Iterator[Prometheus]:
    """Prometheus scraping ``targets`` (``host:port``, see :func:`target_of`) every
    ``interval``; yields it once ready."""
    binary = shutil.which("prometheus") or "/usr/bin/prometheus"
    if not Path(binary).exists():
        pytest.fail("prometheus is not installed (apt-get install prometheus)")
    workdir = Path(tempfile.mkdtemp(prefix="iowatt-prometheus-"))
    try:
        conf = workdir / "prometheus.yml"
        conf.write_text(json.dumps(config(list(targets), interval), indent=2))
        port = free_port()
        log = workdir / "prometheus.log"
        cmd = [
            binary,
            f"--config.file={conf}",
            f"--storage.tsdb.path={workdir / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ]
        with open(log, "w") as out:
            proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, text=True)
        server = Prometheus(f"http://127.0.0.1:{port}", proc, log)
        try:

            def ready() -> bool:
                server.check_running()
                return _ready(server.url)

            wait_for(ready, what="prometheus to be ready")
            yield server
        finally:
            proc.send_signal(signal.SIGTERM)  # flushes the head block and exits
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
