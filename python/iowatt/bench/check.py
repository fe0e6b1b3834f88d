"""``iowatt bench FILE.f --check``: what a workload file would do, without doing any of it.

The file is read, evaluated and built into the engine's model, which the engine checks as it
would before a run; nothing is created, laid out or executed. The answer lists every variable
with its value and where that value came from, every fileset with its size, the threads, the
run's length, the file's commands in order and every notice (what iowatt ignores or maps).
"""

from __future__ import annotations

from typing import Any

from iowatt.bench import limits
from iowatt.bench.config import WorkloadConfig
from iowatt.bench.filemacro import model_for_check
from iowatt.errors import ConfigError
from iowatt.wml.dists import mean_of


def check(wl: WorkloadConfig) -> dict[str, Any]:
    """A JSON-able account of one planned workload file (raises what a run would refuse for the
    file's sake; what this machine cannot hold is said in ``this_machine``, as the file may be
    meant for a bigger one)."""
    from iowatt._engine import WorkloadRun

    program, model = model_for_check(wl)
    WorkloadRun.model(model).check()
    needed = program.fileset_bytes()
    try:
        limits.check_workload(wl)
        machine = None
    except ConfigError as e:
        machine = f"{e.message} (hint: {e.hint})"
    return {
        "file": program.source,
        "status": "models",
        "variables": [
            {"name": k, "value": v, "from": program.origins.get(k, "")}
            for k, v in program.variables.items()
        ],
        "filesets": [
            {
                "name": fs["name"],
                "line": program.fileset_lines.get(fs["name"]),
                "path": fs["path"],
                "entries": fs["entries"],
                "leafdirs": fs["leafdirs"],
                "mean_size": mean_of(fs["size"]),
                "prealloc_pct": fs["prealloc"],
                "bytes": needed[fs["name"]],
            }
            for fs in program.filesets
        ],
        "threads": [
            {
                "name": t["name"],
                "process": t["process"],
                "line": line,
                "instances": t["instances"],
                "flowops": [f["name"] for f in t["flowops"]],
            }
            for t, line in zip(program.threads, program.thread_lines, strict=True)
        ],
        "runtime_s": wl.runtime_s,
        "ramp_s": wl.ramp_s,
        "quit": program.quit,
        "commands": [
            {"line": st.line, "phase": st.phase, "kind": st.kind, "text": st.text, "at_s": st.at_s}
            for st in program.steps
        ],
        "messages": program.messages,
        "this_machine": machine,
        "notices": program.warnings,
    }
