"""Masking what changes from run to run in text people read (paths, run ids, times), so it
can be pinned in a snapshot."""

from __future__ import annotations

import re
from pathlib import Path

_MASKS = (
    (re.compile(r"\d{8}-\d{6}-[a-z]+-[0-9a-f]{6}"), "<run-id>"),
    (re.compile(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2})?"), "<time>"),
)


def masked(text: str, tmp: Path) -> str:
    """``text`` with the test's directory, run ids and wall-clock times replaced."""
    text = text.replace(str(tmp), "<tmp>")
    for pattern, mask in _MASKS:
        text = pattern.sub(mask, text)
    return text
