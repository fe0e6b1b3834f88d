"""``--cluster SPEC``: where iowatt's work runs on Dask, as a user names it (docs/fleets.md).

- ``tcp://HOST:PORT`` (or ``HOST:PORT``): an existing Dask scheduler and its workers;
- ``local:N``: a LocalCluster of N worker processes here, named ``local-0`` … ``local-N-1``
  (for N disks of one machine);
- a cluster file (TOML) with ``kind = "ssh"`` (``hosts``: the scheduler's host first, then one
  worker per host) or ``"slurm"``, ``"sge"``, ``"pbs"`` (dask-jobqueue's options: ``cores``,
  ``memory``, ``walltime``, ``queue``, ``account``, ``job_extra_directives``, …, and
  ``workers``: how many batch jobs, one worker each).

Every key is checked here, before anything starts: an unknown one is named with the keys its
kind takes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from iowatt.errors import ConfigError
from iowatt.tomlfile import read_toml
from iowatt.units import check_int

KINDS = ("ssh", "slurm", "sge", "pbs")
# The keys each kind of cluster file takes besides `kind` and `workers`.
_JOBQUEUE = (
    "cores",
    "memory",
    "walltime",
    "queue",
    "account",
    "processes",
    "interface",
    "job_extra_directives",
    "job_script_prologue",
    "local_directory",
    "python",
    "nthreads",
)
KEYS: dict[str, tuple[str, ...]] = {
    "ssh": ("hosts", "nthreads", "python", "user", "port", "known_hosts", "client_keys"),
    "slurm": _JOBQUEUE,
    "sge": (*_JOBQUEUE, "resource_spec"),
    "pbs": (*_JOBQUEUE, "resource_spec"),
}
# A scheduler address as Dask writes them: SCHEME://… (tcp, tls, ws, wss, inproc, ucx), or
# HOST:PORT for tcp.
_URL = re.compile(r"^(tcp|tls|ws|wss|inproc|ucx)://\S+$")
_HOST_PORT = re.compile(r"^\[?[\w.\-:]+\]?:\d{1,5}$")
_EXAMPLE = "--cluster local:4, --cluster tcp://head:8786 or --cluster cluster.toml"


@dataclass(frozen=True)
class ClusterSpec:
    """A parsed ``--cluster``: ``kind`` is ``address``, ``local`` or a cluster file's kind."""

    kind: str
    text: str
    workers: int | None = None
    address: str | None = None
    options: dict[str, Any] = field(default_factory=dict)

    def describe(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "text": self.text,
            "workers": self.workers,
            "address": self.address,
            "options": self.options,
        }


def parse(text: str) -> ClusterSpec:
    text = text.strip()
    if text.startswith("local:"):
        n = text.removeprefix("local:")
        if not n.isdigit():
            raise ConfigError(f"--cluster `{text}`: N in local:N is not a number", _EXAMPLE)
        return ClusterSpec("local", text, check_int(int(n), "--cluster local:N", 1, 256, "local:4"))
    path = Path(text)
    if path.suffix == ".toml" or path.is_file():
        return _from_file(path, text)
    if _URL.match(text):
        return ClusterSpec("address", text, address=text)
    if _HOST_PORT.match(text):
        return ClusterSpec("address", text, address=f"tcp://{text}")
    raise ConfigError(
        f"--cluster `{text}` is neither local:N, a scheduler address nor a file", f"e.g. {_EXAMPLE}"
    )


def _from_file(path: Path, text: str) -> ClusterSpec:
    if not path.is_file():
        raise ConfigError(f"cluster file `{path}` does not exist", "check the path")
    doc = read_toml(path, "--cluster")
    kind = doc.get("kind")
    if kind not in KINDS:
        raise ConfigError(
            f"cluster file `{path}`: kind = {kind!r} is not one of {', '.join(KINDS)}",
            'e.g. kind = "slurm" (docs/fleets.md has an example of each)',
        )
    options = {k: v for k, v in doc.items() if k not in ("kind", "workers")}
    for key in options:
        if key not in KEYS[kind]:
            raise ConfigError(
                f"cluster file `{path}`: unknown key `{key}` for kind {kind}",
                f"{kind} takes workers, {', '.join(KEYS[kind])}",
            )
    if kind == "ssh":
        hosts = options.get("hosts")
        if not (
            isinstance(hosts, list)
            and len(hosts) >= 2
            and all(isinstance(h, str) and h for h in hosts)
        ):
            raise ConfigError(
                f"cluster file `{path}`: hosts must list the scheduler's host, then the workers'",
                'e.g. hosts = ["head", "node1", "node2"]',
            )
        workers = len(hosts) - 1
    else:
        workers = check_int(
            doc.get("workers", 1), f"cluster file `{path}`: workers", 1, 10_000, "workers = 4"
        )
        for key in ("cores", "memory"):
            if key not in options:
                raise ConfigError(
                    f"cluster file `{path}`: a {kind} cluster needs `{key}`",
                    'e.g. cores = 8 and memory = "16GB" (what one batch job asks for)',
                )
    return ClusterSpec(kind, text, workers, None, options)
