"""What ``iowatt age`` is asked for: amounts, size ranges, the seed, and their limits."""

from __future__ import annotations

import math
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from iowatt.errors import ConfigError
from iowatt.units import parse_size

AGE_DIR = "iowatt-age"
MANIFEST = "manifest.json"
VERSION = 1
CHUNK = 1 << 20
FILES_PER_DIR = 1000
PENDING = 1000  # files named in the manifest ahead of their writing (or half those written)
CHECKPOINT_S = 30.0  # the manifest is rewritten at least this often
DISTS = ("loguniform", "uniform")
DEFAULT_SIZES = "1k..75g"
DEFAULT_DELETE = "7%"
FILE_PATTERN = re.compile(r"d[0-9]+/f[0-9]+")
DIR_PATTERN = re.compile(r"d[0-9]+")
MANIFEST_HINT = "give the manifest.json that `iowatt age` wrote (DIR/iowatt-age/manifest.json)"

Progress = Callable[[str, int, int], None]
"""Called with a phase (``writing``, ``syncing``, ``deleting``), bytes done and bytes in all."""


@dataclass(frozen=True)
class Amount:
    """A share in percent or a number of bytes, with the text the user typed (``90%``, ``20g``)."""

    text: str
    percent: float | None = None
    nbytes: int | None = None

    def of(self, whole: int) -> int:
        """Bytes this amount stands for, as a share of ``whole`` bytes when it is a percentage."""
        if self.nbytes is not None:
            return self.nbytes
        return round(whole * (self.percent or 0.0) / 100)


def parse_amount(text: str, option: str, *, zero_ok: bool) -> Amount:
    """``90%`` or a size (``37g``); a ConfigError naming ``option`` and the value otherwise."""
    t = text.strip()
    if t.endswith("%"):
        try:
            pct = float(t[:-1])
        except ValueError:
            pct = math.nan
        if not ((pct >= 0 if zero_ok else pct > 0) and pct <= 100):  # NaN fails both
            lowest = "from 0" if zero_ok else "above 0"
            raise ConfigError(
                f"{option} `{text}` is not a percentage {lowest} to 100",
                hint=f"e.g. `{option} 90%`, or a size such as `{option} 20g`",
            )
        return Amount(text, percent=pct)
    n = parse_size(t, option)
    if n == 0 and not zero_ok:
        raise ConfigError(f"{option} `{text}` must be above zero", hint=f"e.g. `{option} 90%`")
    return Amount(text, nbytes=n)


def parse_range(text: str, option: str) -> tuple[int, int]:
    """``1k..75g`` as (1024, 80530636800): a smallest size of at least 1 byte, then the largest."""
    lo_text, sep, hi_text = text.partition("..")
    if not sep:
        raise ConfigError(
            f"{option} `{text}` is not a range of sizes",
            hint=f"give the smallest and the largest size, e.g. `{option} 1k..75g`",
        )
    lo, hi = parse_size(lo_text.strip(), option), parse_size(hi_text.strip(), option)
    if lo < 1 or lo > hi:
        raise ConfigError(
            f"{option} `{text}` must go from at least 1 byte up to a size not below it",
            hint=f"e.g. `{option} 1k..75g`",
        )
    return lo, hi


def parse_seed(text: str | int | None) -> int:
    """A seed of 0 or more; a new random one when ``None`` (it is recorded in the manifest)."""
    if text is None:
        return secrets.randbelow(2**32)
    try:
        seed = int(text)
    except ValueError:
        seed = -1
    if seed < 0:
        raise ConfigError(f"--seed `{text}` is not a whole number of 0 or more", hint="e.g. 42")
    return seed


@dataclass(frozen=True)
class AgeConfig:
    """What to write and what to delete; see :meth:`parse` for the options' syntax."""

    fill: Amount
    sizes: tuple[int, int]
    delete: Amount
    delete_sizes: tuple[int, int] | None = None
    dist: str = "loguniform"
    seed: int = 0
    files_per_dir: int = FILES_PER_DIR

    @classmethod
    def parse(
        cls,
        fill: str,
        sizes: str = DEFAULT_SIZES,
        delete: str = DEFAULT_DELETE,
        delete_sizes: str | None = None,
        dist: str = "loguniform",
        seed: str | int | None = None,
    ) -> AgeConfig:
        if dist not in DISTS:
            raise ConfigError(f"--dist `{dist}` is not one of {', '.join(DISTS)}", "e.g. uniform")
        return cls(
            fill=parse_amount(fill, "--fill", zero_ok=False),
            sizes=parse_range(sizes, "--sizes"),
            delete=parse_amount(delete, "--delete", zero_ok=True),
            delete_sizes=parse_range(delete_sizes, "--delete-sizes") if delete_sizes else None,
            dist=dist,
            seed=parse_seed(seed),
        )

    def params(self) -> dict[str, Any]:
        return {
            "fill": self.fill.text,
            "sizes": list(self.sizes),
            "dist": self.dist,
            "delete": self.delete.text,
            "delete_sizes": list(self.delete_sizes) if self.delete_sizes else None,
            "files_per_dir": self.files_per_dir,
            "chunk_bytes": CHUNK,
        }
