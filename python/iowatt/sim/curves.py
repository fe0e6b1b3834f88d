"""The fan–disk curve a server simulation follows: the disks' throughput, as a fraction of
their best, against fan PWM %.

A ``--curve`` is a curve file (``iowatt-curve/1``, written by ``iowatt sweep``), a sweep run
(its id, a unique prefix, its directory, or ``latest`` for the last fan sweep in the store) —
every disk's curve of it, or one disk's as ``RUN:DISK`` — or the name of a built-in disk
profile. Without one, the built-in SATA profiles. The database is striped over the disks, so it
goes at the pace of the slowest: the curves combine into their minimum at every PWM any of them
was measured at.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from iowatt.errors import ConfigError, RunNotFoundError

DEFAULT_PROFILES = ("hit-sata", "fuj-sata")
_HINT = "give a curve file, a sweep run (id or `latest`) or a disk profile such as hit-sata"


def _profile_curve(name: str) -> tuple[str, list[list[float]]]:
    from iowatt.sweep.profiles import load_profiles

    profiles = load_profiles()
    if name not in profiles:
        raise ConfigError(f"--curve `{name}` is not a file, a run or a disk profile", _HINT)
    fan = profiles[name].curves.get("fan")
    if not fan:
        raise ConfigError(f"disk profile `{name}` has no fan curve", _HINT)
    return f"profile {name}", [[x, y, y, y] for x, y in fan]


def _file_curve(path: Path) -> tuple[str, list[list[float]]]:
    from iowatt.curve import read_curve

    doc = read_curve(path)
    stim = doc["stimulus"]
    if stim["kind"] != "fan":
        raise ConfigError(
            f"curve file `{path}` is a {stim['kind']} curve; the server simulator follows a fan"
            " curve",
            "give the curve of a fan sweep (`iowatt sweep --stimulus fan …`)",
        )
    if doc["max_mib_s"] == 0:
        raise ConfigError(f"curve file `{path}` is of a disk that never moved (0 MiB/s)", _HINT)
    points = []
    for p in doc["points"]:
        lo, hi = min(p["norm_min"], p["norm"]), min(max(p["norm_max"], p["norm"]), 1.0)
        points.append([float(p["value"]), float(p["norm"]), float(lo), float(hi)])
    for x, *_ in points:
        if not 0 <= x <= 100:
            raise ConfigError(f"curve file `{path}` has fan PWM {x:g} %, outside 0..100", _HINT)
    return f"{doc['run_id']}/{doc['disk']['name']}", points


def split_disk(ref: str) -> tuple[str, str | None]:
    """``RUN:DISK`` → (``RUN``, ``DISK``); a reference without one → (ref, None)."""
    run, sep, disk = ref.partition(":")
    return (run, disk) if sep and run and disk else (ref, None)


def run_curve_files(run_dir: Path, disk: str | None = None) -> list[Path]:
    """The curve files of a sweep run: every disk's, or ``disk``'s alone (refused, listing the
    run's disks, when it has no such disk)."""
    from iowatt.curve import curve_filename

    files = sorted(run_dir.glob("curve-*.json"))
    if not files:
        raise ConfigError(f"run `{run_dir.name}` has no curve files (is it a sweep?)", _HINT)
    if disk is None:
        return files
    wanted = run_dir / curve_filename(disk)
    if wanted in files:
        return [wanted]
    names = disk_names(files)
    raise ConfigError(
        f"run `{run_dir.name}` has no disk `{disk}` (its disks: {', '.join(names)})",
        f"give one of them: {run_dir.name}:{names[0]}",
    )


def disk_names(files: Sequence[Path]) -> list[str]:
    """The disk each curve file is of (its name as the sweep gave it)."""
    from iowatt.curve import read_curve

    return [str(read_curve(f)["disk"]["name"]) for f in files]


def _run_curves(run_dir: Path, disk: str | None = None) -> list[tuple[str, list[list[float]]]]:
    return [_file_curve(f) for f in run_curve_files(run_dir, disk)]


def latest_sweep(results: Path, kind: str | None = "fan") -> Path:
    """The last sweep with curves in ``results`` (of stimulus ``kind``; None: of any)."""
    from iowatt.store.runs import read_manifest, run_dirs

    best: tuple[int, Path] | None = None
    for run_dir in run_dirs(results).values():
        try:
            m = read_manifest(run_dir)
        except Exception:  # a damaged run is not a candidate
            continue
        stimulus = ((m.get("config") or {}).get("stimulus") or {}).get("kind")
        sweep = m.get("kind") == "sweep" and (kind is None or stimulus == kind)
        if (
            sweep
            and any(run_dir.glob("curve-*.json"))
            and (best is None or m["started_ns"] > best[0])
        ):
            best = (m["started_ns"], run_dir)
    if best is None:
        what = "sweep" if kind is None else f"{kind} sweep"
        raise ConfigError(
            f"--curve latest: no {what} with curves in `{results}`",
            f"run `iowatt sweep --stimulus {kind or 'fan'} …` first, or give a curve file",
        )
    return best[1]


def _latest_fan_sweep(results: Path) -> Path:
    return latest_sweep(results, "fan")


def resolve(refs: Sequence[str], results: Path) -> list[tuple[str, list[list[float]]]]:
    """Every curve the ``--curve`` values name, as (source, [[pwm, norm, lo, hi], …])."""
    from iowatt.store.runs import resolve_run

    if not refs:
        return [_profile_curve(name) for name in DEFAULT_PROFILES]
    out = []
    for ref in refs:
        path = Path(ref)
        run, disk = split_disk(ref)
        if path.is_file():
            out.append(_file_curve(path))
        elif run == "latest":
            out.extend(_run_curves(_latest_fan_sweep(results), disk))
        else:
            try:
                out.extend(_run_curves(resolve_run(results, run), disk))
            except RunNotFoundError:
                if disk is not None:
                    raise
                out.append(_profile_curve(ref))
    return out


def _at(points: list[list[float]], x: float, k: int) -> float:
    """Column ``k`` of ``points`` at PWM ``x``: linear between points, flat beyond the ends."""
    from iowatt.sweep.profiles import interpolate

    return interpolate(tuple((p[0], p[k]) for p in points), x)


def combine(curves: Sequence[tuple[str, list[list[float]]]]) -> dict[str, Any]:
    """The slowest disk's fraction at every PWM any curve has (the engine's ``Curve``)."""
    xs = sorted({x for _, points in curves for x, *_ in points})
    points = []
    for x in xs:
        norm, lo, hi = (min(_at(p, x, k) for _, p in curves) for k in (1, 2, 3))
        for v in (norm, lo, hi):
            if not (math.isfinite(v) and 0 <= v <= 1):
                raise ConfigError(f"curve value {v:g} at {x:g} % PWM is outside 0..1", _HINT)
        points.append([x, norm, min(lo, norm), max(hi, norm)])
    return {"source": " + ".join(source for source, _ in curves), "points": points}
