"""The ``iowatt`` command: one click group, one module per verb, exit codes in one place."""

from __future__ import annotations

import signal
import sys
import traceback
from types import FrameType

import click

from iowatt import __version__
from iowatt.errors import EXIT_INTERNAL, EXIT_INTERRUPTED, IowattError


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="iowatt")
@click.option("--debug", is_flag=True, help="Show tracebacks of internal errors.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """Measure what storage really delivers: throughput, latency and energy, together."""
    ctx.obj = {"debug": debug}


def _register() -> None:
    from iowatt.cli import (
        age,
        bench,
        campaign,
        compare,
        energy,
        imports,
        power,
        report,
        runs,
        sweep,
    )

    cli.add_command(bench.bench)
    cli.add_command(power.power)
    cli.add_command(energy.energy)
    cli.add_command(runs.runs)
    cli.add_command(report.report)
    cli.add_command(sweep.sweep)
    cli.add_command(campaign.campaign_cmd)
    cli.add_command(compare.compare_cmd)
    cli.add_command(imports.import_cmd)
    cli.add_command(age.age)


def _sigterm_as_interrupt(signum: int, frame: FrameType | None) -> None:
    # SIGTERM stops a run the same way Ctrl-C does: measured data is written, marked incomplete.
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> None:
    _register()
    signal.signal(signal.SIGTERM, _sigterm_as_interrupt)
    debug = "--debug" in (argv if argv is not None else sys.argv[1:])
    try:
        cli.main(args=argv, prog_name="iowatt", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("error: interrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)
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
