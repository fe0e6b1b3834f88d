"""Campaigns: a declared matrix of workloads × environments × repetitions, run in an order that
does not confound time with environment, and resumable.

A campaign file (TOML, docs/campaign.md) names the workloads (bench options), the environments
(labels and the commands that set them up and tear them down) and how many repetitions each
pair gets. Every run is an ordinary bench run labelled ``campaign=<name> env=<env> rep=<n>``
plus the environment's labels, so ``iowatt compare`` and ``iowatt runs`` see it like any other.

Resuming: a campaign's finished runs are found in the catalog by its name; running the same
file again does only the runs still missing. A file whose workloads or environments changed
since (its ``plan`` fingerprint differs) is refused rather than mixed into the old results.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, fields, replace
from functools import partial
from pathlib import Path
from typing import Any, Protocol

from iowatt import bench as bench_lib
from iowatt import pagecache
from iowatt.bench.config import MAX_IODEPTH, MAX_RUNS, BenchConfig, Options, Reporter
from iowatt.errors import ConfigError, IowattError, RunInterrupted
from iowatt.interrupts import held
from iowatt.store.catalog import list_runs
from iowatt.store.runs import read_manifest
from iowatt.store.writer import new_run_id
from iowatt.units import (
    U32_MAX,
    U64_MAX,
    check_finite,
    check_int,
    parse_duration,
    parse_positive_size,
)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

ORDERS = ("interleaved", "blocked", "random")
_OPTION_KEYS = tuple(f.name for f in fields(Options) if f.name != "seed")
_TOP_KEYS = (
    "name",
    "repetitions",
    "order",
    "cooldown",
    "drop_caches",
    "target",
    "destroy_data",
    "seed",
    "labels",
    "defaults",
    "workload",
    "env",
)
_WORKLOAD_KEYS = ("run", "suite", *_OPTION_KEYS)
_ENV_KEYS = ("name", "labels", "setup", "teardown", "hosts")
# Labels iowatt sets on every campaign run; an environment may not redefine them.
_RESERVED_LABELS = ("campaign", "env", "rep")
_TEXT_KEYS = ("engine", "slow")
_BOOL_KEYS = ("directio", "dsync")
_INT_KEYS = {"nthreads": (1, U32_MAX, "nthreads = 4"), "iodepth": (1, MAX_IODEPTH, "iodepth = 32")}
_HINT = "see docs/campaign.md"


@dataclass(frozen=True)
class Env:
    name: str
    labels: dict[str, str]
    setup: str | None = None
    teardown: str | None = None
    # On a fleet: the hosts this environment's runs use (none: every host). Environments on
    # disjoint hosts are independent, and run at once.
    hosts: tuple[str, ...] = ()


@dataclass(frozen=True)
class Entry:
    """One workload line of the matrix: a personality, a suite workload or a whole suite."""

    run: str | None
    suite: str | None
    options: dict[str, Any]

    @property
    def title(self) -> str:
        return self.run or f"suite {self.suite}"


@dataclass
class Campaign:
    name: str
    source: Path
    entries: list[Entry]
    envs: list[Env]
    repetitions: int = 3
    order: str = "interleaved"
    cooldown_s: float = 0.0
    drop_caches: bool = False
    target: Path | None = None
    destroy_data: bool = False
    seed: int = 1
    labels: dict[str, str] = field(default_factory=dict)
    defaults: dict[str, Any] = field(default_factory=dict)
    # --cluster: every run is a fleet run on these hosts (what the runs measure changes).
    fleet: str | None = None

    @property
    def plan_id(self) -> str:
        """A fingerprint of what the runs measure; repetitions, order and pauses may change."""
        what = {
            "defaults": self.defaults,
            "entries": [[e.run, e.suite, e.options] for e in self.entries],
            "envs": [[e.name, e.labels, *([list(e.hosts)] if e.hosts else [])] for e in self.envs],
            "seed": self.seed,
            "target": str(self.target) if self.target else None,
            **({"fleet": self.fleet} if self.fleet else {}),
        }
        blob = json.dumps(what, sort_keys=True, default=str).encode()
        return hashlib.sha256(blob).hexdigest()[:16]


@dataclass(frozen=True)
class PlannedRun:
    index: int
    env: Env
    rep: int
    entry_no: int
    entry: Entry

    @property
    def key(self) -> tuple[str, int, int]:
        return (self.env.name, self.rep, self.entry_no)


# --- the file -----------------------------------------------------------------------------


def load(path: Path, *, target: Path | None = None, destroy_data: bool = False) -> Campaign:
    """Reads and checks a campaign file; every workload is planned once so a bad option is
    reported before anything runs."""
    doc = _read(path)
    where = path.name
    _check_keys(doc, _TOP_KEYS, where, "the top level")
    _check_top(doc, where)
    envs = [_env(e, i, where) for i, e in enumerate(_tables(doc, "env", where), 1)]
    entries = [_entry(w, i, where) for i, w in enumerate(_tables(doc, "workload", where), 1)]
    if not entries or not envs:
        missing = "[[workload]]" if not entries else "[[env]]"
        raise ConfigError(
            f"{where}: no {missing} table", "a campaign needs at least one workload and one env"
        )
    names = [e.name for e in envs]
    if len(set(names)) != len(names):
        raise ConfigError(f"{where}: env names repeat: {', '.join(names)}", "give each a name")
    defaults = doc.get("defaults", {})
    if not isinstance(defaults, dict):
        raise ConfigError(f"{where}: `defaults` must be a table", "write [defaults]")
    _check_keys(defaults, _OPTION_KEYS, where, "[defaults]")
    _check_options(defaults, where, "[defaults]")
    order = doc.get("order", "interleaved")
    if order not in ORDERS:
        raise ConfigError(f"{where}: unknown order `{order}`", f"orders are: {', '.join(ORDERS)}")
    repetitions = doc.get("repetitions", 3)
    _int(repetitions, where, "repetitions", 1, MAX_RUNS, "repetitions = 3")
    total = repetitions * len(envs) * len(entries)
    if total > MAX_RUNS:
        raise ConfigError(
            f"{where}: {repetitions:,} repetitions of {len(envs)} envs × {len(entries)} "
            f"workloads make {total:,} runs, more than {MAX_RUNS:,}",
            "use fewer repetitions, or split the campaign in several files",
        )
    # Repetition r runs with seed + r − 1: the last one too must fit the engine's u64.
    seed = _int(doc.get("seed", 1), where, "seed", 0, U64_MAX - repetitions + 1, "seed = 1")
    name = str(doc.get("name") or path.stem)
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
        raise ConfigError(
            f"{where}: campaign name `{name}` is not a plain name",
            "use letters, digits, '.', '_' and '-' (it labels runs and names the report)",
        )
    campaign = Campaign(
        name=name,
        source=path,
        entries=entries,
        envs=envs,
        repetitions=repetitions,
        order=order,
        cooldown_s=parse_duration(doc.get("cooldown", 0), "cooldown"),
        drop_caches=bool(doc.get("drop_caches", False)),
        target=target or (Path(doc["target"]) if doc.get("target") else None),
        destroy_data=destroy_data or bool(doc.get("destroy_data", False)),
        seed=seed,
        labels=_labels(doc.get("labels", {}), where, "labels"),
        defaults=defaults,
    )
    if campaign.drop_caches and not pagecache.can_drop():
        raise ConfigError(
            f"{where}: drop_caches needs write access to {pagecache.DROP_CACHES}",
            "run as root, or set drop_caches = false",
        )
    for no in range(1, len(entries) + 1):
        bench_config(campaign, no, campaign.envs[0], 1, Path("."))
    return campaign


def _read(path: Path) -> dict[str, Any]:
    """The file as a TOML document; every way it can fail to be one is a ConfigError."""
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise ConfigError(f"no campaign file `{path}`", "check the path") from None
    except OSError as e:
        raise ConfigError(f"cannot read `{path}`: {e.strerror}", "check the path") from None
    except UnicodeDecodeError as e:
        raise ConfigError(
            f"`{path}` is not UTF-8 text (byte {e.object[e.start]:#04x} at offset {e.start})",
            f"a campaign file is TOML text; {_HINT}",
        ) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"`{path}` is not valid TOML: {e}", _HINT) from None
    except RecursionError:
        raise ConfigError(f"`{path}` nests arrays or tables too deep", _HINT) from None


def _check_top(doc: Mapping[str, Any], where: str) -> None:
    """The top level's values have the types their keys take."""
    for key in ("name", "order", "target"):
        if key in doc and not isinstance(doc[key], str):
            raise ConfigError(f"{where}: {key} `{doc[key]}` must be text", f'e.g. {key} = "..."')
    for key in ("drop_caches", "destroy_data"):
        if key in doc and not isinstance(doc[key], bool):
            raise ConfigError(
                f"{where}: {key} `{doc[key]}` must be true or false", f"e.g. {key} = true"
            )
    if "cooldown" in doc:
        _option(lambda: parse_duration(doc["cooldown"], "cooldown"), where)


def _int(value: Any, where: str, key: str, lo: int, hi: int, example: str) -> int:
    return _option(lambda: check_int(value, key, lo, hi, example), where)


def _option(check: Callable[[], Any], where: str) -> Any:
    """Runs a check of the units module, placing its error in the file."""
    try:
        return check()
    except ConfigError as e:
        raise ConfigError(f"{where}: {e.message}", e.hint) from None


def _check_options(table: Mapping[str, Any], where: str, part: str) -> None:
    """Bench options in a [defaults] or [[workload]] table, named by their keys: the bench
    checks them again as options, but here the file and the table are known."""
    place = f"{where}: {part}"
    for key, value in table.items():
        if key in ("iosize", "filesize"):
            _option(partial(parse_positive_size, value, key, f'{key} = "8k"'), place)
        elif key in _INT_KEYS:
            lo, hi, example = _INT_KEYS[key]
            _int(value, place, key, lo, hi, example)
        elif key in ("runtime", "ramp"):
            _option(partial(parse_duration, value, key), place)
        elif key == "rate":
            _option(partial(check_finite, value, key, "rate = 5000"), place)
        elif key in _TEXT_KEYS and not isinstance(value, str):
            raise ConfigError(f"{place}: {key} `{value}` must be text", f'e.g. {key} = "..."')
        elif key in _BOOL_KEYS and not isinstance(value, bool):
            raise ConfigError(f"{place}: {key} `{value}` must be true or false", f"{key} = true")
        elif key == "sets" and not (
            isinstance(value, list) and all(isinstance(v, str) for v in value)
        ):
            raise ConfigError(
                f"{place}: sets `{value}` must be a list of NAME=VALUE texts",
                'e.g. sets = ["nthreads=8"]',
            )


def _tables(doc: Mapping[str, Any], key: str, where: str) -> list[Mapping[str, Any]]:
    items = doc.get(key, [])
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise ConfigError(f"{where}: `{key}` must be an array of tables", f"write [[{key}]]")
    return items


def _check_keys(table: Mapping[str, Any], known: tuple[str, ...], where: str, part: str) -> None:
    for key in table:
        if key not in known:
            raise ConfigError(
                f"{where}: unknown key `{key}` in {part}", f"keys there are: {', '.join(known)}"
            )


def _labels(value: Any, where: str, part: str) -> dict[str, str]:
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: {part} must be a table", 'e.g. labels = { rack = "metal" }')
    return {str(k): str(v) for k, v in value.items()}


def _env(table: Mapping[str, Any], i: int, where: str) -> Env:
    part = f"[[env]] #{i}"
    _check_keys(table, _ENV_KEYS, where, part)
    if not table.get("name"):
        raise ConfigError(f"{where}: {part} has no name", 'e.g. name = "quiet-room"')
    labels = _labels(table.get("labels", {}), where, f"{part} labels")
    for key in _RESERVED_LABELS:
        if key in labels:
            raise ConfigError(f"{where}: {part} sets the label `{key}`", "iowatt sets it itself")
    for key in ("name", "setup", "teardown"):
        if key in table and not isinstance(table[key], str):
            raise ConfigError(
                f"{where}: {part} {key} `{table[key]}` must be text", f'e.g. {key} = "..."'
            )
    hosts = table.get("hosts", [])
    if not (isinstance(hosts, list) and all(isinstance(h, str) and h for h in hosts)):
        raise ConfigError(
            f"{where}: {part} hosts `{hosts}` must be a list of host names",
            'e.g. hosts = ["node1", "node2"] (with --cluster)',
        )
    return Env(str(table["name"]), labels, table.get("setup"), table.get("teardown"), tuple(hosts))


def _entry(table: Mapping[str, Any], i: int, where: str) -> Entry:
    part = f"[[workload]] #{i}"
    _check_keys(table, _WORKLOAD_KEYS, where, part)
    if bool(table.get("run")) == bool(table.get("suite")):
        raise ConfigError(
            f"{where}: {part} needs either `run` or `suite`",
            'e.g. run = "randomwrite", or suite = "fileio"',
        )
    for key in ("run", "suite"):
        if key in table and not isinstance(table[key], str):
            raise ConfigError(
                f"{where}: {part} {key} `{table[key]}` must be text", f'e.g. {key} = "randomread"'
            )
    options = {k: v for k, v in table.items() if k in _OPTION_KEYS}
    _check_options(options, where, part)
    return Entry(table.get("run"), table.get("suite"), options)


# --- the order ----------------------------------------------------------------------------


def schedule(campaign: Campaign) -> list[PlannedRun]:
    """Every run of the matrix in the order they will run.

    ``interleaved`` (ABAB…): each repetition visits every environment, so a drift over time
    hits every environment alike; ``blocked`` (AAA…BBB…) runs an environment's repetitions
    together (what carry-over needs to be seen); ``random`` shuffles the environments within
    each repetition with the campaign's seed.
    """
    shuffle = random.Random(campaign.seed)

    def pairs() -> Iterator[tuple[Env, int]]:
        if campaign.order == "blocked":
            for env in campaign.envs:
                for rep in range(1, campaign.repetitions + 1):
                    yield env, rep
            return
        for rep in range(1, campaign.repetitions + 1):
            envs = list(campaign.envs)
            if campaign.order == "random":
                shuffle.shuffle(envs)
            for env in envs:
                yield env, rep

    planned: list[PlannedRun] = []
    for env, rep in pairs():
        for no, entry in enumerate(campaign.entries, 1):
            planned.append(PlannedRun(len(planned) + 1, env, rep, no, entry))
    return planned


def bench_config(
    campaign: Campaign, entry_no: int, env: Env, rep: int, results: Path
) -> BenchConfig:
    """The bench run of one cell of the matrix; repetition r of every env shares a seed."""
    entry = campaign.entries[entry_no - 1]
    merged = {**campaign.defaults, **entry.options}
    try:
        opts = Options(**merged, seed=campaign.seed + rep - 1)
    except TypeError as e:  # a value of the wrong type for an option
        raise ConfigError(f"{campaign.source.name}: {e}", "see `iowatt bench --help`") from None
    labels = {**campaign.labels, **env.labels}
    labels.update(campaign=campaign.name, env=env.name, rep=str(rep))
    try:
        config = bench_lib.plan(
            entry.run,
            opts,
            suite=entry.suite,
            target=campaign.target,
            results=results,
            labels=labels,
            destroy_data=campaign.destroy_data,
        )
    except ConfigError as e:  # name the file and the workload: the option is one of its keys
        place = f"{campaign.source.name}: [[workload]] #{entry_no} ({entry.title})"
        raise ConfigError(f"{place}: {e.message}", e.hint) from None
    config.report = False
    config.campaign = {
        "name": campaign.name,
        "plan": campaign.plan_id,
        "env": env.name,
        "rep": rep,
        "entry": entry.title,
        "entry_no": entry_no,
        "source": str(campaign.source),
    }
    return config


# --- running ------------------------------------------------------------------------------


class CampaignReporter(Protocol):
    def started(self, campaign: Campaign, total: int, done: int) -> None: ...
    def run_started(self, run: PlannedRun, total: int) -> Reporter: ...
    def run_finished(self, run: PlannedRun, total: int, run_dir: Path) -> None: ...
    def note(self, message: str) -> None: ...


def finished_runs(campaign: Campaign, results: Path) -> dict[tuple[str, int, int], Path]:
    """The campaign's complete runs already in ``results``, by (env, rep, entry number)."""
    if not (results / "catalog.duckdb").exists():
        return {}
    done: dict[tuple[str, int, int], Path] = {}
    for row in list_runs(results, {"campaign": campaign.name}, status="complete"):
        info = read_manifest(Path(row["path"]))["config"].get("campaign") or {}
        if info.get("plan") != campaign.plan_id:
            raise ConfigError(
                f"campaign `{campaign.name}` in `{results}` was run from a different plan "
                f"(run {row['run_id']})",
                "its workloads or environments changed: give the campaign a new name, "
                "or use another --results",
            )
        done[(info["env"], info["rep"], info["entry_no"])] = Path(row["path"])
    return done


# One run of a campaign: the bench config, its progress, the hosts of its environment (None:
# every host, or no fleet) and, for a run in a thread of its own, what says it must stop.
CampaignRunner = Callable[
    [BenchConfig, Reporter, "tuple[str, ...] | None", "Callable[[], bool] | None"], Path
]


def _here(
    config: BenchConfig,
    reporter: Reporter,
    hosts: tuple[str, ...] | None,
    stop: Callable[[], bool] | None,
) -> Path:
    return bench_lib.run(config, reporter)


def _drop_here(hosts: tuple[str, ...] | None) -> None:
    pagecache.drop()


def run(
    campaign: Campaign,
    results: Path,
    reporter: CampaignReporter,
    runner: CampaignRunner = _here,
    drop: Callable[[tuple[str, ...] | None], None] = _drop_here,
) -> list[Path]:
    """Runs what is missing of the campaign; returns every finished run directory in order.

    Each run is committed as it ends, so an interruption keeps every finished run; the
    environment that was set up is torn down on every exit. ``runner`` runs one bench (on a
    fleet: ``iowatt.bench.fleet.run_fleet``, every host of the environment at once). On a
    fleet, environments on disjoint hosts are independent: each group of environments that
    share a host (:func:`lanes`) runs in order, the groups at once; ``drop`` drops the page
    cache where the runs read (on a fleet, on the environment's hosts) before each run when the
    campaign says ``drop_caches``.
    """
    results.mkdir(parents=True, exist_ok=True)
    planned = schedule(campaign)
    done = finished_runs(campaign, results)
    todo = [p for p in planned if p.key not in done]
    reporter.started(campaign, len(planned), len(planned) - len(todo))
    groups = lanes(campaign) if campaign.fleet else [campaign.envs]
    run_lane = partial(
        _run_lane,
        campaign,
        results=results,
        reporter=reporter,
        runner=runner,
        drop=drop,
        done=done,
        total=len(planned),
    )
    try:
        if len(groups) == 1:
            run_lane(todo, None)
        else:
            _run_lanes(groups, todo, run_lane, reporter.note)
    except KeyboardInterrupt:
        # A run the interrupt caught after it was committed is finished too: ask the catalog.
        done = finished_runs(campaign, results)
        raise RunInterrupted(_stopped_message(campaign, done, planned)) from None
    except IowattError as e:
        e.message = f"{e.message} ({_stopped_message(campaign, done, planned)})"
        raise
    return [done[p.key] for p in planned if p.key in done]


def lanes(campaign: Campaign) -> list[list[Env]]:
    """The environments in groups that may run at the same time: two environments are in one
    group when they share a host (one without ``hosts`` uses every host)."""
    groups: list[list[Env]] = []
    for env in campaign.envs:
        touching = [g for g in groups if any(_share(env, other) for other in g)]
        merged = [e for g in touching for e in g] + [env]
        groups = [g for g in groups if g not in touching] + [merged]
    order = {e.name: i for i, e in enumerate(campaign.envs)}
    return sorted(
        (sorted(g, key=lambda e: order[e.name]) for g in groups), key=lambda g: order[g[0].name]
    )


def _share(a: Env, b: Env) -> bool:
    return not a.hosts or not b.hosts or bool(set(a.hosts) & set(b.hosts))


def _run_lanes(
    groups: list[list[Env]],
    todo: list[PlannedRun],
    run_lane: Callable[[list[PlannedRun], Any], None],
    note: Callable[[str], None],
) -> None:
    """Each group of environments in a thread of its own, in the campaign's order within it.
    Ctrl-C (which only this thread receives) stops every group's run."""
    import threading

    stop = threading.Event()
    failures: list[BaseException] = []

    def lane(envs: list[Env]) -> None:
        names = {e.name for e in envs}
        mine = [p for p in todo if p.env.name in names]
        try:
            run_lane(mine, stop)
        except BaseException as e:  # the first failure stops the others, then is raised
            failures.append(e)
            stop.set()

    note(
        f"{len(groups)} groups of environments on disjoint hosts run at once: "
        + "; ".join(", ".join(e.name for e in g) for g in groups)
    )
    threads = [threading.Thread(target=lane, args=(g,), daemon=True) for g in groups]
    for t in threads:
        t.start()
    try:
        while any(t.is_alive() for t in threads):
            for t in threads:
                t.join(0.2)
    except KeyboardInterrupt:
        stop.set()
        for t in threads:
            t.join()
        raise
    if failures:
        raise failures[0]


def _run_lane(
    campaign: Campaign,
    todo: list[PlannedRun],
    stop: Any,
    *,
    results: Path,
    reporter: CampaignReporter,
    runner: CampaignRunner,
    drop: Callable[[tuple[str, ...] | None], None],
    done: dict[tuple[str, int, int], Path],
    total: int,
) -> None:
    """The runs in order, setting up and tearing down each environment as it changes; with
    ``stop`` (a thread's lane), quietly, until it is set."""
    env_vars = _target_vars(campaign.target)
    current: Env | None = None
    try:
        for n, p in enumerate(todo):
            if stop is not None and stop.is_set():
                raise RunInterrupted("interrupted")
            if current is None or current.name != p.env.name:
                if current is not None:
                    _command(current, "teardown", env_vars, campaign)
                current = p.env
                _command(current, "setup", env_vars, campaign)
            if n > 0 and campaign.cooldown_s > 0:
                reporter.note(f"cooling down for {campaign.cooldown_s:g} s")
                time.sleep(campaign.cooldown_s)
            if campaign.drop_caches:
                drop(p.env.hosts or None)
            config = bench_config(campaign, p.entry_no, p.env, p.rep, results)
            # Progress bars of runs at once would overwrite each other: lanes run quietly.
            progress = reporter.run_started(p, total) if stop is None else _quiet(reporter, p)
            run_dir = runner(config, progress, p.env.hosts or None, stop and stop.is_set)
            done[p.key] = run_dir
            reporter.run_finished(p, total, run_dir)
    finally:
        if current is not None:
            with held():  # a half-removed throttle would slow what runs next
                _command(current, "teardown", env_vars, campaign, raise_error=False)


def _quiet(reporter: CampaignReporter, p: PlannedRun) -> Reporter:
    from iowatt.bench.config import SilentReporter

    reporter.note(f"run {p.index}: env={p.env.name} rep={p.rep} {p.entry.title}")
    return SilentReporter()


def _stopped_message(campaign: Campaign, done: Mapping[Any, Path], planned: list[Any]) -> str:
    return (
        f"campaign `{campaign.name}` stopped with {len(done)} of {len(planned)} runs finished; "
        "run it again to do the rest"
    )


def _target_vars(target: Path | None) -> dict[str, str]:
    """What set-up commands may use: the target and the disk it is on (for blkio limits)."""
    out = {"IOWATT_TARGET": str(target or "")}
    devno = ""
    if target is not None and target.exists():
        from iowatt.sweep.throttle import whole_disk_devnum

        st = os.stat(target)
        dev = st.st_rdev if stat.S_ISBLK(st.st_mode) else st.st_dev
        try:
            disk = whole_disk_devnum(dev)
            devno = f"{os.major(disk)}:{os.minor(disk)}"
        except IowattError:
            devno = ""  # tmpfs and other virtual file systems are on no disk
    out["IOWATT_DEVNO"] = devno
    return out


def _command(
    env: Env,
    which: str,
    env_vars: Mapping[str, str],
    campaign: Campaign,
    raise_error: bool = True,
) -> None:
    command = env.setup if which == "setup" else env.teardown
    if not command:
        return
    variables = {**os.environ, **env_vars, "IOWATT_ENV": env.name, "IOWATT_CAMPAIGN": campaign.name}
    done = subprocess.run(
        command, shell=True, env=variables, capture_output=True, text=True, check=False
    )
    if done.returncode != 0 and raise_error:
        said = (done.stderr or done.stdout).strip().splitlines()
        raise ConfigError(
            f"{which} of env `{env.name}` failed (exit {done.returncode}): `{command}`"
            + (f": {said[-1]}" if said else ""),
            f"fix the command in {campaign.source.name}",
        )


def repeat(
    config: BenchConfig,
    times: int,
    reporter: Callable[[int], Reporter],
    runner: Callable[[BenchConfig, Reporter], Path] = bench_lib.run,
) -> tuple[str, list[Path]]:
    """``iowatt bench --repeat N``: the same bench N times, labelled ``series=<id> rep=<n>``
    (repetition n runs with seed + n − 1); returns the series id and the run directories.
    ``runner`` runs one (a fleet's runs on every host: ``iowatt.bench.fleet.run_fleet``)."""
    if times < 1:
        raise ConfigError(f"--repeat `{times}` must be at least 1", "e.g. --repeat 10")
    series = new_run_id("series")
    runs = []
    for rep in range(1, times + 1):
        one = replace(config, labels={**config.labels, "series": series, "rep": str(rep)})
        one.seed = config.seed + rep - 1
        one.workloads = [replace(wl, seed=one.seed) for wl in config.workloads]
        one.report = False
        runs.append(runner(one, reporter(rep)))
    return series, runs
