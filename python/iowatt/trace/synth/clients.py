"""Who sends requests: a seeded pool of client addresses, each with its own browser (user
agent) and protocol, and the referers requests carry.

Client activity is heavy-tailed — a few clients (proxies, crawlers, regulars) send much of a
server's traffic (Arlitt & Williamson 1996, §4.8) — so clients are drawn Zipf(1) over a pool.
Addresses are public-looking IPv4 (nine in ten) or IPv6, grouped in shared /24 and /48
prefixes as real clients are, so prefix-preserving anonymisation has structure to keep.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

CLIENT_ZIPF = 1.0
IPV6_SHARE = 0.1
CLIENTS_PER_PREFIX = 4  # on average
# (user agent, weight): common browsers of 2025, a phone, a few crawlers and tools.
USER_AGENTS = (
    (
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
        "Chrome/131.0.0.0 Safari/537.36",
        30,
    ),
    (
        "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) "
        "Version/18.1 Safari/605.1.15",
        12,
    ),
    ("Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0", 8),
    ("Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0", 8),
    (
        "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, "
        "like Gecko) Version/18.1 Mobile/15E148 Safari/604.1",
        15,
    ),
    (
        "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) "
        "Chrome/131.0.0.0 Mobile Safari/537.36",
        12,
    ),
    (
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
        "Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0",
        6,
    ),
    ("Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", 4),
    ("Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)", 2),
    ("curl/8.5.0", 1),
    ("Wget/1.21.4", 1),
    ("python-requests/2.32.3", 1),
)
# Apache writes HTTP/2 requests as "HTTP/2.0".
PROTOCOLS = (("HTTP/1.1", 0.6), ("HTTP/2.0", 0.35), ("HTTP/1.0", 0.05))
# Referers: none (typed, bookmarked, bots), a page of this site, or another site.
NO_REFERER = 0.35
SITE_REFERER = 0.5
EXTERNAL_REFERERS = (
    "https://www.google.com/",
    "https://www.bing.com/",
    "https://duckduckgo.com/",
    "https://news.ycombinator.com/",
    "https://www.reddit.com/",
    "https://en.wikipedia.org/",
    "https://t.co/",
)
SITE_REFERER_PAGES = 50


@dataclass(frozen=True)
class Clients:
    """The pool: each client's address, user agent and protocol (indices into the tables)."""

    addresses: list[str]
    agent: npt.NDArray[np.int64]
    protocol: npt.NDArray[np.int64]
    cdf: npt.NDArray[np.float64]  # Zipf(1) over the pool, in pool order


def _public_v4(rng: np.random.Generator, n: int) -> npt.NDArray[np.int64]:
    """``n`` /24 prefixes (as 32-bit ints with a zero last byte) outside private, loopback,
    link-local, shared, multicast and reserved space."""
    import numpy as np

    out: list[int] = []
    while len(out) < n:
        a = rng.integers(1, 224, 2 * n)
        b = rng.integers(0, 256, 2 * n)
        c = rng.integers(0, 256, 2 * n)
        ok = (a != 10) & (a != 127) & ~((a == 172) & (b >= 16) & (b < 32))
        ok &= ~((a == 192) & (b == 168)) & ~((a == 169) & (b == 254))
        ok &= ~((a == 100) & (b >= 64) & (b < 128))
        out.extend(((a << 24) | (b << 16) | (c << 8))[ok].tolist())
    return np.array(out[:n], dtype=np.int64)


def pool(n: int, rng: np.random.Generator) -> Clients:
    """``n`` distinct clients in activity order (the first is the busiest)."""
    import numpy as np

    from iowatt.trace.synth.site import zipf_cdf

    n6 = round(n * IPV6_SHARE)
    n4 = n - n6
    seen: set[str] = set()
    addresses: list[str] = []
    prefixes4 = _public_v4(rng, max(1, n4 // CLIENTS_PER_PREFIX))
    while len(addresses) < n4:
        host = int(prefixes4[rng.integers(len(prefixes4))]) | int(rng.integers(1, 255))
        text = str(ipaddress.IPv4Address(host))
        if text not in seen:
            seen.add(text)
            addresses.append(text)
    # IPv6 in 2000::/3 (global unicast), a few clients per /48, interface ids random.
    prefixes6 = [(0x2 << 45) | int(rng.integers(0, 1 << 45)) for _ in range(max(1, n6 // 4))]
    while len(addresses) < n:
        prefix = prefixes6[int(rng.integers(len(prefixes6)))]
        iid = int(rng.integers(1, 1 << 63))
        text = str(ipaddress.IPv6Address((prefix << 80) | iid))
        if text not in seen:
            seen.add(text)
            addresses.append(text)
    # Interleave v4 and v6 so the busiest clients are of both kinds.
    order = rng.permutation(n)
    addresses = [addresses[int(i)] for i in order]
    weights = np.array([w for _, w in USER_AGENTS], dtype=np.float64)
    agent = rng.choice(len(USER_AGENTS), n, p=weights / weights.sum())
    proto = rng.choice(len(PROTOCOLS), n, p=np.array([p for _, p in PROTOCOLS]))
    return Clients(addresses, agent, proto, zipf_cdf(n, CLIENT_ZIPF))
