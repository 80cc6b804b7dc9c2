"""Memory conditioning before a run: drop clean caches and compact free memory (writes /proc/sys/vm).

A per-run kernel action like a knob write; ``SystemState.condition_memory`` is how a sweep calls it.
"""

from __future__ import annotations

import os
import time

from hugebench.errors import PrivilegeError
from hugebench.kernel.host import LOCAL, Host


def condition_memory(
    host: Host = LOCAL,
    compact: bool = True,
    drop_caches: bool = True,
    euid: int | None = None,
) -> dict:
    """Give the next run the same start: drop clean caches, then compact free memory into huge blocks.

    Root only. Returns {'dropped_caches': bool, 'compacted': bool, 'seconds': float}.
    """
    euid = os.geteuid() if euid is None else euid
    if euid != 0 and (compact or drop_caches):
        raise PrivilegeError(
            "memory conditioning writes /proc/sys/vm/{drop_caches,compact_memory} and needs root: "
            "run hugebench with sudo, or turn conditioning off"
        )
    io, proc = host.io, host.proc
    started = time.perf_counter()
    if drop_caches:
        os.sync()  # drop_caches drops clean pages only; sync first so dirty ones become clean
        io.write_text(proc / "sys/vm/drop_caches", "3\n")
    if compact:  # after dropping: freed page-cache pages make compaction more effective
        io.write_text(proc / "sys/vm/compact_memory", "1\n")
    return {
        "dropped_caches": drop_caches,
        "compacted": compact,
        "seconds": time.perf_counter() - started,
    }
