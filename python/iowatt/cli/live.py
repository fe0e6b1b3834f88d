"""``iowatt live``: watch a running iowatt (its ``--serve`` endpoint) or replay a finished run."""

from __future__ import annotations

from pathlib import Path

import click

from iowatt.errors import ConfigError

HELP = """Watch a run live: latency heatmap, throughput, watts, fans and events.

SOURCE is a running iowatt's endpoint (PORT, HOST:PORT or a URL; the run was started with
--serve) or a finished run in the store (a run id, a unique prefix, `latest` or a run
directory), replayed second by second. Keys: space pauses, b switches the breakdown
(workload, disk, flowop, host), n/p choose whose heatmap is drawn, q quits.
"""


@click.command(help=HELP)
@click.argument("source", default="9464")
@click.option(
    "--speedup",
    type=float,
    default=1.0,
    show_default=True,
    help="A stored run: seconds of the run shown per second.",
)
@click.option("--results", type=click.Path(path_type=Path), help="Results directory.")
def live(source: str, speedup: float, results: Path | None) -> None:
    from iowatt.live.dashboard import Dashboard
    from iowatt.live.feed import endpoint_url, from_endpoint, from_store

    if not speedup > 0:
        raise ConfigError(f"--speedup `{speedup:g}` must be above 0", "e.g. --speedup 10")
    if _is_endpoint(source):
        url = endpoint_url(f"127.0.0.1:{source}" if source.isdigit() else source)
        Dashboard(from_endpoint(url)).run()
        return
    from iowatt.store.runs import resolve_run, results_dir

    run_dir = resolve_run(results_dir(results), source)
    Dashboard(from_store(run_dir), every_s=1.0 / speedup).run()


def _is_endpoint(source: str) -> bool:
    """A port, ``HOST:PORT`` or a URL; anything else names a run."""
    host, _, port = source.rpartition(":")
    if source.isdigit():  # a port, or a run id's date (20261126)
        return int(source) <= 65535
    return "://" in source or (bool(host) and port.isdigit())
