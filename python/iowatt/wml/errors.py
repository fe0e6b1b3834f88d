"""The one error a workload file can cause, with its place in the file."""

from __future__ import annotations

from iowatt.errors import ConfigError

UNSUPPORTED_HINT = "iowatt does not run this FileBench construct"
# For a problem without a more precise hint (most syntax errors).
SYNTAX_HINT = "docs/wml.md lists the statements, attributes and flowops iowatt runs"


class WmlError(ConfigError):
    """A `.f` file (or a ``--set`` value) iowatt cannot read or run.

    The message starts with ``FILE:LINE: `` when the problem has a place in the file.
    """

    def __init__(
        self,
        message: str,
        hint: str | None = None,
        *,
        line: int | None = None,
        what: str | None = None,
    ) -> None:
        super().__init__(message, hint or SYNTAX_HINT)
        self.line = line  # in the file, when the problem has a place there
        self.what = what or message  # the message without its place


def at(source: str, line: int | None, what: str, hint: str | None = None) -> WmlError:
    """A WmlError for ``what`` at ``source:line``."""
    where = f"{source}:{line}" if line else source
    return WmlError(f"{where}: {what}", hint, line=line, what=what)
