"""``iowatt bench FILE.f --check``: a workload file's model, listed (see iowatt.bench.check)."""

from __future__ import annotations

import json
from typing import Any

import click

from iowatt.bench import Options, plan
from iowatt.errors import ConfigError, IowattError
from iowatt.store.runs import results_dir
from iowatt.units import format_bytes


def check_workloads(workload: str | None, suite: str | None, opts: Options, as_json: bool) -> None:
    from iowatt.bench.check import check

    try:
        config = plan(workload, opts, suite=suite, results=results_dir(None), machine_limits=False)
        files = [wl for wl in config.workloads if wl.wml]
        if not files:
            raise ConfigError(
                f"--check reads FileBench workload files, and `{workload}` is not one",
                "give a .f file, or --suite filemacro",
            )
        found = [check(wl) for wl in files]
    except IowattError as e:
        if as_json:
            click.echo(
                json.dumps(
                    {"file": workload, "status": "refused", "error": e.message, "hint": e.hint},
                    indent=2,
                )
            )
        raise
    if as_json:
        click.echo(json.dumps(found if len(found) > 1 else found[0], indent=2))
        return
    for one in found:
        click.echo(_text(one))


def _text(c: dict[str, Any]) -> str:
    lines = [f"{c['file']}: models"]
    width = max(len(v["name"]) for v in c["variables"]) + 1
    lines.append("variables")
    for v in c["variables"]:
        lines.append(f"  ${v['name']:<{width}} {v['value']:<24} {v['from']}")
    if c["filesets"]:
        lines.append("filesets")
    for fs in c["filesets"]:
        leaf = f", {fs['leafdirs']:,} leaf directories" if fs["leafdirs"] else ""
        lines.append(
            f"  {fs['name']} (line {fs['line']}): {fs['entries']:,} files{leaf} of "
            f"{format_bytes(round(fs['mean_size']))} on average, {fs['prealloc_pct']} % laid "
            f"out before the run: {format_bytes(fs['bytes'])}"
        )
    lines.append("threads")
    for t in c["threads"]:
        lines.append(
            f"  {t['process']}/{t['name']} (line {t['line']}): {t['instances']:,} × "
            f"{len(t['flowops'])} flowops"
        )
    ramp = f" after a {c['ramp_s']:g} s warm-up" if c["ramp_s"] else ""
    lines.append(f"run: {c['runtime_s']:g} s{ramp}, set mode quit {c['quit']}")
    if c["commands"]:
        lines.append("commands")
    for st in c["commands"]:
        when = f"{st['phase']} +{st['at_s']:g} s" if st["phase"] == "running" else st["phase"]
        lines.append(f"  line {st['line']:<4} {when:<12} {st['kind']:<6} {st['text']}")
    if c["this_machine"]:
        lines.append(f"this machine would refuse to run it: {c['this_machine']}")
    if c["notices"]:
        lines.append("notices")
    lines.extend(f"  {n}" for n in c["notices"])
    return "\n".join(lines)
