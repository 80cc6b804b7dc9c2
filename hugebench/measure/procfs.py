"""What the kernel says about a process's memory: smaps_rollup, /proc/vmstat THP counters, rusage, status.

Every reader takes ``proc_root`` so tests can point it at a fake tree under ``tmp_path``. Sizes are
returned in bytes (the kernel prints kB, which is KiB). ``PhaseRecorder`` is the worker's per-phase hook.
"""

from __future__ import annotations

import math
import resource
import time
from pathlib import Path

KIB = 1024

# Monotonic system-wide counters worth a delta around a phase. Gauges (nr_*) are left out: a delta of a
# gauge says little. compact_* shows the direct compaction a defrag=always fault can stall on.
THP_VMSTAT = (
    "thp_fault_alloc",
    "thp_fault_fallback",
    "thp_fault_fallback_charge",
    "thp_collapse_alloc",
    "thp_collapse_alloc_failed",
    "thp_split_page",
    "thp_split_page_failed",
    "thp_deferred_split_page",
    "thp_split_pmd",
    "thp_zero_page_alloc",
    "compact_stall",
    "compact_fail",
    "compact_success",
)

RUSAGE_KEYS = ("minflt", "majflt", "utime_s", "stime_s", "nvcsw", "nivcsw", "maxrss_bytes")


def _proc_file(pid: int | str, name: str, proc_root: str | Path) -> Path:
    return Path(proc_root) / str(pid) / name


def _parse_kb_lines(text: str) -> dict[str, int]:
    """Parse 'Key:   123 kB' lines into bytes; lines without a kB unit are skipped."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        key, sep, rest = line.partition(":")
        parts = rest.split()
        if sep and len(parts) == 2 and parts[1] == "kB" and parts[0].isdigit():
            out[key.strip()] = int(parts[0]) * KIB
    return out


def read_smaps_rollup(pid: int | str = "self", proc_root: str | Path = "/proc") -> dict[str, int]:
    """Return the process's smaps_rollup totals in bytes (Rss, Pss, AnonHugePages, Private_Hugetlb, ...)."""
    return _parse_kb_lines(_proc_file(pid, "smaps_rollup", proc_root).read_text())


def coverage(smaps: dict[str, int]) -> float:
    """Share of resident memory mapped by PMD-sized THPs: AnonHugePages / Rss (NaN when Rss is 0 or absent).

    mTHP (folios smaller than a PMD) are not in AnonHugePages; see ``read_mthp_stats`` for those.
    """
    rss = smaps.get("Rss", 0)
    if not rss:
        return math.nan
    return smaps.get("AnonHugePages", 0) / rss


def read_status(pid: int | str = "self", proc_root: str | Path = "/proc") -> dict[str, int]:
    """Return the kB fields of /proc/<pid>/status in bytes: VmHWM (peak RSS), VmRSS, VmPeak, RssAnon, ..."""
    return _parse_kb_lines(_proc_file(pid, "status", proc_root).read_text())


def read_vmstat(proc_root: str | Path = "/proc") -> dict[str, int]:
    """Return /proc/vmstat as {name: value}."""
    out: dict[str, int] = {}
    for line in (Path(proc_root) / "vmstat").read_text().splitlines():
        name, _, value = line.partition(" ")
        if value.strip().lstrip("-").isdigit():
            out[name] = int(value)
    return out


def vmstat_delta(before: dict[str, int], after: dict[str, int], keys=THP_VMSTAT) -> dict[str, float]:
    """after - before for each key; NaN where this kernel does not have the counter."""
    return {k: (after[k] - before[k]) if k in before and k in after else math.nan for k in keys}


def _bracketed(text: str) -> str | None:
    """The selected word of a sysfs choice file: 'always [madvise] never' -> 'madvise'."""
    for word in text.split():
        if word.startswith("[") and word.endswith("]"):
            return word[1:-1]
    return None


def active_mthp_sizes(sysfs_root: str | Path = "/sys") -> tuple[str, ...]:
    """mTHP sizes ('64kB', '2048kB', ...) whose anon setting is not 'never' (kernel 6.8+; else empty)."""
    base = Path(sysfs_root) / "kernel/mm/transparent_hugepage"
    sizes = []
    for size_dir in sorted(base.glob("hugepages-*kB"), key=lambda d: int(d.name[10:-2])):
        try:
            mode = _bracketed((size_dir / "enabled").read_text())
        except OSError:
            continue
        if mode not in (None, "never"):
            sizes.append(size_dir.name.removeprefix("hugepages-"))
    return tuple(sizes)


def read_mthp_stats(sysfs_root: str | Path = "/sys", sizes: tuple[str, ...] | None = None,
                    names=("anon_fault_alloc", "anon_fault_fallback")) -> dict[str, int]:
    """System-wide per-size mTHP counters, e.g. {'mthp.64kB.anon_fault_alloc': 12}; sizes=None: all sizes."""
    base = Path(sysfs_root) / "kernel/mm/transparent_hugepage"
    if sizes is None:
        sizes = tuple(d.name.removeprefix("hugepages-") for d in sorted(base.glob("hugepages-*kB")))
    out: dict[str, int] = {}
    for size in sizes:
        for name in names:
            try:
                out[f"mthp.{size}.{name}"] = int((base / f"hugepages-{size}" / "stats" / name).read_text())
            except (OSError, ValueError):
                continue
    return out


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
    """

    def __init__(self, timed_phase: str | None = None, *, pid: int | str = "self",
                 proc_root: str | Path = "/proc", sysfs_root: str | Path = "/sys",
                 vmstat_keys: tuple[str, ...] = THP_VMSTAT) -> None:
        self.timed_phase = timed_phase
        self._pid, self._proc, self._sys = pid, proc_root, sysfs_root
        self._vmstat_keys = vmstat_keys
        # Only sizes that can be allocated; fixed at construction so every phase has the same columns.
        self._mthp_sizes = active_mthp_sizes(sysfs_root)
        self._open: dict[str, tuple] = {}
        self._metrics: dict[str, float] = {}
        self._row_smaps: dict[str, int] | None = None
        self.phases: list[str] = []

    def __call__(self, phase: str, edge: str) -> None:
        if edge == "begin":
            self._begin(phase)
        elif edge == "end":
            self._end(phase)
        else:
            raise ValueError(f"phase hook edge must be 'begin' or 'end', got {edge!r}")

    def _kernel_counters(self) -> dict[str, int]:
        vm = read_vmstat(self._proc)
        counters = {f"vmstat.{k}": vm[k] for k in self._vmstat_keys if k in vm}
        counters.update(read_mthp_stats(self._sys, self._mthp_sizes))
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
            self._metrics[prefix + key] = old + value
        smaps = read_smaps_rollup(self._pid, self._proc)
        for key in ("Rss", "AnonHugePages", "Anonymous", "Private_Hugetlb", "Shared_Hugetlb"):
            self._metrics[f"{prefix}smaps.{key}"] = smaps.get(key, 0)
        self._metrics[prefix + "hp_coverage"] = coverage(smaps)
        if self.timed_phase is None or phase == self.timed_phase:
            self._row_smaps = smaps

    def metrics(self) -> dict[str, float]:
        """Flat per-phase columns plus the row-level smaps of the timed phase's end."""
        out = dict(self._metrics)
        for phase in self._open:
            out[f"phase.{phase}.hook_error"] = "begin without end"
        if self._row_smaps is not None:
            for key in ("Rss", "AnonHugePages", "ShmemPmdMapped", "FilePmdMapped",
                        "Private_Hugetlb", "Shared_Hugetlb", "Anonymous"):
                out[f"smaps.{key}"] = self._row_smaps.get(key, 0)
            out["hp_coverage"] = coverage(self._row_smaps)
        return out
