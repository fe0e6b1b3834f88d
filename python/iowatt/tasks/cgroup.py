"""``--memory``: the node's memory made real — a memory cgroup holding every task, capped at that
size, so a task that outgrows it is killed by the kernel and reported as out of memory (the
cgroup counts its OOM kills) rather than taking the machine down. cgroup v1's ``memory``
hierarchy when mounted, else a cgroup v2 mount with the ``memory`` controller.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager, suppress

from iowatt.errors import SourceUnavailableError
from iowatt.sweep.throttle import find_hierarchy, make_cgroup


@contextmanager
def memory_cgroup(memory_gb: float) -> Iterator[dict[str, str]]:
    """A cgroup capped at ``memory_gb``; yields what a task needs to enter it
    (``cgroup_procs``) and where its OOM kills are counted (``oom_counter``)."""
    found = find_hierarchy(v1_file="memory.limit_in_bytes", v2_controller="memory")
    if found is None:
        raise SourceUnavailableError(
            "--memory needs a memory cgroup, and none is mounted here",
            "mount cgroup v1 memory or use a cgroup v2 host with the memory controller",
        )
    version, root = found.version, found.root
    path = root / f"iowatt-tasks-{os.getpid()}"
    limit = str(int(memory_gb * 1e9))
    try:
        make_cgroup(path)
        if version == "v1":
            (path / "memory.limit_in_bytes").write_text(limit)
            if (path / "memory.memsw.limit_in_bytes").exists():
                (path / "memory.memsw.limit_in_bytes").write_text(limit)
        else:
            (path / "memory.max").write_text(limit)
            (path / "memory.swap.max").write_text("0")
    except OSError as e:
        raise SourceUnavailableError(
            f"cannot set up the memory cgroup `{path}`: {e.strerror}", "run iowatt as root"
        ) from None
    counter = "memory.oom_control" if version == "v1" else "memory.events"
    try:
        yield {"cgroup_procs": str(path / "cgroup.procs"), "oom_counter": str(path / counter)}
    finally:
        with suppress(OSError):  # a task still inside: the next iowatt removes it
            os.rmdir(path)
