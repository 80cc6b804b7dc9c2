"""The processes this test process started through hugebench, and none of anyone else's.

Every process of a run inherits ``HUGEBENCH_RUN=<sweep pid>-<its start ticks>-<run>-<random>``
(:mod:`hugebench.system.containment`), kept in ``/proc/PID/environ`` even by a daemon that called ``setsid()``
and was reparented to PID 1. A sweep run in this process (CliRunner, run_sweep) has this process's pid and
start time there, so a leftover found this way is ours; another user's redis-server on the same machine is
not. (A sweep run as a subprocess: pass its pid.)
"""

from __future__ import annotations

import os
from pathlib import Path

from hugebench import kernel
from hugebench.system.containment import TOKEN


def run_processes(name: str, sweep_pid: int | None = None) -> list[str]:
    """'PID COMMAND' of each living process named ``name`` (its comm or argv[0]'s basename) that a run of the
    sweep in ``sweep_pid`` (default: this process) started."""
    pid = sweep_pid or os.getpid()
    prefix = f"{TOKEN}={pid}-{kernel.process_start_ticks(pid)}-".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        environ = kernel.process_environ(int(entry.name)) or []
        if not any(e.startswith(prefix) for e in environ):
            continue
        argv = kernel.read_optional(entry / "cmdline") or ""
        comm = (kernel.read_optional(entry / "comm") or "").strip()
        first = os.path.basename(argv.split("\0", 1)[0])
        if name in (comm, first) or argv.startswith(name + " "):
            found.append(f"{entry.name} {argv.replace(chr(0), ' ').strip()}")
    return found
