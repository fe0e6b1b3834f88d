"""The errors a user can cause, and the exit codes iowatt uses.

Every user-caused error carries the offending value and a hint; the CLI renders it as
``error: …`` / ``hint: …`` on stderr and exits with :data:`EXIT_USAGE`; a sweep stopped for
safety exits with :data:`EXIT_STOPPED`. Anything else is an internal failure
(:data:`EXIT_INTERNAL`), shown with its traceback under ``--debug``.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_USAGE = 2
EXIT_STOPPED = 3
EXIT_INTERRUPTED = 130


class IowattError(Exception):
    """A problem with the user's input or environment, reported without a traceback."""

    exit_code = EXIT_USAGE
    # What went wrong, as a word the code can act on (set by the engines, e.g. "no_space").
    kind: str | None = None

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __reduce__(self) -> tuple[object, ...]:
        # Raised on a Dask worker, it travels back pickled: with its hint and kind.
        return (type(self), (self.message, self.hint), self.__dict__)

    def render(self) -> str:
        lines = [f"error: {self.message}"]
        if self.hint:
            lines.append(f"hint: {self.hint}")
        return "\n".join(lines)


def one_line(e: BaseException) -> str:
    """What went wrong in one line: an iowatt error's message, else the exception's type and
    text (for a failure that travels back from a Dask worker as text)."""
    return e.message if isinstance(e, IowattError) else f"{type(e).__name__}: {e}"


class ConfigError(IowattError):
    """A size, duration, name or option value that does not parse or is out of range."""


class TargetError(IowattError):
    """A target directory or device that cannot be used as asked."""


class UnsafeTargetError(TargetError):
    """A block device that holds data iowatt was not told it may destroy."""


class SourceUnavailableError(IowattError):
    """A power or sensor source that is absent, unreadable or unreachable (no powercap in a VM,
    energy_uj readable only by root, ipmitool missing, a BMC that does not answer)."""


class MeterFormatError(IowattError):
    """A meter log or channel map that does not have the shape its options promise."""


class ImportFormatError(IowattError):
    """A file given to ``iowatt import`` that is not the tool output it is taken for (or is
    truncated, or from a version whose layout iowatt does not read)."""


class RunNotFoundError(IowattError):
    """A run id or path that is not in the results directory."""


class StoreError(IowattError):
    """A results directory that cannot be written or read (missing, not a directory, read-only,
    full), or a run iowatt could not store there and saved elsewhere."""


class SafetyStop(IowattError):
    """A sweep's watchdog stopped it (a temperature limit, sensors gone silent), or its
    stimulus could not be set; what was measured has been written."""

    exit_code = EXIT_STOPPED


class RunInterrupted(IowattError):
    """The run was stopped by Ctrl-C or SIGTERM; what was measured has been written."""

    exit_code = EXIT_INTERRUPTED
