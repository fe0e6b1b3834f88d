"""The ``iowatt`` command: one click group, one module per verb, exit codes in one place.

A verb's module is imported only when that verb runs (click's lazily loaded subcommands), so
``iowatt --version`` and a verb that needs no analysis stack start at once.
"""

from __future__ import annotations

import gc
import importlib
import importlib.abc
import os
import signal
import sys
import traceback
from types import FrameType
from typing import Any

import click

from iowatt.errors import EXIT_INTERNAL, EXIT_INTERRUPTED, IowattError

# verb → "module:command" under iowatt.cli
VERBS = {
    "bench": "bench:bench",
    "age": "age:age",
    "campaign": "campaign:campaign_cmd",
    "compare": "compare:compare_cmd",
    "emulate": "emulate:emulate",
    "energy": "energy:energy",
    "import": "imports:import_cmd",
    "live": "live:live",
    "power": "power:power",
    "replay": "replay:replay",
    "report": "report:report",
    "runs": "runs:runs",
    "sim": "sim:sim",
    "sweep": "sweep:sweep",
    "tasks": "tasks:tasks",
    "trace": "trace:trace",
    "tree": "tree:tree",
}


class LazyGroup(click.Group):
    """A group whose verbs (``verb → "module:command"`` under ``package``) are imported when
    first used."""

    def __init__(
        self,
        *args: Any,
        verbs: dict[str, str] | None = None,
        package: str = "iowatt.cli",
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.verbs = VERBS if verbs is None else verbs
        self.package = package

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(self.verbs)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.verbs:
            return None
        module, name = self.verbs[cmd_name].split(":")
        command = getattr(importlib.import_module(f"{self.package}.{module}"), name)
        assert isinstance(command, click.Command)
        return command


@click.group(
    cls=LazyGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(package_name="iowatt", prog_name="iowatt")
@click.option("--debug", is_flag=True, help="Show tracebacks of internal errors.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """Measure what storage really delivers: throughput, latency and energy, together."""
    ctx.obj = {"debug": debug}


def _sigterm_as_interrupt(signum: int, frame: FrameType | None) -> None:
    # SIGTERM stops a run the same way Ctrl-C does: measured data is written, marked incomplete.
    raise KeyboardInterrupt


class _NoPandas(importlib.abc.MetaPathFinder):
    """pyarrow imports pandas, when it is installed, the first time it builds an array, only to
    check for pandas types: ~0.5 s a command never uses (iowatt converts nothing to pandas)."""

    def find_spec(self, fullname: str, path: object, target: object = None) -> None:
        if fullname.partition(".")[0] == "pandas":
            raise ModuleNotFoundError("the iowatt command does not use pandas", name=fullname)


def entry() -> None:
    """The ``iowatt`` console script (a notebook importing iowatt keeps pandas)."""
    sys.meta_path.insert(0, _NoPandas())
    # numpy's OpenBLAS starts a spinning thread per core that iowatt never gives work (no
    # linear algebra) and that takes CPU from the engines' own threads.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    try:
        main()
    finally:
        # The exit then skips the garbage collector's passes over every object numpy, Arrow
        # and DuckDB made (~30 ms). Objects are still freed, and their destructors run, as
        # their modules are cleared; only garbage in reference cycles is left to the kernel.
        gc.freeze()


def main(argv: list[str] | None = None) -> None:
    signal.signal(signal.SIGTERM, _sigterm_as_interrupt)
    debug = "--debug" in (argv if argv is not None else sys.argv[1:])
    try:
        cli.main(args=argv, prog_name="iowatt", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("error: interrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)
    except click.UsageError as e:
        # click's own parse errors (a value it cannot convert, an unknown option) in iowatt's
        # two-line form, like every other error a user can cause.
        click.echo(f"error: {e.format_message()}", err=True)
        command = e.ctx.command_path if e.ctx else "iowatt"
        click.echo(f"hint: `{command} --help` lists the options and their values", err=True)
        sys.exit(e.exit_code)
    except click.ClickException as e:
        e.show()
        sys.exit(e.exit_code)
    except IowattError as e:
        click.echo(e.render(), err=True)
        sys.exit(e.exit_code)
    except KeyboardInterrupt:
        click.echo("error: interrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)
    except Exception as e:  # an internal failure, not the user's
        if debug:
            traceback.print_exc()
        else:
            click.echo(f"error: internal failure: {e!r}", err=True)
            click.echo("hint: rerun with --debug for the traceback, and report it", err=True)
        sys.exit(EXIT_INTERNAL)
