"""Readers of /proc. Each takes ``proc_root`` (and a ``pid``, default "self") and returns plain values."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from hugebench.kernel.parse import (
    huge_blocks_by_zone,
    parse_buddyinfo,
    parse_cgroup_mounts,
    parse_kb_fields,
    parse_ppid,
    parse_start_ticks,
    parse_status_number,
    parse_vmstat,
    pcp_page_count,
    summarize_buddyinfo,
)
from hugebench.kernel.read import read_optional, read_text

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
    "thp_underused_split_page",  # THPs split by the underused shrinker (thp.shrink_underused)
    "compact_stall",
    "compact_fail",
    "compact_success",
)


def _pid_file(pid: int | str, name: str, proc_root: str | Path) -> Path:
    return Path(proc_root) / str(pid) / name


def read_smaps_rollup(pid: int | str = "self", proc_root: str | Path = "/proc") -> dict[str, int]:
    """The process's smaps_rollup totals in bytes (Rss, Pss, AnonHugePages, FilePmdMapped, Private_Hugetlb, ...)."""
    return parse_kb_fields(read_text(_pid_file(pid, "smaps_rollup", proc_root)))


def read_status(pid: int | str = "self", proc_root: str | Path = "/proc") -> dict[str, int]:
    """The kB fields of /proc/<pid>/status in bytes: VmHWM (peak RSS), VmRSS, VmPeak, RssAnon, ..."""
    return parse_kb_fields(read_text(_pid_file(pid, "status", proc_root)))


def process_thp_enabled(pid: int | str = "self", proc_root: str | Path = "/proc") -> bool | None:
    """False when THP is disabled for the process by prctl(PR_SET_THP_DISABLE), which its children inherit
    across fork and exec (status 'THP_enabled: 0'); None where the kernel does not say."""
    text = read_optional(_pid_file(pid, "status", proc_root))
    value = parse_status_number(text, "THP_enabled") if text else None
    return None if value is None else value != 0


def process_comm(pid: int | str = "self", proc_root: str | Path = "/proc") -> str | None:
    """The name the process was run by (/proc/PID/comm: the exec'd file's name, not a link's target), or None."""
    text = read_optional(_pid_file(pid, "comm", proc_root))
    return text or None


def read_maps(pid: int | str = "self", proc_root: str | Path = "/proc") -> str:
    """The text of /proc/<pid>/maps."""
    return read_text(_pid_file(pid, "maps", proc_root))


def process_start_ticks(pid: int, proc_root: str | Path = "/proc") -> int | None:
    """Start time of ``pid`` in clock ticks since boot; None if it is gone (tells a reused pid apart)."""
    text = read_optional(_pid_file(pid, "stat", proc_root))
    return parse_start_ticks(text) if text else None


def read_meminfo(proc_root: str | Path = "/proc") -> dict[str, int]:
    """/proc/meminfo's kB fields in bytes (MemTotal, MemAvailable, Hugepagesize, ...); {} if unreadable."""
    text = read_optional(Path(proc_root) / "meminfo")
    return parse_kb_fields(text) if text else {}


def mem_total(proc_root: str | Path = "/proc") -> int | None:
    return read_meminfo(proc_root).get("MemTotal")


def mem_available(proc_root: str | Path = "/proc") -> int | None:
    return read_meminfo(proc_root).get("MemAvailable")


def default_hugepage_kb(proc_root: str | Path = "/proc") -> int | None:
    """The default hugetlb page size (the one /proc/sys/vm/nr_hugepages sizes), in KiB."""
    size = read_meminfo(proc_root).get("Hugepagesize")
    return size // 1024 if size else None


def read_vmstat(proc_root: str | Path = "/proc") -> dict[str, int]:
    """/proc/vmstat as {name: value}."""
    return parse_vmstat(read_text(Path(proc_root) / "vmstat"))


def read_thp_vmstat(proc_root: str | Path = "/proc") -> dict[str, int]:
    """The thp_* counters of /proc/vmstat."""
    return {k: v for k, v in read_vmstat(proc_root).items() if k.startswith("thp_")}


def read_buddyinfo(proc_root: str | Path = "/proc") -> dict:
    """Free blocks per order per zone, and how much free memory could back a 2 MiB page right now
    (see ``parse.summarize_buddyinfo`` for the keys)."""
    zones = parse_buddyinfo(read_text(Path(proc_root) / "buddyinfo"))
    return summarize_buddyinfo(zones, os.sysconf("SC_PAGE_SIZE"))


def pcp_pages(proc_root: str | Path = "/proc") -> int | None:
    """Pages on the per-CPU free lists now (freed, but not yet back with the buddy allocator); None if unknown."""
    text = read_optional(Path(proc_root) / "zoneinfo")
    return pcp_page_count(text) if text else None


# Zones a huge-page fault is never served from: the kernel keeps DMA (16 MiB) for devices.
NO_HUGE_ZONES = ("DMA",)


def free_huge_blocks(proc_root: str | Path = "/proc") -> dict[str, int]:
    """Free 2 MiB blocks now, per zone a huge page can come from ('Normal', 'DMA32', ...)."""
    zones = huge_blocks_by_zone(parse_buddyinfo(read_text(Path(proc_root) / "buddyinfo")))
    return {
        zone.split("/", 1)[1] if zone.count("/") else zone: n
        for zone, n in zones.items()
        if zone.split("/")[-1] not in NO_HUGE_ZONES
    }


def read_paranoid(proc_root: str | Path = "/proc") -> int | None:
    """kernel.perf_event_paranoid, or None where perf events are not built in."""
    text = read_optional(Path(proc_root) / "sys/kernel/perf_event_paranoid")
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def cgroup_mounts(proc_root: str | Path = "/proc") -> dict:
    """Where the cgroup hierarchies are mounted, as this process sees them (see parse_cgroup_mounts)."""
    return parse_cgroup_mounts(read_optional(Path(proc_root) / "self" / "mountinfo") or "")


def process_environ(pid: int, proc_root: str | Path = "/proc") -> list[bytes] | None:
    """The environment ``pid`` started with (NAME=VALUE entries), or None when it is gone or not ours."""
    try:
        with open(_pid_file(pid, "environ", proc_root), "rb") as f:
            return f.read().split(b"\0")
    except OSError:
        return None


def process_tree(
    pid: int, proc_root: str | Path = "/proc", within: Iterable[int] | None = None
) -> list[int]:
    """``pid`` and its living descendants (parents before children); [] when ``pid`` is gone.

    ``within``: the only processes that can be descendants (a run's cgroup.procs: its tree is inside its
    cgroup), so that only their stat files are read, not every process's on the machine."""
    children: dict[int, list[int]] = {}
    if within is None:
        within = (int(e.name) for e in Path(proc_root).iterdir() if e.name.isdigit())
    for member in within:
        text = read_optional(_pid_file(member, "stat", proc_root))
        if text:
            children.setdefault(parse_ppid(text), []).append(member)
    if read_optional(_pid_file(pid, "stat", proc_root)) is None:
        return []
    tree, queue = [], [pid]
    while queue:
        current = queue.pop(0)
        tree.append(current)
        queue.extend(sorted(children.get(current, ())))
    return tree
