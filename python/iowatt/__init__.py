"""iowatt: what your disks really deliver — throughput, latency and energy, measured together."""

from __future__ import annotations

from typing import Any

__all__ = ["__version__"]


def __getattr__(name: str) -> Any:
    # The version is read from the installed metadata only when asked for: importlib.metadata
    # costs ~20 ms, a tenth of what `iowatt --version` may take.
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            found = version("iowatt")
        except PackageNotFoundError:  # running from a source tree without installing
            found = "0.0.0+local"
        globals()["__version__"] = found  # each lookup scans the installed distributions
        return found
    raise AttributeError(f"module 'iowatt' has no attribute {name!r}")
