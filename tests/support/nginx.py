"""nginx (Debian's nginx-light) on loopback for the replay tests and benchmarks: serves ROOT,
answers `/slow` after a delay (the echo module's echo_sleep, shipped with nginx-light) and logs
every request in Combined format with its Host header after. Started in the foreground, ready
once it accepts a connection, stopped with its worker at the end."""

from __future__ import annotations

import contextlib
import shutil
import signal
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

from support.wait import wait_for

ECHO_MODULE = Path("/usr/lib/nginx/modules/ngx_http_echo_module.so")

CONFIG = """\
load_module {echo};
daemon off;
user root;
worker_processes {workers};
pid {dir}/nginx.pid;
error_log {dir}/error.log;
events {{ worker_connections 16384; }}
http {{
    # Combined, and the Host header each request carried.
    log_format replay '$remote_addr - $remote_user [$time_local] "$request" $status '
                      '$body_bytes_sent "$http_referer" "$http_user_agent" "$http_host"';
    access_log {dir}/access.log replay;
    client_body_temp_path {dir}/body;
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;
    keepalive_requests 1000000;
    server {{
        listen 127.0.0.1:{port} backlog=4096 reuseport{ssl};
        {certificate}
        root {root};
        location /slow {{ echo_sleep {slow_s}; echo "slow"; }}
    }}
}}
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def accepts(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def self_signed(workdir: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 signed by its own key (cert.pem, key.pem in ``workdir``)."""
    cert, key = workdir / "cert.pem", workdir / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
         "-nodes", "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1", "-addext", "basicConstraints=critical,CA:FALSE"],
        check=True, capture_output=True,
    )  # fmt: skip
    return cert, key


@contextlib.contextmanager
def nginx(
    root: Path,
    workdir: Path,
    *,
    slow_s: float = 2.0,
    workers: int = 1,
    cpu: int | None = None,
    tls: bool = False,
) -> Iterator[str]:
    """nginx serving ``root``; yields its URL (``http://127.0.0.1:PORT``). With ``tls`` it is
    ``https://``, with a self-signed certificate in ``workdir/cert.pem``."""
    binary = shutil.which("nginx") or "/usr/sbin/nginx"
    workdir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    conf = workdir / "nginx.conf"
    certificate = ""
    if tls:
        cert, key = self_signed(workdir)
        certificate = f"ssl_certificate {cert}; ssl_certificate_key {key};"
    conf.write_text(CONFIG.format(echo=ECHO_MODULE, dir=workdir, root=root, port=port,
                                  slow_s=slow_s, workers=workers, ssl=" ssl" if tls else "",
                                  certificate=certificate))  # fmt: skip
    cmd = [binary, "-c", str(conf), "-p", str(workdir), "-e", str(workdir / "error.log")]
    if cpu is not None:
        cmd = ["taskset", "-c", str(cpu), *cmd]
    # Its messages go to error.log (-e), which a failing wait shows.
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, text=True)
    try:
        wait_for(lambda: accepts(port), proc, what="nginx to accept connections")
        yield f"{'https' if tls else 'http'}://127.0.0.1:{port}"
    finally:
        proc.send_signal(signal.SIGQUIT)  # graceful: the worker finishes and exits too
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def access_lines(workdir: Path) -> list[str]:
    log = workdir / "access.log"
    return log.read_text().splitlines() if log.exists() else []
