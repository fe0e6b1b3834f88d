"""OpenSSH's sshd on loopback for the ssh cluster tests: its own host key, config and
authorized key in a directory of the test's, started in the foreground, ready once it accepts a
connection, stopped at the end. Yields a cluster file for `--cluster` whose hosts are this
machine (the scheduler, then the workers), with a known_hosts file holding sshd's key."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from support.nginx import accepts, free_port
from support.wait import wait_for

CONFIG = """\
ListenAddress 127.0.0.1
Port {port}
HostKey {dir}/host_key
AuthorizedKeysFile {dir}/authorized_keys
PermitRootLogin prohibit-password
StrictModes no
UsePAM no
PidFile {dir}/sshd.pid
"""


@contextmanager
def sshd_cluster(workdir: Path, workers: int) -> Iterator[Path]:
    sshd = shutil.which("sshd") or "/usr/sbin/sshd"
    if not Path(sshd).exists():
        pytest.skip("sshd is not installed (Debian: openssh-server)")
    pytest.importorskip("asyncssh")
    workdir.mkdir(parents=True, exist_ok=True)
    for key in ("host_key", "client_key"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(workdir / key)],
                       check=True)  # fmt: skip
    shutil.copy(workdir / "client_key.pub", workdir / "authorized_keys")
    port = free_port()
    (workdir / "sshd_config").write_text(CONFIG.format(port=port, dir=workdir))
    (workdir / "known_hosts").write_text(
        f"[127.0.0.1]:{port} " + " ".join((workdir / "host_key.pub").read_text().split()[:2])
    )
    Path("/run/sshd").mkdir(exist_ok=True)  # its privilege separation directory
    proc = subprocess.Popen(
        [sshd, "-D", "-e", "-f", str(workdir / "sshd_config")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        wait_for(lambda: accepts(port), proc, what="sshd to listen")
        hosts = ", ".join(['"127.0.0.1"'] * (workers + 1))
        cluster = workdir / "cluster.toml"
        cluster.write_text(
            f'kind = "ssh"\nhosts = [{hosts}]\nport = {port}\n'
            f'known_hosts = "{workdir / "known_hosts"}"\n'
            f'client_keys = ["{workdir / "client_key"}"]\npython = "{sys.executable}"\n'
        )
        yield cluster
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
