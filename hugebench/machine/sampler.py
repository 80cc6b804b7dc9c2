"""Huge-page coverage of a running program, sampled: its process tree's smaps_rollup every ``interval``, and
each process's ``THP_enabled`` (status: 0 once the process or its parent disabled THP by prctl).

Reading smaps_rollup walks the target's page tables under its mmap lock, so sampling costs the program
something (its page faults wait while a read is in progress). The sampler times every read and the row
reports it (``sampler.read_s``, ``sampler.samples``); the manual (docs/own-program.md) shows what it costs at 1 s and faster.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hugebench import kernel
from hugebench.kernel.host import LOCAL, Host
from hugebench.machine import memtrend
from hugebench.machine.kevents import EventLog
from hugebench.machine.psi import PressureLog
from hugebench.measure import folio_coverage
from hugebench.measure.phases import time_weighted_coverage

FOLIO_BUDGET = (
    0.05  # at most this share of the elapsed time goes to per-size readings while it runs
)
MAX_SERIES = 500  # samples kept in a row's coverage series (evenly thinned): a plot, not an archive

FIELDS = (
    "Rss",
    "AnonHugePages",
    "FilePmdMapped",
    "ShmemPmdMapped",
    "Private_Hugetlb",
    "Shared_Hugetlb",
)


@dataclass
class CoverageSampler:
    """Samples the tree below ``pid`` (set once the program has one) on each ``sample()``."""

    host: Host = LOCAL
    pid: int | None = None
    samples: list[tuple[float, dict]] = field(default_factory=list)
    read_s: float = 0.0
    exes: set = field(
        default_factory=set
    )  # the executable of every process a sample saw (/proc/PID/exe)
    rss_peaks: dict = field(
        default_factory=dict
    )  # pid -> the largest Rss a sample saw of it (bytes)
    # pid -> False once a sample saw 'THP_enabled: 0' in its status (THP disabled by prctl), else True
    thp_enabled: dict = field(default_factory=dict)
    pid_names: dict = field(default_factory=dict)  # pid -> /proc/PID/comm, the name it was run by
    # pid -> the shared objects mapped in it, read once at its first sighting (every process of a
    # multi-process server, forked children that never exec included: hugebench.machine.treeproof)
    mapped: dict = field(default_factory=dict)
    events: EventLog = field(default_factory=EventLog)  # the kernel's events per interval (kevents)
    pressure: PressureLog | None = (
        None  # the run's PSI at each sample (psi); made at the first sample
    )
    # per-size coverage (measure.folio_coverage): readings while it runs, within FOLIO_BUDGET of the time
    folios: bool = True
    folio_samples: list = field(default_factory=list)
    end_folios: folio_coverage.FolioReading | None = None  # the reading at the timed window's end
    _folio_start: float | None = None
    # the run's processes (its cgroup.procs), or None: the tree is then found among every process
    members: Callable[[], list[int] | None] | None = None
    cgroup: Path | None = (
        None  # the run's cgroup v2 directory, for its PSI (None: the sampler's own)
    )

    def sample(self, end: bool = False) -> dict | None:
        """One reading of the whole tree (summed), kept with its time; None when nothing could be read.
        ``end``: the timed window's end, when a per-size reading is always taken (else within budget)."""
        if self.pid is None:
            return None
        started = time.perf_counter()
        total = dict.fromkeys(FIELDS, 0)
        found = False
        tree = kernel.process_tree(self.pid, self.host, self.members() if self.members else None)
        for pid in tree:
            try:
                smaps = kernel.read_smaps_rollup(pid, self.host)
            except OSError:
                continue  # ended between the listing and the read, or a kernel thread
            found = True
            try:
                self.exes.add(os.readlink(f"{self.host.proc}/{pid}/exe"))
            except OSError:
                pass  # gone, or not ours to read
            name = kernel.process_comm(pid, self.host)
            if name:
                self.pid_names[pid] = name
            if pid not in self.mapped:
                self.mapped[pid] = _mapped(pid, self.host)
            enabled = kernel.process_thp_enabled(pid, self.host)
            if enabled is not None:
                self.thp_enabled[pid] = self.thp_enabled.get(pid, True) and enabled
            for key in FIELDS:
                total[key] += smaps.get(key, 0)
            self.rss_peaks[pid] = max(self.rss_peaks.get(pid, 0), smaps.get("Rss", 0))
        self.read_s += time.perf_counter() - started
        if not found:
            return None
        now = time.monotonic()
        self.samples.append((now, total))
        try:
            self.events.tick(now, kernel.read_vmstat(self.host), tree)
        except OSError:
            pass  # no /proc/vmstat: no events; the coverage is still read
        if self.pressure is None:
            self.pressure = PressureLog(self.host, self.cgroup)
        self.pressure.tick(now)
        self._read_folios(tree, end, now)
        return total

    def _read_folios(self, pids: list[int], end: bool, now: float) -> None:
        if not self.folios:
            return
        if self._folio_start is None:
            self._folio_start = now
        spent = sum(r.read_s for _, r in self.folio_samples)
        if not end and self.folio_samples and spent > FOLIO_BUDGET * (now - self._folio_start):
            return
        reading = folio_coverage.read_tree(pids, self.host)
        if end:
            self.end_folios = reading
        elif reading.processes:
            self.folio_samples.append((now, reading))

    def folio_columns(self, until: float | None = None) -> dict:
        """Per-size coverage and the gap at the window's end (else at the last sample before the program
        ended: ``folio.when`` says which), and per size time-weighted over the samples (the last one holding
        until ``until``, the monotonic time the program ended, when given)."""
        out = folio_coverage.time_weighted_columns(self.folio_samples, until)
        if not self.folios:
            return {"folio.reason": "per-size coverage not sampled"}
        reading, when = self.end_folios, "window end"
        if reading is None and self.folio_samples:
            reading, when = self.folio_samples[-1][1], "last sample"
        why = "no per-size reading was taken while the program ran (it ended first)"
        out.update(folio_coverage.columns(reading, kernel.mthp_sizes_kb(), why))
        if reading is not None:
            out["folio.when"] = when
        return out

    def summary(self, prefix: str = "sampled.") -> dict:
        """Peak and time-weighted coverage over the samples (:func:`~hugebench.measure.phases.time_weighted_coverage`,
        each sample weighted by the time until the next)."""
        out: dict[str, Any] = {"sampler.samples": len(self.samples), "sampler.read_s": self.read_s}
        if not self.samples:
            return out
        for key in FIELDS:
            out[f"{prefix}peak.{key}"] = max(s[key] for _, s in self.samples)
        out["hp_coverage_tw"] = time_weighted_coverage(
            [t for t, _ in self.samples],
            [s["Rss"] for _, s in self.samples],
            [s["AnonHugePages"] for _, s in self.samples],
        )
        start, step = (
            self.samples[0][0],
            max(1, len(self.samples) // MAX_SERIES),
        )  # coverage over the run
        kept = self.samples[::step]
        out["series_t_s"] = [round(t - start, 3) for t, _ in kept]
        out["series_coverage"] = [
            s["AnonHugePages"] / s["Rss"] if s["Rss"] else None for _, s in kept
        ]
        out.update(memtrend.series(self.samples, step))
        out.update(self.events.columns(start))
        if self.pressure is not None:
            out.update(self.pressure.columns(step))
        out.update(memtrend.trend(self.samples, "Rss"))
        out.update(memtrend.trend(self.samples, "AnonHugePages"))
        out[f"{prefix}peak.coverage"] = max(
            (s["AnonHugePages"] / s["Rss"] for _, s in self.samples if s["Rss"]), default=None
        )
        return out

    @property
    def last(self) -> dict | None:
        return self.samples[-1][1] if self.samples else None


TREE_RSS = "tree_peak_rss_bytes"


def _mapped(pid: int, host: Host) -> frozenset | None:
    from hugebench.machine.allocators import mapped_libraries

    try:
        return frozenset(mapped_libraries(kernel.read_maps(pid, host)))
    except OSError:
        return None


def tree_peak_rss(exits: dict, sampled: dict) -> dict:
    """The memory of the program's whole process tree: the sum over its processes of each one's peak RSS,
    ``VmHWM`` at its exit (the probe's ``exit-<pid>.json``) or, for a process that left no record (static,
    ``_exit``, a signal), the largest Rss a sample saw of it. Processes peak at different times, so this is an
    upper bound of the tree's simultaneous peak; ``peak_rss_bytes`` is the largest single process's."""
    peaks = {int(pid): int(rss) for pid, rss in sampled.items() if rss}
    for pid, record in exits.items():
        hwm = record.get("VmHWM")
        if isinstance(hwm, (int, float)) and hwm > 0:
            peaks[int(pid)] = max(peaks.get(int(pid), 0), int(hwm))
    if not peaks:
        return {
            TREE_RSS: None,
            f"{TREE_RSS}.reason": "no process of the program left an exit record or was sampled",
        }
    return {TREE_RSS: sum(peaks.values()), "tree_processes": len(peaks)}
