"""``iowatt sim tasks --validate RUNS``: the simulator calibrated from runner runs, then set
against each of them — predicted against measured jobs/h, Wh/job and average watts.

Calibration, from the runs themselves (``--save-model`` writes it as a node TOML for --model):

- cores: the runs' (k multiplies them); hyper-threading's gain only where the host has SMT on;
- each task type's CPU seconds: the median CPU time its tasks took (a property of the task,
  not of the packing — what the simulator is judged on is the packing);
- each data location's disk: its probe's one-reader rate as the sequential rate, and the
  switching cost that gives the all-readers rate with the model's slice
  (X(n) = X1·q / (q + X1·t) ⇒ t = q·(X1/X(n) − 1)/X1; none when n readers are no slower);
- power: idle, per busy core and disk-active watts, a least-squares fit of the runs' power
  series against their CPU and disk utilisation at the same instants.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
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


def calibrate(runs: list[dict[str, Any]], base: dict[str, Any] | None = None) -> dict[str, Any]:
    """A node model (node.toml's layout) fitted to the runs; see the module docstring."""
    model = copy.deepcopy(base or load_node(None, []))
    first = runs[0]["summary"]
    model["node"]["cores"] = int(runs[0]["manifest"]["config"]["cores"])
    if not first.get("smt", False):
        model["node"]["ht_gain"] = 0.0
    model["node"]["memory_gb"] = 1e6  # the runs ran: memory is not what is validated
    slice_mb = SLICE_MB
    for r in runs:
        probe, disk = r["summary"].get("probe"), r["summary"]["tasks"]["disk"]
        if probe is None:
            continue
        x1, xn = probe["one_mb_s"], probe["all_mb_s"]
        switch = slice_mb * (x1 / xn - 1) / x1 if xn < x1 else 0.0
        model["disks"][disk] = {
            "seq_mb_s": x1,
            "switch_s": switch,
            "slice_mb": slice_mb,
            "active_w": disk_watts(model["disks"].get(disk, model["disks"]["hdd"]), load_disks())[
                1
            ],
        }
    model["chunk_mb"] = CHUNK / 1e6
    fit = _fit_power(runs)
    if fit is not None:
        model["node"]["idle_w"], model["node"]["core_w"] = fit[0], fit[1]
        if fit[2] is not None:
            for d in model["disks"].values():
                if "seq_mb_s" in d:
                    d["active_w"] = fit[2]
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


def predict(run: dict[str, Any], model: dict[str, Any]) -> dict[str, Any]:
    """The simulator's figures for one run as it was configured."""
    cfg = run["manifest"]["config"]
    disk = cfg["location"]["name"]
    entry = model["disks"].get(disk, model["disks"]["hdd"])
    node = {**model["node"], "disk": engine_disk(disk, entry, load_disks())}
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
    results: Path, refs: str, note: Callable[[str], None] = lambda _: None
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(the calibrated model, one row per run: measured, predicted and the error in %);
    ``note`` hears which runs were left out."""
    runs = [_load(p) for p in select_runs(results, refs, note)]
    model = calibrate(runs)
    rows = []
    for r in runs:
        m = r["summary"]["tasks"]
        p = predict(r, model)
        row: dict[str, Any] = {
            "run_id": r["run_id"],
            "set": m["set"],
            "disk": m["disk"],
            "per_core": m["per_core"],
            "rep": m["rep"],
            "power": m["power"],
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
        lines += [
            f"{k} = {v!r}" if isinstance(v, str) else f"{k} = {float(v)!r}" for k, v in d.items()
        ]
    lines += ["", "# measured CPU seconds per task type:"]
    lines += [f"#   {k} = {v:.3f}" for k, v in model["types"].items()]
    return "\n".join(lines) + "\n"
