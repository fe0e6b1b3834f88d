"""Synthetic web access logs with a realistic, fluctuating load: for replay demos, tests and
storage simulators, when no real log can be shared.

The model (docs/trace.md, "Generating a log", has every parameter and its source):

- arrivals: a non-homogeneous Poisson process, counted per second, with a smooth daily curve
  (busiest hour ``peak_ratio`` × the quietest, around 4 am) and weekends at ``weekend`` × a
  weekday (:mod:`iowatt.trace.synth.profile`);
- targets: the files of a tree manifest, a directory or a built-in site with SURGE's sizes,
  Zipf(alpha)-popular in a seeded random order (:mod:`iowatt.trace.synth.site`; a preset's in an
  order that favours small files, :func:`iowatt.trace.synth.study.ranked`); a share of 404s to
  paths the site lacks, a share to a slow endpoint, 304s and a few HEADs
  (:mod:`iowatt.trace.synth.requests`);
- clients: a seeded pool, Zipf-active, with their own browsers
  (:mod:`iowatt.trace.synth.clients`);
- presets (``--preset study-web``): defaults of a known workload, and a tree of the study's
  shape written beside the log as a tree manifest and requested (:mod:`iowatt.trace.synth.study`).

Everything random comes from ``seed``: the same parameters (and tree) give the same bytes. The
log is written to a temporary file beside the output and renamed into place, with the
parameters and a summary in ``OUT.json``.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from iowatt.errors import ConfigError, StoreError
from iowatt.store.writer import check_output, write_atomic
from iowatt.trace.synth import clients as clients_lib
from iowatt.trace.synth import profile, render, site, study
from iowatt.trace.synth.output import AtomicOutput
from iowatt.trace.synth.params import GenerateConfig
from iowatt.trace.synth.requests import Batch, Shares, Targets, draw
from iowatt.tree import manifest

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["GenerateConfig", "generate", "sidecar_path", "targets", "tree_path"]

Progress = Callable[[int, int], None]
"""Called with the lines written so far and the lines in all."""

KIND = "trace-generate"
VERSION = 1
BATCH = 250_000  # requests drawn and written at a time: ~60 MB of text


def sidecar_path(out: Path) -> Path:
    """Where the parameters and summary of ``out`` go: ``access.log`` → ``access.log.json``."""
    return out.with_name(out.name + ".json")


def generate(config: GenerateConfig, out: Path, progress: Progress | None = None) -> dict[str, Any]:
    """Writes the log ``config`` describes to ``out`` (gzip if it ends in ``.gz``) and its
    sidecar; returns the summary (what the sidecar holds, plus the time taken)."""
    import time

    import numpy as np

    check_output(out, "-o")
    check_output(sidecar_path(out), "-o")
    tree_out = tree_path(config, out)
    if tree_out is not None:
        check_output(tree_out, "-o")
    began = time.monotonic()
    site_rng, client_rng, time_rng, request_rng, tree_rng = _streams(config.seed)
    tree = None if tree_out is None else _study_tree(config, tree_rng)
    targets, site_info = _targets(config, site_rng, tree)
    pool = clients_lib.pool(config.clients, client_rng)
    tables = _tables(config, targets, pool)
    referer_cdf = _referer_cdf(len(tables.referers))
    counts = _arrivals(config, time_rng)
    total = int(counts.sum())
    shares = Shares(config.not_found, config.slow_share, config.not_modified)
    tally = _Tally()

    def batches() -> Iterator[tuple[Batch, int, int]]:
        for first in range(0, config.duration_s, profile.DAY):
            n = min(profile.DAY, config.duration_s - first)
            seconds = np.repeat(np.arange(first, first + n, dtype=np.int64), counts[first:][:n])
            for i in range(0, len(seconds), BATCH):
                yield (
                    draw(seconds[i : i + BATCH], targets, pool, shares, referer_cdf, request_rng),
                    first,
                    n,
                )

    try:
        size = _write(out, config, tables, batches(), tally, total, progress)
        if tree_out is not None and tree is not None:
            try:
                _write_tree(tree, config, tree_out, out)
            except BaseException:
                out.unlink(missing_ok=True)
                raise
    except OSError as e:  # a full disk, a quota, an I/O error: nothing was left behind
        raise StoreError(
            f"-o `{out}` could not be written: {e.strerror or e}",
            "free some space, or write the log elsewhere",
        ) from None
    summary = {
        "kind": KIND,
        "version": VERSION,
        "output": out.name,
        "lines": total,
        "bytes": size,
        "first": tally.first,
        "last": tally.last,
        "status": {str(k): v for k, v in sorted(tally.status.items())},
        "methods": tally.methods,
        "body_bytes": tally.body_bytes,
        "site": site_info,
        "manifest": None if tree_out is None else tree_out.name,
        "params": config.params(),
        "command": config.command(out),
        "iowatt": _version(),
    }
    write_atomic(sidecar_path(out), (_json(summary) + "\n").encode())
    os.chmod(sidecar_path(out), out.stat().st_mode & 0o777)  # as readable as the log
    return {
        **summary,
        "path": str(out),
        "sidecar": str(sidecar_path(out)),
        "manifest": None if tree_out is None else str(tree_out),
        "elapsed_s": time.monotonic() - began,
    }


def tree_path(config: GenerateConfig, out: Path) -> Path | None:
    """Where the log ``out`` of ``config`` has its tree manifest written: beside it for a
    preset's built-in site (``day.log.gz`` → ``day.tree.parquet``), else nowhere."""
    if config.preset is None or config.tree is not None:
        return None
    return study.manifest_path(out)


def targets(config: GenerateConfig) -> Targets:
    """What the log of ``config`` requests: the site's files in popularity order (rank 1
    first), the missing paths, then the slow endpoint — as :func:`generate` draws them."""
    streams = _streams(config.seed)
    tree = None if config.preset is None or config.tree is not None else streams[4]
    return _targets(config, streams[0], None if tree is None else _study_tree(config, tree))[0]


def _streams(seed: int) -> list[np.random.Generator]:
    """Independent generators for the site, the clients, the arrivals, the requests and a
    preset's tree (the first four as they were before presets, so logs stay the same)."""
    import numpy as np

    return [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(5)]


def _study_tree(config: GenerateConfig, rng: np.random.Generator) -> dict[str, Any]:
    """The preset's tree: the manifest's columns, files last modified before the log."""
    start_ns = int((config.start - dt.datetime(1970, 1, 1)).total_seconds()) * 1_000_000_000
    return study.build(config.files, start_ns, rng)


def _write_tree(columns: dict[str, Any], config: GenerateConfig, path: Path, log: Path) -> None:
    """Writes the tree manifest as ``iowatt tree snapshot`` would, as readable as the log."""
    import pyarrow.compute as pc

    kinds = columns["type"]
    files = pc.equal(kinds, "file")
    meta = {
        "format": manifest.FORMAT,
        "key_id": None,
        "keep_extensions": True,
        "counts": {
            "dirs": int(pc.sum(pc.equal(kinds, "dir")).as_py() or 0),
            "files": int(pc.sum(files).as_py() or 0),
            "links": int(pc.sum(pc.equal(kinds, "symlink")).as_py() or 0),
            "bytes": int(pc.sum(pc.filter(columns["size"], files)).as_py() or 0),
            "skipped_special": 0,
            "unreadable": 0,
            "mounts_not_crossed": 0,
        },
        "iowatt": _version(),
        "snapshot_ns": None,
        "cross_mounts": False,
        "synthetic": {"preset": config.preset, "files": config.files, "seed": config.seed},
    }
    manifest.write(columns, meta, path)
    os.chmod(path, log.stat().st_mode & 0o777)


class _Tally:
    """What the summary counts as batches are written."""

    def __init__(self) -> None:
        self.status: dict[int, int] = {}
        self.methods: dict[str, int] = {}
        self.body_bytes = 0
        self.first: str | None = None
        self.last: str | None = None

    def add(self, batch: Batch, times: Any, first: int) -> None:
        import numpy as np

        from iowatt.trace.synth.requests import METHODS

        if not len(batch.second):
            return
        codes, n = np.unique(batch.status, return_counts=True)
        for code, count in zip(codes.tolist(), n.tolist(), strict=True):
            self.status[code] = self.status.get(code, 0) + count
        for m, name in enumerate(METHODS):
            count = int((batch.method == m).sum())
            if count:
                self.methods[name] = self.methods.get(name, 0) + count
        self.body_bytes += int(np.maximum(batch.body, 0).sum())
        if self.first is None:
            self.first = str(times[int(batch.second[0]) - first])
        self.last = str(times[int(batch.second[-1]) - first])


def _write(
    out: Path,
    config: GenerateConfig,
    tables: render.Tables,
    batches: Iterator[tuple[Batch, int, int]],
    tally: _Tally,
    total: int,
    progress: Progress | None,
) -> int:
    """Writes every batch's lines to ``out``, all at once; returns the file's size."""
    done = 0
    day: tuple[int, Any] | None = None
    if progress:
        progress(0, total)
    with AtomicOutput(out) as sink:
        for batch, first, n in batches:
            if day is None or day[0] != first:
                day = (first, render.time_column(config.start, config.zone, first, n))
            lines = render.lines(batch, day[1], first, tables)
            sink.write(_text(lines), lines)
            tally.add(batch, day[1], first)
            done += len(batch.second)
            if progress:
                progress(done, total)
    return out.stat().st_size


def _text(lines: Any) -> memoryview:
    """The bytes of a string array whose lines end in newlines, without a copy."""
    import numpy as np

    if not len(lines):
        return memoryview(b"")
    _, offsets, data = lines.buffers()
    ends = np.frombuffer(offsets, dtype=np.int32)
    start, end = int(ends[lines.offset]), int(ends[lines.offset + len(lines)])
    return memoryview(data)[start:end]


def _targets(
    config: GenerateConfig, rng: np.random.Generator, tree: dict[str, Any] | None = None
) -> tuple[Targets, dict[str, Any]]:
    if config.tree is not None:
        paths, sizes, source = site.read_tree(config.tree)
    elif tree is not None:
        paths, sizes = _tree_files(tree)
        source = f"preset {config.preset}"
    else:
        paths, sizes = site.synthetic(config.files, rng)
        source = "synthetic"
    if config.slow_path in set(paths):
        raise ConfigError(
            f"--slow-path `{config.slow_path}` is a file of the site",
            "name a path the site lacks, e.g. /slow",
        )
    # A preset's popularity favours small files (its workload's bytes per request); otherwise
    # popularity owes nothing to size.
    rank = site.ranked if config.preset is None else study.ranked
    ranked = rank(paths, sizes, source, rng)
    missing, missing_sizes = site.missing_paths(paths, rng)
    import numpy as np

    targets = Targets(
        paths=ranked.paths + missing + [config.slow_path],
        sizes=np.concatenate([ranked.sizes, missing_sizes, np.zeros(1, dtype=np.int64)]),
        files=len(ranked.paths),
        site_cdf=site.zipf_cdf(len(ranked.paths), config.zipf),
        missing_cdf=site.zipf_cdf(len(missing), config.zipf),
    )
    info = {"source": source, "files": len(paths), "bytes": int(sizes.sum())}
    return targets, info


def _tree_files(tree: dict[str, Any]) -> tuple[list[str], npt.NDArray[np.int64]]:
    """A tree's files as :func:`site.read_tree` reads them from its manifest: URL paths, sorted
    (the tree's names need no quoting), and sizes — so ``--tree`` of the written manifest
    requests the same."""
    import numpy as np
    import pyarrow.compute as pc

    files = pc.equal(tree["type"], "file")
    paths = ["/" + p for p in pc.filter(tree["path"], files).to_pylist()]
    sizes = pc.filter(tree["size"], files).to_numpy()
    order = sorted(range(len(paths)), key=paths.__getitem__)
    return [paths[i] for i in order], np.asarray(sizes[order], dtype=np.int64)


def _tables(config: GenerateConfig, targets: Targets, pool: clients_lib.Clients) -> render.Tables:
    import pyarrow as pa

    agents = pa.array([ua for ua, _ in clients_lib.USER_AGENTS]).take(pa.array(pool.agent))
    protocols = pa.array([p for p, _ in clients_lib.PROTOCOLS]).take(pa.array(pool.protocol))
    # Pages of this site that link to others: the most popular pages (or files, if none).
    pages = [p for p in targets.paths[: targets.files] if p.endswith((".html", "/"))]
    pages = (pages or targets.paths[: targets.files])[: clients_lib.SITE_REFERER_PAGES]
    referers = ["-", *clients_lib.EXTERNAL_REFERERS] + [f"https://{config.host}{p}" for p in pages]
    return render.Tables(
        fmt=config.fmt,
        vhost=f"{config.host}:443 ",
        addresses=pa.array(pool.addresses),
        client_agent=agents,
        client_protocol=protocols,
        paths=pa.array(targets.paths),
        referers=pa.array([f'"{r}"' for r in referers]),
    )


def _referer_cdf(n: int) -> npt.NDArray[np.float64]:
    """Referer 0 is none, then the external sites, then this site's pages (Zipf among them)."""
    import numpy as np

    external = len(clients_lib.EXTERNAL_REFERERS)
    outside = 1.0 - clients_lib.NO_REFERER - clients_lib.SITE_REFERER
    own = np.arange(1, n - external, dtype=np.float64) ** -1.0
    p = np.concatenate(
        [
            [clients_lib.NO_REFERER],
            np.full(external, outside / external),
            clients_lib.SITE_REFERER * own / own.sum(),
        ]
    )
    cdf: npt.NDArray[np.float64] = np.cumsum(p)
    cdf /= cdf[-1]
    return cdf


def _arrivals(config: GenerateConfig, rng: np.random.Generator) -> npt.NDArray[np.int32]:
    """Requests in each second of the log."""
    import numpy as np

    start_s = int((config.start - dt.datetime(1970, 1, 1)).total_seconds())
    days = range(0, config.duration_s, profile.DAY)

    def weights(first: int) -> npt.NDArray[np.float64]:
        n = min(profile.DAY, config.duration_s - first)
        return profile.second_weights(start_s + first, n, config.peak_ratio, config.weekend)

    per_day = np.array([weights(first).sum() for first in days])
    whole = float(per_day.sum())
    if whole <= 0:
        raise ConfigError(
            f"--weekend {config.weekend} leaves no time for requests: the log falls on a weekend",
            "give --weekend above 0, or a --start or --duration that includes a weekday",
        )
    counts = np.empty(config.duration_s, dtype=np.int32)
    if config.requests is not None:
        # A Poisson process given its total: multinomial by day, then by second.
        totals = rng.multinomial(config.requests, per_day / whole)
        for first, n_day in zip(days, totals.tolist(), strict=True):
            w = weights(first)
            counts[first : first + len(w)] = rng.multinomial(n_day, w / w.sum())
    else:
        assert config.rate is not None
        scale = config.rate * config.duration_s / whole
        for first in days:
            w = weights(first)
            counts[first : first + len(w)] = rng.poisson(w * scale)
    return counts


def _json(value: Any) -> str:
    import json

    return json.dumps(value, indent=2)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("iowatt")
    except PackageNotFoundError:
        return "unknown"
