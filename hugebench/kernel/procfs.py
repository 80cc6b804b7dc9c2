"""Readers of /proc. Each takes ``host`` (and a ``pid``, default "self") and returns plain values."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from hugebench.kernel.host import LOCAL, Host
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


def _pid_file(pid: int | str, name: str, host: Host) -> Path:
    return host.proc / str(pid) / name


def read_smaps_rollup(pid: int | str = "self", host: Host = LOCAL) -> dict[str, int]:
    """The process's smaps_rollup totals in bytes (Rss, Pss, AnonHugePages, FilePmdMapped, Private_Hugetlb, ...)."""
    return parse_kb_fields(read_text(_pid_file(pid, "smaps_rollup", host)))


def read_status(pid: int | str = "self", host: Host = LOCAL) -> dict[str, int]:
    """The kB fields of /proc/<pid>/status in bytes: VmHWM (peak RSS), VmRSS, VmPeak, RssAnon, ..."""
    return parse_kb_fields(read_text(_pid_file(pid, "status", host)))


def process_thp_enabled(pid: int | str = "self", host: Host = LOCAL) -> bool | None:
    """False when THP is disabled for the process by prctl(PR_SET_THP_DISABLE), which its children inherit
    across fork and exec (status 'THP_enabled: 0'); None where the kernel does not say."""
    text = read_optional(_pid_file(pid, "status", host))
    value = parse_status_number(text, "THP_enabled") if text else None
    return None if value is None else value != 0


def process_comm(pid: int | str = "self", host: Host = LOCAL) -> str | None:
    """The name the process was run by (/proc/PID/comm: the exec'd file's name, not a link's target), or None."""
    text = read_optional(_pid_file(pid, "comm", host))
    return text or None


def read_maps(pid: int | str = "self", host: Host = LOCAL) -> str:
    """The text of /proc/<pid>/maps."""
    return read_text(_pid_file(pid, "maps", host))


def process_start_ticks(pid: int, host: Host = LOCAL) -> int | None:
    """Start time of ``pid`` in clock ticks since boot; None if it is gone (tells a reused pid apart)."""
    text = read_optional(_pid_file(pid, "stat", host))
    return parse_start_ticks(text) if text else None


def read_meminfo(host: Host = LOCAL) -> dict[str, int]:
    """/proc/meminfo's kB fields in bytes (MemTotal, MemAvailable, Hugepagesize, ...); {} if unreadable."""
    text = read_optional(host.proc / "meminfo")
    return parse_kb_fields(text) if text else {}


def mem_total(host: Host = LOCAL) -> int | None:
    return read_meminfo(host).get("MemTotal")


def mem_available(host: Host = LOCAL) -> int | None:
    return read_meminfo(host).get("MemAvailable")


def default_hugepage_kb(host: Host = LOCAL) -> int | None:
    """The default hugetlb page size (the one /proc/sys/vm/nr_hugepages sizes), in KiB."""
    size = read_meminfo(host).get("Hugepagesize")
    return size // 1024 if size else None


def read_vmstat(host: Host = LOCAL) -> dict[str, int]:
    """/proc/vmstat as {name: value}."""
    return parse_vmstat(read_text(host.proc / "vmstat"))


def read_thp_vmstat(host: Host = LOCAL) -> dict[str, int]:
    """The thp_* counters of /proc/vmstat."""
    return {k: v for k, v in read_vmstat(host).items() if k.startswith("thp_")}


def read_buddyinfo(host: Host = LOCAL) -> dict:
    """Free blocks per order per zone, and how much free memory could back a 2 MiB page right now
    (see ``parse.summarize_buddyinfo`` for the keys)."""
    zones = parse_buddyinfo(read_text(host.proc / "buddyinfo"))
    return summarize_buddyinfo(zones, os.sysconf("SC_PAGE_SIZE"))


def pcp_pages(host: Host = LOCAL) -> int | None:
    """Pages on the per-CPU free lists now (freed, but not yet back with the buddy allocator); None if unknown."""
    text = read_optional(host.proc / "zoneinfo")
    return pcp_page_count(text) if text else None


# Zones a huge-page fault is never served from: the kernel keeps DMA (16 MiB) for devices.
NO_HUGE_ZONES = ("DMA",)


def free_huge_blocks(host: Host = LOCAL) -> dict[str, int]:
    """Free 2 MiB blocks now, per zone a huge page can come from ('Normal', 'DMA32', ...)."""
    zones = huge_blocks_by_zone(parse_buddyinfo(read_text(host.proc / "buddyinfo")))
    return {
        zone.split("/", 1)[1] if zone.count("/") else zone: n
        for zone, n in zones.items()
        if zone.split("/")[-1] not in NO_HUGE_ZONES
    }


def read_paranoid(host: Host = LOCAL) -> int | None:
    """kernel.perf_event_paranoid, or None where perf events are not built in."""
    text = read_optional(host.proc / "sys/kernel/perf_event_paranoid")
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def cgroup_mounts(host: Host = LOCAL) -> dict:
    """Where the cgroup hierarchies are mounted, as this process sees them (see parse_cgroup_mounts)."""
    return parse_cgroup_mounts(read_optional(host.proc / "self" / "mountinfo") or "")


def process_environ(pid: int, host: Host = LOCAL) -> list[bytes] | None:
    """The environment ``pid`` started with (NAME=VALUE entries), or None when it is gone or not ours."""
    try:
        with open(_pid_file(pid, "environ", host), "rb") as f:
            return f.read().split(b"\0")
    except OSError:
        return None


def process_tree(pid: int, host: Host = LOCAL, within: Iterable[int] | None = None) -> list[int]:
    """``pid`` and its living descendants (parents before children); [] when ``pid`` is gone.

    ``within``: the only processes that can be descendants (a run's cgroup.procs: its tree is inside its
    cgroup), so that only their stat files are read, not every process's on the machine."""
    children: dict[int, list[int]] = {}
    if within is None:
        within = (int(e.name) for e in host.proc.iterdir() if e.name.isdigit())
    for member in within:
        text = read_optional(_pid_file(member, "stat", host))
        if text:
            children.setdefault(parse_ppid(text), []).append(member)
    if read_optional(_pid_file(pid, "stat", host)) is None:
        return []
    tree, queue = [], [pid]
    while queue:
        current = queue.pop(0)
        tree.append(current)
        queue.extend(sorted(children.get(current, ())))
    return tree
