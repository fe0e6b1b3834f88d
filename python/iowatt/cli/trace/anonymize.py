"""``iowatt trace anonymize``: rewrite an access log so it can be shared (docs/trace.md)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from iowatt.keys import load_keys
from iowatt.trace import anonymize as anon

# Lines left out that the summary names (all are counted).
SHOWN_BAD_LINES = 5


@click.command("anonymize")
@click.argument("log", metavar="LOG", type=click.Path(path_type=Path))
@click.option(
    "--key-file",
    required=True,
    type=click.Path(path_type=Path),
    help="The secret (≥ 32 bytes) the names and addresses are keyed with; the same "
    "file as for `iowatt tree snapshot`, so paths still name its files.",
)
@click.option(
    "-o",
    "--output",
    metavar="OUT",
    help="Where to write (`.gz`: compressed; `-`: stdout)  "
    "[default: LOG's name + .anon, in the current directory]",
)
@click.option(
    "--format",
    "log_format",
    metavar="FMT",
    default="combined",
    show_default=True,
    help="common, combined, vhost_combined or an Apache LogFormat string.",
)
@click.option(
    "--keep-extensions",
    is_flag=True,
    help="Keep short file extensions after hashed names (`….pdf`), as tree snapshot "
    "does with the same flag.",
)
@click.option(
    "--hash-agents", is_flag=True, help="Replace user agents by keyed hashes too (kept by default)."
)
@click.option("--quiet", "-q", is_flag=True, help="No summary.")
def anonymize(
    log: Path,
    key_file: Path,
    output: str | None,
    log_format: str,
    keep_extensions: bool,
    hash_agents: bool,
    quiet: bool,
) -> None:
    """Rewrite the access log LOG (plain or gzip) so it can be shared: client addresses
    prefix-preserved with Crypto-PAn, request paths hashed like tree snapshot's names, users,
    queries and referers replaced by keyed hashes; every other byte kept. Lines that do not
    parse are left out and counted.

    \b
      iowatt trace anonymize access.log --key-file tree.key -o shared.log.gz
    """
    keys = load_keys(key_file)
    anon.check_log(log)
    if output == "-":
        result = anon.anonymize(
            log, keys, sys.stdout.buffer, log_format, keep_extensions, hash_agents
        )
        sys.stdout.buffer.flush()
    else:
        out = Path(output) if output else anon.default_output(log)
        result = anon.anonymize(log, keys, out, log_format, keep_extensions, hash_agents)
    if quiet:
        return
    where = f"`{result.output}`" if result.output else "stdout"
    click.echo(
        f"anonymised {result.written:,} lines of `{log}` into {where} (key id {result.key_id}): "
        f"{result.addresses:,} client addresses, {result.host_names:,} host names",
        err=True,
    )
    if result.bad:
        shown = ", ".join(f"{n} ({reason})" for n, reason in result.bad_lines[:SHOWN_BAD_LINES])
        more = ", …" if result.bad > SHOWN_BAD_LINES else ""
        lines = "line" if result.bad == 1 else "lines"
        click.echo(
            f"warning: {result.bad:,} {lines} did not parse as `{log_format}` and were left out "
            f"(they could hold anything): {lines} {shown}{more}",
            err=True,
        )
