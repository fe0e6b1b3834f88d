"""``iowatt tasks --job-script sge|slurm|pbs``: the batch job that starts one Dask worker with
k × cores slots on a node of an SGE, Slurm or PBS cluster — what the study's batch system did
with its slots per node (SGE ``slots`` = k × cores) — as dask-jobqueue writes it. Submit one per
node, then run ``iowatt tasks … --cluster ADDR`` against their scheduler.

The job asks the batch system for the node's cores and runs k × cores worker threads on them:
dask-jobqueue ties the two together (threads = cores / processes), so the job class is given
its thread count.
"""

from __future__ import annotations

import os
from typing import Any

from iowatt.errors import ConfigError
from iowatt.fleet.cluster import cluster_class, threads_job
from iowatt.hostinfo import mem_bytes
from iowatt.units import check_int, parse_duration, parse_int_list, parse_size

SCHEDULER = "tcp://SCHEDULER:8786"


def job_script(
    kind: str,
    per_core: str,
    cores: int | None,
    memory: str | None,
    walltime: str | None,
    scheduler: str | None = None,
) -> str:
    ks = parse_int_list(per_core, "--per-core", 1, 64)
    if len(ks) != 1:
        raise ConfigError(f"--job-script takes one k, not `{per_core}`", "e.g. --per-core 2")
    n = check_int(cores, "--cores", 1, 4096, "--cores 8") if cores else os.cpu_count() or 1
    job_cls = threads_job(cluster_class(kind, "--job-script").job_cls, ks[0] * n)
    mem = parse_size(memory, "--memory") if memory else mem_bytes()
    if not mem:
        raise ConfigError("cannot read this machine's memory from /proc/meminfo", "give --memory")
    extra: dict[str, Any] = {}
    if walltime:
        s = int(parse_duration(walltime, "--timeout"))
        extra["walltime"] = f"{s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"
    job = job_cls(
        scheduler=scheduler or SCHEDULER,
        name="iowatt-worker",
        cores=n,
        processes=1,
        memory=f"{mem}B",
        job_name="iowatt-tasks",
        **extra,
    )
    return str(job.job_script())
