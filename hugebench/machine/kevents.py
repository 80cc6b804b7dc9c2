"""The kernel's events beside a server's latency: what the kernel did in each sampling interval of a run.

Read at every coverage sample (``sample_interval``): the deltas of the /proc/vmstat counters behind the
reasons people give for turning THP off (compaction stalls, khugepaged collapses, huge-page splits, faults
that fell back to small pages) and the forks of the measured tree (a process the sampler had not seen: a
redis snapshot's child, a database's new backend), each interval stamped with its end (seconds since the
first sample). /proc/vmstat counts the whole machine: a stall is the kernel's, not necessarily the
program's. (The kernel's tracepoints would give exact times; this reads counters, which every machine has.)

:func:`windows` then sets the driver's own per-interval latency beside them (pgbench ``--progress``:
``progress: 12.0 s, 4711.0 tps, lat 0.212 ms ...``): the median latency of the driver's intervals that
overlap an interval with an event, against those that do not.
"""

from __future__ import annotations

import re
import statistics

import numpy as np

EVENTS = {
    "compact_stall": "compaction stalls",
    "thp_collapse_alloc": "khugepaged collapses",
    "thp_split_page": "huge-page splits",
    "thp_fault_fallback": "THP faults that fell back",
}
MAX_LISTED = 60  # intervals with events named in the row's text column


class EventLog:
    """Per-interval deltas of :data:`EVENTS` and the tree's new processes."""

    def __init__(self) -> None:
        self.prev: dict | None = None
        self.seen: set = set()
        self.intervals: list[tuple[float, dict]] = []  # (end time, {event: count}) of each interval

    def tick(self, t: float, vmstat: dict, pids) -> None:
        forks = len(set(pids) - self.seen) if self.seen else 0
        self.seen |= set(pids)
        if self.prev is not None:
            deltas = {k: vmstat.get(k, 0) - self.prev.get(k, 0) for k in EVENTS}
            deltas["forks"] = forks
            self.intervals.append((t, {k: v for k, v in deltas.items() if v > 0}))
        self.prev = vmstat

    def columns(self, start: float) -> dict:
        """``events.intervals`` (count), ``events.intervals_with`` (those with any event), the events'
        totals over the intervals (``events.<name>``) and ``events.timeline`` (the intervals with events)."""
        out: dict = {"events.intervals": len(self.intervals)}
        with_events = [(t, e) for t, e in self.intervals if e]
        out["events.intervals_with"] = len(with_events)
        for key in (*EVENTS, "forks"):
            out[f"events.{key}"] = sum(e.get(key, 0) for _, e in self.intervals)
        listed = [
            f"{t - start:.1f}s " + ", ".join(f"{k}+{v}" for k, v in e.items())
            for t, e in with_events[:MAX_LISTED]
        ]
        out["events.timeline"] = "; ".join(listed) or None
        return out


_PGBENCH = re.compile(r"^progress: ([0-9.]+) s, [0-9.]+ tps, lat ([0-9.]+) ms", re.MULTILINE)


def progress_latency(output: str) -> list[tuple[float, float]]:
    """(seconds since the driver started, latency ms) of each interval the driver reported (pgbench -P)."""
    return [(float(t), float(lat)) for t, lat in _PGBENCH.findall(output)]


def windows(
    log: EventLog, driver_start: float, progress: list[tuple[float, float]], step: float
) -> dict:
    """The median driver latency of its intervals that overlap a kernel event vs those that do not."""
    if not progress or not log.intervals:
        return {}
    marked = [t for t, e in log.intervals if e]
    with_: list[float] = []
    without: list[float] = []
    for t_end, lat in progress:
        lo, hi = driver_start + t_end - step, driver_start + t_end
        hit = any(lo - step <= t <= hi + step for t in marked)  # an event in or next to the window
        (with_ if hit else without).append(lat)
    out: dict[str, float] = {
        "events.windows_with": len(with_),
        "events.windows_without": len(without),
    }
    if with_:
        out["events.latency_with_ms"] = float(np.median(with_))
    if without:
        out["events.latency_without_ms"] = float(np.median(without))
    return out


def driver_windows(log: EventLog, driver_started: float, output: str) -> dict:
    """The driver's per-interval latency (pgbench --progress) in the intervals with a kernel event vs
    those without; {} when the driver printed no such intervals."""
    progress = progress_latency(output)
    if len(progress) < 2:
        return {}
    step = statistics.median(b[0] - a[0] for a, b in zip(progress, progress[1:]))
    return windows(log, driver_started, progress, max(step, 0.1))
