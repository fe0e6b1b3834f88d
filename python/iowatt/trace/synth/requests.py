"""What each request is: its target, method, status and size, drawn for a batch of requests at
once (numpy arrays, no Python loop per request)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from iowatt.trace.synth.clients import Clients

HEAD_SHARE = 0.005  # HEAD requests among those for files (the logstalgia sample has 0.1 %)
GET, HEAD = 0, 1
METHODS = ("GET", "HEAD")
NO_BODY = -1  # `%b` writes `-`
SLOW_BYTES = 1024  # the slow endpoint's answer
# Response header bytes, added to the body under `%O` (vhost_combined): a typical Apache
# response's status line and headers.
HEADER_BYTES = {200: 250, 304: 180, 404: 210}


@dataclass(frozen=True)
class Targets:
    """Every target a request can name: the site's files (popularity order), the missing paths,
    then the slow endpoint; with the Zipf CDFs that pick among files and among missing paths."""

    paths: list[str]
    sizes: npt.NDArray[np.int64]
    files: int
    site_cdf: npt.NDArray[np.float64]
    missing_cdf: npt.NDArray[np.float64]


@dataclass(frozen=True)
class Shares:
    not_found: float
    slow: float
    not_modified: float


@dataclass(frozen=True)
class Batch:
    second: npt.NDArray[np.int64]  # seconds since the log's start
    client: npt.NDArray[np.int64]
    target: npt.NDArray[np.int64]
    method: npt.NDArray[np.int64]
    status: npt.NDArray[np.int64]
    body: npt.NDArray[np.int64]  # body bytes, or NO_BODY
    referer: npt.NDArray[np.int64]


def draw(
    second: npt.NDArray[np.int64],
    targets: Targets,
    clients: Clients,
    shares: Shares,
    referer_cdf: npt.NDArray[np.float64],
    rng: np.random.Generator,
) -> Batch:
    """The requests of ``second`` (one entry per request, in time order)."""
    import numpy as np

    n = len(second)
    u = rng.random(n)
    slow = u < shares.slow
    missing = ~slow & (u < shares.slow + shares.not_found)
    site = ~slow & ~missing
    nmiss = len(targets.paths) - targets.files - 1
    target = np.searchsorted(targets.site_cdf, rng.random(n), side="right")
    miss = targets.files + np.minimum(
        np.searchsorted(targets.missing_cdf, rng.random(n), side="right"), nmiss - 1
    )
    target = np.minimum(target, targets.files - 1)
    target = np.where(missing, miss, target)
    target[slow] = len(targets.paths) - 1
    method = np.where(~slow & (rng.random(n) < HEAD_SHARE), HEAD, GET)
    not_modified = site & (method == GET) & (rng.random(n) < shares.not_modified)
    status = np.where(missing, 404, np.where(not_modified, 304, 200))
    body = targets.sizes[target].copy()
    body[slow] = SLOW_BYTES
    body[not_modified | (method == HEAD) | (body == 0)] = NO_BODY
    client = np.minimum(
        np.searchsorted(clients.cdf, rng.random(n), side="right"), len(clients.addresses) - 1
    )
    referer = np.minimum(
        np.searchsorted(referer_cdf, rng.random(n), side="right"), len(referer_cdf) - 1
    )
    return Batch(second, client, target, method, status, body, referer)


def wire_bytes(batch: Batch) -> npt.NDArray[np.int64]:
    """Bytes sent including headers (`%O`): the body, if any, plus the headers."""
    import numpy as np

    headers = np.select(
        [batch.status == 200, batch.status == 304],
        [HEADER_BYTES[200], HEADER_BYTES[304]],
        HEADER_BYTES[404],
    )
    out: npt.NDArray[np.int64] = headers + np.maximum(batch.body, 0)
    return out
