"""--cluster, --hosts and per-host --target, as the verbs that run on fleets take them
(docs/fleets.md)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from iowatt.bench import run
from iowatt.bench.config import BenchConfig, Reporter
from iowatt.errors import ConfigError
from iowatt.fleet.hosts import Targets, parse_targets
from iowatt.fleet.spec import ClusterSpec, parse

# What a verb runs on a fleet: the cluster, the hosts picked (None: all), each host's target.
FleetOptions = tuple[ClusterSpec, list[str] | None, Targets]


def fleet_options(
    cluster: str | None, hosts: str | None, targets: Sequence[str]
) -> FleetOptions | None:
    """The fleet the options name; None without --cluster (then --hosts and a per-host
    --target are errors)."""
    if cluster is None:
        if hosts is not None:
            raise ConfigError(f"--hosts {hosts} needs --cluster", "e.g. --cluster local:3")
        if len(targets) > 1 or (targets and parse_targets(targets).per_host):
            raise ConfigError(
                f"--target {targets[-1]}: one target per host needs --cluster",
                "give one --target PATH, or add --cluster",
            )
        return None
    names = [h.strip() for h in hosts.split(",") if h.strip()] if hosts is not None else None
    if names is not None and not names:
        raise ConfigError(f"--hosts `{hosts}` names no host", "e.g. --hosts local-0,local-2")
    return parse(cluster), names, parse_targets(targets)


BenchRunner = Callable[[BenchConfig, Reporter], Path]


def bench_runner(fleet: FleetOptions | None) -> BenchRunner:
    """How one bench runs: here, or on every host of --cluster at once."""
    if fleet is None:
        return run
    from iowatt.bench.fleet import run_fleet

    return lambda config, reporter: run_fleet(config, *fleet, reporter)
