"""The key file that makes shared trees and logs private, and the keys derived from it.

One secret file (at least 32 bytes, used as it is, newline included) gives, through HKDF-SHA-256,
a key for names (HMAC-SHA-256, so a dictionary of common names cannot reverse them, unlike the
study's plain SHA-1), a key for client addresses (Crypto-PAn) and a public key id recorded in
what was made with it. A tree snapshot and an anonymised log made with the same key file hash
the same name the same way, so requests still find their files.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from iowatt import _engine
from iowatt.errors import ConfigError

MIN_KEY_BYTES = 32
# A key file is a secret of a few bytes; anything larger is the wrong file.
MAX_KEY_BYTES = 1 << 20
MAKE_ONE = "make one with `head -c 32 /dev/urandom > {path}` and keep it secret"


@dataclass(frozen=True)
class Keys:
    names: bytes = field(repr=False)
    addresses: bytes = field(repr=False)
    id: str  # a public fingerprint of the key file

    def hash_names(self, names: Sequence[str | bytes], keep_extensions: bool = False) -> list[str]:
        """Each name's keyed hash (24 hex digits, ``.ext`` kept on request)."""
        raw = [n if isinstance(n, bytes) else os.fsencode(n) for n in names]
        return _engine.hash_names(self.names, raw, keep_extensions)


def load_keys(path: str | os.PathLike[str], option: str = "--key-file") -> Keys:
    """The keys of the key file at ``path``; a ConfigError naming it if it is missing,
    unreadable, too short or not a file."""
    p = Path(path)
    try:
        if not p.is_file():
            what = "does not exist" if not p.exists() else "is not a regular file"
            raise ConfigError(f"{option} `{p}` {what}", MAKE_ONE.format(path=p))
        if p.stat().st_size > MAX_KEY_BYTES:
            raise ConfigError(
                f"{option} `{p}` is {p.stat().st_size} bytes, not a key file",
                MAKE_ONE.format(path=p),
            )
        secret = p.read_bytes()
    except OSError as e:
        raise ConfigError(
            f"{option} `{p}` cannot be read: {e.strerror}", "check its permissions"
        ) from None
    if len(secret) < MIN_KEY_BYTES:
        raise ConfigError(
            f"{option} `{p}` holds {len(secret)} bytes; at least {MIN_KEY_BYTES} are needed",
            MAKE_ONE.format(path=p),
        )
    names, addresses, key_id = _engine.derive_keys(secret)
    return Keys(names=names, addresses=addresses, id=key_id)
