"""A JSON document read by the shape an importer expects: a value that does not have it is
named by its path in the document (``jobs[2].read.clat_ns.percentile["99.000000"]``) in one
:class:`ImportFormatError`, before anything is written."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from iowatt.errors import ImportFormatError

# The catalog's BIGINT and INTEGER columns, and Parquet's int64.
INT64_MAX = (1 << 63) - 1
INT64_MIN = -(1 << 63)
INT32_MAX = (1 << 31) - 1
_FLOAT_BOUND = 2.0**63
# fio's documents are 6 levels deep. Far deeper nesting is no tool's output, and would exhaust
# Python's recursion when summary.json is written.
MAX_DEPTH = 32
COUNT = "a whole number from 0 to 2^63 − 1"
INTEGER = "a whole number from −2^63 to 2^63 − 1"
NUMBER = "a finite number from 0 to 2^63"
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def printable(text: str, limit: int = 60) -> str:
    """``text`` on one line, cut short: an error message must stay one line even when a file
    puts newlines, escape sequences or lone surrogates in a name."""
    out = "".join(c if c.isprintable() else _escape(c) for c in text[:limit])
    return out if len(text) <= limit else out + "…"


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def show(value: Any) -> str:
    """A JSON value as an error message names it."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10**30:
        return f"a {len(str(abs(value)))}-digit number"  # the digits say less than their count
    return printable(json.dumps(value, ensure_ascii=False))


def child_path(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    if _IDENT.fullmatch(key):
        return f"{path}.{key}" if path else key
    return f"{path}[{printable(json.dumps(key, ensure_ascii=False))}]"


@dataclass(frozen=True)
class Node:
    """One value of a document, where it is, and how to say that it is not what was expected."""

    value: Any
    path: str
    file: Path
    hint: str

    def fail(self, problem: str) -> NoReturn:
        """Raises the error naming this value: ``problem`` completes "`PATH` …"."""
        where = f"`{self.path}`" if self.path else "the document"
        raise ImportFormatError(f"`{self.file}`: {where} {problem}", self.hint)

    def wrong(self, expected: str) -> NoReturn:
        self.fail(f"is {show(self.value)}, not {expected}")

    def _child(self, key: str | int, value: Any) -> Node:
        return Node(value, child_path(self.path, key), self.file, self.hint)

    def has(self, key: str) -> bool:
        return key in self.object()

    def get(self, key: str) -> Node | None:
        """The member ``key``, None when the object has none."""
        members = self.object()
        return self._child(key, members[key]) if key in members else None

    def __getitem__(self, key: str) -> Node:
        found = self.get(key)
        if found is None:
            self.fail(f"has no `{printable(key)}`")
        return found

    def object(self) -> dict[str, Any]:
        if not isinstance(self.value, dict):
            self.wrong("an object")
        return self.value

    def items(self) -> Iterator[tuple[str, Node]]:
        for key, value in self.object().items():
            yield key, self._child(key, value)

    def array(self) -> list[Any]:
        if not isinstance(self.value, list):
            self.wrong("a list")
        return self.value

    def elements(self) -> list[Node]:
        return [self._child(i, v) for i, v in enumerate(self.array())]

    def text(self) -> str:
        if not isinstance(self.value, str):
            self.wrong("a string")
        return self.value

    def integer(self) -> int:
        """A whole number that fits a signed 64-bit column; 5.0 counts, 5.5 does not."""
        value = _whole(self.value)
        if value is None or not INT64_MIN <= value <= INT64_MAX:
            self.wrong(INTEGER)
        return value

    def count(self) -> int:
        """A whole number ≥ 0 that fits a signed 64-bit column (ops, bytes, ns, ms)."""
        value = _whole(self.value)
        if value is None or not 0 <= value <= INT64_MAX:
            self.wrong(COUNT)
        return value

    def number(self) -> float:
        """A finite number ≥ 0 (a rate, a mean, a percentage)."""
        value = self.value
        if not _is_number(value) or not 0 <= value <= _FLOAT_BOUND:
            self.wrong(NUMBER)
        return float(value)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _whole(value: Any) -> int | None:
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def check_storable(root: Node) -> None:
    """Every value of the document is one summary.json and the catalog can hold: integers of 64
    bits (fio writes them as signed 64-bit), finite floats no larger (none of fio's comes near),
    text that is Unicode (JSON's ``\\ud800`` escapes can make lone surrogates), and nesting no
    deeper than MAX_DEPTH.

    Depth first, in file order, and no path is built until one is named: a 256 MiB list of
    numbers costs no memory beyond its own, and seconds rather than minutes."""
    _check(root.value, root.path, 0, root)


def _check(value: Any, path: str, depth: int, root: Node) -> None:
    if not isinstance(value, dict | list):
        problem = _unstorable(value)
        if problem:
            Node(value, path, root.file, root.hint).fail(problem)
        return
    if depth >= MAX_DEPTH:  # before recursing: the recursion never goes deeper than this
        Node(value, path, root.file, root.hint).fail(f"is nested more than {MAX_DEPTH} levels deep")
    members = value.items() if isinstance(value, dict) else enumerate(value)
    for key, member in members:
        # The common values inline: this loop runs once per number of the file.
        kind = type(member)
        plain = (
            (kind is int and INT64_MIN <= member <= INT64_MAX)
            or (kind is float and -_FLOAT_BOUND <= member <= _FLOAT_BOUND)  # NaN compares False
            or (kind is str and member.isascii())
            or member is None
            or kind is bool
        )
        if not plain:
            _check(member, child_path(path, key), depth + 1, root)
        if type(key) is str and not key.isascii() and not _is_unicode(key):
            Node(value, path, root.file, root.hint).fail(
                f"has a key that is not Unicode text: {show(key)}"
            )


def _unstorable(value: Any) -> str | None:
    """Why one value that is not an object or a list cannot be stored as it is, or None."""
    if isinstance(value, str):
        return None if _is_unicode(value) else f"is {show(value)}, not Unicode text"
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return None if INT64_MIN <= value <= INT64_MAX else f"is {show(value)}, not {INTEGER}"
    if isinstance(value, float) and not (math.isfinite(value) and abs(value) <= _FLOAT_BOUND):
        return f"is {show(value)}, not a finite number within ±2^63"
    return None


def _is_unicode(text: str) -> bool:
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
