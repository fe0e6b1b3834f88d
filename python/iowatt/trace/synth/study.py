"""The site of the power-and-performance framework study's web server, as a tree manifest in
``iowatt tree snapshot``'s format (:mod:`iowatt.tree.manifest`), for ``--preset study-web``.

The study's tree held about 509,000 files, 44,000 directories and 9,000 links, 47 GB in all
(spec/replay-and-power.md). What it does not say is assumed (docs/trace.md, "The study-web
preset", marks each [A]):

- file sizes: SURGE's (:func:`iowatt.trace.synth.site.surge_sizes`: Barford & Crovella 1998,
  lognormal body with a Pareto tail), every size multiplied by one factor so that the expected
  total is the study's 47 GB for its 509,000 files — SURGE alone gives about half;
- directories: a random recursive tree, shallower than a uniform one: directory ``i`` after the
  first ``TOP`` has directory ⌊i·U²⌋ as its parent (U uniform in [0, 1)), so older directories
  hold more; files and links go to directories uniformly at random;
- names, modes and times: readable made-up names, 755/644/777, modification times uniform over
  the ``AGE_DAYS`` days before the log, access and change times the same;
- popularity (:func:`ranked`): small files are asked for more often, as on the web (Cunha,
  Bestavros & Crovella 1995; SPECweb99's file mix): the Zipf ranks are the files in order of
  ln(size) + ``NOISE``·N(0, 1), ``NOISE`` fitted so that a request costs what the study's did on
  average (450 MB / 17,000 ≈ 26.5 kB of body).

Rows come in snapshot's order: breadth first, each directory's entries sorted by name, parents
before their entries; ``iowatt sim raid --tree`` lays files out in that order.
"""

from __future__ import annotations

import math
import posixpath
from pathlib import Path
from typing import TYPE_CHECKING, Any

from iowatt.trace.synth import site
from iowatt.tree import manifest

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

# The study's tree (spec/replay-and-power.md, "Private file systems").
FILES = 509_000
DIRS = 44_000
LINKS = 9_000
BYTES = 47_000_000_000
TOP = 20  # top-level directories [A]
AGE_DAYS = 3 * 365  # modification times spread over this many days before the log [A]
BLOCK = 4096  # a directory's size on disk, and files' allocation unit


def surge_mean() -> float:
    """The mean of :func:`site.surge_sizes`, in closed form: the lognormal body below ``k``,
    then the Pareto tail above it, capped at ``MAX_FILE``."""
    mu, sigma, k = site.LOGNORMAL_MU, site.LOGNORMAL_SIGMA, site.PARETO_K
    a, cap = site.PARETO_ALPHA, site.MAX_FILE

    def phi(z: float) -> float:
        return 0.5 * (1.0 + math.erf(z / math.sqrt(2.0)))

    z = (math.log(k) - mu) / sigma
    body = math.exp(mu + sigma**2 / 2) * phi(z - sigma)  # E[X; X ≤ k]
    tail = k + k / (a - 1) * (1 - (k / cap) ** (a - 1))  # E[min(Pareto, cap)]
    return body + (1 - phi(z)) * tail


SIZE_FACTOR = BYTES / FILES / surge_mean()  # ≈ 1.9 [A]
# The study's day: 450 MB of response bodies for about 17,000 requests (spec/replay-and-power.md).
DAY_BYTES = 450_000_000
DAY_REQUESTS = 17_000
# The spread, in ln bytes, of the noise added to ln(size) to order files by popularity (SURGE's
# ln sizes spread 1.3): fitted so that a request's expected body is DAY_BYTES / DAY_REQUESTS
# (docs/trace.md, "The study-web preset").
NOISE = 2.25


def manifest_path(out: Path) -> Path:
    """Where the tree of the log ``out`` goes: ``day.log.gz`` → ``day.tree.parquet``."""
    name = out.name.removesuffix(".gz").removesuffix(".log")
    return out.with_name(f"{name}.tree.parquet")


def counts(files: int) -> tuple[int, int]:
    """Directories and links of a tree of ``files`` files, in the study's proportions."""
    return round(files * DIRS / FILES), round(files * LINKS / FILES)


def build(files: int, before_ns: int, rng: np.random.Generator) -> dict[str, Any]:
    """A tree of ``files`` files as the manifest's columns (Arrow arrays), with modification
    times before ``before_ns``."""
    import numpy as np
    import pyarrow as pa

    n_dirs, n_links = counts(files)
    # Directories: a random recursive tree under TOP top-level ones, older ones favoured.
    parent = np.full(n_dirs, -1, dtype=np.int64)
    if n_dirs > TOP:
        i = np.arange(TOP, n_dirs)
        parent[TOP:] = np.floor(rng.random(n_dirs - TOP) ** 2 * i).astype(np.int64)
    dir_names = np.array([f"d{i:05d}" for i in range(n_dirs)], dtype=object)
    # Files: an extension by the built-in site's shares, a directory at random (root if none).
    shares = np.array([share for *_, share in site.LAYOUT])
    kind = rng.choice(len(site.LAYOUT), files, p=shares / shares.sum())
    where = rng.integers(0, n_dirs, files) if n_dirs else np.full(files, -1, dtype=np.int64)
    names = [
        f"{site.LAYOUT[k][1]}-{i:06d}.{site.LAYOUT[k][2]}"
        for i, k in enumerate(kind.tolist(), start=1)
    ]
    sizes = np.rint(site.surge_sizes(files, rng) * SIZE_FACTOR).astype(np.int64)
    # Links: in a directory at random, each to a file at random.
    link_where = rng.integers(0, n_dirs, n_links) if n_dirs else np.full(n_links, -1)
    link_to = rng.integers(0, files, n_links)
    link_names = [f"link-{i:05d}" for i in range(1, n_links + 1)]

    dir_rank = _bfs_ranks(parent, dir_names)
    dir_path = [""] * n_dirs
    for d in np.argsort(dir_rank).tolist():  # parents first
        p = int(parent[d])
        dir_path[d] = dir_names[d] if p < 0 else f"{dir_path[p]}/{dir_names[d]}"

    def under(d: npt.NDArray[np.int64], name: list[str]) -> list[str]:
        return [n if p < 0 else f"{dir_path[p]}/{n}" for p, n in zip(d.tolist(), name, strict=True)]

    file_path = under(where, names)
    link_path = under(link_where, link_names)
    targets = [
        posixpath.relpath(file_path[t], posixpath.dirname(lp) or ".")
        for lp, t in zip(link_path, link_to.tolist(), strict=True)
    ]
    # Every entry: its parent's breadth-first rank (-1: the root) and name give snapshot's order.
    entry_parent = np.concatenate([parent, where, link_where]).astype(np.int64)
    parent_rank = np.where(entry_parent < 0, -1, dir_rank[np.maximum(entry_parent, 0)])
    entry_name = np.array([*dir_names, *names, *link_names], dtype=object).astype(str)
    order = np.lexsort((entry_name, parent_rank))

    n = len(entry_parent)
    is_dir = np.arange(n) < n_dirs
    is_link = np.arange(n) >= n_dirs + files
    link_sizes = np.array([len(t.encode()) for t in targets], dtype=np.int64)
    size = np.concatenate([np.zeros(n_dirs, dtype=np.int64), sizes, link_sizes])
    subdirs = np.bincount(parent[parent >= 0], minlength=n_dirs)
    mtime = before_ns - rng.integers(1, AGE_DAYS * 86_400, n) * 1_000_000_000
    columns = {
        "path": pa.array([*dir_path, *file_path, *link_path], pa.string()),
        "type": np.where(is_dir, "dir", np.where(is_link, "symlink", "file")),
        "size": size,
        "mode": np.where(is_dir, 0o755, np.where(is_link, 0o777, 0o644)),
        "mtime_ns": mtime,
        "atime_ns": mtime,
        "target": pa.array([None] * (n - n_links) + targets, pa.string()),
        "allocated": np.where(is_dir, BLOCK, np.where(is_link, 0, -(-size // BLOCK) * BLOCK)),
        "ctime_ns": mtime,
        "nlink": np.concatenate([2 + subdirs, np.ones(files + n_links, dtype=np.int64)]),
    }
    schema = manifest.schema({})
    take = pa.array(order)
    return {
        name: values.take(take)
        if isinstance(values, pa.Array)
        else pa.array(values[order], schema.field(name).type)
        for name, values in columns.items()
    }


def ranked(
    paths: list[str], sizes: npt.NDArray[np.int64], source: str, rng: np.random.Generator
) -> site.Site:
    """The site with its files in the preset's popularity order (rank 1 first): by ln(size)
    plus ``NOISE``·N(0, 1), so small files tend to rank high, with many exceptions."""
    import numpy as np

    key = np.log(np.maximum(sizes, 1)) + NOISE * rng.standard_normal(len(paths))
    order = np.argsort(key, kind="stable")
    return site.Site([paths[i] for i in order.tolist()], sizes[order], source)


def _bfs_ranks(parent: npt.NDArray[np.int64], names: npt.NDArray[Any]) -> npt.NDArray[np.int64]:
    """Each directory's place in breadth-first order, siblings sorted by name."""
    import numpy as np

    n = len(parent)
    depth = np.zeros(n, dtype=np.int64)
    for d in range(n):  # a parent comes before its children
        if parent[d] >= 0:
            depth[d] = depth[parent[d]] + 1
    rank = np.full(n, -1, dtype=np.int64)
    done = 0
    for level in range(int(depth.max()) + 1 if n else 0):
        at = np.flatnonzero(depth == level)
        above = np.where(parent[at] < 0, -1, rank[np.maximum(parent[at], 0)])
        at = at[np.lexsort((names[at].astype(str), above))]
        rank[at] = np.arange(done, done + len(at))
        done += len(at)
    return rank
