"""Evaluating parsed statements into a :class:`~iowatt.wml.program.Program`.

Variables bind late, as in FileBench (whose attribute values point at variables that ``run``
reads): a ``define`` sees the last ``set`` before ``run``. ``--set`` overrides replace a
variable's value wherever the file sets it, and ``$dir`` is always the directory iowatt runs in.
Nothing after ``run`` can take effect (FileBench exits when the run ends), so a ``set`` or
``define`` there is an error, and messages there are dropped.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from iowatt.units import MAX_DURATION_S, MAX_SIZE, MAX_SIZE_TEXT, U32_MAX
from iowatt.wml.dists import Dist, DistError, cvar, fixed, randvar
from iowatt.wml.errors import WmlError, at
from iowatt.wml.lexer import Part, VarRef
from iowatt.wml.parser import (
    Arith,
    Attr,
    Bool,
    CompositeDef,
    Cvar,
    DefineFiles,
    Echo,
    Eventgen,
    FlowopDef,
    Flt,
    Num,
    ProcessDef,
    Quoted,
    Randvar,
    Run,
    SetMode,
    SetVar,
    Sleep,
    Statement,
    Stats,
    System,
    Value,
    Word,
)
from iowatt.wml.program import Program
from iowatt.wml.script import split, timeline

Resolved = int | float | bool | str | Dist

DEFAULT_RUNTIME_S = 60.0  # FileBench's TIMED_RUNTIME_DEFAULT
# Flowops whose value is a time or a count of CPU work: larger values would keep a thread busy
# beyond any run (hog does not look at the clock until its loop ends; delay counts seconds on a
# nanosecond clock).
_VALUE_MAX = {"hog": 10**9, "delay": int(MAX_DURATION_S)}
# Flowops that move `iosize` bytes each time (run.rs `validate_filesets`).
_NEEDS_IOSIZE = ("read", "write", "aiowrite", "appendfile", "appendfilerand")
# Variables defined by other variables, resolved recursively: far below Python's recursion limit.
_MAX_NESTING = 100
MAX_FD = 128  # FileBench's THREADFLOW_MAXFD
PATH_HINT = "iowatt creates files only in its target; use path=$dir"
_TARGET_KINDS = {"sempost": "semblock", "wakeup": "block"}
# A composite flowop's step (the engine repeats the `value` flowops after it `iters` times),
# with every field a flowop has.
_COMPOSITE: dict[str, Any] = {
    "kind": "composite",
    "file": 0,
    "fileset": None,
    "iosize": 0,
    "iosize_dist": None,
    "random": False,
    "directio": False,
    "dsync": False,
    "workingset": 0,
    "fd": 0,
    "srcfd": 0,
    "opennext": False,
    "noreadahead": False,
    "target": None,
    "blocking": False,
    "highwater": 1,
    "index": None,
}


def evaluate(
    statements: list[Statement],
    source: str,
    name: str,
    directory: Path,
    overrides: Mapping[str, tuple[Value, str]],
) -> Program:
    return _Evaluator(statements, source, directory, overrides).program(name)


class _Evaluator:
    def __init__(
        self,
        statements: list[Statement],
        source: str,
        directory: Path,
        overrides: Mapping[str, tuple[Value, str]],
    ) -> None:
        self.source, self.dir = source, directory
        self.dir_abs = Path(os.path.normpath(directory.absolute()))
        self.active, self.commands = split(statements, source)
        self.defs: dict[str, tuple[Value, int]] = {}
        self.composites: dict[str, CompositeDef] = {}
        for st in self.active:
            if isinstance(st, SetVar):
                self.defs[st.name] = (st.value, st.line)
            elif isinstance(st, CompositeDef):
                self.composites[st.name] = st
        self.cache: dict[str, Resolved] = {}
        self.resolving: set[str] = set()
        # A composite flowop's variables while it is expanded, innermost last.
        self.scopes: list[dict[str, Resolved]] = []
        self.warnings: list[str] = []
        self.noted: set[int] = set()
        self.override_texts = {k: text for k, (_, text) in overrides.items()}
        self.used = _used(self.active + self.commands)  # every variable referred to
        self._apply(overrides)
        self._check_defined()

    def err(self, line: int | None, what: str, hint: str | None = None) -> WmlError:
        return at(self.source, line, what, hint)

    def notice(self, line: int | None, what: str) -> None:
        """Something of the file iowatt ignores or maps: shown before the run, and by --check."""
        self.warnings.append(f"{self.source}:{line}: {what}" if line else f"{self.source}: {what}")

    def _apply(self, overrides: Mapping[str, tuple[Value, str]]) -> None:
        used = self.used
        for name, (value, _) in overrides.items():
            if name == "dir":
                raise self.err(
                    None,
                    "--set dir: `$dir` is the directory iowatt runs in",
                    "choose the directory with the target instead",
                )
            if name not in self.defs and name not in used:
                known = ", ".join(sorted(k for k in {*self.defs, *used} if k != "dir")) or "none"
                raise self.err(
                    None,
                    f"--set {name}: the file never uses `${name}`",
                    f"the file's variables are: {known}",
                )
            line = self.defs[name][1] if name in self.defs else 0
            self.defs[name] = (value, line)
            try:
                resolved = self.get(name, line)
            except WmlError as e:
                where = f"--set {name}={self.override_texts[name]}"
                raise self.err(None, f"{where}: {e.what}", e.hint) from None
            if isinstance(resolved, Dist):  # line 0: from the command line
                self.cache[name] = dataclasses.replace(resolved, line=0)

    def _check_defined(self) -> None:
        """Every variable the file uses but never sets, in one message (FileBench accepts them
        until it reads one; a wrapper script usually supplies them)."""
        missing = {k: v for k, v in self.used.items() if k not in self.defs and k != "dir"}
        if not missing:
            return
        names = sorted(missing, key=lambda k: missing[k])
        listed = ", ".join(f"`${k}` (line {missing[k]})" for k in names)
        first = missing[names[0]]
        what = "variable" if len(names) == 1 else f"{len(names)} variables"
        raise self.err(
            first,
            f"{what} used but never set: {listed}",
            "give them values: " + " ".join(f"--set {k}=..." for k in names),
        )

    # --- variables ---
    def get(self, name: str, line: int) -> Resolved:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        if name == "dir":
            return str(self.dir)
        if name in self.cache:
            return self.cache[name]
        if name not in self.defs:
            known = ", ".join(sorted({"dir", *self.defs}))
            raise self.err(
                line,
                f"undefined variable `${name}`",
                f"set it with `set ${name}=...` before `run`; the file's variables are: {known}",
            )
        if name in self.resolving:
            raise self.err(line, f"variable `${name}` is defined in terms of itself")
        if len(self.resolving) >= _MAX_NESTING:
            raise self.err(
                line,
                f"variable `${name}` is reached through {_MAX_NESTING} others",
                "give the variables their values more directly",
            )
        self.resolving.add(name)
        try:
            value = self.resolve(self.defs[name][0])
        finally:
            self.resolving.discard(name)
        self.cache[name] = value
        return value

    def resolve(self, value: Value) -> Resolved:
        if isinstance(value, VarRef):
            return self.get(value.name, value.line)
        if isinstance(value, Num | Flt | Bool | Word):
            return value.value
        if isinstance(value, Quoted):
            return self.substitute(value.parts)
        if isinstance(value, Arith):
            return self.arith(value)
        try:
            dist = self.cvar(value) if isinstance(value, Cvar) else self.randvar(value)
        except DistError as e:
            raise self.err(value.line, e.what, e.hint) from None
        return dataclasses.replace(dist, line=value.line, text=value.text)

    def arith(self, value: Arith) -> int | float:
        """FileBench's ``set $x = $a * $b``: whole numbers stay whole (``/`` divides them
        without remainder), and a float on either side makes a float."""
        a, b = self.resolve(value.left), self.resolve(value.right)
        for v in (a, b):
            if isinstance(v, bool) or not isinstance(v, int | float):
                raise self.err(value.line, f"`{value.text}`: {_show(v)} is not a number")
        assert isinstance(a, int | float) and isinstance(b, int | float)
        if value.op == "/" and b == 0:
            raise self.err(value.line, f"`{value.text}` divides by zero")
        if value.op == "+":
            out = a + b
        elif value.op == "-":
            out = a - b
        elif value.op == "*":
            out = a * b
        else:
            out = a // b if isinstance(a, int) and isinstance(b, int) else a / b
        if abs(out) > MAX_SIZE:
            raise self.err(value.line, f"`{value.text}` is {out:,}, beyond 2^62")
        return out

    def substitute(self, parts: tuple[Part, ...], shell: bool = False) -> str:
        """A quoted string's text; with ``shell``, a variable the file never sets is left as
        written, for the shell."""
        out = []
        for part in parts:
            if shell and isinstance(part, VarRef) and not self.known(part.name):
                out.append(f"${part.name}")
            elif isinstance(part, VarRef):
                out.append(_show(self.get(part.name, part.line), quote=False))
            else:
                out.append(part)
        return "".join(out)

    def origins(self) -> dict[str, str]:
        out = {}
        for k, (_, line) in self.defs.items():
            if k in self.override_texts:
                out[k] = f"--set (line {line} sets it)" if line else "--set"
            else:
                out[k] = f"line {line}"
        return out | {"dir": "iowatt: its work directory in the target"}

    def known(self, name: str) -> bool:
        return name == "dir" or name in self.defs or any(name in s for s in self.scopes)

    def text_of(self, name: str) -> str:
        """A variable's value as written (or as given to --set), for the manifest."""
        if name == "dir":
            return str(self.dir)
        if name in self.override_texts:
            return self.override_texts[name]
        value = self.defs[name][0]
        if isinstance(value, VarRef):
            return self.text_of(value.name) if value.name in self.defs else f"${value.name}"
        if isinstance(value, Quoted):
            return self.substitute(value.parts)
        if isinstance(value, Arith):
            return _show(self.get(name, 0), quote=False)
        return value.text

    def cvar(self, value: Cvar) -> Dist:
        attrs = _by_name(value.attrs)
        if "type" not in attrs:
            raise DistError("a cvar needs type=, as in type=cvar-gamma")
        params = self.as_str(attrs["parameters"]) if "parameters" in attrs else None
        bounds: dict[str, int] = {k: self.as_int(attrs[k]) for k in ("min", "max") if k in attrs}
        round_to = self.as_int(attrs["round"]) if "round" in attrs else 0
        return cvar(self.as_str(attrs["type"]), params, bounds, round_to)

    def randvar(self, value: Randvar) -> Dist:
        attrs = _by_name(value.attrs)

        def opt(key: str) -> int | None:
            return self.as_int(attrs[key]) if key in attrs else None

        if "randsrc" in attrs and self.as_str(attrs["randsrc"]) not in ("urandom", "rand48"):
            raise DistError("randsrc must be urandom or rand48")
        opt("seed")  # iowatt draws from the run's seed
        table = None
        if value.table is not None:
            line = value.line
            table = [
                (self.table_int(a, line), self.table_int(b, line), self.table_int(c, line))
                for a, b, c in value.table
            ]
        return randvar(
            self.as_str(attrs["type"]) if "type" in attrs else None,
            opt("mean"),
            opt("gamma"),
            opt("min") or 0,
            opt("round") or 0,
            table,
        )

    def table_int(self, value: Value, line: int) -> int:
        v = self.resolve(value)
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= MAX_SIZE:
            raise self.err(
                line, f"randtable values must be whole numbers up to 2^62, not {_show(v)}"
            )
        return v

    # --- typed attribute values ---
    def value_of(self, a: Attr) -> Resolved:
        if a.value is None:
            raise self.err(a.line, f"`{a.spelled}` needs a value, as in {a.spelled}=...")
        return self.resolve(a.value)

    def as_int(self, a: Attr, lo: int = 0, hi: int = MAX_SIZE, mean_ok: bool = False) -> int:
        """A whole number from ``lo`` to ``hi`` (by default the largest size iowatt takes: every
        number of a workload ends up in the engine's u64 or u32 fields)."""
        v = self.value_of(a)
        if isinstance(v, Dist):
            if mean_ok:
                return round(v.mean)
            raise self.err(
                a.line, f"`{a.spelled}` cannot be random ({_show(v)})", "give it a fixed number"
            )
        if isinstance(v, bool) or not isinstance(v, int):
            hint = None
            if a.name in ("dirgamma", "gamma") and isinstance(v, float):
                hint = f"{a.name} is in thousandths: 1500 means a shape of 1.5"
            raise self.err(a.line, f"`{a.spelled}` needs a whole number, not {_show(v)}", hint)
        if not lo <= v <= hi:
            bound = f"between {lo:,} and {hi:,}"
            raise self.err(a.line, f"`{a.spelled}` must be {bound}, not {v:,}", _bound_hint(a))
        return v

    def written(self, a: Attr) -> str:
        """```size=$filesize` (`99g`)``: an attribute as written, and its variable's value."""
        if isinstance(a.value, VarRef) and a.value.name in self.defs:
            return f"`{a.spelled}=${a.value.name}` (`{self.text_of(a.value.name)}`)"
        text = a.value.text if a.value is not None and not isinstance(a.value, VarRef) else ""
        return f"`{a.spelled}={text}`"

    def as_number(self, a: Attr) -> float:
        v = self.value_of(a)
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise self.err(
                a.line, f"`{a.spelled}` needs a number, not {_show(v)}", self.set_hint(a, "8")
            )
        return float(v)

    def set_hint(self, a: Attr, example: str) -> str | None:
        """For a value from a variable (often a template's placeholder, `set $x=FILESZ`): how to
        give it one on the command line."""
        if isinstance(a.value, VarRef):
            return f"give ${a.value.name} a value: --set {a.value.name}={example}"
        return None

    def as_bool(self, a: Attr | None) -> bool:
        if a is None:
            return False
        if a.value is None:
            return True
        v = self.resolve(a.value)
        if isinstance(v, bool):
            return v
        if isinstance(v, int):
            return v != 0
        raise self.err(a.line, f"`{a.spelled}` needs true, false, 0 or 1, not {_show(v)}")

    def as_str(self, a: Attr) -> str:
        v = self.value_of(a)
        if isinstance(v, str):
            return v
        if isinstance(v, int) and not isinstance(v, bool):
            return str(v)
        raise self.err(a.line, f"`{a.spelled}` needs a name or text, not {_show(v)}")

    def as_size(self, a: Attr) -> tuple[dict[str, Any], Dist | None]:
        v = self.value_of(a)
        if isinstance(v, Dist):
            return v.spec, v
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise self.err(
                a.line,
                f"`{a.spelled}` needs a size such as 16k, not {_show(v)}",
                self.set_hint(a, "16k"),
            )
        if v > MAX_SIZE:
            raise self.err(
                a.line,
                f"{self.written(a)} is larger than {MAX_SIZE_TEXT}, the largest size iowatt takes",
                "give a size a device can hold, such as 16k or 10g",
            )
        return fixed(v), None

    # --- entities ---
    def program(self, name: str) -> Program:
        quit_mode = "timeout"
        rate: float | None = None
        messages: list[str] = []
        usage = [
            self.text(st.text)
            for st in self.commands
            if isinstance(st, Echo) and st.command == "usage"
        ]
        filesets: list[dict[str, Any]] = []
        threads: list[tuple[dict[str, Any], int]] = []
        flowops: list[tuple[dict[str, Any], FlowopDef]] = []
        index: dict[str, int] = {}
        lines: dict[str, int] = {}
        for name_, (_, line) in self.defs.items():  # as FileBench, which evaluates each `set`
            self.get(name_, line)
        for st in self.active:
            if isinstance(st, SetMode) and st.mode != "nousestats":
                quit_mode = st.mode
            elif isinstance(st, Eventgen):
                attrs = _by_name(st.attrs)
                if "rate" in attrs:
                    r = self.as_int(attrs["rate"])
                    rate = float(r) if r else None
            elif isinstance(st, DefineFiles):
                fs = self.fileset(st)
                if fs["name"] in index:
                    raise self.err(st.line, f"a second file or fileset named `{fs['name']}`")
                index[fs["name"]] = len(filesets)
                lines[fs["name"]] = st.line
                filesets.append(fs)
        for st in self.active:
            if isinstance(st, ProcessDef):
                threads.extend(self.process(st, index, flowops))
        processes = [st.line for st in self.active if isinstance(st, ProcessDef)]
        if processes and not threads:
            raise self.err(
                processes[0],
                "no thread would run: each has 0 instances",
                "give a process and its thread at least 1 instance",
            )
        self.check_targets(flowops)
        script = timeline(self.commands, self.seconds, self.text, self.runtime, self.source)
        for step in script.steps:
            if step.kind == "stats" and " " in step.text:
                kept = "(summary.json, the IO Summary line), not a file of their own"
                self.notice(step.line, f"`stats {step.text}`: the statistics are the run's {kept}")
        # What the file says before its processes start is shown when it is loaded, as
        # FileBench does; an echo while they run is a step, said at its second.
        loaded = [s for s in script.steps if s.kind == "echo" and s.phase in ("setup", "laid_out")]
        messages += [s.text for s in loaded]
        return Program(
            source=self.source,
            name=name,
            variables={"dir": str(self.dir)}
            | {k: self.text_of(k) for k in self.defs if k != "dir"},
            origins=self.origins(),
            runtime_s=script.runtime_s or None,
            ramp_s=script.ramp_s,
            steps=[s for s in script.steps if s not in loaded],
            quit=quit_mode,
            messages=messages,
            usage=usage,
            filesets=filesets,
            fileset_lines=lines,
            threads=[t for t, _ in threads],
            thread_lines=[line for _, line in threads],
            eventgen_rate=rate,
            warnings=self.warnings,
        )

    def runtime(self, run: Run) -> float:
        """``run [N]``'s seconds (FileBench's default when absent or 0)."""
        for extra in run.extra if run.command == "run" else ():
            self.seconds(extra, run.line, run.command)
        if run.extra and run.command == "run":
            self.notice(run.line, "`run`'s bar and delete times (multi-client runs) are ignored")
        if run.runtime is None:
            return DEFAULT_RUNTIME_S
        return self.seconds(run.runtime, run.line, run.command) or DEFAULT_RUNTIME_S

    def seconds(self, value: Value, line: int, what: str = "sleep") -> float:
        """A whole number of seconds, as ``run`` and ``sleep`` take."""
        return float(self.as_int(Attr(what, value, line, what), hi=int(MAX_DURATION_S)))

    def text(self, value: Quoted, shell: bool = False) -> str:
        return self.substitute(value.parts, shell)

    def fileset(self, d: DefineFiles) -> dict[str, Any]:
        attrs = _by_name(d.attrs)
        for key in ("name", "path"):
            if key not in attrs:
                raise self.err(d.line, f"`define {d.what}` needs {key}=", "FileBench requires one")
        name = self.as_str(attrs["name"])
        if not name or "/" in name or name in (".", ".."):
            raise self.err(attrs["name"].line, f"`{name}` is not a plain file name")
        path = self.check_path(self.as_str(attrs["path"]), d.line)
        size = self.as_size(attrs["size"])[0] if "size" in attrs else fixed(1024)
        if "filesizegamma" in attrs:
            size = self.size_gamma(attrs["filesizegamma"], size)
        if self.as_bool(attrs.get("cached")):
            self.notice(
                d.line,
                f"`{name}`: cached is not applied: iowatt always drops the "
                "fileset from the page cache before measuring",
            )
        self.as_bool(attrs.get("trusttree"))  # iowatt lays out its own directory each run
        entropy = self.entropy(attrs) if {"datasource", "entropy"} & attrs.keys() else None
        if "dirdepthrv" in attrs:
            self.value_of(attrs["dirdepthrv"])
            self.notice(
                d.line,
                f"`{name}`: dirdepthrv is not applied: directory depths are "
                "drawn around ln(entries)/ln(dirwidth), as without it",
            )
        if d.what == "file":
            entries, dirwidth, dirgamma, leafdirs = 1, 10, 0.0, 0
        else:
            # The engine numbers a fileset's entries in 32 bits.
            entries = self.as_int(attrs["entries"], hi=U32_MAX) if "entries" in attrs else 0
            leafdirs = self.as_int(attrs["leafdirs"], hi=U32_MAX) if "leafdirs" in attrs else 0
            if entries + leafdirs > U32_MAX:
                raise self.err(
                    d.line,
                    f"fileset `{name}` has {entries + leafdirs:,} entries and leaf directories",
                    f"at most {U32_MAX:,} in all",
                )
            if entries == 0 and leafdirs == 0:
                raise self.err(d.line, f"fileset `{name}` has no entries and no leafdirs")
            if "dirwidth" in attrs:
                dirwidth = self.as_int(attrs["dirwidth"], mean_ok=True)
            else:
                dirwidth = 0
                self.notice(
                    d.line,
                    f"fileset `{name}` has no dirwidth: as in FileBench, each file gets a "
                    "directory of its own (add dirwidth=N for N files per directory)",
                )
            gamma = attrs.get("dirgamma")
            dirgamma = (self.as_int(gamma) if gamma is not None else 1500) / 1000
        return {
            "name": name,
            "path": path,
            "entries": entries,
            "size": size,
            "dirwidth": dirwidth,
            "dirgamma": dirgamma,
            "leafdirs": leafdirs,
            "prealloc": self.prealloc(attrs.get("prealloc")),
            "reuse": self.as_bool(attrs.get("reuse")),
            "paralloc": self.as_bool(attrs.get("paralloc")),
            "readonly": self.as_bool(attrs.get("readonly")),
            "writeonly": self.as_bool(attrs.get("writeonly")),
            "single": d.what == "file",
            "entropy": entropy,
        }

    def entropy(self, attrs: dict[str, Attr]) -> float:
        """The FSL fork's ``datasource=entro|constant,entropy=E``: the bits per byte of the data
        laid out and written (0 to 8; ``constant`` is 0)."""
        source = self.as_str(attrs["datasource"]) if "datasource" in attrs else "entro"
        if source not in ("entro", "constant"):
            raise self.err(
                attrs["datasource"].line,
                f"`datasource={source}` is not a data source",
                "datasource is entro (with entropy=) or constant",
            )
        if source == "constant":
            return 0.0
        entropy = self.as_number(attrs["entropy"]) if "entropy" in attrs else 8.0
        if not 0 <= entropy <= 8:
            raise self.err(
                attrs["entropy"].line,
                f"`entropy={entropy:g}` is outside 0 to 8",
                "entropy is in bits per byte: 8 is incompressible",
            )
        return entropy

    def size_gamma(self, a: Attr, size: dict[str, Any]) -> dict[str, Any]:
        """1.4's ``filesizegamma``: file sizes drawn from a gamma of this shape (in thousandths)
        around the fixed ``size``; 0 keeps them fixed."""
        shape = self.as_int(a, hi=10**9)
        if not shape or "fixed" not in size:
            return size
        return {"gamma": {"mean": float(size["fixed"]), "shape": shape / 1000, "min": 0}}

    def check_path(self, text: str, line: int) -> str:
        """A fileset's directory, inside iowatt's work directory: a path elsewhere (a literal
        ``/mnt/test`` or a relative one) is mapped under it, with a notice."""
        path = Path(os.path.normpath(text))
        if path.is_absolute() and (path == self.dir_abs or self.dir_abs in path.parents):
            return str(path)
        inside = path.relative_to("/") if path.is_absolute() else path
        if inside.parts[:1] == ("..",) or text.startswith(f"{self.dir_abs}/"):
            raise self.err(line, f"path `{text}` leads out of the work directory", PATH_HINT)
        mapped = self.dir_abs / inside
        self.notice(
            line,
            f"path `{text}` is mapped to `$dir/{inside}`: iowatt creates files only in its "
            "own directory in the target",
        )
        return str(mapped)

    def prealloc(self, a: Attr | None) -> int:
        if a is None or a.value is None:
            return 0 if a is None else 100
        v = self.resolve(a.value)
        if isinstance(v, bool):
            return 100 if v else 0
        return self.as_int(a, lo=0, hi=100)

    def process(
        self,
        p: ProcessDef,
        index: dict[str, int],
        flowops: list[tuple[dict[str, Any], FlowopDef]],
    ) -> list[tuple[dict[str, Any], int]]:
        """The process's threads as the engine's ThreadSpec, each with its line."""
        attrs = _by_name(p.attrs)
        pname = self.required_name(attrs, p.line, "process")
        count = self.as_int(attrs["instances"]) if "instances" in attrs else 1
        if "nice" in attrs and self.as_int(attrs["nice"]):
            self.notice(p.line, f"process `{pname}`: nice is not applied")
        out = []
        for t in p.threads:
            tattrs = _by_name(t.attrs)
            tname = self.required_name(tattrs, t.line, "thread")
            n = count * (self.as_int(tattrs["instances"]) if "instances" in tattrs else 1)
            if n >= 1 << 32:
                raise self.err(t.line, f"thread `{tname}` has {n} instances, too many")
            if n == 0:
                # FileBench creates none, and never looks at its flowops.
                self.notice(t.line, f"thread `{tname}` has 0 instances: it does not run")
                continue
            if self.as_bool(tattrs.get("useism")):
                self.notice(t.line, f"thread `{tname}`: useism (shared memory) is not needed")
            if "ioprio" in tattrs:
                self.as_int(tattrs["ioprio"])
                self.notice(t.line, f"thread `{tname}`: ioprio is not applied")
            ops = []
            for f in t.flowops:
                for op, where in self.expand(f, index):
                    flowops.append((op, where))
                    ops.append(op)
            spec = {
                "name": tname,
                "instances": n,
                "flowops": ops,
                "process": pname,
                "memsize": self.as_int(tattrs["memsize"], hi=MAX_SIZE)
                if "memsize" in tattrs
                else 0,
            }
            out.append((spec, t.line))
        return out

    def required_name(self, attrs: dict[str, Attr], line: int, what: str) -> str:
        if "name" not in attrs:
            raise self.err(line, f"the {what} has no name", "add name=..., FileBench needs one")
        return self.as_str(attrs["name"])

    def expand(
        self, f: FlowopDef, index: dict[str, int], using: tuple[str, ...] = (), prefix: str = ""
    ) -> list[tuple[dict[str, Any], FlowopDef]]:
        """A flowop, or a composite flowop as the engine runs it: a ``composite`` step that
        repeats the next ``value`` flowops (its body, expanded) ``iters`` times. As in
        FileBench, a flowop inside a composite is named after it: ``dowork1.rw1.openfile4``."""
        comp = self.composites.get(f.kind)
        if comp is None:
            op = self.flowop(f, index)
            return [({**op, "name": f"{prefix}{op['name']}"}, f)]
        if f.kind in using:
            raise self.err(f.line, f"composite flowop `{f.kind}` uses itself")
        attrs = _by_name(f.attrs)
        name = self.required_name(attrs, f.line, f"`{f.kind}` flowop")
        given = {loc.name: loc for loc in f.locals}
        scope: dict[str, Resolved] = {}
        for loc in f.locals:  # evaluated where the composite is used
            scope[loc.name] = self.resolve(loc.value) if loc.value is not None else True
        for param in comp.params:
            if param.name in given:
                continue
            if param.value is None:
                raise self.err(
                    f.line,
                    f"composite flowop `{f.kind}` (line {comp.line}) needs `${param.name}`",
                    f"add ${param.name}=... to this flowop",
                )
            scope[param.name] = self.resolve(param.value)
        iters = self.as_int(attrs["iters"], lo=1, hi=U32_MAX) if "iters" in attrs else 1
        if comp.iters is not None and comp.line not in self.noted:
            self.noted.add(comp.line)
            self.notice(
                comp.line,
                f"`define flowop {f.kind}`: iters is set where it is used, "
                "as in FileBench (it is 1 there when not given)",
            )
        self.scopes.append(scope)
        try:
            using, inside = (*using, f.kind), f"{prefix}{name}."
            body = [x for inner in comp.flowops for x in self.expand(inner, index, using, inside)]
        finally:
            self.scopes.pop()
        head = {**_COMPOSITE, "name": f"{prefix}{name}", "iters": iters, "value": len(body)}
        return [(head, f), *body]

    def flowop(self, f: FlowopDef, index: dict[str, int]) -> dict[str, Any]:
        attrs = _by_name(f.attrs)
        name = self.required_name(attrs, f.line, f"`{f.kind}` flowop")
        fileset = None
        if "filename" in attrs:
            fname = self.as_str(attrs["filename"])
            if fname not in index:
                known = ", ".join(index) or "none"
                raise self.err(
                    attrs["filename"].line,
                    f"unknown file or fileset `{fname}`",
                    f"defined: {known}",
                )
            fileset = index[fname]
        iosize, dist = 0, None
        if "iosize" in attrs:
            spec, d = self.as_size(attrs["iosize"])
            iosize, dist = (d.top, spec) if d else (spec["fixed"], None)

        def num(key: str, default: int = 0, lo: int = 0, hi: int = MAX_SIZE) -> int:
            return self.as_int(attrs[key], lo, hi) if key in attrs else default

        directio = self.as_bool(attrs.get("directio"))
        if directio and dist is None and iosize % 512:
            # O_DIRECT moves whole logical blocks: the first such operation would fail with
            # EINVAL and stop the run.
            raise self.err(
                attrs["iosize"].line,
                f"`{f.kind}` flowop `{name}` has directio and an iosize of {iosize:,} bytes, "
                "not a multiple of 512",
                "O_DIRECT needs a multiple of the disk's logical block size, e.g. iosize=4k",
            )
        op = {
            "name": name,
            "kind": f.kind,
            "file": 0,
            "fileset": fileset,
            "iosize": iosize,
            "iosize_dist": dist,
            "random": self.as_bool(attrs.get("random")),
            "directio": directio,
            "dsync": self.as_bool(attrs.get("dsync")),
            "workingset": num("workingset"),
            "fd": num("fd", hi=MAX_FD),
            "srcfd": num("srcfd", hi=MAX_FD),
            "opennext": self.as_bool(attrs.get("opennext")),
            "noreadahead": self.as_bool(attrs.get("noreadahead")),
            "iters": num("iters", default=1, lo=1, hi=(1 << 32) - 1),
            "value": num("value", hi=_VALUE_MAX.get(f.kind, MAX_SIZE)),
            "target": self.as_str(attrs["target"]) if "target" in attrs else None,
            "blocking": self.as_bool(attrs.get("blocking")),
            "highwater": num("highwater", default=1),  # FileBench's default
            "index": self.index(attrs.get("indexed"), fileset, f),
        }
        if f.kind in _NEEDS_IOSIZE and iosize == 0:
            # The engine would refuse it only once the run has started.
            raise self.err(
                f.line, f"`{f.kind}` flowop `{name}` needs an iosize", "add iosize=, e.g. iosize=8k"
            )
        return op

    def index(self, a: Attr | None, fileset: int | None, f: FlowopDef) -> dict[str, Any] | None:
        """``indexed=``: the index (or random variable of indices) of the file to pick."""
        if a is None:
            return None
        spec = self.as_size(a)[0]
        if fileset is None:
            self.notice(a.line, f"`{a.spelled}` on a flowop without a fileset picks nothing")
            return None
        return spec

    def check_targets(self, flowops: list[tuple[dict[str, Any], FlowopDef]]) -> None:
        kinds: dict[str, set[str]] = {}
        for op, _ in flowops:
            kinds.setdefault(op["name"], set()).add(op["kind"])
        for op, f in flowops:
            target, need = op["target"], _TARGET_KINDS.get(op["kind"])
            line = next((a.line for a in f.attrs if a.name == "target"), f.line)
            if target is None:
                if need:
                    raise self.err(f.line, f"`{op['kind']}` needs target=<a {need} flowop>")
                continue
            if target not in kinds:
                raise self.err(line, f"target `{target}` is not the name of a flowop")
            if need and need not in kinds[target]:
                raise self.err(line, f"the target of `{op['kind']}` must be a `{need}` flowop")


def _bound_hint(a: Attr) -> str | None:
    if isinstance(a.value, VarRef):
        return f"it comes from `${a.value.name}`: set it (or --set {a.value.name}=...) in range"
    return None


def _by_name(attrs: tuple[Attr, ...]) -> dict[str, Attr]:
    """Attributes by name; a repeated attribute counts once, the last time (FileBench's
    ``get_attr``)."""
    return {a.name: a for a in attrs}


def _used(statements: list[Statement]) -> dict[str, int]:
    """Every variable the statements refer to, with the first line it is used on; inside a
    composite flowop, its own variables (declared, or passed where it is used) do not count."""
    found: dict[str, int] = {}
    passed = {loc.name for st in statements for f in _all_flowops(st) for loc in f.locals}

    def value(v: Value | None, local: set[str]) -> None:
        if isinstance(v, VarRef):
            if v.name not in local:
                found.setdefault(v.name, v.line)
        elif isinstance(v, Quoted):
            for part in v.parts:
                value(part, local) if isinstance(part, VarRef) else None
        elif isinstance(v, Arith):
            value(v.left, local)
            value(v.right, local)
        elif isinstance(v, Cvar | Randvar):
            attrs(v.attrs, local)
            for row in v.table if isinstance(v, Randvar) and v.table else ():
                for cell in row:
                    value(cell, local)

    def attrs(items: tuple[Attr, ...], local: set[str]) -> None:
        for a in items:
            value(a.value, local)

    def flowops(items: tuple[FlowopDef, ...], local: set[str]) -> None:
        for f in items:
            attrs(f.attrs, local)
            for loc in f.locals:
                value(loc.value, local)

    for st in statements:
        if isinstance(st, SetVar):
            value(st.value, set())
        elif isinstance(st, DefineFiles | Eventgen):
            attrs(st.attrs, set())
        elif isinstance(st, ProcessDef):
            attrs(st.attrs, set())
            for t in st.threads:
                attrs(t.attrs, set())
                flowops(t.flowops, set())
        elif isinstance(st, CompositeDef):
            local = passed | {p.name for p in st.params}
            for p in st.params:
                value(p.value, set())
            value(st.iters, set())
            flowops(st.flowops, local)
        elif isinstance(st, Run):
            value(st.runtime, set())
            for v in st.extra:
                value(v, set())
        elif isinstance(st, Echo):
            value(st.text, set())
        elif isinstance(st, System):
            pass  # a name the file never sets is the shell's ($HOME, $PWD)
        elif isinstance(st, Sleep):
            value(st.seconds, set())
        elif isinstance(st, Stats):
            value(st.path, set())
    return found


def _all_flowops(st: Statement) -> list[FlowopDef]:
    if isinstance(st, ProcessDef):
        return [f for t in st.threads for f in t.flowops]
    if isinstance(st, CompositeDef):
        return list(st.flowops)
    return []


def _show(v: Resolved, quote: bool = True) -> str:
    if isinstance(v, Dist):
        text = v.text
    elif isinstance(v, bool):
        text = "true" if v else "false"
    elif isinstance(v, float):
        text = f"{v:g}"
    else:
        text = str(v)
    return f"`{text}`" if quote else text
