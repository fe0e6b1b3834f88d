"""Disk models of the RAID simulator: the shipped ``disks.toml`` beside this module, plus a
user's file in the same format (a model of the same id replaces the shipped one). The engine
checks every value (standby above idle, a negative spin-up) and names what it refuses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from iowatt.errors import ConfigError
from iowatt.sim.model import shipped
from iowatt.tomlfile import read_toml

SHIPPED = "disks.toml"
DEFAULT = "ultrastar-36z15"


def load_disks(extra: Path | None = None) -> dict[str, dict[str, Any]]:
    """Every disk model by id: the shipped ones, then ``extra``'s."""
    models = shipped(SHIPPED)
    if extra is not None:
        for name, row in read_toml(extra, "--disk-models").items():
            if not isinstance(row, dict):
                raise ConfigError(
                    f"--disk-models `{extra}`: `{name}` is not a table",
                    "each model is a [model-id] table; the shipped disks.toml shows the keys",
                )
            models[name] = row
    return models


def disk_model(name: str, extra: Path | None = None) -> dict[str, Any]:
    models = load_disks(extra)
    if name not in models:
        raise ConfigError(
            f"--disk-model `{name}` is not a disk model",
            f"models are {', '.join(models)}; --disk-models FILE adds yours",
        )
    return models[name]
