"""iowatt: what your disks really deliver — throughput, latency and energy, measured together."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("iowatt")
except PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0.0.0+local"

__all__ = ["__version__"]
