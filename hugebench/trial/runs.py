"""What ``hugebench try`` reads from its rows besides the metric: the CPU-time column of ``--metric cpu``,
the blocks of one phase (selection or confirmation), as-is's memory, and the keep order it suggests.

What belongs here: small pure functions over run rows (dicts) that the schedule and the verdict share.
What does not: decisions (:mod:`.schedule`), intervals (:mod:`.sequential`).
"""

from __future__ import annotations

import math
import os

import numpy as np

from hugebench import stats

CPU_COLUMN = (
    "tree_cpu_s"  # --metric cpu: user + system CPU of the program's process tree (its rusage)
)
HUGE_FIRST_BYTES = (
    32 << 20
)  # as-is's memory beyond which huge-page settings are tried first (likely_first)


def with_cpu(rows: list) -> list:
    """The rows with :data:`CPU_COLUMN` (``utime_s + stime_s``: the program's rusage, which counts every
    descendant it waited for) where both are numbers."""
    out = []
    for row in rows:
        u, s = row.get("utime_s"), row.get("stime_s")
        ok = all(isinstance(x, (int, float)) and math.isfinite(x) for x in (u, s))
        out.append({**row, CPU_COLUMN: u + s} if ok else row)
    return out


def cpu_too_small(cpu_s: list) -> str | None:
    """The caveat of a --metric cpu verdict whose as-is used less than one clock tick of CPU a run
    (median of ``cpu_s``): the program mostly waits, and what CPU time it has is mostly its start (exec, the
    loader, the allocator's setup), not the work the verdict is asked about."""
    values = [v for v in cpu_s if isinstance(v, (int, float)) and math.isfinite(v)]
    if not values:
        return None
    median, tick = float(np.median(values)), 1.0 / os.sysconf("SC_CLK_TCK")
    if median >= tick:
        return None
    return (
        f"cpu: as-is used {median * 1000:.1f} ms of CPU a run (median), less than one clock tick "
        f"({tick * 1000:.0f} ms): the program mostly waits and its CPU time is mostly its start, too "
        "small to judge its work by; judge it by wall time (leave out --metric cpu)"
    )


def window(rows: list, first: int = 0, end: int | None = None) -> list:
    """The rows of blocks ``first <= repetition < end``: the selection's, or the confirmation's fresh pairs."""
    out = []
    for row in rows:
        rep = row.get("repetition")
        if isinstance(rep, (int, float)) and rep >= first and (end is None or rep < end):
            out.append(row)
    return out


def likely_first(order: list[str], huge: set, base_bytes: float | None, leading: int = 1) -> list:
    """The keep order with the configurations likely to win first: when as-is's memory (its process tree's
    peak RSS) is beyond :data:`HUGE_FIRST_BYTES` (over five times the reach of a 1536-entry second-level TLB
    of 4 KiB pages, 6 MiB), those asking for huge pages (``huge``) go before those that do not, each kind in
    the matrix's order (one change from as-is first, per-process before machine-wide). The ``leading`` cells
    (every group's as-is) stay first; a configuration's memory states stay together."""
    if not base_bytes or base_bytes < HUGE_FIRST_BYTES:
        return list(order)
    rest = order[leading:]
    return order[:leading] + [c for c in rest if c in huge] + [c for c in rest if c not in huge]


def memory_of(rows: list, base: str) -> float | None:
    """As-is's memory from its first runs: the process tree's peak RSS (or the largest process's)."""
    for column in ("tree_peak_rss_bytes", "peak_rss_bytes"):
        values = stats.finite(
            [r.get(column) for r in rows if r.get("cell_id") == base and r.get("status") == "ok"]
        )
        if values.size:
            return float(np.median(values))
    return None
