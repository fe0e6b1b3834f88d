"""The command itself: every verb describes itself, and a verb loads only what it uses."""

from __future__ import annotations

import subprocess
import sys

import pytest

from iowatt.cli import VERBS
from support.cli import assert_user_error, iowatt

HEAVY = (
    "scipy",
    "matplotlib",
    "pandas",
    "duckdb",
    "pyarrow",
    "numpy",
    "jinja2",
    "rich",
    "distributed",
)


def _loaded_by(*argv: str) -> set[str]:
    """The heavy libraries a fresh ``iowatt ARGV`` process has imported when it ends."""
    script = (
        "import sys\n"
        "from iowatt.cli import main\n"
        "try:\n"
        f"    main({list(argv)!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        f"print('\\n' + ' '.join(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout
    return set(out.splitlines()[-1].split()) if out.strip() else set()


@pytest.mark.parametrize("verb", sorted(VERBS))
def test_every_verb_describes_itself_in_its_help(capsys, verb):
    r = iowatt(capsys, verb, "--help")
    assert r.code == 0, r.err
    usage, blank, description = r.out.splitlines()[:3]
    assert usage.startswith(f"Usage: iowatt {verb}") and blank == ""
    assert len(description.strip()) > 20, r.out


def test_version_and_help_load_no_heavy_library():
    assert _loaded_by("--version") == set()
    # Listing the verbs loads their modules, which load scipy, matplotlib and pandas only when
    # they run.
    assert not _loaded_by("--help") & {"scipy", "matplotlib", "pandas", "distributed"}


@pytest.mark.slow
def test_a_bench_loads_no_analysis_stack(tmp_path):
    target = tmp_path / "t"
    target.mkdir()
    loaded = _loaded_by("bench", "randomread", "--runtime", "200ms", "--filesize", "4m",
                        "--target", str(target), "--results", str(tmp_path / "r"),
                        "--quiet", "--no-report")  # fmt: skip
    assert not loaded & {"scipy", "matplotlib"}, loaded


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (("bench", "--nthreads", "abc"), "'abc' is not a valid integer"),
        (("runs", "--nosuch"), "No such option '--nosuch'"),
        (("runs", "--status", "done"), "'done' is not one of"),
    ],
)
def test_a_value_click_cannot_parse_is_one_error_line_with_a_hint(capsys, argv, fragment):
    r = iowatt(capsys, *argv)
    assert_user_error(r, fragment)
    assert f"`iowatt {argv[0]} --help`" in r.err and "Usage:" not in r.err
