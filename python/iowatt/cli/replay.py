"""``iowatt replay``: replay a web trace open-loop against a server and store the run."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import click

from iowatt.cli.progress import Bar, Bars
from iowatt.cli.run_options import power_and_output
from iowatt.cli.serve_options import served
from iowatt.store.runs import read_summary, results_dir
from iowatt.units import format_duration, format_ns, format_rate, parse_labels

HELP = """Replay a web trace against a server, open loop, and store the run.

TRACE is an access log (plain or gzip, --format as `iowatt trace` reads) or a directory written
by `iowatt trace split`. Every request goes out in order at (its log time − the first's) /
--speedup, on an absolute schedule, whatever the server does, each on its own connection
(--keep-alive reuses one per client); latency counts from when a request was due, so a server
stall shows. --warmup and --cooldown (log time) are replayed but left out of the headline.
"""


@click.command(help=HELP)
@click.argument("trace", type=click.Path(path_type=Path))
@click.option("--target", required=True, help="The server: http[s]://HOST[:PORT][/PREFIX].")
@click.option(
    "--speedup",
    type=float,
    default=1.0,
    show_default=True,
    help="Replay this many times faster than the log (the study used 8).",
)
@click.option("--max-conns", type=int, help="Most connections open at once; more wait in order.")
@click.option("--keep-alive", is_flag=True, help="Reuse a connection per client address.")
@click.option(
    "--timeout",
    default="30s",
    show_default=True,
    help="A request's limit, from its send to its last byte.",
)
@click.option("--warmup", help="Log time at the start left out of the headline, e.g. 6h.")
@click.option("--cooldown", help="Log time at the end left out of the headline, e.g. 2h.")
@click.option("--duration", help="Replay only this much of the log from its start, e.g. 1h.")
@click.option("--host-header", help="Host header of every request [the log's, else the target's].")
@click.option(
    "--ca-file",
    type=click.Path(path_type=Path),
    help="https: also trust the CA certificates in this PEM file.",
)
@click.option("--insecure", is_flag=True, help="https: accept any server certificate.")
@click.option(
    "--format",
    "fmt",
    default="combined",
    show_default=True,
    help="A log's format: common, combined, vhost_combined or a string.",
)
@click.option(
    "--spread",
    default="start",
    show_default=True,
    help="A log's requests within their second: start or even.",
)
@click.option(
    "--threads", type=int, default=1, show_default=True, help="Threads of the replaying engine."
)
@click.option("--label", "labels", multiple=True, metavar="KEY=VALUE", help="Label the run.")
@click.option("--results", type=click.Path(path_type=Path), help="Results directory.")
@power_and_output
@served
def replay(
    trace: Path,
    labels: tuple[str, ...],
    results: Path | None,
    no_report: bool,
    quiet: bool,
    as_json: bool,
    **opts: Any,
) -> None:
    from iowatt.replay import plan, run

    config = plan(
        trace,
        results=results_dir(results),
        labels=parse_labels(labels),
        report=not no_report,
        **opts,
    )
    offsets = config.trace.requests["offset_ns"].to_numpy()
    with Bars(quiet=quiet or as_json) as bars:
        live = _Live(offsets, bars.bar("replay", len(offsets)))
        run_dir = run(config, live, note=bars.note)
    if as_json:
        click.echo(json.dumps(read_summary(run_dir), indent=2))
        return
    if not quiet:
        r = read_summary(run_dir)["replay"]
        rate = "–" if r["success_rate"] is None else f"{r['success_rate']:.1%}"
        log = "–" if r["log_success_rate"] is None else f"{r['log_success_rate']:.1%}"
        click.echo(
            f"{r['measured']:,} requests measured: success {rate} (the log's {log}), "
            f"ttfb p50 {format_ns(r['ttfb_ns']['p50'])} p99 {format_ns(r['ttfb_ns']['p99'])}, "
            f"completion p99 {format_ns(r['completion_ns']['p99'])}, "
            f"lateness p99 {format_ns(r['lateness_ns']['p99'])}"
        )
        click.echo(f"run {run_dir.name} written to {run_dir}")
        if (run_dir / "report.html").exists():
            click.echo(f"report: {run_dir / 'report.html'}")


class _Live:
    """The replay's row: requests issued, with the trace time reached, rate, open connections
    and lateness."""

    def __init__(self, offsets_ns: Any, bar: Bar) -> None:
        self.offsets_ns = offsets_ns
        self.bar = bar
        self.last = (time.monotonic(), 0)

    def __call__(self, p: Any) -> None:
        if not p["issued"]:
            return  # still probing the target: a refusal is one error line, with no bar
        now = time.monotonic()
        t, sent = self.last
        if now - t < 0.5:
            return
        self.last = (now, p["completed"])
        rate = (p["completed"] - sent) / (now - t)
        trace_s = self.offsets_ns[p["issued"] - 1] / 1e9 if p["issued"] else 0.0
        live = (
            f"trace {format_duration(trace_s)}  {format_rate(rate)} req/s  {p['open']} open  "
            f"late {format_ns(max(p['lateness_ns'], 0))}  failed {p['failed']:,}"
        )
        self.bar.update(p["issued"], live=live)
