"""Huge-page coverage of a running program, sampled: its process tree's smaps_rollup every ``interval``.

Reading smaps_rollup walks the target's page tables under its mmap lock, so sampling costs the program
something (its page faults wait while a read is in progress). The sampler times every read and the row
reports it (``sampler.read_s``, ``sampler.samples``); the manual (docs/own-program.md) shows what it costs at 1 s and faster.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

from hugebench import kernel
from hugebench.measure.phases import time_weighted_coverage

MAX_SERIES = 500  # samples kept in a row's coverage series (evenly thinned): a plot, not an archive

FIELDS = ("Rss", "AnonHugePages", "FilePmdMapped", "ShmemPmdMapped", "Private_Hugetlb", "Shared_Hugetlb")


@dataclass
class CoverageSampler:
    """Samples the tree below ``pid`` (set once the program has one) on each ``sample()``."""

    proc_root: str = "/proc"
    pid: int | None = None
    samples: list[tuple[float, dict]] = field(default_factory=list)
    read_s: float = 0.0
    exes: set = field(default_factory=set)  # the executable of every process a sample saw (/proc/PID/exe)

    def sample(self) -> dict | None:
        """One reading of the whole tree (summed), kept with its time; None when nothing could be read."""
        if self.pid is None:
            return None
        started = time.perf_counter()
        total = dict.fromkeys(FIELDS, 0)
        found = False
        for pid in kernel.process_tree(self.pid, self.proc_root):
            try:
                smaps = kernel.read_smaps_rollup(pid, self.proc_root)
            except OSError:
                continue  # ended between the listing and the read, or a kernel thread
            found = True
            try:
                self.exes.add(os.readlink(f"{self.proc_root}/{pid}/exe"))
            except OSError:
                pass  # gone, or not ours to read
            for key in FIELDS:
                total[key] += smaps.get(key, 0)
        self.read_s += time.perf_counter() - started
        if not found:
            return None
        self.samples.append((time.monotonic(), total))
        return total

    def summary(self, prefix: str = "sampled.") -> dict:
        """Peak and time-weighted coverage over the samples (:func:`~hugebench.measure.phases.time_weighted_coverage`,
        each sample weighted by the time until the next)."""
        out = {"sampler.samples": len(self.samples), "sampler.read_s": self.read_s}
        if not self.samples:
            return out
        for key in FIELDS:
            out[f"{prefix}peak.{key}"] = max(s[key] for _, s in self.samples)
        out["hp_coverage_tw"] = time_weighted_coverage([t for t, _ in self.samples],
                                                       [s["Rss"] for _, s in self.samples],
                                                       [s["AnonHugePages"] for _, s in self.samples])
        start, step = self.samples[0][0], max(1, len(self.samples) // MAX_SERIES)  # coverage over the run
        kept = self.samples[::step]
        out["series_t_s"] = [round(t - start, 3) for t, _ in kept]
        out["series_coverage"] = [s["AnonHugePages"] / s["Rss"] if s["Rss"] else None for _, s in kept]
        out[f"{prefix}peak.coverage"] = max((s["AnonHugePages"] / s["Rss"] for _, s in self.samples if s["Rss"]),
                                            default=None)
        return out

    @property
    def last(self) -> dict | None:
        return self.samples[-1][1] if self.samples else None
