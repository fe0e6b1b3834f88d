"""Statements of FileBench's workload language, after ``parser_gram.y``.

:func:`parse` checks the syntax, the attribute names each entity takes and the constructs iowatt
cannot run (composite flowops, ``system``, ``sleep``, ...); values stay unevaluated (a
:class:`~iowatt.wml.lexer.VarRef` is resolved later, so a ``set`` after a ``define`` counts, as
in FileBench). Every statement and attribute keeps its line for messages.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from iowatt.wml.errors import UNSUPPORTED_HINT, at
from iowatt.wml.lexer import Part, Token, VarRef

# spec.rs `OpKind`, FileBench's flowop names.
FLOWOPS: tuple[str, ...] = (
    "read", "write", "createfile", "openfile", "closefile", "deletefile", "statfile",
    "readwholefile", "writewholefile", "appendfile", "appendfilerand", "fsync", "fsyncset",
    "aiowrite", "aiowait", "makedir", "removedir", "listdir", "hog", "delay", "eventlimit",
    "opslimit", "iopslimit", "bwlimit", "semblock", "sempost", "block", "wakeup",
    "finishoncount", "finishonbytes",
)  # fmt: skip
_FLOWOPS_UNSUPPORTED = ("print", "testrandvar")

# Attribute names per entity (spellings FileBench's lexer maps to the same token are aliases).
_COMMON_FILE = ("name", "path", "size", "prealloc", "paralloc", "reuse", "trusttree", "readonly",
                "writeonly", "cached")  # fmt: skip
FILE_ATTRS = _COMMON_FILE
FILESET_ATTRS = (*_COMMON_FILE, "entries", "dirwidth", "dirgamma", "leafdirs")
PROCESS_ATTRS = ("name", "instances", "nice")
THREAD_ATTRS = ("name", "instances", "memsize", "useism", "ioprio")
FLOWOP_ATTRS = ("name", "filename", "fd", "srcfd", "iosize", "random", "workingset", "directio",
                "dsync", "opennext", "noreadahead", "iters", "value", "target", "blocking",
                "highwater")  # fmt: skip
RANDVAR_ATTRS = ("type", "mean", "gamma", "min", "round", "seed", "randsrc", "randtable")
CVAR_ATTRS = ("type", "parameters", "min", "max", "round")
EVENTGEN_ATTRS = ("rate",)
_ALIASES = {"filesize": "size", "filesetname": "filename"}
_UNSUPPORTED_ATTRS = {
    "indexed": "the `indexed` flowop attribute (picking files by a random index)",
    "dirdepthrv": "the `dirdepthrv` fileset attribute (a random directory depth)",
}
_SPELLINGS = {"rotatefd": "opennext"}

STATEMENTS = ("set", "define", "eventgen", "run", "psrun", "create", "echo", "usage", "debug",
              "version", "enable")  # fmt: skip
_UNSUPPORTED_STATEMENTS = ("system", "sleep", "quit", "shutdown", "list", "domultisync")
_QUIT_MODES = ("timeout", "alldone", "firstdone")
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


Value = Num | Flt | Bool | Word | Quoted | VarRef | Cvar | Randvar


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
class FlowopDef:
    line: int
    kind: str
    attrs: tuple[Attr, ...]


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


@dataclass(frozen=True)
class Echo:
    line: int
    command: Literal["echo", "usage"]
    text: Quoted


@dataclass(frozen=True)
class Ignored:
    """``create files``, ``debug N``, ``version``, ``enable lathist``: nothing for iowatt to do."""

    line: int
    command: str


Statement = SetVar | SetMode | DefineFiles | ProcessDef | Eventgen | Run | Echo | Ignored


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

    def unsupported(self, what: str, tok: Token | None = None) -> Exception:
        return self.error(f"{what} is not supported", UNSUPPORTED_HINT, tok)

    def slice(self, start: Token, end: Token) -> str:
        return " ".join(self.text[start.start : end.end].split())

    # --- statements ---
    def statements(self) -> list[Statement]:
        out: list[Statement] = []
        while self.tok.kind != "eof":
            out.append(self.statement())
        return out

    def statement(self) -> Statement:
        tok = self.tok
        if tok.kind != "word":
            raise self.error(f"expected a statement, found {tok.describe()}")
        word = tok.text
        if word in _UNSUPPORTED_STATEMENTS:
            raise self.unsupported(f"`{word}`")
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
        if word in ("echo", "usage"):
            if self.tok.kind != "str":
                raise self.error(f'expected a quoted string after `{word}`, as in {word} "text"')
            s = self.advance()
            return Echo(line, "echo" if word == "echo" else "usage", Quoted(s.parts, s.text))
        if word == "create":
            if not self.is_word("files", "fileset", "filesets"):
                raise self.error(f"expected `files` after `create`, found {self.tok.describe()}")
            self.advance()
        elif word == "debug":
            if self.tok.kind != "num":
                raise self.error(f"expected a level after `debug`, found {self.tok.describe()}")
            self.advance()
        elif word == "enable":
            if self.is_word("multi"):
                raise self.unsupported("`enable multi` (multi-client runs)")
            if not self.is_word("lathist"):
                raise self.error(f"expected `lathist` after `enable`, found {self.tok.describe()}")
            self.advance()
        return Ignored(line, word)

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
        if tok.kind == "var" and self.peek().kind == "punct" and self.peek().text in "*+":
            raise self.unsupported(f"arithmetic (`{self.slice(tok, self.peek(2))}`)")
        return self.value("`set $...=`")

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
            raise self.unsupported("a composite flowop (`define flowop`)", tok)
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

    def process(self, line: int) -> ProcessDef:
        attrs = self.attrs(PROCESS_ATTRS, "process")
        self.expect_punct("{", "the process's attributes")
        threads: list[ThreadDef] = []
        while self.is_word("thread"):
            tline = self.advance().line
            tattrs = self.attrs(THREAD_ATTRS, "thread")
            self.expect_punct("{", "the thread's attributes")
            flowops: list[FlowopDef] = []
            while self.is_word("flowop"):
                flowops.append(self.flowop())
            if not flowops:
                raise self.error(f"expected `flowop` in the thread, found {self.tok.describe()}")
            self.expect_punct("}", "the thread's flowops")
            threads.append(ThreadDef(tline, tuple(tattrs), tuple(flowops)))
        if not threads:
            raise self.error(f"expected `thread` in the process, found {self.tok.describe()}")
        self.expect_punct("}", "the process's threads")
        return ProcessDef(line, tuple(attrs), tuple(threads))

    def flowop(self) -> FlowopDef:
        line = self.advance().line
        tok = self.tok
        if tok.kind != "word":
            raise self.error(f"expected a flowop type after `flowop`, found {tok.describe()}")
        self.advance()
        if tok.text in _FLOWOPS_UNSUPPORTED:
            raise self.unsupported(f"the `{tok.text}` flowop", tok)
        if tok.text not in FLOWOPS:
            raise self.error(
                f"unknown flowop `{tok.text}`",
                f"flowops are {', '.join(FLOWOPS)}; iowatt does not run composite flowops",
                tok,
            )
        return FlowopDef(line, tok.text, self.attrs_if_any(FLOWOP_ATTRS, "flowop"))

    def run(self, line: int, command: Literal["run", "psrun"]) -> Run:
        if command == "run":
            if self.tok.kind in ("num", "var"):
                return Run(line, command, self.value("`run`"))
            return Run(line, command, None)
        # psrun [period] [runtime]: a lone number is the statistics period.
        if self.tok.kind != "num":
            return Run(line, command, None)
        self.advance()
        runtime = self.value("`psrun`") if self.tok.kind == "num" else None
        return Run(line, command, runtime)

    # --- attributes and values ---
    def attrs_if_any(self, valid: tuple[str, ...], what: str) -> tuple[Attr, ...]:
        """Attributes that may be absent (`flowop hog` alone is a complete statement)."""
        tok, nxt = self.tok, self.peek()
        if tok.kind == "word" and (
            _ALIASES.get(tok.text, tok.text) in valid
            or tok.text in _UNSUPPORTED_ATTRS
            or (nxt.kind == "punct" and nxt.text in "=,")
        ):
            return tuple(self.attrs(valid, what))
        return ()

    def attrs(self, valid: tuple[str, ...], what: str) -> list[Attr]:
        out = [self.attr(valid, what)]
        while self.is_punct(","):
            self.advance()
            out.append(self.attr(valid, what))
        return out

    def attr(self, valid: tuple[str, ...], what: str) -> Attr:
        tok = self.tok
        if tok.kind == "var" and what == "flowop":
            raise self.unsupported("a flowop's local variable (composite flowops)")
        if tok.kind != "word":
            raise self.error(f"expected a {what} attribute, found {tok.describe()}")
        self.advance()
        name = _ALIASES.get(tok.text, tok.text)
        if name in _UNSUPPORTED_ATTRS:
            raise self.unsupported(_UNSUPPORTED_ATTRS[name], tok)
        if name not in valid:
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
            nxt = self.tok
            if nxt.start == tok.end and nxt.kind in ("word", "num", "float", "var"):
                joined = self.text[tok.start : nxt.end]
                raise self.error(
                    f"`{joined}`: a variable cannot be joined to other text here",
                    f'quote it, as in "{joined}"',
                )
            return VarRef(tok.name, tok.line)
        if tok.kind == "str":
            self.advance()
            return Quoted(tok.parts, tok.text)
        if tok.kind == "word":
            self.advance()
            if tok.text in ("true", "false"):
                return Bool(tok.text == "true", tok.text)
            return Word(tok.text, tok.text)
        raise self.error(f"expected a value after {after}, found {tok.describe()}")
