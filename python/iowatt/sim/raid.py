"""``iowatt sim raid``: a trace served by a disk array under RAID-0, LRU spin-down and PARAID
(the power-and-performance framework study's comparison), written as a run of kind
``sim-raid`` (its files are in docs/run-store.md).

Every personality sees the same requests and, per seed, the same rotational positions; figures
against RAID-0 compare runs of the same seed. A request slower than ``--timeout`` counts as
failed, as the study's web server timed its clients out.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from iowatt.errors import ConfigError, IowattError, RunInterrupted
from iowatt.sim import record
from iowatt.sim.disks import disk_model
from iowatt.sim.model import load_overridden
from iowatt.sim.requests import Requests, load_requests
from iowatt.trace.filters import Filters
from iowatt.units import check_int, parse_duration, parse_int_list, parse_list, parse_size

PERSONALITIES = ("raid0", "lru", "paraid")
PARAMS = "raid.toml"
MAX_SEED = 2**63 - 1


@dataclass
class RaidPlan:
    requests: Requests
    model_name: str
    model: dict[str, Any]
    disks: int
    personalities: list[str]
    params: dict[str, Any]
    seeds: list[int]
    timeout_s: float
    cache_bytes: int
    speedup: float
    results: Path
    labels: dict[str, str] = field(default_factory=dict)
    report: bool = True
    notes: list[str] = field(default_factory=list)

    def array(self) -> dict[str, Any]:
        a = self.params["array"]
        return {
            "model": self.model,
            "model_name": self.model_name,
            "disks": self.disks,
            "stripe_bytes": round(a["stripe_kb"] * 1024),
            "bin_s": a["bin_s"],
            "cache_bytes": self.cache_bytes,
        }

    def spec(self, name: str) -> dict[str, Any]:
        if name == "raid0":
            return {"personality": "raid0"}
        if name == "lru":
            t = self.params["lru"]["timeout_s"]
            return {"personality": "lru", "timeout_s": t if t > 0 else None}
        p = dict(self.params["paraid"])
        p["cycles_per_day"] = p["cycles_per_day"] if p["cycles_per_day"] > 0 else None
        p["gears"] = [int(g) for g in p["gears"]]
        return {"personality": "paraid", **p}

    def recorded(self) -> dict[str, Any]:
        return {
            "trace": self.requests.described,
            "array": self.array(),
            "personalities": {p: self.spec(p) for p in self.personalities},
            "seeds": self.seeds,
            "timeout_s": self.timeout_s,
            "speedup": self.speedup,
        }


def plan(
    trace: Path,
    *,
    personalities: str = "raid0,lru,paraid",
    disks: int = 4,
    disk_model_name: str = "ultrastar-36z15",
    disk_models: Path | None = None,
    params: Path | None = None,
    fmt: str = "combined",
    tree: Path | None = None,
    filters: Filters | None = None,
    speedup: float = 1.0,
    timeout: str = "30s",
    cache: str = "0",
    seed: str = "1",
    seeds: int | None = None,
    results: Path,
    labels: dict[str, str] | None = None,
    report: bool = True,
) -> RaidPlan:
    chosen = []
    for name in parse_list(personalities, "--personalities"):
        if name.lower() not in PERSONALITIES:
            raise ConfigError(
                f"--personalities `{name}` is not a personality",
                f"personalities are {', '.join(PERSONALITIES)}",
            )
        chosen.append(name.lower())
    notes = []
    if "raid0" not in chosen:
        notes.append("raid0 is simulated too: every saving is against it")
    chosen = [p for p in PERSONALITIES if p in chosen or p == "raid0"]
    check_int(disks, "--disks", 1, 64, "--disks 4")
    timeout_s = parse_duration(timeout, "--timeout")
    if timeout_s <= 0:
        raise ConfigError(f"--timeout `{timeout}` must be above zero", "e.g. --timeout 30s")
    seed_list = parse_int_list(seed, "--seed", 0, MAX_SEED)
    if seeds is not None:
        check_int(seeds, "--seeds", 1, 1000, "--seeds 5")
        seed_list = [seed_list[0] + i for i in range(seeds)]
    model = disk_model(disk_model_name, disk_models)
    requests = load_requests(trace, fmt, speedup, tree, filters)
    if len(requests) == 0:
        raise ConfigError(f"trace `{trace}` has no request the array would serve", "")
    return RaidPlan(
        requests=requests,
        model_name=disk_model_name,
        model=model,
        disks=disks,
        personalities=chosen,
        params=load_overridden(PARAMS, params, "--params"),
        seeds=seed_list,
        timeout_s=timeout_s,
        cache_bytes=parse_size(cache, "--cache"),
        speedup=speedup,
        results=results,
        labels=labels or {},
        report=report,
        notes=notes,
    )


def simulate_all(
    config: RaidPlan, note: Callable[[str], None] = lambda _: None
) -> tuple[list[dict[str, Any]], IowattError | None]:
    """Every personality × seed on the engine, in that order; stops at Ctrl-C with what is done."""
    from iowatt._engine import raid_simulate

    columns, n = config.requests.columns(), len(config.requests)
    out: list[dict[str, Any]] = []
    total = len(config.personalities) * len(config.seeds)
    try:
        for p in config.personalities:
            for seed in config.seeds:
                started = time.monotonic()
                r = raid_simulate(
                    {"array": config.array(), "spec": config.spec(p)}, columns, n, seed
                )
                out.append({"personality": p, "seed": seed, **r})
                note(
                    f"{len(out)}/{total} simulated: {p}, seed {seed}, "
                    f"{time.monotonic() - started:.1f} s"
                )
    except KeyboardInterrupt:
        return out, RunInterrupted("interrupted")
    return out, None


def run(config: RaidPlan, note: Callable[[str], None] = lambda _: None) -> Path:
    """Simulates the plan and commits the run; returns its directory."""
    from iowatt.store.writer import RunWriter, new_run_id

    for n in config.notes:
        note(n)
    writer = RunWriter(config.results, new_run_id("sim-raid"))
    started_ns = time.time_ns()
    try:
        results, failure = simulate_all(config, note)
    except BaseException:
        writer.abandon()
        raise
    return record.commit(
        writer,
        bool(results),
        failure,
        lambda: _write(writer, config, results or [], failure, started_ns),
    )


def _write(
    writer: Any,
    config: RaidPlan,
    results: list[dict[str, Any]],
    failure: IowattError | None,
    started_ns: int,
) -> Path:
    from iowatt.sim import raid_tables as t
    from iowatt.store.catalog import publish

    rows = t.run_rows(writer.run_id, results, config.timeout_s)
    reason = None if failure is None else failure.message
    writer.finish(
        "sim-raid",
        reason,
        started_ns=started_ns,
        seed=config.seeds[0],
        labels=config.labels,
        config=config.recorded(),
        summary={"requests": len(config.requests), "raid": t.personality_table(results, rows)},
    )
    bin_s = config.params["array"]["bin_s"]
    writer.write_table("raid_runs.parquet", t.run_table(rows))
    writer.write_table("raid_power.parquet", t.power_table(writer.run_id, results, bin_s))
    writer.write_table(
        "raid_requests.parquet",
        t.request_table(writer.run_id, results, config.requests, config.timeout_s),
    )
    run_dir: Path = publish(writer)
    if config.report:
        from iowatt.report import write_report  # matplotlib is slow to import; only when needed

        write_report([run_dir], run_dir / "report.html")
    return run_dir


def grid_model(config: RaidPlan) -> dict[str, Any]:
    """What a grid varies (``iowatt.sim.grid``): raid.toml's values, the disk model under
    ``disk`` and the array's ``disks``."""
    return {**config.params, "disk": config.model, "disks": config.disks}


def grid_rows(config: RaidPlan, model: dict[str, Any]) -> list[dict[str, Any]]:
    """One grid point: the plan under ``model`` (``grid_model``'s shape), per personality."""
    from dataclasses import replace

    from iowatt.sim import raid_tables as t

    params = {k: v for k, v in model.items() if k not in ("disk", "disks")}
    point = replace(config, params=params, model=model["disk"], disks=int(model["disks"]))
    results, failure = simulate_all(point)
    if failure is not None:
        raise failure
    return t.personality_table(results, t.run_rows("", results, point.timeout_s))
