"""Where a run's tasks live, so that they share the machine as one:

- ``--memory``: the node's memory made real — a memory cgroup holding every task, capped at that
  size, so a task that outgrows it is killed by the kernel and reported as out of memory (the
  cgroup counts its OOM kills) rather than taking the machine down. cgroup v1's ``memory``
  hierarchy when mounted, else a cgroup v2 mount with the ``memory`` controller.
- always: one CPU cgroup for every task (cgroup v1's ``cpu`` hierarchy, else v2's ``cpu``
  controller; on v2 the memory cgroup itself, on v1 the group of the same name), so the
  scheduler weighs the run's tasks together against the rest of the machine, as one job. Where
  none can be made (no such hierarchy, not root), the tasks are started by one launcher
  process (:mod:`iowatt.tasks.launcher`) that called setsid once: they share its session, and
  so one autogroup, each still in a process group of its own.
- the group's CPU time, for the run's other load (docs/tasks.md): cgroup v1's
  ``cpuacct.usage`` — of the ``cpu`` group where ``cpuacct`` is mounted with ``cpu``, else of a
  group of the same name in the ``cpuacct`` hierarchy, which the tasks enter too — or v2's
  ``cpu.stat`` ``usage_usec``. Where there is neither (``usage`` null), the runner takes the
  tasks' own resource usage.

A task enters its cgroups before exec (``iowatt.tasks.execute.ENTER``), so its every page and
CPU second is charged to them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, suppress
from pathlib import Path
from typing import Any

from iowatt.errors import SourceUnavailableError
from iowatt.sweep.throttle import find_hierarchy, make_cgroup


def group_name() -> str:
    return f"iowatt-tasks-{os.getpid()}"


@contextmanager
def task_groups(memory_gb: float | None, here: bool) -> Iterator[dict[str, Any]]:
    """What every task of the session needs to enter its groups (``cgroup_procs``, or
    ``launcher``), where its OOM kills are counted (``oom_counter``), and how its CPU is
    grouped (``cpu_group``, for the manifest: ``kind``, ``path``, ``version`` and ``usage``, the
    file holding the group's CPU time, or null). ``here``: the workers are on this machine,
    where the cgroups are made; elsewhere each worker process starts its own launcher."""
    with ExitStack() as stack:
        out: dict[str, Any] = {"cgroup_procs": []}
        memory = None
        if memory_gb is not None and here:
            memory = stack.enter_context(memory_cgroup(memory_gb))
            out["cgroup_procs"].append(memory["cgroup_procs"])
            out["oom_counter"] = memory["oom_counter"]
        cpu = stack.enter_context(cpu_cgroup(memory)) if here else None
        if cpu is None:
            out["launcher"] = True
            out["cpu_group"] = {"kind": "session", "path": None, "version": None, "usage": None}
        else:
            if cpu["cgroup_procs"] not in out["cgroup_procs"]:
                out["cgroup_procs"].append(cpu["cgroup_procs"])
            usage = cpu["usage"] or None
            if usage is None:
                acct = stack.enter_context(cpuacct_cgroup())
                if acct is not None:
                    out["cgroup_procs"].append(acct["cgroup_procs"])
                    usage = acct["usage"]
            out["cpu_group"] = {
                "kind": "cgroup",
                "path": cpu["path"],
                "version": cpu["version"],
                "usage": usage,
            }
        yield out


def usage_ns(path: str) -> int | None:
    """A cgroup's CPU time so far (ns): ``cpuacct.usage`` (v1, ns) or ``cpu.stat``'s
    ``usage_usec`` (v2); None when it cannot be read."""
    try:
        text = Path(path).read_text()
    except OSError:
        return None
    if Path(path).name == "cpu.stat":
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "usage_usec" and value.strip().isdigit():
                return int(value) * 1000
        return None
    return int(text) if text.strip().isdigit() else None


@contextmanager
def cpuacct_cgroup() -> Iterator[dict[str, str] | None]:
    """cgroup v1's ``cpuacct`` group of the run's name, where ``cpuacct`` is mounted apart
    from ``cpu``: what a task needs to enter it (``cgroup_procs``) and its ``usage`` file; None
    where none can be made."""
    found = find_hierarchy(v1_file="cpuacct.usage", v2_controller="-")
    if found is None or found.version != "v1":
        yield None
        return
    path = found.root / group_name()
    try:
        make_cgroup(path)
    except OSError:
        yield None
        return
    try:
        yield {"cgroup_procs": str(path / "cgroup.procs"), "usage": str(path / "cpuacct.usage")}
    finally:
        with suppress(OSError):  # a task still inside: the next iowatt removes it
            os.rmdir(path)


@contextmanager
def cpu_cgroup(memory: dict[str, str] | None = None) -> Iterator[dict[str, str] | None]:
    """The run's CPU cgroup (``cgroup_procs``, ``path``, ``version``, and ``usage``: the file
    with its CPU time, empty on v1 without ``cpuacct`` in the same hierarchy), or None where
    none can be made. On cgroup v2 with a memory cgroup, that same group with the ``cpu``
    controller."""
    found = find_hierarchy(v1_file="cpu.shares", v2_controller="cpu")
    if found is None:
        yield None
        return
    path = found.root / group_name()
    shared = memory is not None and Path(memory["cgroup_procs"]).parent == path
    try:
        if found.version == "v2":
            _enable_cpu(found.root)
        if not shared:
            make_cgroup(path)
        if not (path / ("cpu.shares" if found.version == "v1" else "cpu.weight")).exists():
            raise OSError("no cpu controller in the group")
    except OSError:
        if not shared:
            with suppress(OSError):
                os.rmdir(path)
        yield None
        return
    usage = path / ("cpuacct.usage" if found.version == "v1" else "cpu.stat")
    try:
        yield {
            "cgroup_procs": str(path / "cgroup.procs"),
            "path": str(path),
            "version": found.version,
            "usage": str(usage) if usage.exists() else "",
        }
    finally:
        if not shared:
            with suppress(OSError):  # a task still inside: the next iowatt removes it
                os.rmdir(path)


def _enable_cpu(root: Path) -> None:
    """Makes the ``cpu`` controller available to cgroup v2 ``root``'s children."""
    control = root / "cgroup.subtree_control"
    if "cpu" not in control.read_text().split():
        control.write_text("+cpu")


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
    path = root / group_name()
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
