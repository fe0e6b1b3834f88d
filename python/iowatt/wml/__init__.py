"""FileBench's workload model language (``.f`` files), read into the engine's workload model.

The grammar and semantics follow FileBench 1.5 (``filebench/filebench`` 22620e6:
``parser_lex.l``, ``parser_gram.y``, ``vars.c``, ``fb_random.c``, ``fb_cvar.c``), and also accept
1.4's spellings (``define randvar``, ``create processes``, ``stats``, arithmetic, ...) and the
FSL fork's ``datasource``/``entropy``. What iowatt does not run (multi-client sync, two debugging
flowops) is refused, every such construct named with its line in one message; docs/wml.md has
the status of each construct.

>>> program = parse_file(builtin_path("fileserver"), {"nthreads": "8"}, dir=Path("/mnt/test"))
>>> workload = program.model(seed=1, runtime_ns=10**10, ramp_ns=0, slow_ns=[10**8])
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from importlib import resources
from pathlib import Path

from iowatt.errors import ConfigError
from iowatt.wml.errors import WmlError, at
from iowatt.wml.evaluate import evaluate
from iowatt.wml.lexer import tokenize
from iowatt.wml.parser import Value, parse, parse_value
from iowatt.wml.program import Program

__all__ = ["BUILTIN", "Program", "WmlError", "builtin_path", "parse_file", "parse_text"]

# iowatt's FileMacro personalities, in iowatt/workloads/.
BUILTIN: tuple[str, ...] = ("fileserver", "varmail", "webproxy", "webserver", "oltp")

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def builtin_path(name: str) -> Path:
    """The shipped `.f` file of a built-in personality."""
    if name not in BUILTIN:
        raise ConfigError(
            f"unknown built-in workload `{name}`", f"choose one of: {', '.join(BUILTIN)}"
        )
    return Path(str(resources.files("iowatt.workloads").joinpath(f"{name}.f")))


def parse_file(path: Path, overrides: Mapping[str, str] = {}, *, dir: Path) -> Program:
    """Reads and evaluates a `.f` file; ``dir`` is the directory iowatt runs in (``$dir``)."""
    path = Path(path)
    builtin = path.resolve().parent == Path(str(resources.files("iowatt.workloads"))).resolve()
    source = path.name if builtin else str(path)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise WmlError(f"{source}: cannot read the workload file: {e.strerror or e}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise at(
            source,
            line,
            f"byte {data[e.start]:#04x} is not UTF-8 text",
            "a workload file is text: check that this is the .f file meant",
        ) from None
    return parse_text(text, source, overrides, dir=dir)


def parse_text(
    text: str,
    source: str,
    overrides: Mapping[str, str] = {},
    *,
    dir: Path,
) -> Program:
    """Evaluates WML ``text``; ``source`` names it in messages (``source:LINE: ...``)."""
    statements = parse(tokenize(text, source), text, source)
    parsed = {_override_name(k, source): (_override(k, v, source), v) for k, v in overrides.items()}
    return evaluate(statements, source, Path(source).stem, Path(dir), parsed)


def _override_name(key: str, source: str) -> str:
    name = key[1:] if key.startswith("$") else key
    if not _NAME.fullmatch(name):
        raise WmlError(f"{source}: --set `{key}` is not a variable name", "use --set name=value")
    return name


def _override(key: str, text: str, source: str) -> Value:
    """A ``--set`` value, read like the right-hand side of ``set $key=``."""
    where = f"--set {key}={text}"
    try:
        return parse_value(tokenize(text, where), text, where)
    except WmlError as e:
        raise WmlError(f"{source}: {where}: {e.what}", e.hint, what=f"{where}: {e.what}") from None
