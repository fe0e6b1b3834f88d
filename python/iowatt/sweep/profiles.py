"""Disk profiles: how much of its write throughput a disk keeps under each stimulus.

A profile is a disk's unstimulated write speed (``write_mb_s``, MB = 10^6 bytes) and, per
stimulus, a curve of (value, fraction of ``write_mb_s``) points: fan duty in % of PWM, sine
frequency in Hz, and random-vibration amplitude in g RMS per frequency band. The emulated
driver (:mod:`iowatt.sweep.emulated`) throttles a real block device to follow one.

The built-in profiles are the six disks of the server vibration study, in ``profiles.toml``
beside this module, which also documents the format. A user file in the same format adds
profiles or replaces built-in ones of the same name.
"""

from __future__ import annotations

import bisect
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, NoReturn

from iowatt.errors import ConfigError
from iowatt.sweep.stimulus import Stimulus, normalize_band

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

BUILTIN = "profiles.toml"
# (value, fraction of write_mb_s), values strictly increasing.
Curve = tuple[tuple[float, float], ...]

_KEYS = {"label", "model", "type", "rpm", "capacity", "write_mb_s", "curves"}
_CURVE_KEYS = {"fan", "frequency", "amplitude"}
_FORMAT_HINT = "see the built-in profiles.toml in iowatt/sweep for the format"
_POINTS_HINT = "e.g. fan = [[0, 1.0], [50, 1.0], [100, 0.35]] (value, fraction of write_mb_s)"


@dataclass(frozen=True)
class DiskProfile:
    """One disk's write speed and its response curves.

    ``curves`` is keyed by ``fan``, ``frequency`` and ``amplitude BAND`` (``amplitude 20-800``).
    The frequency curve was measured at 0.17 g and is used as is for any ``--amplitude``.
    """

    name: str
    label: str
    model: str | None
    type: str | None
    write_mb_s: float
    curves: dict[str, Curve]
    rpm: int | None = None
    capacity: str | None = None

    def fraction(self, stim: Stimulus, value: float) -> float:
        """The fraction of ``write_mb_s`` the disk keeps at ``value`` of ``stim``: linear
        between the curve's points, flat beyond its ends."""
        return interpolate(self.curves[self.curve_key(stim)], value)

    def check(self, stim: Stimulus) -> None:
        """Raise :class:`ConfigError` now if this profile cannot follow ``stim``."""
        self.curve_key(stim)

    def curve_key(self, stim: Stimulus) -> str:
        """The key of the curve that ``stim`` follows; an amplitude sweep without a band uses
        the profile's only band, and needs ``--band`` when there are several."""
        if stim.kind != "amplitude":
            if stim.kind not in self.curves:
                raise ConfigError(
                    f"disk profile `{self.name}` has no {stim.kind} curve",
                    f"it has: {self._listing()}",
                )
            return stim.kind
        if stim.band is not None:
            band = normalize_band(stim.band)
            if band is None:
                raise ConfigError(f"--band `{stim.band}` is not a frequency band", "e.g. 20-800")
            key = f"amplitude {band}"
            if key not in self.curves:
                raise ConfigError(
                    f"disk profile `{self.name}` has no amplitude curve for the {band} Hz band",
                    f"it has: {self._listing()}",
                )
            return key
        keys = [k for k in self.curves if k.startswith("amplitude ")]
        if len(keys) == 1:
            return keys[0]
        if not keys:
            raise ConfigError(
                f"disk profile `{self.name}` has no amplitude curve", f"it has: {self._listing()}"
            )
        bands = ", ".join(k.split(" ", 1)[1] for k in keys)
        raise ConfigError(
            f"disk profile `{self.name}` has amplitude curves for several bands ({bands} Hz)",
            f"choose one with --band, e.g. --band {keys[0].split(' ', 1)[1]}",
        )

    def _listing(self) -> str:
        return ", ".join(k + " Hz" if k.startswith("amplitude ") else k for k in self.curves)


def interpolate(points: Curve, x: float) -> float:
    """Piecewise-linear interpolation through ``points``, flat beyond the first and last."""
    xs = [p[0] for p in points]
    i = bisect.bisect_right(xs, x)
    if i == 0:
        return points[0][1]
    if i == len(points):
        return points[-1][1]
    (x0, y0), (x1, y1) = points[i - 1], points[i]
    return y0 + (y1 - y0) * (x - x0) / (x1 - x0)


def load_profiles(extra: Path | None = None) -> dict[str, DiskProfile]:
    """The built-in profiles, plus those of the TOML file ``extra``, which replace built-in
    profiles of the same name."""
    profiles = dict(_builtin())
    if extra is not None:
        try:
            text = extra.read_text()
        except FileNotFoundError:
            raise ConfigError(f"profile file `{extra}` does not exist", "check the path") from None
        except (OSError, UnicodeDecodeError) as e:
            raise ConfigError(f"profile file `{extra}` cannot be read: {e}", None) from None
        profiles.update(parse_profiles(_toml(text, str(extra)), str(extra)))
    return profiles


def get_profile(name: str, profiles: Mapping[str, DiskProfile]) -> DiskProfile:
    """The profile called ``name``; :class:`ConfigError` listing the names otherwise."""
    try:
        return profiles[name]
    except KeyError:
        raise ConfigError(
            f"unknown disk profile `{name}`", f"profiles are: {', '.join(profiles)}"
        ) from None


@lru_cache(maxsize=1)
def _builtin() -> dict[str, DiskProfile]:
    text = resources.files("iowatt.sweep").joinpath(BUILTIN).read_text(encoding="utf-8")
    return parse_profiles(_toml(text, BUILTIN), BUILTIN)


def _toml(text: str, source: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"profile file `{source}`: {e}", _FORMAT_HINT) from None


# --- parsing --------------------------------------------------------------------------------


def parse_profiles(data: Mapping[str, Any], source: str) -> dict[str, DiskProfile]:
    """Profiles from parsed TOML; :class:`ConfigError` naming ``source`` and the bad key."""
    return {name: _profile(name, table, source) for name, table in data.items()}


def _profile(name: str, table: Any, source: str) -> DiskProfile:
    if not isinstance(table, dict):
        _fail(source, name, "is not a table", f"write [{name}] with write_mb_s and curves")
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        _fail(source, f"{name}.{unknown[0]}", "is not a profile key", f"keys: {_keys(_KEYS)}")
    mb_s: Any = table.get("write_mb_s")
    if not _is_number(mb_s) or not mb_s > 0:
        _fail(source, f"{name}.write_mb_s", "must be a positive number (MB/s)", "e.g. 37.0")
    rpm = table.get("rpm")
    if rpm is not None and (not isinstance(rpm, int) or isinstance(rpm, bool) or rpm < 0):
        _fail(source, f"{name}.rpm", "must be a whole number", "e.g. rpm = 5400")
    text: dict[str, str | None] = {}
    for key in ("label", "model", "type", "capacity"):
        value = table.get(key)
        if value is not None and not isinstance(value, str):
            _fail(source, f"{name}.{key}", "must be a string", f'e.g. {key} = "…"')
        text[key] = value
    return DiskProfile(
        name=name,
        label=text["label"] or name,
        model=text["model"],
        type=text["type"],
        write_mb_s=float(mb_s),
        curves=_curves(name, table.get("curves"), source),
        rpm=rpm,
        capacity=text["capacity"],
    )


def _curves(name: str, table: Any, source: str) -> dict[str, Curve]:
    where = f"{name}.curves"
    if not isinstance(table, dict) or not table:
        _fail(
            source, where, "is missing or empty", f"add [{where}] with fan, frequency or amplitude"
        )
    unknown = sorted(set(table) - _CURVE_KEYS)
    if unknown:
        _fail(source, f"{where}.{unknown[0]}", "is not a stimulus", f"keys: {_keys(_CURVE_KEYS)}")
    curves: dict[str, Curve] = {}
    for kind, value in table.items():
        if kind != "amplitude":
            curves[kind] = _points(value, f"{where}.{kind}", source)
            continue
        if not isinstance(value, dict) or not value:
            _fail(source, f"{where}.amplitude", "must be a table of bands", '"20-800" = [[0, 1.0]]')
        for band, points in value.items():
            norm = normalize_band(band)
            if norm is None:
                _fail(source, f"{where}.amplitude.{band}", "is not a frequency band", '"20-800"')
            curves[f"amplitude {norm}"] = _points(points, f"{where}.amplitude.{band}", source)
    return curves


def _points(value: Any, where: str, source: str) -> Curve:
    if not isinstance(value, list) or not value:
        _fail(source, where, "must be a list of [value, fraction] points", _POINTS_HINT)
    points: list[tuple[float, float]] = []
    for i, point in enumerate(value, 1):
        if not (isinstance(point, list) and len(point) == 2 and all(map(_is_number, point))):
            _fail(source, where, f"point {i} `{point}` is not [value, fraction]", _POINTS_HINT)
        x, y = float(point[0]), float(point[1])
        if not 0 <= y <= 1:
            _fail(source, where, f"point {i}: fraction `{y:g}` is outside 0..1", _POINTS_HINT)
        if points and x <= points[-1][0]:
            _fail(source, where, f"point {i}: value `{x:g}` does not increase", "sort the points")
        points.append((x, y))
    return tuple(points)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _keys(keys: set[str]) -> str:
    return ", ".join(sorted(keys))


def _fail(source: str, key: str, problem: str, hint: str) -> NoReturn:
    raise ConfigError(f"profile file `{source}`: `{key}` {problem}", hint)
