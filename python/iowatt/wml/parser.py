"""Statements of FileBench's workload language, after ``parser_gram.y``.

:func:`parse` checks the syntax and the attribute names each entity takes; values stay
unevaluated (a :class:`~iowatt.wml.lexer.VarRef` is resolved later, so a ``set`` after a
``define`` counts, as in FileBench). Every statement and attribute keeps its line for messages.
Besides FileBench 1.5's grammar it reads 1.4's spellings (``create fileset``, ``create
processes``, ``stats``, ``shutdown``, ``filesizegamma``) and the FSL fork's data attributes
(``datasource``, ``entropy``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from iowatt.wml.errors import UNSUPPORTED_HINT, WmlError, at
from iowatt.wml.lexer import Part, Token, VarRef

# spec.rs `OpKind`, FileBench's flowop names.
FLOWOPS: tuple[str, ...] = (
    "read",
    "write",
    "createfile",
    "openfile",
    "closefile",
    "deletefile",
    "statfile",
    "readwholefile",
    "writewholefile",
    "appendfile",
    "appendfilerand",
    "fsync",
    "fsyncset",
    "aiowrite",
    "aiowait",
    "makedir",
    "removedir",
    "listdir",
    "hog",
    "delay",
    "eventlimit",
    "opslimit",
    "iopslimit",
    "bwlimit",
    "semblock",
    "sempost",
    "block",
    "wakeup",
    "finishoncount",
    "finishonbytes",
)
_FLOWOPS_UNSUPPORTED = ("print", "testrandvar")
# FileBench's multi-client commands: iowatt's way to run on many hosts is --cluster.
_MULTI_HINT = "iowatt runs a workload on many hosts with --cluster (docs/fleets.md)"

# Attribute names per entity (spellings FileBench's lexer maps to the same token are aliases).
_COMMON_FILE = (
    "name",
    "path",
    "size",
    "prealloc",
    "paralloc",
    "reuse",
    "trusttree",
    "readonly",
    "writeonly",
    "cached",
    "datasource",
    "entropy",
)
FILE_ATTRS = _COMMON_FILE
FILESET_ATTRS = (
    *_COMMON_FILE,
    "entries",
    "dirwidth",
    "dirgamma",
    "leafdirs",
    "dirdepthrv",
    "filesizegamma",
)
PROCESS_ATTRS = ("name", "instances", "nice")
THREAD_ATTRS = ("name", "instances", "memsize", "useism", "ioprio")
FLOWOP_ATTRS = (
    "name",
    "filename",
    "fd",
    "srcfd",
    "iosize",
    "random",
    "workingset",
    "directio",
    "dsync",
    "opennext",
    "noreadahead",
    "iters",
    "value",
    "target",
    "blocking",
    "highwater",
    "indexed",
)
RANDVAR_ATTRS = ("type", "mean", "gamma", "min", "round", "seed", "randsrc", "randtable")
CVAR_ATTRS = ("type", "parameters", "min", "max", "round")
EVENTGEN_ATTRS = ("rate",)
COMPOSITE_ATTRS = ("name", "iters")
_ALIASES = {"filesize": "size", "filesetname": "filename"}
_SPELLINGS = {"rotatefd": "opennext"}

STATEMENTS = (
    "set",
    "define",
    "eventgen",
    "run",
    "psrun",
    "create",
    "echo",
    "usage",
    "debug",
    "version",
    "enable",
    "system",
    "sleep",
    "stats",
    "shutdown",
    "quit",
    "list",
    "fscheck",
    "domultisync",
    "warmup",
)
_QUIT_MODES = ("timeout", "alldone", "firstdone")
_STATS = ("clear", "snap", "dump", "xmldump", "multidump")
_ARITH = ("+", "-", "*", "/")
_NAME_ATTR = re.compile(r"\bname\s*=\s*\$[\w{}()]+\s*,?\s*")


@dataclass(frozen=True)
class Num:
    value: int
    text: str


@dataclass(frozen=True)
class Flt:
    value: float
    text: str


@dataclass(frozen=True)
class Bool:
    value: bool
    text: str


@dataclass(frozen=True)
class Word:
    value: str
    text: str


@dataclass(frozen=True)
class Quoted:
    parts: tuple[Part, ...]
    text: str


@dataclass(frozen=True)
class Attr:
    name: str  # canonical (`filesetname` is `filename`)
    value: Value | None  # None for a bare flag such as `prealloc` or `random`
    line: int
    spelled: str  # as written


@dataclass(frozen=True)
class Cvar:
    attrs: tuple[Attr, ...]
    line: int
    text: str


@dataclass(frozen=True)
class Randvar:
    attrs: tuple[Attr, ...]
    table: tuple[tuple[Value, Value, Value], ...] | None
    line: int
    text: str


@dataclass(frozen=True)
class Arith:
    """``$a * $b``: FileBench's integer arithmetic on the right of ``set``."""

    op: str
    left: Value
    right: Value
    line: int
    text: str


Value = Num | Flt | Bool | Word | Quoted | VarRef | Cvar | Randvar | Arith


@dataclass(frozen=True)
class SetVar:
    line: int
    name: str
    value: Value


@dataclass(frozen=True)
class SetMode:
    line: int
    mode: str  # a quit mode, or "nousestats"


@dataclass(frozen=True)
class DefineFiles:
    line: int
    what: Literal["file", "fileset"]
    attrs: tuple[Attr, ...]


@dataclass(frozen=True)
class Local:
    """``$name=value`` on a composite flowop's use, or ``$name[=default]`` on its definition."""

    name: str
    value: Value | None
    line: int


@dataclass(frozen=True)
class FlowopDef:
    line: int
    kind: str  # a flowop type, or the name of a composite flowop
    attrs: tuple[Attr, ...]
    locals: tuple[Local, ...] = ()


@dataclass(frozen=True)
class CompositeDef:
    """``define flowop name=X, $param[=default] { flowop ... }``."""

    line: int
    name: str
    params: tuple[Local, ...]
    flowops: tuple[FlowopDef, ...]
    iters: Value | None


@dataclass(frozen=True)
class ThreadDef:
    line: int
    attrs: tuple[Attr, ...]
    flowops: tuple[FlowopDef, ...]


@dataclass(frozen=True)
class ProcessDef:
    line: int
    attrs: tuple[Attr, ...]
    threads: tuple[ThreadDef, ...]


@dataclass(frozen=True)
class Eventgen:
    line: int
    attrs: tuple[Attr, ...]


@dataclass(frozen=True)
class Run:
    line: int
    command: Literal["run", "psrun"]
    runtime: Value | None
    extra: tuple[Value, ...] = ()  # `run N B D`'s two more values, psrun's period


@dataclass(frozen=True)
class System:
    line: int
    command: Quoted


@dataclass(frozen=True)
class Sleep:
    line: int
    seconds: Value


@dataclass(frozen=True)
class Stats:
    line: int
    action: str  # one of _STATS
    path: Quoted | None  # dump's file


@dataclass(frozen=True)
class Create:
    line: int
    what: Literal["files", "processes"]


@dataclass(frozen=True)
class Shutdown:
    """``shutdown [processes]`` and ``quit``: the processes stop (``quit``: so does the file)."""

    line: int
    command: Literal["shutdown", "quit"]


@dataclass(frozen=True)
class Echo:
    line: int
    command: Literal["echo", "usage"]
    text: Quoted


@dataclass(frozen=True)
class Ignored:
    """``debug N``, ``version``, ``enable lathist``, ``list``, ``fscheck``, ``warmup``: nothing
    for iowatt to do (``notice`` says what was left out, when something was)."""

    line: int
    command: str
    notice: str = ""


Statement = (
    SetVar
    | SetMode
    | DefineFiles
    | ProcessDef
    | CompositeDef
    | Eventgen
    | Run
    | Echo
    | Ignored
    | System
    | Sleep
    | Stats
    | Create
    | Shutdown
)


def parse(tokens: Sequence[Token], text: str, source: str) -> list[Statement]:
    return _Parser(tokens, text, source).statements()


def parse_value(tokens: Sequence[Token], text: str, source: str) -> Value:
    """A lone value, as given to ``--set name=VALUE``: anything ``set $name=`` accepts."""
    p = _Parser(tokens, text, source)
    value = p.set_value()
    p.expect_eof()
    return value


class _Parser:
    def __init__(self, tokens: Sequence[Token], text: str, source: str) -> None:
        self.toks, self.text, self.source, self.pos = tokens, text, source, 0
        self.composites: set[str] = set()
        # What iowatt does not run: all of them are named at the end, in one message.
        self.problems: list[WmlError] = []

    # --- token helpers ---
    @property
    def tok(self) -> Token:
        return self.toks[self.pos]

    def peek(self, ahead: int = 1) -> Token:
        return self.toks[min(self.pos + ahead, len(self.toks) - 1)]

    def advance(self) -> Token:
        tok = self.tok
        self.pos = min(self.pos + 1, len(self.toks) - 1)
        return tok

    def is_punct(self, c: str, tok: Token | None = None) -> bool:
        t = tok or self.tok
        return t.kind == "punct" and t.text == c

    def is_word(self, *words: str) -> bool:
        return self.tok.kind == "word" and (not words or self.tok.text in words)

    def expect_punct(self, c: str, after: str) -> Token:
        if not self.is_punct(c):
            raise self.error(f"expected `{c}` after {after}, found {self.tok.describe()}")
        return self.advance()

    def expect_eof(self) -> None:
        if self.tok.kind != "eof":
            raise self.error(f"unexpected {self.tok.describe()}")

    def error(self, what: str, hint: str | None = None, tok: Token | None = None) -> Exception:
        return at(self.source, (tok or self.tok).line, what, hint)

    def unsupported(self, what: str, tok: Token | None = None, hint: str | None = None) -> None:
        """Notes a construct iowatt does not run; parsing goes on to find the others."""
        self.problems.append(
            at(
                self.source,
                (tok or self.tok).line,
                f"{what} is not supported",
                hint or UNSUPPORTED_HINT,
            )
        )

    def slice(self, start: Token, end: Token) -> str:
        return " ".join(self.text[start.start : end.end].split())

    # --- statements ---
    def statements(self) -> list[Statement]:
        out: list[Statement] = []
        while self.tok.kind != "eof":
            out.append(self.statement())
        if self.problems:
            raise _all_of(self.problems)
        return out

    def statement(self) -> Statement:
        tok = self.tok
        if tok.kind != "word":
            raise self.error(f"expected a statement, found {tok.describe()}")
        word = tok.text
        if word in ("thread", "flowop"):
            inside = "a thread's { }" if word == "flowop" else "a `define process` { }"
            raise self.error(f"`{word}` outside {inside}")
        if word not in STATEMENTS and self.is_punct("=", self.peek()):
            raise self.error(
                f"unexpected `{word}=`",
                "is a comma missing before it? attributes are separated by commas",
            )
        if word not in STATEMENTS:
            raise self.error(
                f"unknown statement `{word}`",
                f"{UNSUPPORTED_HINT}; statements are {', '.join(STATEMENTS)}",
            )
        self.advance()
        line = tok.line
        if word == "set":
            return self.set_statement(line)
        if word == "define":
            return self.define(line)
        if word == "eventgen":
            return Eventgen(line, self.attrs_if_any(EVENTGEN_ATTRS, "eventgen"))
        if word in ("run", "psrun"):
            return self.run(line, "run" if word == "run" else "psrun")
        if word in ("echo", "usage", "system"):
            if self.tok.kind != "str":
                raise self.error(f'expected a quoted string after `{word}`, as in {word} "text"')
            s = self.advance()
            if word == "system":
                return System(line, Quoted(s.parts, s.text))
            return Echo(line, "echo" if word == "echo" else "usage", Quoted(s.parts, s.text))
        if word == "sleep":
            return Sleep(line, self.value("`sleep`"))
        if word == "stats":
            return self.stats(line)
        if word == "create":
            return self.create(line)
        if word in ("shutdown", "quit"):
            if self.is_word("processes", "process", "filebench"):
                self.advance()
            return Shutdown(line, "quit" if word == "quit" else "shutdown")
        if word == "debug":
            if self.tok.kind != "num":
                raise self.error(f"expected a level after `debug`, found {self.tok.describe()}")
            self.advance()
        elif word == "enable":
            if self.is_word("multi"):
                self.advance()
                self.attrs_if_any(("master", "client"), "enable multi")
                self.unsupported("`enable multi` (FileBench's multi-client runs)", tok, _MULTI_HINT)
            elif self.is_word("lathist"):
                self.advance()
            else:
                raise self.error(
                    f"expected `lathist` or `multi` after `enable`, found {self.tok.describe()}"
                )
        elif word == "domultisync":
            self.attrs_if_any(("value",), "domultisync")
            self.unsupported("`domultisync` (FileBench's multi-client runs)", tok, _MULTI_HINT)
        elif word == "warmup":
            if self.tok.kind in ("num", "var"):
                self.value("`warmup`")
        elif word == "fscheck":
            self.attrs_if_any((), "fscheck", loose=True)
            return Ignored(line, word, "`fscheck` (checking the file system) is not run")
        return Ignored(line, word)

    def stats(self, line: int) -> Stats:
        if not self.is_word(*_STATS):
            raise self.error(
                f"expected one of {', '.join(_STATS)} after `stats`, found {self.tok.describe()}"
            )
        action = self.advance().text
        path = None
        if action in ("dump", "xmldump", "multidump"):
            if self.tok.kind != "str":
                raise self.error(f'expected a file name after `stats {action}`, as in "stats.txt"')
            s = self.advance()
            path = Quoted(s.parts, s.text)
        return Stats(line, action, path)

    def create(self, line: int) -> Create:
        if self.is_word("files", "file", "fileset", "filesets"):
            self.advance()
            return Create(line, "files")
        if self.is_word("processes", "process"):
            self.advance()
            return Create(line, "processes")
        raise self.error(
            f"expected `files` or `processes` after `create`, found {self.tok.describe()}"
        )

    def set_statement(self, line: int) -> Statement:
        if self.is_word("mode"):
            self.advance()
            if self.is_word("nousestats"):
                self.advance()
                return SetMode(line, "nousestats")
            if not self.is_word("quit"):
                raise self.error(f"expected `quit` after `set mode`, found {self.tok.describe()}")
            self.advance()
            if not self.is_word(*_QUIT_MODES):
                raise self.error(
                    f"expected a quit mode after `set mode quit`, found {self.tok.describe()}",
                    f"choose one of: {', '.join(_QUIT_MODES)}",
                )
            return SetMode(line, self.advance().text)
        if self.tok.kind != "var":
            raise self.error(f"expected `$name` or `mode` after `set`, found {self.tok.describe()}")
        name = self.advance().name
        self.expect_punct("=", f"`set ${name}`")
        return SetVar(line, name, self.set_value())

    def set_value(self) -> Value:
        tok = self.tok
        if self.is_word("cvar", "randvar") and self.is_punct("(", self.peek()):
            self.advance()
            self.advance()
            if tok.text == "cvar":
                attrs = self.attrs(CVAR_ATTRS, "cvar")
                end = self.expect_punct(")", "the cvar's attributes")
                return Cvar(tuple(attrs), tok.line, self.slice(tok, end))
            attrs, table = self.randvar_attrs()
            end = self.expect_punct(")", "the randvar's attributes")
            return Randvar(tuple(attrs), table, tok.line, self.slice(tok, end))
        value = self.value("`set $...=`")
        while self._arith_op():
            op = self.advance().text
            right = self.value(f"`{op}`")
            value = Arith(op, value, right, tok.line, self.slice(tok, self.toks[self.pos - 1]))
        return value

    def _arith_op(self) -> bool:
        t = self.tok
        return t.kind in ("punct", "word") and t.text in _ARITH

    def define(self, line: int) -> Statement:
        tok = self.tok
        word = tok.text if tok.kind == "word" else ""
        self.advance()
        if word == "file":
            return DefineFiles(line, "file", tuple(self.attrs(FILE_ATTRS, "file")))
        if word in ("fileset", "filesets"):
            return DefineFiles(line, "fileset", tuple(self.attrs(FILESET_ATTRS, "fileset")))
        if word.startswith("process") and set(word[7:]) <= {"e", "s"}:
            return self.process(line)
        if word == "randvar":
            return self.define_randvar(line)
        if word == "flowop":
            return self.composite(line)
        raise self.error(
            f"expected file, fileset, process or randvar after `define`, found {tok.describe()}",
            tok=tok,
        )

    def define_randvar(self, line: int) -> Statement:
        start = self.tok
        attrs, table = self.randvar_attrs(with_name=True)
        names = [a for a in attrs if a.name == "name"]
        if not names or not isinstance(names[-1].value, VarRef):
            raise self.error("`define randvar` needs name=$variable", tok=start)
        rest = tuple(a for a in attrs if a.name != "name")
        written = self.slice(start, self.toks[self.pos - 1])
        text = "randvar(" + _NAME_ATTR.sub("", written, count=1).rstrip(", ") + ")"
        return SetVar(line, names[-1].value.name, Randvar(rest, table, line, text))

    def composite(self, line: int) -> CompositeDef:
        """``define flowop name=X, $a, $b=default { flowop ... }``."""
        name_tok = self.tok
        attrs: list[Attr] = []
        params: list[Local] = []
        while not self.is_punct("{"):
            if self.tok.kind == "var":
                var = self.advance()
                value = None
                if self.is_punct("="):
                    self.advance()
                    value = self.value(f"`${var.name}=`")
                params.append(Local(var.name, value, var.line))
            else:
                attrs.append(self.attr(COMPOSITE_ATTRS, "composite flowop"))
            if self.is_punct(","):
                self.advance()
            elif not self.is_punct("{"):
                raise self.error(
                    f"expected `,` or `{{` in `define flowop`, found {self.tok.describe()}"
                )
        by_name = {a.name: a for a in attrs}
        if "name" not in by_name or not isinstance(by_name["name"].value, Word):
            raise self.error(
                "`define flowop` needs name=, as in define flowop name=rmw", tok=name_tok
            )
        name = by_name["name"].value.value
        if name in FLOWOPS:
            raise self.error(
                f"a composite flowop cannot be named `{name}`, a flowop type", tok=name_tok
            )
        self.expect_punct("{", "the composite flowop's attributes")
        flowops = self.flowops("composite flowop")
        self.expect_punct("}", "the composite flowop's flowops")
        self.composites.add(name)
        iters = by_name["iters"].value if "iters" in by_name else None
        return CompositeDef(line, name, tuple(params), flowops, iters)

    def flowops(self, inside: str) -> tuple[FlowopDef, ...]:
        flowops: list[FlowopDef] = []
        while self.is_word("flowop"):
            if (f := self.flowop()) is not None:
                flowops.append(f)
        if not flowops and not self.problems:
            raise self.error(f"expected `flowop` in the {inside}, found {self.tok.describe()}")
        return tuple(flowops)

    def process(self, line: int) -> ProcessDef:
        attrs = self.attrs(PROCESS_ATTRS, "process")
        self.expect_punct("{", "the process's attributes")
        threads: list[ThreadDef] = []
        while self.is_word("thread"):
            tline = self.advance().line
            tattrs = self.attrs(THREAD_ATTRS, "thread")
            self.expect_punct("{", "the thread's attributes")
            flowops = self.flowops("thread")
            self.expect_punct("}", "the thread's flowops")
            threads.append(ThreadDef(tline, tuple(tattrs), flowops))
        if not threads:
            raise self.error(f"expected `thread` in the process, found {self.tok.describe()}")
        self.expect_punct("}", "the process's threads")
        return ProcessDef(line, tuple(attrs), tuple(threads))

    def flowop(self) -> FlowopDef | None:
        line = self.advance().line
        tok = self.tok
        if tok.kind != "word":
            raise self.error(f"expected a flowop type after `flowop`, found {tok.describe()}")
        self.advance()
        if tok.text in _FLOWOPS_UNSUPPORTED:
            self.unsupported(f"the `{tok.text}` flowop", tok)
            self.attrs_if_any(FLOWOP_ATTRS, "flowop", loose=True)
            return None
        if tok.text not in FLOWOPS and tok.text not in self.composites:
            composites = f"; composite flowops defined so far: {', '.join(sorted(self.composites))}"
            raise self.error(
                f"unknown flowop `{tok.text}`",
                f"flowops are {', '.join(FLOWOPS)}"
                + (
                    composites if self.composites else ", or a composite from `define flowop` above"
                ),
                tok,
            )
        valid = FLOWOP_ATTRS if tok.text in FLOWOPS else COMPOSITE_ATTRS
        locals_: list[Local] = []
        attrs = self.attrs_if_any(valid, "flowop", locals_=locals_)
        if locals_ and tok.text in FLOWOPS:
            raise self.error(
                f"`${locals_[0].name}=`: only a composite flowop takes variables",
                "define the variable with `set` instead",
                tok,
            )
        return FlowopDef(line, tok.text, attrs, tuple(locals_))

    def run(self, line: int, command: Literal["run", "psrun"]) -> Run:
        values: list[Value] = []
        # On the same line only: a bare `run` may be followed by `echo` or a `$` of a `set`.
        while self.tok.kind in ("num", "var") and self.tok.line == line and len(values) < 3:
            values.append(self.value(f"`{command}`"))
        if command == "run":
            # run [runtime [bartime deltime]]: the last two are FileBench's multi-client ones.
            return Run(line, command, values[0] if values else None, tuple(values[1:]))
        # psrun [-period] [runtime]: a lone number is the statistics period.
        if len(values) > 2:
            raise self.error("`psrun` takes a period and a runtime, as in psrun -10 60")
        runtime = values[1] if len(values) == 2 else None
        return Run(line, command, runtime, tuple(values[:1]))

    # --- attributes and values ---
    def attrs_if_any(
        self,
        valid: tuple[str, ...],
        what: str,
        *,
        locals_: list[Local] | None = None,
        loose: bool = False,
    ) -> tuple[Attr, ...]:
        """Attributes that may be absent (`flowop hog` alone is a complete statement); with
        ``locals_``, ``$name=value`` items go there; ``loose`` takes any attribute name."""
        tok, nxt = self.tok, self.peek()
        if (tok.kind == "var" and locals_ is not None) or (
            tok.kind == "word"
            and (
                _ALIASES.get(tok.text, tok.text) in valid
                or (nxt.kind == "punct" and nxt.text in "=,")
            )
        ):
            return tuple(self.attrs(valid, what, locals_=locals_, loose=loose))
        return ()

    def attrs(
        self,
        valid: tuple[str, ...],
        what: str,
        *,
        locals_: list[Local] | None = None,
        loose: bool = False,
    ) -> list[Attr]:
        out: list[Attr] = []
        while True:
            if self.tok.kind == "var" and locals_ is not None:
                var = self.advance()
                self.expect_punct("=", f"`${var.name}` (a composite flowop's variable)")
                locals_.append(Local(var.name, self.value(f"`${var.name}=`"), var.line))
            else:
                out.append(self.attr(valid, what, loose))
            if not self.is_punct(","):
                return out
            self.advance()

    def attr(self, valid: tuple[str, ...], what: str, loose: bool = False) -> Attr:
        tok = self.tok
        if tok.kind != "word":
            raise self.error(f"expected a {what} attribute, found {tok.describe()}")
        self.advance()
        name = _ALIASES.get(tok.text, tok.text)
        if name not in valid and not loose:
            hint = f"{what} attributes are {', '.join(valid)}"
            if tok.text in _SPELLINGS:
                hint = f"FileBench spells it `{_SPELLINGS[tok.text]}`; {hint}"
            raise self.error(f"unknown {what} attribute `{tok.text}`", hint, tok)
        if not self.is_punct("="):
            return Attr(name, None, tok.line, tok.text)
        self.advance()
        return Attr(name, self.value(f"`{tok.text}=`"), tok.line, tok.text)

    def randvar_attrs(
        self, with_name: bool = False
    ) -> tuple[list[Attr], tuple[tuple[Value, Value, Value], ...] | None]:
        valid = ("name", *RANDVAR_ATTRS) if with_name else RANDVAR_ATTRS
        attrs: list[Attr] = []
        table = None
        while True:
            if self.is_word("randtable"):
                self.advance()
                self.expect_punct("=", "`randtable`")
                table = self.randtable()
            else:
                attrs.append(self.attr(valid, "randvar"))
            if not self.is_punct(","):
                return attrs, table
            self.advance()

    def randtable(self) -> tuple[tuple[Value, Value, Value], ...]:
        self.expect_punct("{", "`randtable=`")
        rows: list[tuple[Value, Value, Value]] = []
        while True:
            self.expect_punct("{", "`randtable={`" if not rows else "`,` in randtable")
            a = self.value("`{` in randtable")
            self.expect_punct(",", "a randtable percentage")
            b = self.value("a randtable percentage")
            self.expect_punct(",", "a randtable minimum")
            c = self.value("a randtable minimum")
            self.expect_punct("}", "a randtable row {percent, min, max}")
            rows.append((a, b, c))
            if not self.is_punct(","):
                break
            self.advance()
        self.expect_punct("}", "the randtable rows")
        return tuple(rows)

    def value(self, after: str) -> Value:
        tok = self.tok
        if tok.kind == "num":
            self.advance()
            return Num(tok.num, tok.text)
        if tok.kind == "float":
            self.advance()
            return Flt(tok.flt, tok.text)
        if tok.kind == "var":
            self.advance()
            if self.joined(tok):
                return self.joined_value(tok)
            return VarRef(tok.name, tok.line)
        if tok.kind == "str":
            self.advance()
            return Quoted(tok.parts, tok.text)
        if tok.kind == "word":
            self.advance()
            if self.joined(tok):  # `/mnt/$name`
                return self.joined_value(tok)
            if tok.text in ("true", "false"):
                return Bool(tok.text == "true", tok.text)
            return Word(tok.text, tok.text)
        raise self.error(f"expected a value after {after}, found {tok.describe()}")

    def joined(self, prev: Token) -> bool:
        """Whether the next token touches ``prev``, as ``/sub`` does in ``path=$dir/sub``."""
        nxt = self.tok
        return nxt.start == prev.end and nxt.kind in ("word", "num", "float", "var")

    def joined_value(self, first: Token) -> Quoted:
        """Tokens written without a space between them, as one text (FileBench's lexer reads
        ``$dir/sub`` as a variable followed by text and joins them)."""
        parts: list[Part] = []
        tok = first
        while True:
            parts.append(VarRef(tok.name, tok.line) if tok.kind == "var" else tok.text)
            if not self.joined(tok):
                break
            tok = self.advance()
        return Quoted(tuple(parts), self.text[first.start : tok.end])


def _all_of(problems: list[WmlError]) -> WmlError:
    """One error naming every construct iowatt does not run, the first one's line first."""
    first = problems[0]
    if len(problems) == 1:
        return first
    others = "; ".join(f"line {p.line}: {p.what}" for p in problems[1:])
    return WmlError(
        f"{first.message}; also {others}",
        first.hint,
        line=first.line,
        what=f"{first.what}; also {others}",
    )
