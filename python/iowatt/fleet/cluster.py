"""A Dask client for a ``--cluster`` spec: the cluster started (LocalCluster, SSHCluster or a
dask-jobqueue cluster) or reached (a scheduler address), its workers waited for, each checked to
run this iowatt version, and the dashboard's address told — then everything it started is shut
down when the block ends.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from iowatt import __version__
from iowatt.errors import ConfigError, SourceUnavailableError
from iowatt.fleet.spec import ClusterSpec

_FAILED_TO_START = "Cluster failed to start:"
# How long the workers of a started cluster may take to join (batch jobs wait in a queue).
JOIN_S = {"local": 60.0, "ssh": 120.0, "slurm": 3600.0, "sge": 3600.0, "pbs": 3600.0}


def _local_cluster(n: int, threads: int) -> Any:
    from distributed import LocalCluster

    class Named(LocalCluster):  # type: ignore[misc]
        """Workers named local-0, local-1, …: what --hosts and per-host targets name."""

        def _new_worker_name(self, worker_number: int) -> str:
            return f"local-{worker_number}"

    # Started empty, then scaled: scaling names workers, the constructor numbers them.
    cluster = Named(
        n_workers=0,
        threads_per_worker=threads,
        processes=True,
        dashboard_address=":0",
        silence_logs=logging.WARNING,
    )
    cluster.scale(n)
    return cluster


@contextmanager
def _sigint_ignored(local: bool) -> Iterator[None]:
    """While a LocalCluster starts its worker processes, SIGINT ignored: they inherit that (an
    ignored signal stays ignored across exec, and Python then installs no handler of its own),
    so a Ctrl-C in the terminal reaches iowatt alone — which then stops every host's engine and
    writes what they measured — instead of killing the workers with their results."""
    if not local or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _ssh_cluster(spec: ClusterSpec, threads: int) -> Any:
    from distributed import SSHCluster

    o = spec.options
    connect: dict[str, Any] = {k: o[k] for k in ("port", "known_hosts", "client_keys") if k in o}
    if "user" in o:
        connect["username"] = o["user"]
    return SSHCluster(
        o["hosts"],
        connect_options=connect,
        worker_options={"nthreads": o.get("nthreads", threads)},
        scheduler_options={"dashboard_address": ":0"},
        remote_python=o.get("python"),
    )


def cluster_class(kind: str, option: str) -> Any:
    """dask-jobqueue's cluster class for ``slurm``, ``sge`` or ``pbs`` (its ``job_cls`` is the
    job); ``option`` names what needs it when dask-jobqueue is missing."""
    try:
        import dask_jobqueue as jq
    except ImportError:
        raise ConfigError(f"{option} needs dask-jobqueue", "pip install 'iowatt[batch]'") from None
    return {"slurm": jq.SLURMCluster, "sge": jq.SGECluster, "pbs": jq.PBSCluster}[kind]


def job_cluster(spec: ClusterSpec, threads: int | None = None) -> Any:
    """The dask-jobqueue cluster of a slurm, sge or pbs spec, not yet scaled (its
    ``job_script()`` is what each batch job runs)."""
    cls = cluster_class(spec.kind, f"--cluster `{spec.text}`")
    o = dict(spec.options)
    nthreads = o.pop("nthreads", threads)
    if "python" in o:
        o["python"] = str(o["python"])
    cluster = cls(scheduler_options={"dashboard_address": ":0"}, **o)
    if nthreads:
        cluster.job_cls = threads_job(cluster.job_cls, int(nthreads))
    return cluster


def threads_job(base: Any, nthreads: int) -> Any:
    """dask-jobqueue's job class ``base`` with ``nthreads`` worker threads: it ties threads to
    the cores asked for, and a packing of k tasks per core asks for more."""

    class Threads(base):  # type: ignore[misc, valid-type]
        @property
        def worker_process_threads(self) -> int:
            return nthreads

    return Threads


@contextmanager
def connect(
    spec: ClusterSpec, threads: int, note: Callable[[str], None] = lambda _: None
) -> Iterator[Any]:
    """A client of the spec's cluster, each worker with ``threads`` threads where iowatt starts
    them; refuses workers of another iowatt version."""
    from distributed import Client

    logging.getLogger("distributed").setLevel(logging.WARNING)
    # "Cluster closed without starting up": the error below says why, once.
    logging.getLogger("distributed.deploy.spec").setLevel(logging.ERROR)
    # A Ctrl-C that lands while the client waits on its event loop leaves that call's callback
    # to fail as the cluster shuts down; tornado would print its traceback over iowatt's
    # message. What iowatt needs to know arrives through the futures, not this log.
    logging.getLogger("tornado.application").setLevel(logging.CRITICAL)
    with ExitStack() as stack:
        try:
            if spec.kind == "address":
                client = stack.enter_context(Client(spec.address, timeout="10s"))
            else:
                with _sigint_ignored(spec.kind == "local"):
                    if spec.kind == "local":
                        cluster = _local_cluster(spec.workers or 1, threads)
                    elif spec.kind == "ssh":
                        cluster = _ssh_cluster(spec, threads)
                    else:
                        cluster = job_cluster(spec, threads)
                        cluster.scale(jobs=spec.workers)
                    stack.enter_context(cluster)
                    client = stack.enter_context(Client(cluster))
                    client.wait_for_workers(spec.workers or 1, timeout=JOIN_S[spec.kind])
        except (OSError, TimeoutError, ValueError, RuntimeError) as e:
            if isinstance(e, RuntimeError) and not str(e).startswith(_FAILED_TO_START):
                raise
            # Dask wraps what stopped a cluster's start (an ssh host refusing the connection
            # or the key) as "Cluster failed to start: …": that reason is the user's to fix.
            why = str(e).removeprefix(_FAILED_TO_START).strip() or type(e).__name__
            raise SourceUnavailableError(
                f"--cluster `{spec.text}`: cannot start or reach it ({why})",
                "check the address or hosts, the ssh user and key, and that `dask` runs there "
                "(docs/fleets.md)",
            ) from None
        _check_versions(client, spec)
        link = client.dashboard_link
        workers = client.scheduler_info()["workers"]
        note(f"Dask: {len(workers)} workers ({spec.text}); dashboard {link}")
        yield client


def _check_versions(client: Any, spec: ClusterSpec) -> None:
    def version() -> str:
        import iowatt

        return str(iowatt.__version__)

    found = client.run(version)
    other = {w: v for w, v in found.items() if v != __version__}
    if other:
        worker, v = next(iter(other.items()))
        raise ConfigError(
            f"--cluster `{spec.text}`: worker {worker} runs iowatt {v}, this is {__version__}"
            + (f" (and {len(other) - 1} more)" if len(other) > 1 else ""),
            "install the same iowatt on every host",
        )
