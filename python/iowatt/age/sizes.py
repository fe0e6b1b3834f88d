"""The pure part of aging: file sizes from a seed, the files to delete, their paths."""

from __future__ import annotations

import math
import random
from collections.abc import Iterator, Sequence

from iowatt.age.params import FILES_PER_DIR


def size_stream(seed: int, lo: int, hi: int, dist: str = "loguniform") -> Iterator[int]:
    """Endless file sizes in ``[lo, hi]``: log-uniform (most files small, a few huge, like the
    study's) or uniform. The same seed gives the same sizes."""
    rng = random.Random(seed)
    if dist == "uniform":
        while True:
            yield rng.randint(lo, hi)
    a, b = math.log(lo), math.log(hi + 1)
    while True:
        yield max(lo, min(hi, int(math.exp(rng.uniform(a, b)))))


def plan_sizes(total: int, seed: int, lo: int, hi: int, dist: str = "loguniform") -> list[int]:
    """The sizes of the files holding ``total`` bytes: drawn in turn, the last one cut to fit."""
    sizes: list[int] = []
    left = total
    for size in size_stream(seed, lo, hi, dist):
        if left <= 0:
            break
        sizes.append(min(size, left))
        left -= sizes[-1]
    return sizes


def choose_deletions(
    sizes: Sequence[int], nbytes: int, window: tuple[int, int] | None, seed: int
) -> list[int]:
    """Indices of the files to delete, in order: drawn at random among those whose size is in
    ``window`` until at least ``nbytes`` are freed (all of them if they hold less)."""
    if nbytes <= 0:
        return []
    lo, hi = window or (0, max(sizes, default=0))
    eligible = [i for i, s in enumerate(sizes) if lo <= s <= hi]
    random.Random(f"iowatt-age-delete-{seed}").shuffle(eligible)
    chosen, freed = [], 0
    for i in eligible:
        if freed >= nbytes:
            break
        chosen.append(i)
        freed += sizes[i]
    return chosen


def file_path(index: int, files_per_dir: int = FILES_PER_DIR) -> str:
    """The path of file ``index`` relative to ``DIR/iowatt-age``: ``d00000/f00000000``."""
    return f"d{index // files_per_dir:05d}/f{index:08d}"
