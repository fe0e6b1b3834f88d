"""Running the CLI in-process the way a shell would, and reading what it wrote."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from iowatt.cli import main


@dataclass
class Result:
    code: int
    out: str
    err: str


def iowatt(capsys: pytest.CaptureFixture[str], *args: str | Path) -> Result:
    """Runs ``iowatt ARGS`` in-process; returns its exit code and output."""
    capsys.readouterr()
    try:
        main([str(a) for a in args])
        code = 0
    except SystemExit as e:
        code = int(e.code or 0)
    captured = capsys.readouterr()
    return Result(code, captured.out, captured.err)


def runs_in(results: Path) -> list[Path]:
    return sorted(p.parent for p in results.glob("*/manifest.json"))


def manifest(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "manifest.json").read_text())


def summary(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "summary.json").read_text())


def assert_user_error(r: Result, *fragments: str) -> None:
    """One ``error:`` line naming the value, one ``hint:`` line, exit code 2, no traceback."""
    lines = r.err.strip().splitlines()
    assert r.code == 2, r
    assert "Traceback" not in r.err
    errors = [line for line in lines if line.startswith("error: ")]
    assert len(errors) == 1, r.err
    for fragment in fragments:
        assert fragment in errors[0], (fragment, r.err)
    assert any(line.startswith("hint: ") for line in lines), r.err
