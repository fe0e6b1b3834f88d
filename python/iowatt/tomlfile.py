"""TOML files a user hands iowatt (models, set files, cluster files): read, or one error
naming the file and what is wrong with it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from iowatt.errors import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = ["read_toml", "tomllib"]


def read_toml(path: Path, option: str) -> dict[str, Any]:
    """A TOML file's tables; a ConfigError naming the file and the line otherwise."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(
            f"{option} `{path}` cannot be read ({e.strerror or e})", "check the file's path"
        ) from None
    except UnicodeDecodeError:
        raise ConfigError(f"{option} `{path}` is not text", "give a TOML file") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(
            f"{option} `{path}` is not TOML: {e}", "see the shipped file's layout"
        ) from None
