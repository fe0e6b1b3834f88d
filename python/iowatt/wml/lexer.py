"""Tokens of FileBench's workload language, after ``parser_lex.l``.

Like FileBench, newlines only separate tokens (a statement may continue on the next line after a
comma) and ``#`` starts a comment; iowatt also skips C-style ``/* ... */`` comments. Sizes take
FileBench's binary suffixes (``16k`` is 16384; iowatt adds ``t``, and 1.4's ``16kb``). Words
may hold the characters FileBench allows in unquoted strings (``/tmp``, ``cvar-gamma``,
``mean:131072;gamma:1.5``) plus ``_``. Keywords are not reserved here: the parser tells them
apart by position.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from iowatt.wml.errors import at

Kind = Literal["word", "num", "float", "var", "str", "punct", "eof"]

SUFFIXES = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}

_WORD_CHARS = r"A-Za-z0-9_/.:;\-"
_SPACE = re.compile(r"[ \t\r\f\v]+")
# 1.4-era files also spell a suffix `kb`, `MB`, ...
_NUMBER = re.compile(rf"(-?\d+)(\.\d+)?(?:([kmgtKMGT])[bB]?)?(?![{_WORD_CHARS}])")
_VAR = re.compile(
    r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|\(([A-Za-z_][A-Za-z0-9_]*)\)|([A-Za-z_][A-Za-z0-9_]*))"
)
_WORD = re.compile(rf"[{_WORD_CHARS}]+")
_PUNCT = "{}()=,*+"
# Far beyond any value iowatt takes (2^62 has 19 digits), and short of Python's limit on
# converting digits to int (4,300), which would otherwise fail without a line number.
_MAX_DIGITS = 100


@dataclass(frozen=True)
class VarRef:
    """A ``$name`` reference, resolved against the file's variables when the model is built."""

    name: str
    line: int


Part = str | VarRef


@dataclass(frozen=True)
class Token:
    kind: Kind
    text: str  # the source text of the token
    line: int
    start: int
    end: int
    num: int = 0  # kind "num"
    flt: float = 0.0  # kind "float"
    name: str = ""  # kind "var": the variable's name without `$`
    parts: tuple[Part, ...] = ()  # kind "str": literal text and variable references

    def describe(self) -> str:
        if self.kind == "eof":
            return "the end of the file"
        if self.kind == "str":
            return "a quoted string"
        return f"`{self.text}`"


def tokenize(text: str, source: str) -> list[Token]:
    """Splits ``text`` into tokens; the last one is ``eof``."""
    tokens: list[Token] = []
    pos, line, n = 0, 1, len(text)
    while pos < n:
        c = text[pos]
        if c == "\n":
            line, pos = line + 1, pos + 1
            continue
        if m := _SPACE.match(text, pos):
            pos = m.end()
            continue
        if c == "#":
            end = text.find("\n", pos)
            pos = n if end < 0 else end
            continue
        if text.startswith("/*", pos):
            end = text.find("*/", pos + 2)
            if end < 0:
                raise at(source, line, "unterminated `/*` comment", "close it with `*/`")
            line += text.count("\n", pos, end)
            pos = end + 2
            continue
        if c == '"':
            tok = _quoted(text, pos, line, source)
            tokens.append(tok)
            line += text.count("\n", pos, tok.end)
            pos = tok.end
            continue
        if c in _PUNCT:
            tokens.append(Token("punct", c, line, pos, pos + 1))
            pos += 1
            continue
        if c == "$":
            m = _VAR.match(text, pos)
            if not m:
                raise at(source, line, "`$` must start a variable name, as in `$nthreads`")
            name = m.group(1) or m.group(2) or m.group(3)
            tokens.append(Token("var", m.group(0), line, pos, m.end(), name=name))
            pos = m.end()
            continue
        if m := _NUMBER.match(text, pos):
            tokens.append(_number(m, line, source))
            pos = m.end()
            continue
        if m := _WORD.match(text, pos):
            tokens.append(Token("word", m.group(0), line, pos, m.end()))
            pos = m.end()
            continue
        raise at(source, line, f"illegal character `{c}`")
    tokens.append(Token("eof", "", tokens[-1].line if tokens else 1, n, n))
    return tokens


def _number(m: re.Match[str], line: int, source: str) -> Token:
    if len(m.group(1)) > _MAX_DIGITS:
        raise at(
            source,
            line,
            f"number `{m.group(1)[:12]}…` has {len(m.group(1)):,} digits",
            "no value in a workload file needs more than 19 (sizes go up to 2^62)",
        )
    mult = SUFFIXES[m.group(3).lower()] if m.group(3) else 1
    if m.group(2):
        value = float(m.group(1) + m.group(2)) * mult
        return Token("float", m.group(0), line, m.start(), m.end(), flt=value)
    return Token("num", m.group(0), line, m.start(), m.end(), num=int(m.group(1)) * mult)


def _quoted(text: str, start: int, line: int, source: str) -> Token:
    """A double-quoted string: ``\\n`` is a newline, ``\\$`` a dollar sign, ``$name`` a variable."""
    parts: list[Part] = []
    buf: list[str] = []
    pos, cur = start + 1, line
    while True:
        if pos >= len(text):
            raise at(source, line, "unterminated quoted string", 'close it with `"`')
        c = text[pos]
        if c == '"':
            break
        if c == "\\" and pos + 1 < len(text):
            nxt = text[pos + 1]
            buf.append({"n": "\n", "t": "\t"}.get(nxt, nxt))
            pos += 2
            continue
        if c == "$" and (m := _VAR.match(text, pos)):
            if buf:
                parts.append("".join(buf))
                buf = []
            parts.append(VarRef(m.group(1) or m.group(2) or m.group(3), cur))
            pos = m.end()
            continue
        if c == "\n":
            cur += 1
        buf.append(c)
        pos += 1
    if buf:
        parts.append("".join(buf))
    return Token("str", text[start : pos + 1], line, start, pos + 1, parts=tuple(parts))
