"""What ``hugebench try`` reads from its rows besides the metric: the CPU-time column of ``--metric cpu``,
the blocks of one phase (selection or confirmation), as-is's memory, and the keep order it suggests.

What belongs here: small pure functions over run rows (dicts) that the schedule and the verdict share.
What does not: decisions (:mod:`.schedule`), intervals (:mod:`.sequential`).
"""

from __future__ import annotations

import math

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
