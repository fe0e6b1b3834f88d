"""The host table a fleet bench prints: each host's rate against the fleet's, its latency,
start skew and clock offset, and the fleet's first-done and last-done rates."""

from __future__ import annotations

from pathlib import Path

import click

from iowatt.cli.cells import cell, pct_cell
from iowatt.store.runs import read_summary
from iowatt.units import format_ns, format_offset


def show_hosts(run_dir: Path) -> None:
    from iowatt.compare.hosts import host_table

    summary = read_summary(run_dir)
    for wl, rows in host_table(run_dir).items():
        merged = summary["workloads"].get(wl) or {}
        f = merged.get("fleet") or {}
        click.echo(f"{wl}: {len(rows)} hosts")
        click.echo(
            f"  {'host':<14} {'ops/s':>10} {'MiB/s':>9} {'p99':>9} {'vs fleet':>8} "
            f"{'95% CI':>17} {'skew':>9} {'clock offset':>19}  status"
        )
        for r in rows:
            ci = (
                f"{r['ci_low']:+6.1f}% … {r['ci_high']:+6.1f}%"
                if r["ci_low"] is not None and r["ci_low"] == r["ci_low"]
                else "–"
            )
            status = r["status"] if r["status"] == "complete" else f"{r['status']}: {r['reason']}"
            click.echo(
                f"  {r['host']:<14} {cell(r['ops_s'], '10.0f')} {cell(r['mib_s'], '9.1f')} "
                f"{_ns(r['p99_ns']):>9}  {pct_cell(r['pct'])} {ci:>17} "
                f"{_ns(r['start_skew_ns']):>9} {format_offset(r['offset_ns'], r['delay_ns']):>19}  "
                f"{status}{'  ← ' + r['verdict'] if r['verdict'] else ''}"
            )
        if f:
            click.echo(
                f"  fleet: {cell(merged.get('ops_s'), '.0f')} ops/s, "
                f"{cell(merged.get('mib_s'), '.1f')} MiB/s until the last host was done "
                f"({f['last_done_s']:.2f} s); {f['first_done_ops_s']:.0f} ops/s until the first "
                f"({f['first_done_s']:.2f} s); start skew {format_ns(f['start_skew_ns'])}"
            )


def _ns(ns: int | None) -> str:
    return format_ns(ns) if ns is not None else "–"
