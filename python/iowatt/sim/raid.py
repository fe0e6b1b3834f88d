"""``iowatt sim raid``: a trace served by a disk array under RAID-0, LRU spin-down and PARAID
(the power-and-performance framework study's comparison), written as a run of kind
``sim-raid`` (its files are in docs/run-store.md).

Every personality sees the same requests and, per seed, the same arrivals (a web log's
second drawn apart by ``--arrival-jitter``) and rotational positions; figures against RAID-0
compare runs of the same seed. A request slower than ``--timeout`` counts as failed, as the
study's web server timed its clients out. Each run's requests are written as it ends, and only
their histograms kept, so memory does not grow with personalities × seeds.
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
from iowatt.sim.requests import Requests, check_arrival_jitter, check_max_bad, load_requests
from iowatt.trace.filters import Filters
from iowatt.units import check_int, parse_duration, parse_list, parse_seeds, parse_size

PERSONALITIES = ("raid0", "lru", "paraid")
PARAMS = "raid.toml"


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
    arrival_jitter: str
    results: Path
    labels: dict[str, str] = field(default_factory=dict)
    report: bool = True
    notes: list[str] = field(default_factory=list)
    metadata: dict[str, bytes] | None = None

    def array(self) -> dict[str, Any]:
        return array_settings(
            self.model_name,
            self.model,
            self.disks,
            self.params,
            self.cache_bytes,
            self.requests.array_bytes(),
        )

    def spec(self, name: str) -> dict[str, Any]:
        return personality_spec(self.params, name)

    def rated_cycles_per_day(self) -> float:
        """The spin-downs a day the disk's rating allows over five years of service."""
        return float(self.model["start_stop_cycles"]) / (5 * 365)

    def recorded(self) -> dict[str, Any]:
        return {
            "trace": self.requests.described,
            "array": self.array(),
            "personalities": {p: self.spec(p) for p in self.personalities},
            "seeds": self.seeds,
            "timeout_s": self.timeout_s,
            "speedup": self.requests.speedup,
            "arrival_jitter": self.arrival_jitter,
        }

    def columns(self, seed: int) -> dict[str, bytes]:
        """The trace as the engine takes it, with the seed's arrivals."""
        columns = self.requests.columns()
        arrivals = self.requests.arrivals(seed, self.arrival_jitter)
        columns["t_ns"] = arrivals.astype("<u8").tobytes()
        if self.params["fs"]["enabled"]:
            columns.update(self._metadata())
        return columns

    def _metadata(self) -> dict[str, bytes]:
        # The same for every seed; laying out a big tree's metadata takes a moment.
        if self.metadata is None:
            self.metadata = self.requests.metadata(self.params["fs"])
        return self.metadata


def array_settings(
    model_name: str,
    model: dict[str, Any],
    disks: int,
    params: dict[str, Any],
    cache_bytes: int,
    array_bytes: int,
) -> dict[str, Any]:
    """The engine's array (``ArrayConfig``): ``disks`` of ``model`` with raid.toml's
    ``params``, a page cache of ``cache_bytes`` and the file system model of data using
    ``array_bytes`` — what the simulator and the emulated array (``iowatt emulate mount
    --array``) both build."""
    a, fs = params["array"], params["fs"]
    return {
        "model": model,
        "model_name": model_name,
        "disks": disks,
        "stripe_bytes": round(a["stripe_kb"] * 1024),
        "bin_s": a["bin_s"],
        "cache_bytes": cache_bytes,
        # Controllers stagger larger arrays; two disks draw little enough at once.
        "spinup_stagger_s": a["spinup_stagger_s"] if disks > 2 else 0.0,
        "fs": _fs_model(fs, array_bytes) if fs["enabled"] else None,
    }


def _fs_model(fs: dict[str, Any], array_bytes: int) -> dict[str, Any]:
    # The journal sits in the middle block group, as mke2fs puts it.
    group = round(fs["group_mb"] * 2**20)
    return {
        "atime": fs["atime"],
        "writeback_s": fs["writeback_s"],
        "expire_s": fs["expire_s"],
        "journal": fs["journal"],
        "commit_s": fs["commit_s"],
        "journal_offset": array_bytes // 2 // group * group,
        "journal_bytes": round(fs["journal_mb"] * 2**20),
        "metadata_cache_bytes": round(fs["metadata_cache_mb"] * 2**20),
    }


def personality_spec(params: dict[str, Any], name: str) -> dict[str, Any]:
    """The engine's ``Spec`` of personality ``name`` under raid.toml's ``params``."""
    if name == "raid0":
        return {"personality": "raid0"}
    if name == "lru":
        t, c = params["lru"]["timeout_s"], params["lru"]["cycles_per_day"]
        return {
            "personality": "lru",
            "timeout_s": t if t > 0 else None,
            "cycles_per_day": c if c > 0 else None,
        }
    p = dict(params["paraid"])
    p["cycles_per_day"] = p["cycles_per_day"] if p["cycles_per_day"] > 0 else None
    p["gears"] = [int(g) for g in p["gears"]]
    return {"personality": "paraid", **p}


def check_params(params: dict[str, Any]) -> None:
    """What the engine would only refuse mid-run, refused before anything is simulated."""
    checks = [
        ("array.spinup_stagger_s", params["array"]["spinup_stagger_s"]),
        ("lru.timeout_s", params["lru"]["timeout_s"]),
        ("lru.cycles_per_day", params["lru"]["cycles_per_day"]),
        ("paraid.cycles_per_day", params["paraid"]["cycles_per_day"]),
    ]
    for key, value in checks:
        if value < 0:
            raise ConfigError(
                f"--params {key} = {value} must be 0 or more",
                '0 means the default (docs/sim-raid.md, "Parameters")',
            )
    atime = params["fs"]["atime"]
    if atime not in ("strict", "relatime", "noatime"):
        raise ConfigError(
            f"--params fs.atime = `{atime}` is unknown", "one of strict, relatime, noatime"
        )


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
    speedup: float | None = None,
    max_bad: int = 0,
    arrival_jitter: str = "uniform",
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
    seed_list = parse_seeds(seed, seeds)
    check_arrival_jitter(arrival_jitter)
    check_max_bad(max_bad)
    model = disk_model(disk_model_name, disk_models)
    loaded = load_overridden(PARAMS, params, "--params")
    check_params(loaded)
    requests = load_requests(trace, fmt, speedup, tree, filters, max_bad=max_bad)
    if len(requests) == 0:
        raise ConfigError(f"trace `{trace}` has no request the array would serve", "")
    config = RaidPlan(
        requests=requests,
        model_name=disk_model_name,
        model=model,
        disks=disks,
        personalities=chosen,
        params=loaded,
        seeds=seed_list,
        timeout_s=timeout_s,
        cache_bytes=parse_size(cache, "--cache"),
        arrival_jitter=arrival_jitter,
        results=results,
        labels=labels or {},
        report=report,
        notes=notes,
    )
    _dry_run(config)
    return config


def _dry_run(config: RaidPlan) -> None:
    """Every personality's parameters through the engine's own checks on one request at the
    trace's last byte (a PARAID threshold outside 0..1, data past the array or leaving PARAID no
    room for its replicas is refused here, not after RAID-0 has run)."""
    import numpy as np

    from iowatt._engine import raid_simulate

    last = np.array([max(config.requests.array_bytes() - 1, 0)], dtype="<u8")
    one = {"t_ns": np.zeros(1, "<u8").tobytes(), "offset": last.tobytes(),
           "bytes": np.ones(1, "<u8").tobytes()}  # fmt: skip
    for p in config.personalities:
        raid_simulate({"array": config.array(), "spec": config.spec(p)}, one, 1, 0)


def simulate_all(
    config: RaidPlan,
    note: Callable[[str], None] = lambda _: None,
    each: Callable[[dict[str, Any]], None] = lambda _: None,
) -> tuple[list[dict[str, Any]], IowattError | None]:
    """Every seed × personality on the engine, in that order (a seed's comparison complete
    before the next's); ``each`` gets every run with its requests' times, which are then
    dropped for their histograms. Stops at Ctrl-C with what is done."""
    from iowatt._engine import raid_simulate
    from iowatt.sim.raid_tables import summarise

    n = len(config.requests)
    out: list[dict[str, Any]] = []
    total = len(config.personalities) * len(config.seeds)
    try:
        for seed in config.seeds:
            columns = config.columns(seed)
            for p in config.personalities:
                started = time.monotonic()
                r = raid_simulate(
                    {"array": config.array(), "spec": config.spec(p)}, columns, n, seed
                )
                r = {"personality": p, "seed": seed, **r, "t_ns": columns["t_ns"]}
                each(r)
                out.append(summarise(r, config.timeout_s))
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
    from iowatt.sim.raid_tables import RequestWriter

    writer = RunWriter(config.results, new_run_id("sim-raid"))
    started_ns = time.time_ns()
    try:
        with RequestWriter(writer, config) as requests:
            results, failure = simulate_all(config, note, requests.write)
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

    rows = t.run_rows(writer.run_id, results, config.rated_cycles_per_day())
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
    point = replace(
        config, params=params, model=model["disk"], disks=int(model["disks"]), metadata=None
    )
    results, failure = simulate_all(point)
    if failure is not None:
        raise failure
    return t.personality_table(results, t.run_rows("", results, point.rated_cycles_per_day()))
