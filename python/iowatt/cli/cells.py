"""Cells of the fixed-width tables verbs print: a number in its format, or a dash where
there is none."""

from __future__ import annotations


def cell(v: float | None, fmt: str) -> str:
    """``v`` formatted with ``fmt`` (``"9.1f"``); a dash as wide where ``v`` is None."""
    width = int(fmt.partition(".")[0] or 0)
    return f"{'–':>{width}}" if v is None else format(v, fmt)


def pct_cell(v: float | None) -> str:
    """A signed percentage, seven wide: ``" +4.9%"``."""
    return f"{'–':>7}" if v is None else f"{v:>+6.1f}%"
