"""What ``iowatt trace generate`` is asked for, checked once: every option, its default and its
limits, and the command line that gives the same log again."""

from __future__ import annotations

import datetime as dt
import math
import re
import shlex
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from iowatt.errors import ConfigError
from iowatt.trace.synth.render import FORMATS
from iowatt.units import parse_duration

DEFAULT_START = "2026-03-02T00:00"  # a Monday, so a week's log is Monday to Sunday
DEFAULT_DURATION = "1d"
DEFAULT_RATE = 10.0  # requests/s on average: 864,000 requests a day
DEFAULT_PEAK_RATIO = 8.0
DEFAULT_WEEKEND = 0.6
DEFAULT_ZIPF = 0.8
DEFAULT_FILES = 10_000
DEFAULT_NOT_FOUND = 0.02
DEFAULT_SLOW_PATH = "/slow"
DEFAULT_SLOW_SHARE = 0.005
DEFAULT_NOT_MODIFIED = 0.1
DEFAULT_CLIENTS = 5_000
DEFAULT_FORMAT = "combined"
DEFAULT_HOST = "www.example.com"
DEFAULT_SEED = 1
# Counts per second are kept as 32-bit integers, and a log beyond this is no demo.
MAX_REQUESTS = 2_000_000_000
MAX_RATE = 1_000_000.0
MAX_FILES = 10_000_000
# Presets: defaults of their own for the options the user leaves out (docs/trace.md, "The
# study-web preset"). study-web is the power-and-performance framework study's web trace
# (spec/replay-and-power.md): about 17,000 requests a day over about 30 h (6 h of warm-up before
# the day), from a Monday evening [A], on a tree of the study's 509,000 files written beside the
# log (:mod:`iowatt.trace.synth.study`).
PRESETS: dict[str, dict[str, str]] = {
    "study-web": {
        "start": "2026-03-02T18:00",
        "duration": "30h",
        "rate": repr(17_000 / 86_400),
        "files": "509000",
    },
}
_ZONE = re.compile(r"([+-])(\d\d):?(\d\d)")
_HOST = re.compile(r"[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?")
_PATH = re.compile(r"/[!#-\[\]-~]*")  # printable ASCII without space, `"` and `\`


@dataclass(frozen=True)
class GenerateConfig:
    """A synthetic log's parameters; :meth:`parse` takes the options as typed."""

    start: dt.datetime  # the first second, the server's wall-clock time (naive)
    zone: str  # "+0100", written in every line
    duration_s: int
    rate: float | None = DEFAULT_RATE  # mean requests/s, or
    requests: int | None = None  # an exact total
    peak_ratio: float = DEFAULT_PEAK_RATIO
    weekend: float = DEFAULT_WEEKEND
    zipf: float = DEFAULT_ZIPF
    tree: Path | None = None
    files: int = DEFAULT_FILES
    not_found: float = DEFAULT_NOT_FOUND
    slow_path: str = DEFAULT_SLOW_PATH
    slow_share: float = DEFAULT_SLOW_SHARE
    not_modified: float = DEFAULT_NOT_MODIFIED
    clients: int = DEFAULT_CLIENTS
    fmt: str = DEFAULT_FORMAT
    host: str = DEFAULT_HOST
    seed: int = DEFAULT_SEED
    preset: str | None = None  # a preset's built-in site is a tree, written beside the log

    @classmethod
    def parse(
        cls,
        *,
        start: str | None = None,
        tz: str | None = None,
        duration: str | None = None,
        rate: str | float | None = None,
        requests: str | int | None = None,
        peak_ratio: str | float | None = None,
        weekend: str | float | None = None,
        zipf: str | float | None = None,
        tree: str | Path | None = None,
        files: str | int | None = None,
        not_found: str | float | None = None,
        slow_path: str | None = None,
        slow_share: str | float | None = None,
        not_modified: str | float | None = None,
        clients: str | int | None = None,
        fmt: str | None = None,
        host: str | None = None,
        seed: str | int | None = None,
        preset: str | None = None,
        scale: str | float | None = None,
    ) -> GenerateConfig:
        """Options as the user gave them (``None``: the preset's value, or the default); a
        ConfigError naming the first one that is wrong. ``scale`` multiplies the number of
        requests and the built-in site's files (not a ``tree``'s)."""
        if preset is not None:
            if preset not in PRESETS:
                raise ConfigError(
                    f"--preset {_q(preset)} is unknown", f"one of {', '.join(PRESETS)}"
                )
            given = PRESETS[preset]
            start = given["start"] if start is None else start
            duration = given["duration"] if duration is None else duration
            if rate is None and requests is None:
                rate = given["rate"]
            if files is None and tree is None:
                files = given["files"]
        factor = 1.0 if scale is None else _number(scale, "--scale", 0, 1, "0.1", shown=None)
        if factor <= 0:
            raise ConfigError(f"--scale {_q(scale)} must be above zero", "e.g. --scale 0.1")
        when, zone = _start(start or DEFAULT_START, tz)
        seconds = _duration(duration or DEFAULT_DURATION)
        # %t writes a four-digit year.
        last = dt.datetime(9999, 12, 31) - dt.timedelta(seconds=seconds)
        if when.year < 1970 or when > last:
            raise ConfigError(
                f"--start {_q(start or DEFAULT_START)} with --duration {seconds:,} s leaves "
                "the years 1970–9999",
                "e.g. --start 2026-03-02T00:00",
            )
        if rate is not None and requests is not None:
            raise ConfigError(
                "--rate and --requests cannot be combined",
                "give a mean rate (requests/s) or a total number of requests",
            )
        n = None if requests is None else _int(requests, "--requests", 1, MAX_REQUESTS, "100000")
        r = None
        if n is not None:
            n = max(1, round(n * factor))
        else:
            r = DEFAULT_RATE if rate is None else _number(rate, "--rate", 0, MAX_RATE, "10")
            if r <= 0:
                raise ConfigError(f"--rate {_q(rate)} must be above zero", "e.g. --rate 10")
            r *= factor
            if r * seconds > MAX_REQUESTS:
                raise ConfigError(
                    f"--rate {_q(rate)} over {seconds:,} s makes more than "
                    f"{MAX_REQUESTS:,} requests",
                    "lower the rate or shorten --duration",
                )
        if files is not None and tree is not None:
            raise ConfigError(
                "--files and --tree cannot be combined", "--files sizes the built-in site"
            )
        site_files = (
            DEFAULT_FILES if files is None else _int(files, "--files", 1, MAX_FILES, "10000")
        )
        peak = _number(peak_ratio, "--peak-ratio", 1, 1000, "8", DEFAULT_PEAK_RATIO)
        shares = {
            "not_found": _number(not_found, "--not-found", 0, 1, "0.02", DEFAULT_NOT_FOUND),
            "slow_share": _number(slow_share, "--slow-share", 0, 1, "0.005", DEFAULT_SLOW_SHARE),
            "not_modified": _number(
                not_modified, "--not-modified", 0, 1, "0.1", DEFAULT_NOT_MODIFIED
            ),
        }
        if shares["not_found"] + shares["slow_share"] > 1:
            raise ConfigError(
                f"--not-found {shares['not_found']} and --slow-share {shares['slow_share']} "
                "add up to more than 1",
                "they are shares of all requests, e.g. 0.02 and 0.005",
            )
        path = slow_path if slow_path is not None else DEFAULT_SLOW_PATH
        if not _PATH.fullmatch(path):
            raise ConfigError(
                f"--slow-path {_q(path)} is not a URL path",
                "start it with `/` and use printable characters without spaces, e.g. /slow",
            )
        name = host if host is not None else DEFAULT_HOST
        if not _HOST.fullmatch(name):
            raise ConfigError(f"--host {_q(name)} is not a host name", "e.g. www.example.com")
        layout = fmt or DEFAULT_FORMAT
        if layout not in FORMATS:
            raise ConfigError(f"--format {_q(layout)} is unknown", f"one of {', '.join(FORMATS)}")
        return cls(
            start=when,
            zone=zone,
            duration_s=seconds,
            rate=r,
            requests=n,
            peak_ratio=peak,
            weekend=_number(weekend, "--weekend", 0, 100, "0.6", DEFAULT_WEEKEND),
            zipf=_number(zipf, "--zipf", 0, 10, "0.8", DEFAULT_ZIPF),
            tree=None if tree is None else Path(tree),
            files=max(1, round(factor * site_files)),
            slow_path=path,
            clients=DEFAULT_CLIENTS
            if clients is None
            else _int(clients, "--clients", 1, MAX_FILES, "5000"),
            fmt=layout,
            host=name,
            seed=DEFAULT_SEED if seed is None else _int(seed, "--seed", 0, 2**63 - 1, "1"),
            preset=preset,
            **shares,
        )

    def params(self) -> dict[str, Any]:
        """The parameters as JSON values (the sidecar's ``params``)."""
        out = asdict(self)
        out["start"] = self.start.isoformat(timespec="seconds")
        out["tree"] = None if self.tree is None else str(self.tree)
        return out

    def command(self, out: Path) -> str:
        """The command line that writes the same log (byte for byte, with the same tree)."""
        args = ["iowatt", "trace", "generate", "-o", str(out)]
        if self.preset is not None:
            args += ["--preset", self.preset]
        args += [
            "--start",
            self.start.isoformat(timespec="seconds"),
            "--tz",
            self.zone,
            "--duration",
            f"{self.duration_s}s",
        ]
        if self.requests is not None:
            args += ["--requests", str(self.requests)]
        else:
            args += ["--rate", repr(self.rate)]
        args += [
            "--peak-ratio",
            repr(self.peak_ratio),
            "--weekend",
            repr(self.weekend),
            "--zipf",
            repr(self.zipf),
        ]
        if self.tree is not None:
            args += ["--tree", str(self.tree)]
        else:
            args += ["--files", str(self.files)]
        args += [
            "--not-found",
            repr(self.not_found),
            "--slow-path",
            self.slow_path,
            "--slow-share",
            repr(self.slow_share),
            "--not-modified",
            repr(self.not_modified),
            "--clients",
            str(self.clients),
            "--format",
            self.fmt,
            "--host",
            self.host,
            "--seed",
            str(self.seed),
        ]
        return shlex.join(args)


def _q(value: object) -> str:
    """``value`` in backticks for a message, control characters escaped (one line, always)."""
    text = str(value)
    return f"`{text}`" if text.isprintable() else f"`{repr(text)[1:-1]}`"


def _start(text: str, tz: str | None) -> tuple[dt.datetime, str]:
    try:
        when = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise ConfigError(
            f"--start {_q(text)} is not a date and time", "e.g. 2026-03-02T00:00 (ISO 8601)"
        ) from None
    zone = None if tz is None else _zone(tz)
    if when.tzinfo is not None:
        offset = when.utcoffset() or dt.timedelta(0)
        minutes = round(offset.total_seconds() / 60)
        own = f"{'-' if minutes < 0 else '+'}{abs(minutes) // 60:02d}{abs(minutes) % 60:02d}"
        if zone is not None and zone != own:
            raise ConfigError(
                f"--start {_q(text)} is in zone {own}, --tz is {zone}", "give the zone once"
            )
        zone = own
        when = when.replace(tzinfo=None)
    if when.microsecond:
        raise ConfigError(f"--start {_q(text)} has a fraction of a second", "logs count seconds")
    return when, zone or "+0000"


def _zone(text: str) -> str:
    m = _ZONE.fullmatch(text.strip())
    if not m or int(m[2]) > 14 or int(m[3]) > 59:
        raise ConfigError(f"--tz {_q(text)} is not a zone offset", "e.g. +0100, -0500 or +0000")
    return f"{m[1]}{m[2]}{m[3]}"


def _duration(text: str) -> int:
    t = text.strip()
    # Logs span days, which the shared duration parser does not name.
    if t.endswith("d"):
        days = _number(t[:-1], "--duration", 0, 366, "7d", None, shown=text)
        seconds = days * 86400
    else:
        try:
            seconds = parse_duration(t, "--duration")
        except ConfigError:
            raise ConfigError(
                f"--duration {_q(text)} is not a duration", "e.g. 1d, 7d, 6h, 90m or 3600s"
            ) from None
    if seconds < 1 or seconds != int(seconds):
        raise ConfigError(
            f"--duration {_q(text)} is not a whole number of seconds, at least one",
            "e.g. 1d, 7d, 6h or 90m",
        )
    return int(seconds)


def _number(
    value: str | float | None,
    option: str,
    lo: float,
    hi: float,
    example: str,
    default: float | None = None,
    shown: str | None = None,
) -> float:
    if value is None:
        assert default is not None
        return default
    try:
        x = float(value)
    except ValueError:
        x = math.nan
    if not lo <= x <= hi:  # NaN too
        raise ConfigError(
            f"{option} {_q(shown or value)} is not a number from {lo:g} to {hi:g}",
            f"e.g. {option} {example}",
        )
    return x


def _int(value: str | int, option: str, lo: int, hi: int, example: str) -> int:
    try:
        n = int(value)
    except ValueError:
        n = lo - 1
    if not lo <= n <= hi:
        raise ConfigError(
            f"{option} {_q(value)} is not a whole number from {lo:,} to {hi:,}",
            f"e.g. {option} {example}",
        )
    return n
