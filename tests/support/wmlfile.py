"""Small workload files written by tests: the process block every one of them needs."""

from __future__ import annotations


def one_thread(*flowops: str) -> str:
    """A process of one thread running ``flowops`` (each ``kind name=…,…``), in WML."""
    body = "".join(f"    flowop {f}\n" for f in flowops)
    return f"define process name=p\n{{\n  thread name=t\n  {{\n{body}  }}\n}}\n"
