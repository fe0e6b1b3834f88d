"""``iowatt sim tasks --validate RUNS``: the simulator calibrated from runner runs, then set
against each of them — predicted against measured jobs/h, Wh/job and average watts.

Calibration, from the runs themselves (``--save-model`` writes it as a node TOML for --model):

- cores: the runs' (k multiplies them); hyper-threading's gain only where the host has SMT on;
- each task type's CPU seconds: the median CPU time its tasks took (a property of the task,
  not of the packing — what the simulator is judged on is the packing);
- each data location's disk: on an emulated disk (``iowatt emulate mount``, whose settings the
  run recorded), the emulator's disk model under the simulator's scheduler matching the
  emulator's (:data:`SCHEDULERS`), served request by request as the emulator served them, in
  requests of the mean size it served (as the readahead);
  elsewhere, its probe's one-reader rate as the sequential rate of a fluid disk, and the
  switching cost that gives the all-readers rate with the model's slice
  (X(n) = X1·q / (q + X1·t) ⇒ t = q·(X1/X(n) − 1)/X1; none when n readers are no slower);
- power: idle, per busy core and disk-active watts, a least-squares fit of the runs' power
  series against their CPU and disk utilisation at the same instants.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from iowatt.errors import ConfigError
from iowatt.sim.disks import load_disks
from iowatt.sim.tasks import disk_watts, engine_disk, load_node, simulate_batches
from iowatt.store.runs import read_manifest, read_summary
from iowatt.tasks.plan import CHUNK

# The fluid disk's slice, MB: CFQ's 100 ms at ≈ 80 MB/s [A].
SLICE_MB = 8.0
# The emulator's schedulers (`iowatt emulate mount --scheduler`) as the simulator's: fifo
# serves one request at a time in arrival order (no queue to reorder), elevator sorts the
# queue by offset as deadline does while nothing expires, cfq is cfq.
SCHEDULERS = {"fifo": "none", "elevator": "deadline", "cfq": "cfq"}
# Bytes an emulated disk must have served a run for its mean request size to stand for the
# run's reads.
READ_ENOUGH = 1 << 20


def select_runs(
    results: Path, refs: str, note: Callable[[str], None] = lambda _: None
) -> list[Path]:
    """Complete tasks runs: ``all``, or a comma list of run ids (or prefixes). ``all`` leaves
    out runs with failed tasks (their makespan is not the set's), saying so through ``note``;
    a run named is kept whatever became of its tasks."""
    from iowatt.store.catalog import catalog

    with catalog(results) as con:
        found = con.execute(
            "SELECT r.run_id, r.path, coalesce(t.failed, 0) FROM runs r "
            "LEFT JOIN task_runs t USING (run_id) "
            "WHERE r.kind = 'tasks' AND r.status = 'complete' ORDER BY r.started"
        ).fetchall()
    flagged: list[str] = []
    if refs.strip() == "all":
        flagged = [i for i, _, failed in found if failed]
        found = [row for row in found if not row[2]]
    else:
        wanted = [r.strip() for r in refs.split(",") if r.strip()]
        found = [row for row in found if any(row[0].startswith(w) for w in wanted)]
    if flagged:
        runs = "1 run" if len(flagged) == 1 else f"{len(flagged)} runs"
        note(
            f"left out {runs} with failed tasks ({', '.join(flagged)}); "
            "name a run to validate against it"
        )
    if not found:
        raise ConfigError(
            f"--validate `{refs}`: no complete tasks runs match in `{results}`"
            + (" without failed tasks" if flagged else ""),
            "name runs with failed tasks to use them"
            if flagged
            else "run `iowatt tasks` first, or list runs with `iowatt runs`",
        )
    return [Path(p) for _, p, _ in found]


def _load(run_dir: Path) -> dict[str, Any]:
    import pyarrow.parquet as pq

    def table(name: str) -> dict[str, list[Any]]:
        path = run_dir / name
        return pq.read_table(path).to_pydict() if path.exists() else {}

    return {
        "run_id": run_dir.name,
        "manifest": read_manifest(run_dir),
        "summary": read_summary(run_dir),
        "tasks": table("tasks.parquet"),
        "util": table("utilisation.parquet"),
        "power": table("power.parquet"),
    }


def emulated_disk(
    run: dict[str, Any], models: Mapping[str, Mapping[str, Any]]
) -> dict[str, Any] | None:
    """The ``[disks.NAME]`` table of the emulated disk ``run`` read from: the emulator's model
    under the matching simulator scheduler; None for a run on any other directory (or on an
    emulator too old to say how it was set up). A ConfigError when the model is not in
    ``models`` or the emulator's scheduler matches none of the simulator's."""
    settings = (run["summary"].get("emulated_disk") or {}).get("settings")
    if not settings or not isinstance(settings, dict):
        return None
    where = f"run {run['run_id']}"
    name, scheduler = settings.get("disk_model"), settings.get("scheduler")
    if settings.get("array"):
        raise ConfigError(
            f"{where} was made on an emulated array of `{name}` disks, which the task "
            "simulator does not model",
            "validate against runs on one emulated disk or on a plain directory",
        )
    if not isinstance(name, str) or name not in models:
        raise ConfigError(
            f"{where} was made on an emulated `{name}` disk, which is not a disk model",
            f"models are {', '.join(models)}; --disk-models FILE adds the emulator's",
        )
    if not isinstance(scheduler, str) or scheduler not in SCHEDULERS:
        pairs = ", ".join(f"{e} as {s}" for e, s in SCHEDULERS.items())
        raise ConfigError(
            f"{where}'s emulated disk has scheduler `{scheduler}`, which no task simulator "
            f"scheduler ({', '.join(sorted(set(SCHEDULERS.values())))}) matches",
            f"the emulator's are set against the simulator's as {pairs}",
        )
    # The emulated drive has no cache to read on into: every request pays its rotation.
    entry: dict[str, Any] = {
        "model": name,
        "scheduler": SCHEDULERS[scheduler],
        "drive_read_ahead": False,
    }
    if scheduler == "cfq":
        times = [settings.get(k) for k in ("slice_s", "idle_window_s")]
        seconds = [t for t in map(_seconds, times) if t is not None]
        if len(seconds) != 2:
            raise ConfigError(
                f"{where}'s emulated disk has scheduler `cfq` with slice {times[0]!r} and idle "
                f"window {times[1]!r}",
                "the emulator records both as seconds above 0: was its config.json edited?",
            )
        entry["slice_ms"], entry["idle_ms"] = seconds[0] * 1e3, seconds[1] * 1e3
    elif scheduler == "fifo":
        entry["ncq_depth"] = 1
    # The tasks read in requests of the size the mount passed on (FUSE's, not the kernel's
    # readahead): the simulator's sequential readers ask as much at a time. A run that read
    # next to nothing (a CPU set: a few small files) keeps the simulator's.
    served = run["summary"]["emulated_disk"]
    if served.get("mean_read_b") and served.get("read_bytes", 0) >= READ_ENOUGH:
        entry["readahead_kb"] = float(served["mean_read_b"]) / 1024
    return entry


def _seconds(value: Any) -> float | None:
    """A recorded time in seconds, when it is a number above 0."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) and value > 0 else None


def calibrate(
    runs: list[dict[str, Any]],
    base: dict[str, Any] | None = None,
    models: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """A node model (node.toml's layout) fitted to the runs; see the module docstring."""
    models = load_disks() if models is None else models
    model = copy.deepcopy(base or load_node(None, []))
    first = runs[0]["summary"]
    model["node"]["cores"] = int(runs[0]["manifest"]["config"]["cores"])
    if not first.get("smt", False):
        model["node"]["ht_gain"] = 0.0
    model["node"]["memory_gb"] = 1e6  # the runs ran: memory is not what is validated
    slice_mb = SLICE_MB
    for r in runs:
        probe, disk = r["summary"].get("probe"), r["summary"]["tasks"]["disk"]
        emulated = emulated_disk(r, models)
        if emulated is not None:
            model["disks"][disk] = emulated
            continue
        if probe is None:
            continue
        x1, xn = probe["one_mb_s"], probe["all_mb_s"]
        switch = slice_mb * (x1 / xn - 1) / x1 if xn < x1 else 0.0
        model["disks"][disk] = {
            "seq_mb_s": x1,
            "switch_s": switch,
            "slice_mb": slice_mb,
            "active_w": disk_watts(model["disks"].get(disk, model["disks"]["hdd"]), models)[1],
        }
    model["chunk_mb"] = CHUNK / 1e6
    fit = _fit_power(runs)
    if fit is not None:
        model["node"]["idle_w"], model["node"]["core_w"] = fit[0], fit[1]
        if fit[2] is not None:
            for d in model["disks"].values():
                if "seq_mb_s" in d:
                    # A fit on a noisy node can give the disk less while busy: that is noise.
                    d["active_w"] = max(fit[2], 0.0)
    model["types"] = _cpu_times(runs)
    return model


def _cpu_times(runs: list[dict[str, Any]]) -> dict[str, float]:
    by_type: dict[str, list[float]] = {}
    for r in runs:
        t = r["tasks"]
        for typ, status, cpu in zip(t["type"], t["status"], t["cpu_s"], strict=True):
            if status == "ok":
                by_type.setdefault(typ, []).append(cpu)
    return {k: float(np.median(v)) for k, v in by_type.items()}


def _fit_power(runs: list[dict[str, Any]]) -> tuple[float, float, float | None] | None:
    xs, ys = [], []
    for r in runs:
        u, p = r["util"], r["power"]
        if not u or not p:
            continue
        channel = _headline(r)
        sel = [
            i
            for i, (s, c) in enumerate(zip(p["source"], p["channel"], strict=True))
            if f"{s}/{c}" == channel and p["watts"][i] is not None
        ]
        if len(sel) < 2:
            continue
        pt = np.asarray([p["t_s"][i] for i in sel])
        pw = np.asarray([p["watts"][i] for i in sel])
        for t, busy, util in zip(u["t_s"], u["cpu_busy"], u["disk_util"], strict=True):
            if pt[0] <= t <= pt[-1]:
                xs.append([1.0, busy, util or 0.0])
                ys.append(float(np.interp(t, pt, pw)))
    if len(ys) < 3:
        return None
    a = np.asarray(xs)
    with_disk = bool(np.ptp(a[:, 2]) > 0.05)
    cols = a if with_disk else a[:, :2]
    coef, *_ = np.linalg.lstsq(cols, np.asarray(ys), rcond=None)
    return float(coef[0]), float(coef[1]), float(coef[2]) if with_disk else None


def _headline(run: dict[str, Any]) -> str:
    power = run["summary"]["tasks"]["power"] or ""
    return "model/node" if power == "modelled" else power.removeprefix("measured: ")


def predict(
    run: dict[str, Any],
    model: dict[str, Any],
    models: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """The simulator's figures for one run as it was configured: on its own emulated disk
    when it had one, else on the calibrated disk of its location's name."""
    models = load_disks() if models is None else models
    cfg = run["manifest"]["config"]
    disk = cfg["location"]["name"]
    entry = emulated_disk(run, models) or model["disks"].get(disk, model["disks"]["hdd"])
    node = {**model["node"], "disk": engine_disk(disk, entry, models)}
    # Memory is not what is validated: the runs ran.
    types = {
        t: {"cpu_s": model["types"].get(t, c["cpu_s"]), "input_mb": c["input_mb"]}
        for t, c in cfg["types"].items()
    }
    batches = [
        [t for t, b in zip(cfg["tasks"], cfg["batch"], strict=True) if b == n]
        for n in sorted(set(cfg["batch"]))
    ]
    t = simulate_batches(node, types, batches, cfg["per_core"], 1, model["chunk_mb"])
    span = t["makespan_s"]
    # The runner counts each task as a job.
    return {
        "makespan_s": span,
        "jobs_per_h": t["tasks"] * 3600 / span,
        "avg_w": t["energy_j"] / span,
        "wh_per_job": t["energy_j"] / 3600 / t["tasks"],
    }


def validate(
    results: Path,
    refs: str,
    note: Callable[[str], None] = lambda _: None,
    disk_models: Path | None = None,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(the calibrated model, one row per run: measured, predicted and the error in %, and
    the disk it was predicted on); ``note`` hears which runs were left out. ``disk_models``
    adds disk models to the shipped ones, for runs on an emulated disk of the user's model.
    Every run's disk is checked before any is predicted."""
    models = load_disks(disk_models)
    runs = [_load(p) for p in select_runs(results, refs, note)]
    model = calibrate(runs, models=models)
    rows = []
    for r in runs:
        m = r["summary"]["tasks"]
        p = predict(r, model, models)
        row: dict[str, Any] = {
            "run_id": r["run_id"],
            "set": m["set"],
            "disk": m["disk"],
            "per_core": m["per_core"],
            "rep": m["rep"],
            "power": m["power"],
            "predicted_on": _predicted_on(r, model, models),
            # A run written before the kinds were recorded has only their count.
            "failed_tasks": m.get("failed_tasks")
            or ({"count": m["failed"], "kinds": None} if m.get("failed") else None),
        }
        for key in ("jobs_per_h", "wh_per_job", "avg_w", "makespan_s"):
            row[f"{key}_measured"], row[f"{key}_predicted"] = m[key], p[key]
            ok = m[key] not in (None, 0) and math.isfinite(p[key])
            row[f"{key}_error_pct"] = (p[key] / m[key] - 1) * 100 if ok else None
        rows.append(row)
    return model, rows


def _predicted_on(
    run: dict[str, Any], model: dict[str, Any], models: Mapping[str, Mapping[str, Any]]
) -> dict[str, Any]:
    """What disk a run was predicted on: ``emulated`` (its emulator's model and the matching
    scheduler), ``probe`` (the fluid disk from its location's probe) or ``node`` (node.toml's
    disk of the location's name, for a run that read nothing)."""
    emulated = emulated_disk(run, models)
    if emulated is not None:
        settings = run["summary"]["emulated_disk"]["settings"]
        return {"source": "emulated", "emulator_scheduler": settings["scheduler"], **emulated}
    entry = model["disks"].get(run["summary"]["tasks"]["disk"])
    if entry is not None and "seq_mb_s" in entry:
        return {"source": "probe", "seq_mb_s": entry["seq_mb_s"], "switch_s": entry["switch_s"]}
    return {"source": "node", **(entry or {})}


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return repr(v) if isinstance(v, str) else repr(float(v))


def model_toml(model: dict[str, Any]) -> str:
    """The calibrated node as a --model file (types' CPU times as a comment: they belong in a
    set file)."""
    lines = [
        "# A node calibrated by `iowatt sim tasks --validate` from tasks runs.",
        f"chunk_mb = {model['chunk_mb']!r}",
        "",
        "[node]",
    ]
    lines += [
        f"{k} = {float(v)!r}" if k != "cores" else f"{k} = {int(v)}"
        for k, v in model["node"].items()
    ]
    for name, d in model["disks"].items():
        lines += ["", f"[disks.{name}]"]
        lines += [f"{k} = {_toml_value(v)}" for k, v in d.items()]
    lines += ["", "# measured CPU seconds per task type:"]
    lines += [f"#   {k} = {v:.3f}" for k, v in model["types"].items()]
    return "\n".join(lines) + "\n"
