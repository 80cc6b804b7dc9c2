"""What a phase cost the process and the kernel: rusage, huge-page coverage, and the worker's phase hook.

The kernel is read through ``hugebench.kernel`` (roots are parameters, so tests use fake trees);
``PhaseRecorder`` is the worker's per-phase hook. Sizes are bytes.
"""

from __future__ import annotations

import math
import resource
import time

from hugebench.kernel import (
    THP_VMSTAT,
    active_mthp_sizes,
    read_mthp_stats,
    read_smaps_rollup,
    read_vmstat,
)
from hugebench.kernel.host import LOCAL, Host

KIB = 1024
MTHP_PHASE_COUNTERS = ("anon_fault_alloc", "anon_fault_fallback")
RUSAGE_KEYS = ("minflt", "majflt", "utime_s", "stime_s", "nvcsw", "nivcsw", "maxrss_bytes")


# The share of a huge-page setting's memory that must be on huge pages for the setting to count as having
# held: below it every report flags the cell (THP always) and ``try`` names the shortfall (any huge-page
# configuration). One level for every reader; documented in docs/trusting-numbers.md.
COVERAGE_EXPECTED = 0.9


def coverage(smaps: dict[str, int]) -> float:
    """Share of resident memory mapped by PMD-sized THPs: AnonHugePages / Rss (NaN when Rss is 0 or absent).

    mTHP (folios smaller than a PMD) are not in AnonHugePages; see ``kernel.read_mthp_stats`` for those.
    """
    rss = smaps.get("Rss", 0)
    if not rss:
        return math.nan
    return smaps.get("AnonHugePages", 0) / rss


def time_weighted(times: list, values: list) -> float | None:
    """Mean of ``values`` weighted by the time from each sample to the next (the last gets none); samples
    whose value is None are left out; one sample, or samples all at one time, count equally."""
    pairs = [(t, v) for t, v in zip(times, values) if v is not None]
    if not pairs:
        return None
    weights = [b[0] - a[0] for a, b in zip(pairs, pairs[1:])]
    if len(pairs) == 1 or sum(weights) <= 0:
        return sum(v for _, v in pairs) / len(pairs)
    return sum(w * v for w, (_, v) in zip(weights, pairs)) / sum(weights)


def time_weighted_coverage(times: list, rss: list, huge: list) -> float | None:
    """THE time-weighted huge-page coverage (``hp_coverage_tw`` of every workload that samples):
    sum(w_i * AnonHugePages_i) / sum(w_i * Rss_i), w_i the time from sample i to the next (the last gets
    none) — the share of the resident byte-seconds that were on huge pages, so a moment with little memory
    weighs little. Samples missing either value are left out; None when there is no memory at all."""
    kept = [(t, r, h) for t, r, h in zip(times, rss, huge) if r is not None and h is not None]
    mean_rss = time_weighted([t for t, _, _ in kept], [r for _, r, _ in kept])
    mean_huge = time_weighted([t for t, _, _ in kept], [h for _, _, h in kept])
    return mean_huge / mean_rss if mean_rss and mean_huge is not None else None


def rusage_snapshot(who: int = resource.RUSAGE_SELF) -> dict[str, float]:
    """Resource usage of this process (all threads) with explicit units; ru_maxrss is KiB on Linux."""
    ru = resource.getrusage(who)
    return {
        "minflt": ru.ru_minflt,
        "majflt": ru.ru_majflt,
        "utime_s": ru.ru_utime,
        "stime_s": ru.ru_stime,
        "nvcsw": ru.ru_nvcsw,
        "nivcsw": ru.ru_nivcsw,
        "maxrss_bytes": ru.ru_maxrss * KIB,
    }


def rusage_delta(a: dict[str, float], b: dict[str, float]) -> dict[str, float]:
    """b - a for the counters; maxrss_bytes is a high-water mark, so the later value is kept, not a difference."""
    out = {k: b[k] - a[k] for k in RUSAGE_KEYS if k != "maxrss_bytes" and k in a and k in b}
    if "maxrss_bytes" in b:
        out["maxrss_bytes"] = b["maxrss_bytes"]
    return out


class PhaseRecorder:
    """A workload ``hook(phase, edge)`` that records what each phase cost the process and the kernel.

    On ``"begin"`` it snapshots rusage and the THP vmstat counters; on ``"end"`` it snapshots them again
    and reads smaps_rollup. ``metrics()`` returns flat columns such as ``phase.lookup.minflt``,
    ``phase.lookup.vmstat.thp_fault_alloc`` (system-wide), ``phase.lookup.smaps.AnonHugePages``, and for
    the timed phase (else the last phase that ended) ``smaps.Rss``, ``smaps.AnonHugePages``, ``hp_coverage``.
    A phase that runs more than once accumulates its deltas; its smaps are those of its last end.

    Edge ``"sample"`` (a workload's time series, e.g. fleet's) reads smaps_rollup only, timed: the
    ``series_rss_bytes`` / ``series_anon_huge_bytes`` lists, ``sampler.samples``, ``sampler.read_s`` (sum)
    and ``sampler.read_max_s`` say what the series cost.
    """

    def __init__(
        self,
        timed_phase: str | None = None,
        *,
        pid: int | str = "self",
        host: Host = LOCAL,
        vmstat_keys: tuple[str, ...] = THP_VMSTAT,
    ) -> None:
        self.timed_phase = timed_phase
        self._pid, self._host = pid, host
        self._vmstat_keys = vmstat_keys
        # Only sizes that can be allocated; fixed at construction so every phase has the same columns.
        self._mthp_sizes = active_mthp_sizes(host)
        self._open: dict[str, tuple] = {}
        self._metrics: dict[str, float | str] = {}  # a phase's numbers, or why it has none
        self._row_smaps: dict[str, int] | None = None
        self.phases: list[str] = []
        self._series: list[tuple[int, int]] = []
        self._read_s: list[float] = []

    def __call__(self, phase: str, edge: str) -> None:
        if edge == "begin":
            self._begin(phase)
        elif edge == "end":
            self._end(phase)
        elif edge == "sample":
            self._sample()
        else:
            raise ValueError(f"phase hook edge must be 'begin', 'end' or 'sample', got {edge!r}")

    def _sample(self) -> None:
        started = time.perf_counter()
        smaps = read_smaps_rollup(self._pid, self._host)
        self._read_s.append(time.perf_counter() - started)
        self._series.append((smaps.get("Rss", 0), smaps.get("AnonHugePages", 0)))

    def _kernel_counters(self) -> dict[str, int]:
        vm = read_vmstat(self._host)
        counters = {f"vmstat.{k}": vm[k] for k in self._vmstat_keys if k in vm}
        counters.update(read_mthp_stats(self._host, self._mthp_sizes, MTHP_PHASE_COUNTERS))
        return counters

    def _begin(self, phase: str) -> None:
        if phase not in self.phases:
            self.phases.append(phase)
        kernel = self._kernel_counters()
        # Read last so the snapshot sits as close as possible to the workload's timer start.
        self._open[phase] = (rusage_snapshot(), kernel, time.perf_counter_ns())

    def _end(self, phase: str) -> None:
        # Read first, for the same reason: closest to the timer stop.
        wall_end, ru_end = time.perf_counter_ns(), rusage_snapshot()
        kernel_end = self._kernel_counters()
        prefix = f"phase.{phase}."
        if phase not in self._open:
            self._metrics[prefix + "hook_error"] = "end without begin"
            return
        ru_begin, kernel_begin, wall_begin = self._open.pop(phase)
        deltas = rusage_delta(ru_begin, ru_end)
        deltas.update({k: kernel_end[k] - v for k, v in kernel_begin.items() if k in kernel_end})
        deltas["wall_s"] = (wall_end - wall_begin) / 1e9
        for key, value in deltas.items():
            accumulate = key != "maxrss_bytes"
            old = self._metrics.get(prefix + key, 0) if accumulate else 0
            assert not isinstance(old, str)  # text is only a phase's hook_error, never a delta
            self._metrics[prefix + key] = old + value
        smaps = read_smaps_rollup(self._pid, self._host)
        for key in ("Rss", "AnonHugePages", "Anonymous", "Private_Hugetlb", "Shared_Hugetlb"):
            self._metrics[f"{prefix}smaps.{key}"] = smaps.get(key, 0)
        self._metrics[prefix + "hp_coverage"] = coverage(smaps)
        if self.timed_phase is None or phase == self.timed_phase:
            self._row_smaps = smaps

    def metrics(self) -> dict[str, float | str | list[int]]:
        """Flat per-phase columns plus the row-level smaps of the timed phase's end."""
        out: dict[str, float | str | list[int]] = dict(self._metrics)
        for phase in self._open:
            out[f"phase.{phase}.hook_error"] = "begin without end"
        if self._row_smaps is not None:
            for key in (
                "Rss",
                "AnonHugePages",
                "ShmemPmdMapped",
                "FilePmdMapped",
                "Private_Hugetlb",
                "Shared_Hugetlb",
                "Anonymous",
            ):
                out[f"smaps.{key}"] = self._row_smaps.get(key, 0)
            out["hp_coverage"] = coverage(self._row_smaps)
        if self._series:
            out["series_rss_bytes"] = [rss for rss, _ in self._series]
            out["series_anon_huge_bytes"] = [huge for _, huge in self._series]
            out["sampler.samples"] = len(self._series)
            out["sampler.read_s"] = sum(self._read_s)
            out["sampler.read_max_s"] = max(self._read_s)
        return out
