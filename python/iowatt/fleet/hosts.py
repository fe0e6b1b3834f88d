"""Which workers of a cluster run (``--hosts``), what each is called in results, and where each
measures (``--target PATH`` for all, ``--target HOST=PATH`` for one).

A worker is called by its Dask name when that is a word (``local-0``; a scheduler started by
hand names workers with ``dask worker --name``), else by its machine's address (an ssh cluster
names its workers by their address, a batch one numbers them); two workers on one machine get
their port added.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from iowatt.errors import ConfigError

_WORD = re.compile(r"^[\w.\-]+$")
# HOST=PATH: a host name has no slash, so `--target ./a=b` stays a path.
_PER_HOST = re.compile(r"^([\w.\-:\[\]]+)=(.+)$")


@dataclass(frozen=True)
class Targets:
    """``--target`` values: one for every host without its own, and per host."""

    default: Path | None = None
    per_host: dict[str, Path] = field(default_factory=dict)

    def of(self, host: str) -> Path | None:
        return self.per_host.get(host, self.default)


def parse_targets(values: Sequence[str]) -> Targets:
    default: Path | None = None
    per_host: dict[str, Path] = {}
    for v in values:
        m = _PER_HOST.match(v)
        if m and "/" not in m[1]:
            if m[1] in per_host:
                raise ConfigError(
                    f"--target {v}: host {m[1]} has a target already",
                    "give each host one --target HOST=PATH",
                )
            per_host[m[1]] = Path(m[2])
        elif default is not None:
            raise ConfigError(
                f"--target {v}: a target for every host is given already ({default})",
                "give one --target PATH, and --target HOST=PATH for hosts that differ",
            )
        else:
            default = Path(v)
    return Targets(default, per_host)


def host_names(workers: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """Worker address → the name results call it by (unique; `file_safe` makes it a file name)."""

    def machine(addr: str) -> str:
        return addr.split("://")[-1].rsplit(":", 1)[0]

    names: dict[str, str] = {}
    for addr, info in workers.items():
        name = info.get("name")
        # ssh clusters name workers by their address, batch ones by a number: neither says
        # which machine in a word.
        if isinstance(name, str) and _WORD.match(name) and not name.isdigit():
            names[addr] = name
        else:
            names[addr] = machine(addr)
    seen: dict[str, int] = {}
    for n in names.values():
        seen[n] = seen.get(n, 0) + 1
    return {a: n if seen[n] == 1 else f"{n}-{_port(a)}" for a, n in names.items()}


def file_safe(host: str) -> str:
    """A host's name as part of a file name (an IPv6 address has colons and brackets)."""
    return re.sub(r"[^\w.\-]", "_", host)


def _port(addr: str) -> str:
    return addr.rsplit(":", 1)[-1]


def pick(
    workers: Mapping[str, Mapping[str, Any]], hosts: Sequence[str] | None, targets: Targets
) -> dict[str, str]:
    """The workers that run (address → name, in name order): those ``hosts`` names, or every
    worker. A name in ``hosts`` or in a per-host target that no worker has is an error listing
    the names there are."""
    names = host_names(workers)
    by_name = {n: a for a, n in names.items()}
    known = ", ".join(sorted(by_name))
    for where, wanted in (("--hosts", hosts or ()), ("--target", targets.per_host)):
        for h in wanted:
            if h not in by_name:
                raise ConfigError(
                    f"{where}: no worker is called `{h}`", f"the cluster's workers are {known}"
                )
    chosen = sorted(hosts or by_name, key=_natural)
    if len(set(chosen)) != len(chosen):
        raise ConfigError(
            f"--hosts {','.join(hosts or ())}: a host is named twice", "name each host once"
        )
    for h in targets.per_host:
        if h not in chosen:
            raise ConfigError(
                f"--target {h}=…: host {h} is not among --hosts",
                "add it to --hosts, or drop its target",
            )
    return {by_name[h]: h for h in chosen}


def _natural(name: str) -> list[Any]:
    """local-2 before local-10."""
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)]
