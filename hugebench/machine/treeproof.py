"""The allocator's proof for every process of a multi-process server, forked children included.

The probe library proves, from inside, which malloc a process resolved: but only in a process that ran its
constructor, i.e. one that exec'd. A server that forks its workers without exec (PostgreSQL's backends,
redis's snapshot child) leaves one probe record for many processes. The coverage sampler sees every process
of the tree and reads, once per process, the shared objects mapped in it; a forked child inherits its
parent's mappings, so the cell's allocator library mapped in a process is the proof that its malloc is
there. This module turns those readings into the row's columns (for a cell that preloads a library other
than libc: every process maps libc, so mapping proves nothing about glibc's malloc).
"""

from __future__ import annotations

import os


def tree_proof(mapped: dict, names: dict, library: str | None) -> dict:
    """``allocator_tree_processes`` (processes the sampler saw), ``allocator_tree_mapped`` (those with the
    cell's library mapped) and ``allocator_tree_unmapped`` (the others, ``pid name``); {} when there is no
    library to look for or no process was read."""
    if not library or os.path.basename(library).startswith("libc."):
        return {}
    want = os.path.realpath(library)
    read = {pid: libs for pid, libs in mapped.items() if libs is not None}
    if not read:
        return {}
    missing = sorted(pid for pid, libs in read.items() if want not in libs)
    return {
        "allocator_tree_processes": len(read),
        "allocator_tree_mapped": len(read) - len(missing),
        "allocator_tree_unmapped": "; ".join(f"{pid} {names.get(pid, '?')}" for pid in missing)
        or None,
    }
