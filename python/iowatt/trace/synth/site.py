"""What requests ask for: the site's files (paths and sizes), from a tree manifest, a directory
or a built-in synthetic site, and the popularity of each.

Popularity is Zipf-like: the file of rank ``r`` is asked for with probability ∝ 1/r^alpha. Breslau
et al. ("Web caching and Zipf-like distributions: evidence and implications", INFOCOM 1999)
measured alpha from 0.64 to 0.83 across six proxy traces, hence the default 0.8. Ranks are a seeded
random permutation of the files, so popularity owes nothing to path order or size (a preset's
order favours small files instead: :func:`iowatt.trace.synth.study.ranked`).

The synthetic site's sizes follow SURGE (Barford & Crovella, "Generating representative web
workloads for network and server performance evaluation", SIGMETRICS 1998, Table 1): a
lognormal body (mu = 9.357, sigma = 1.318 in ln bytes: median ~11.6 kB) with a Pareto tail
(alpha = 1.1, from k = 133 kB) for the ~3 % of files the lognormal puts above k.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from iowatt.errors import ConfigError
from iowatt.tree.manifest import FORMAT as TREE_FORMAT
from iowatt.tree.manifest import META_KEY

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

TREE_HINT = (
    "give a directory, or a tree manifest written by `iowatt tree snapshot` "
    "(Parquet with columns path, type, size)"
)
# SURGE's file sizes (Barford & Crovella 1998, Table 1).
LOGNORMAL_MU = 9.357
LOGNORMAL_SIGMA = 1.318
PARETO_K = 133_000
PARETO_ALPHA = 1.1
# A Pareto tail with alpha near 1 draws the odd multi-GB file; a site for replay demos is recreated
# on disk, so sizes stop here.
MAX_FILE = 1 << 30
# The synthetic site's directories and what they hold: (directory, stem, extension, share).
LAYOUT = (
    ("", "page", "html", 0.10),
    ("news/", "article", "html", 0.15),
    ("images/", "photo", "jpg", 0.35),
    ("images/icons/", "icon", "png", 0.10),
    ("images/anim/", "banner", "gif", 0.04),
    ("css/", "style", "css", 0.04),
    ("js/", "app", "js", 0.07),
    ("docs/", "report", "pdf", 0.15),
)
# Files every site has (the synthetic site only: a real tree has what it has).
FIXED = ("index.html", "favicon.ico", "robots.txt")
# Requests for what is not there: scanners' favourites and stale links.
PROBES = (
    "wp-login.php",
    "xmlrpc.php",
    ".env",
    ".git/config",
    "apple-touch-icon.png",
    "apple-touch-icon-precomposed.png",
    "ads.txt",
    "sitemap.xml",
    "favicon.ico",
    "robots.txt",
    "admin/",
    "phpmyadmin/",
    "cgi-bin/test.cgi",
    "old/index.html",
    "server-status",
)
MISSING_PATHS = 200
MISSING_SIZES = (150, 520)  # an error page's body, bytes


@dataclass(frozen=True)
class Site:
    """Request targets in popularity order (rank 1 first) and their sizes in bytes."""

    paths: list[str]
    sizes: npt.NDArray[np.int64]
    source: str  # "synthetic", "manifest" or "directory"


def surge_sizes(n: int, rng: np.random.Generator) -> npt.NDArray[np.int64]:
    """``n`` file sizes from SURGE's lognormal body with a Pareto tail."""
    import numpy as np

    sizes = rng.lognormal(LOGNORMAL_MU, LOGNORMAL_SIGMA, n)
    tail = sizes > PARETO_K
    # Pareto(alpha) above k by inversion: k · U^(−1/alpha), U in (0, 1].
    u = 1.0 - rng.random(int(tail.sum()))
    sizes[tail] = PARETO_K * u ** (-1.0 / PARETO_ALPHA)
    out: npt.NDArray[np.int64] = np.clip(np.rint(sizes), 1, MAX_FILE).astype(np.int64)
    return out


def synthetic(files: int, rng: np.random.Generator) -> tuple[list[str], npt.NDArray[np.int64]]:
    """A site of ``files`` files under a few directories, with SURGE sizes."""
    import numpy as np

    fixed = list(FIXED[:files])
    rest = files - len(fixed)
    shares = np.array([share for *_, share in LAYOUT])
    counts = np.floor(shares / shares.sum() * rest).astype(np.int64)
    counts[np.argmax(shares)] += rest - int(counts.sum())
    paths = [f"/{name}" for name in fixed]
    for (directory, stem, ext, _), count in zip(LAYOUT, counts, strict=True):
        width = len(str(int(count)))
        paths += [f"/{directory}{stem}-{i:0{width}d}.{ext}" for i in range(1, int(count) + 1)]
    return paths, surge_sizes(files, rng)


def read_tree(tree: Path) -> tuple[list[str], npt.NDArray[np.int64], str]:
    """The regular files of ``tree`` (a directory, or an iowatt tree manifest) as URL paths
    and sizes, sorted by path; a ConfigError naming ``tree`` when it is neither."""
    if tree.is_dir():
        paths, sizes = _walk(tree)
        source = "directory"
    elif tree.is_file():
        paths, sizes = _manifest(tree)
        source = "manifest"
    else:
        raise ConfigError(f"--tree `{tree}` does not exist", TREE_HINT)
    if not paths:
        raise ConfigError(f"--tree `{tree}` holds no regular files", TREE_HINT)
    return paths, sizes, source


def _walk(root: Path) -> tuple[list[str], npt.NDArray[np.int64]]:
    import numpy as np

    found: list[tuple[str, int]] = []
    # Names are bytes on disk (not always UTF-8): quote the bytes, as a server's URLs would.
    broot = os.fsencode(root)
    for dirpath, dirnames, filenames in os.walk(broot):
        dirnames.sort()
        for name in filenames:
            full = os.path.join(dirpath, name)
            st = os.lstat(full)
            if (st.st_mode & 0o170000) == 0o100000:  # a regular file, not a link
                found.append(("/" + quote(os.path.relpath(full, broot)), st.st_size))
    found.sort()
    return [p for p, _ in found], np.array([s for _, s in found], dtype=np.int64)


def _manifest(path: Path) -> tuple[list[str], npt.NDArray[np.int64]]:
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(path)
    except (pa.ArrowException, OSError):
        raise ConfigError(
            f"--tree `{path}` is neither a directory nor Parquet", TREE_HINT
        ) from None
    meta = (schema.metadata or {}).get(META_KEY)
    try:
        fmt = json.loads(meta).get("format") if meta else None
    except (ValueError, AttributeError):
        fmt = None
    if fmt != TREE_FORMAT:
        raise ConfigError(f"--tree `{path}` is Parquet but not an iowatt tree manifest", TREE_HINT)
    missing = {"path", "type", "size"} - set(schema.names)
    if missing:
        raise ConfigError(
            f"--tree `{path}` lacks the column(s) {', '.join(sorted(missing))}", TREE_HINT
        )
    try:
        table = pq.read_table(path, columns=["path", "type", "size"])
        files = table.filter(pc.equal(table["type"], "file"))
        raw = files["path"].to_pylist()
        sizes = files["size"].cast(pa.int64()).to_numpy()
    except (pa.ArrowException, OSError) as e:
        raise ConfigError(f"--tree `{path}` cannot be read: {e}", TREE_HINT) from None
    if any(not isinstance(p, str) or not p for p in raw) or (sizes < 0).any():
        raise ConfigError(f"--tree `{path}` has a file without a path or size", TREE_HINT)
    order = sorted(range(len(raw)), key=raw.__getitem__)
    paths = ["/" + quote(raw[i].lstrip("/")) for i in order]
    return paths, np.asarray(sizes[order], dtype=np.int64)


def missing_paths(
    real: list[str], rng: np.random.Generator
) -> tuple[list[str], npt.NDArray[np.int64]]:
    """Paths the site lacks (probes, then stale links next to real files) and the size of the
    error page each gets."""
    import numpy as np

    have = set(real)
    out = [p for p in ("/" + q for q in PROBES) if p not in have]
    picks = rng.integers(0, len(real), MISSING_PATHS - len(out))
    for n, i in enumerate(picks):
        base, dot, ext = real[int(i)].rpartition(".")
        stale = f"{base}-old{n}.{ext}" if dot and "/" not in ext else f"{real[int(i)]}-old{n}"
        if stale not in have:
            out.append(stale)
    lo, hi = MISSING_SIZES
    return out, rng.integers(lo, hi + 1, len(out)).astype(np.int64)


def zipf_cdf(n: int, alpha: float) -> npt.NDArray[np.float64]:
    """The cumulative probabilities of ranks 1..n under Zipf(alpha)."""
    import numpy as np

    w = np.arange(1, n + 1, dtype=np.float64) ** -alpha
    cdf: npt.NDArray[np.float64] = np.cumsum(w)
    cdf /= cdf[-1]
    return cdf


def ranked(
    paths: list[str], sizes: npt.NDArray[np.int64], source: str, rng: np.random.Generator
) -> Site:
    """The site with its files in a random popularity order."""
    order = rng.permutation(len(paths))
    return Site([paths[int(i)] for i in order], sizes[order], source)
