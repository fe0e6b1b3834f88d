"""The repository explains itself: the test command a newcomer reads in CONTRIBUTING.md is the
README's, and the pages that describe the code point at files that exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GUIDES = ("README.md", "CONTRIBUTING.md", "docs/architecture.md")


def install_and_test_command(page: str) -> str:
    """The shell block that follows 'Install and run every test' in ``page``."""
    text = (ROOT / page).read_text()
    at = text.index("Install and run every test")
    block = re.search(r"```sh\n(.*?)```", text[at:], re.S)
    assert block, f"{page} has no ```sh block after 'Install and run every test'"
    return block.group(1).strip()


def test_contributing_gives_the_readmes_test_command_which_ci_runs() -> None:
    command = install_and_test_command("README.md")
    assert install_and_test_command("CONTRIBUTING.md") == command
    assert command in (ROOT / ".ci/run").read_text().splitlines()


def test_the_readme_names_every_package_the_test_script_installs() -> None:
    script = (ROOT / ".ci/test").read_text()
    listed = re.search(r"^PACKAGES=\((.*?)\)", script, re.S | re.M)
    assert listed
    packages = set(listed.group(1).split())
    text = (ROOT / "README.md").read_text()
    paragraph = text[text.index("Install and run every test") :].split("```")[0]
    assert set(re.findall(r"`([a-z0-9-]+)`", paragraph)) - {"cargo", "pytest"} == packages


@pytest.mark.parametrize("page", GUIDES)
def test_guides_link_to_files_that_exist(page: str) -> None:
    text = (ROOT / page).read_text()
    links = re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", text)
    assert links
    missing = [link for link in links if not (ROOT / page).parent.joinpath(link).exists()]
    assert not missing, f"{page} links to {missing}"


def test_contributing_shows_how_to_add_a_verb_and_an_engine() -> None:
    text = (ROOT / "CONTRIBUTING.md").read_text()
    for heading in ("## Adding a verb", "## Adding an engine", "## One way for each thing"):
        assert heading in text
