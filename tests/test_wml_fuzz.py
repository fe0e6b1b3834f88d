"""Hostile workload files: FileBench's own ``.f`` files and iowatt's, mutated (tokens and lines
deleted, duplicated and swapped, random bytes inserted, numbers made huge, negative or
garbage). Reading one either gives a program the engine can be handed, or a WmlError placed
at FILE:LINE — never another exception; run end to end, one either runs or is refused with
one error line, leaving nothing behind.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from iowatt.wml import WmlError, parse_file
from support.cli import iowatt, runs_in
from test_validation import assert_nothing_left, assert_one_error, scratch_dir

HERE = Path(__file__).parent
WORKLOADS = HERE.parent / "python" / "iowatt" / "workloads"
# (Parsed only: tests/wml/constructs has `system` commands, which a mutation could turn into
# anything, so none of those files is among the runnable ones.)
CORPUS = sorted([*WORKLOADS.glob("*.f"), *HERE.glob("wml/**/*.f")])
# Small enough to run in a fraction of a second (every_flowop: 64 files and 1 MiB of data;
# varmail: 1,000 files of 16 KiB).
RUNNABLE = [HERE / "wml" / "every_flowop.f", WORKLOADS / "varmail.f"]
TARGET = Path("/iowatt-fuzz")
_TOKEN = re.compile(r"\$?[\w./:;-]+|\"[^\"\n]*\"|\S")
_NUMBER = re.compile(r"(?<![\w$])\d+[kmgtKMGT]?(?![\w.])")

# Values a number in a file is replaced with: beyond what iowatt takes, below zero, or not a
# number at all (no mid-size values: a valid one could make an end-to-end run take minutes).
HOSTILE_NUMBERS = st.one_of(
    st.integers(min_value=2**62 + 1, max_value=10**40).map(str),
    st.sampled_from(["99999999999999999999g", "16777216t", "1" * 120, "4611686018427387905"]),
    st.integers(max_value=-1, min_value=-(10**20)).map(str),
    st.sampled_from(["0", "nan", "inf", "1e999", "0x10", "4q", "-0", "1.5.5", "$", "${", '"']),
)


@st.composite
def mutated(draw: st.DrawFn, corpus: list[Path], most: int = 4, raw: bool = True) -> bytes:
    """One file of ``corpus`` with up to ``most`` mutations applied (and now and then, with
    ``raw``, random bytes)."""
    text = draw(st.sampled_from(corpus)).read_text()
    for _ in range(draw(st.integers(min_value=1, max_value=most))):
        text = draw(_mutation(text))
    data = text.encode()
    if raw and draw(st.integers(min_value=0, max_value=9)) == 0:
        at = draw(st.integers(min_value=0, max_value=len(data)))
        data = data[:at] + draw(st.binary(min_size=1, max_size=8)) + data[at:]
    return data


def _mutation(text: str) -> st.SearchStrategy[str]:
    lines = text.splitlines(keepends=True)
    tokens = list(_TOKEN.finditer(text))
    numbers = list(_NUMBER.finditer(text))
    choices: list[st.SearchStrategy[str]] = []
    if lines:
        i = st.integers(min_value=0, max_value=len(lines) - 1)
        choices += [
            i.map(lambda n: "".join(lines[:n] + lines[n + 1 :])),  # delete a line
            i.map(lambda n: "".join(lines[: n + 1] + lines[n:])),  # duplicate it
            st.tuples(i, i).map(lambda ab: "".join(_swap(lines, *ab))),  # swap two
        ]
    if tokens:
        t = st.integers(min_value=0, max_value=len(tokens) - 1)
        choices += [
            t.map(lambda n: _splice(text, tokens[n], "")),
            t.map(lambda n: _splice(text, tokens[n], tokens[n].group() * 2)),
            st.tuples(t, t).map(lambda ab: _swap_tokens(text, tokens, *ab)),
            st.tuples(t, st.sampled_from(["{", "}", ",", "=", "$x", '"', "/*", "#"])).map(
                lambda nt: _splice(text, tokens[nt[0]], tokens[nt[0]].group() + nt[1])
            ),
        ]
    if numbers:
        k = st.integers(min_value=0, max_value=len(numbers) - 1)
        replaced = st.tuples(k, HOSTILE_NUMBERS)
        choices.append(replaced.map(lambda kv: _splice(text, numbers[kv[0]], kv[1])))
    return st.one_of(choices) if choices else st.just(text)


def _swap(items: list[str], a: int, b: int) -> list[str]:
    out = list(items)
    out[a], out[b] = out[b], out[a]
    return out


def _splice(text: str, m: re.Match[str], new: str) -> str:
    return text[: m.start()] + new + text[m.end() :]


def _swap_tokens(text: str, tokens: list[re.Match[str]], a: int, b: int) -> str:
    first, second = sorted((tokens[a], tokens[b]), key=lambda m: m.start())
    if first.end() > second.start():
        return text
    return (
        text[: first.start()]
        + second.group()
        + text[first.end() : second.start()]
        + first.group()
        + text[second.end() :]
    )


def _read(data: bytes) -> str:
    """Parses and builds the program of ``data`` as a file, as planning a bench does; says
    whether it was read or refused."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fuzzed.f"
        path.write_bytes(data)
        try:
            program = parse_file(path, dir=TARGET)
            program.placed(TARGET / "work").model(
                seed=1, runtime_ns=10**8, ramp_ns=0, slow_ns=[10**8]
            )
        except WmlError as e:
            assert re.match(rf"{re.escape(str(path))}:\d+: \S", e.message), e.message
            assert e.hint, e.message
            return "refused"
    return "read"


@pytest.mark.fuzz
@settings(suppress_health_check=[HealthCheck.too_slow])
@given(data=mutated(CORPUS))
def test_a_mutated_workload_file_parses_or_is_refused_at_its_line(data: bytes) -> None:
    event(_read(data))


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.name)
def test_every_corpus_file_parses_or_is_refused_at_its_line(path: Path) -> None:
    _read(path.read_bytes())


@pytest.mark.fuzz
@settings(
    # A fifth of the profile's examples: each runs a bench (12 by default).
    max_examples=max(1, settings.default.max_examples // 5),
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=mutated(RUNNABLE, most=1, raw=False))
def test_a_mutated_workload_file_runs_or_is_refused_with_one_line(
    data: bytes, capsys: pytest.CaptureFixture[str]
) -> None:
    with scratch_dir() as target, tempfile.TemporaryDirectory() as tmp:
        source, results = Path(tmp) / "fuzzed.f", Path(tmp) / "results"
        source.write_bytes(data)
        r = iowatt(capsys, "bench", source, "--runtime", "0.1s", "--target", target,
                   "--results", results, "--quiet", "--no-report")  # fmt: skip
        event("ran" if r.code == 0 else "refused")
        if r.code == 0:
            assert len(runs_in(results)) == 1
        else:
            assert_one_error(r)
        # A file that is refused leaves nothing; one that fails while running is recorded.
        assert_nothing_left(target, results, committed_ok=True)
