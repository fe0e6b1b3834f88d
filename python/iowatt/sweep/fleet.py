"""A sweep across hosts (``iowatt sweep --cluster``): one stimulus driver, here, and the disks
of every host measured in the same window at each step.

Each disk is ``HOST:PATH``; when the sweep starts, each host checks its own disks (as a sweep
on that host would) and reports their facts. At each step, after the driver set the value,
every host's generators — one held engine per disk — are released at one instant by the fleet
barrier (``iowatt.fleet.barrier``), settle, measure, and send their results back; each result's
start is put on this host's clock, so the steps' rows, curves and intervals read as one
machine's. A watchdog trip or Ctrl-C stops every host's generators.
"""

from __future__ import annotations

import contextlib
import shutil
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from iowatt._engine import WorkloadResult, WorkloadRun, drive, result_failure
from iowatt.bench.config import WorkloadConfig
from iowatt.bench.held import run_held
from iowatt.errors import SourceUnavailableError, one_line
from iowatt.fleet.hosts import Targets, file_safe, pick
from iowatt.hostinfo import target_facts
from iowatt.store.writer import make_marked
from iowatt.sweep.plan import Disk, Generator, Request, SweepConfig, check_disk


@dataclass
class Hosts:
    """The cluster's client and where each disk's host is (host → worker address)."""

    client: Any
    address: dict[str, str]

    def run(self, fn: Any, per_host: dict[str, Any]) -> dict[str, Any]:
        """``fn(per_host[h])`` on each host h, pinned there; their results by host, or the
        first failure as an error naming its host."""
        futures = {
            h: self.client.submit(
                fn, arg, workers=[self.address[h]], pure=False, allow_other_workers=False
            )
            for h, arg in per_host.items()
        }
        out = {}
        for h, f in futures.items():
            got = f.result()
            if isinstance(got, str):
                raise SourceUnavailableError(f"host {h}: {got}", "check the disk on that host")
            out[h] = got
        return out


def _caught(fn: Any, *args: Any) -> Any:
    """A host's part, its failure returned as text (raised, Dask would log its traceback)."""
    try:
        return fn(*args)
    except Exception as e:
        return one_line(e)


def connect_hosts(client: Any, config: SweepConfig) -> Hosts:
    """The disks' hosts among the cluster's workers, and each disk checked on its host."""
    disks_of: dict[str, list[Disk]] = {}
    for d in config.disks:
        disks_of.setdefault(d.host or "", []).append(d)
    chosen = pick(client.scheduler_info()["workers"], list(disks_of), Targets())
    hosts = Hosts(client, {h: a for a, h in chosen.items()})
    assert config.fleet is not None
    req, gen = config.fleet.request, config.generator
    checked = hosts.run(
        _check_host, {h: ([_text(d) for d in ds], req, gen) for h, ds in disks_of.items()}
    )
    resolved = {h: iter(found) for h, found in checked.items()}
    config.disks = [
        replace(next(resolved[d.host or ""]), name=d.name, host=d.host) for d in config.disks
    ]
    return hosts


def _text(d: Disk) -> str:
    return f"{d.path}={d.profile}" if d.profile else str(d.path)


def _check_host(args: tuple[list[str], Request, Generator]) -> Any:
    texts, req, gen = args

    def check() -> list[Disk]:
        found = [check_disk(t, req, gen) for t in texts]
        for d in found:
            d.facts = target_facts(d.path)
        return found

    return _caught(check)


def layout(hosts: Hosts, config: SweepConfig, run_id: str, layout_s: float) -> list[Path]:
    """Each host's directory disks get a work directory of iowatt's own, their file laid out
    and written once (as on one host)."""
    jobs: dict[str, list[tuple[Disk, WorkloadConfig]]] = {}
    for d in config.disks:
        if not d.device:
            d.workdir = d.path / f"iowatt-{run_id}-{file_safe(d.host or '')}"
            jobs.setdefault(d.host or "", []).append((d, config.workload(d, 0.0, layout_s)))
    hosts.run(_layout_host, {h: (js, run_id) for h, js in jobs.items()})
    return [d.workdir for d in config.disks if d.workdir is not None]


def _layout_host(args: tuple[list[tuple[Disk, WorkloadConfig]], str]) -> Any:
    jobs, run_id = args

    def lay_out() -> bool:
        for d, _ in jobs:
            assert d.workdir is not None
            make_marked(d.workdir, run_id)
        runs = [WorkloadRun.fileio(wl.engine_spec(d.target, d.device)) for d, wl in jobs]
        drive(runs)
        for r in runs:
            result = r.result()
            if result["status"] != "complete":
                raise result_failure(result)
        return True

    return _caught(lay_out)


def generate(
    hosts: Hosts,
    config: SweepConfig,
    disks: list[Disk],
    settle_s: float,
    hold_s: float,
    stop: Any,
    note: Any,
) -> list[WorkloadResult]:
    """One step on every host at once; the results in ``disks``' order, each measured start on
    this host's monotonic clock."""
    from iowatt.fleet.barrier import start_together

    jobs: dict[str, list[tuple[Disk, WorkloadConfig]]] = {}
    for d in disks:
        jobs.setdefault(d.host or "", []).append((d, config.workload(d, settle_s, hold_s)))
    start = start_together(
        hosts.client,
        _generate_host,
        {hosts.address[h]: js for h, js in jobs.items()},
        note,
        stop=stop,
    )
    if start.interrupted:
        raise KeyboardInterrupt
    by_name: dict[str, WorkloadResult] = {}
    for addr, o in start.hosts.items():
        if o["error"] is not None or o["result"] is None:
            host = next(h for h, a in hosts.address.items() if a == addr)
            raise SourceUnavailableError(
                f"host {host}: {o['error'] or 'no result'}", "the step stopped on every host"
            )
        for result, started_rt in o["result"]:
            # Its start, from its clock to this host's: the rows of every host on one clock.
            here_rt = started_rt - o["offset_ns"]
            result["measure_start_ns"] = time.monotonic_ns() - (time.time_ns() - here_rt)
            by_name[result["name"]] = result
    return [by_name[d.name] for d in disks]


def _generate_host(jobs: list[tuple[Disk, WorkloadConfig]], gate: Any) -> Any:
    """On a host: its disks' generators held until the common start, then run; each result
    with when it began measuring on this host's wall clock."""
    held = run_held(
        [WorkloadRun.fileio(wl.engine_spec(d.target, d.device)) for d, wl in jobs], gate
    )
    return None if held is None else held.results


def clean_up(hosts: Hosts, config: SweepConfig) -> None:
    """Removes each host's work directories (iowatt's own, and nothing else)."""
    per_host: dict[str, list[Path]] = {}
    for d in config.disks:
        if d.workdir is not None:
            per_host.setdefault(d.host or "", []).append(d.workdir)
    # Best effort: a host that is gone keeps its directory (marked with the run's id).
    with contextlib.suppress(Exception):
        hosts.run(_remove, per_host)


def _remove(paths: list[Path]) -> bool:
    for p in paths:
        shutil.rmtree(p, ignore_errors=True)
    return True
