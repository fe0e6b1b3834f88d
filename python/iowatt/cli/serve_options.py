"""``--serve``, ``--serve-linger`` and ``--textfile``: the live metrics of the verbs that measure
over time (bench, sweep, campaign, replay, tasks run, power record).

The verb runs inside :func:`iowatt.live.endpoint.serving`, which gives the command a fresh board
and serves it; the verbs publish to :func:`iowatt.live.board.board` whether served or not.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


def served(f: F) -> F:
    @functools.wraps(f)
    def command(
        *args: Any, serve: str | None, serve_linger: str, textfile: Path | None, **kwargs: Any
    ) -> Any:
        from iowatt.live.endpoint import Serve, parse_address, serving
        from iowatt.units import parse_duration

        wanted = Serve(
            parse_address(serve) if serve is not None else None,
            parse_duration(serve_linger, "--serve-linger"),
            textfile,
        )
        # Said even with --quiet or --json (on stderr): the address a scraper needs.
        with serving(wanted, lambda line: click.echo(line, err=True)):
            return f(*args, **kwargs)

    for option in reversed(
        [
            click.option(
                "--serve",
                metavar="[ADDR:]PORT",
                help="Serve live metrics for Prometheus on http://ADDR:PORT/metrics "
                "(ADDR 127.0.0.1 unless given; 0 picks a free port).",
            ),
            click.option(
                "--serve-linger",
                default="0s",
                show_default=True,
                metavar="DURATION",
                help="Keep serving this long after the run ends (a last scrape), e.g. 15s.",
            ),
            click.option(
                "--textfile",
                type=click.Path(path_type=Path),
                metavar="DIR",
                help="Write the metrics to DIR/iowatt.prom each second, for node_exporter's "
                "textfile collector.",
            ),
        ]
    ):
        command = option(command)
    return command  # type: ignore[return-value]
