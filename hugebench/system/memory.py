"""Memory conditioning before a run, and the counters recorded around it (buddyinfo, thp_* vmstat, mTHP stats).

Each reader takes its root as a parameter and returns plain dicts, ready to go into a result row.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

from hugebench.errors import PrivilegeError
from hugebench.system import knobs
from hugebench.system.knobs import THP_DIR, SysfsIO

PMD_BYTES = 2 * 1024 * 1024


def condition_memory(
    proc_root: str | Path = "/proc",
    compact: bool = True,
    drop_caches: bool = True,
    euid: int | None = None,
    io: SysfsIO | None = None,
) -> dict:
    """Give the next run the same start: drop clean caches, then compact free memory into huge blocks.

    Root only. Returns {'dropped_caches': bool, 'compacted': bool, 'seconds': float}.
    """
    euid = os.geteuid() if euid is None else euid
    proc_root = Path(proc_root)
    if euid != 0 and (compact or drop_caches):
        raise PrivilegeError(
            "memory conditioning writes /proc/sys/vm/{drop_caches,compact_memory} and needs root: "
            "run hugebench with sudo, or turn conditioning off"
        )
    io = io or knobs.default_io
    started = time.perf_counter()
    if drop_caches:
        os.sync()  # drop_caches drops clean pages only; sync first so dirty ones become clean
        io.write_text(proc_root / "sys/vm/drop_caches", "3\n")
    if compact:  # after dropping: freed page-cache pages make compaction more effective
        io.write_text(proc_root / "sys/vm/compact_memory", "1\n")
    return {"dropped_caches": drop_caches, "compacted": compact, "seconds": time.perf_counter() - started}


def _pmd_order() -> int:
    """Buddy order of one 2 MiB block (9 with 4 KiB pages)."""
    return (PMD_BYTES // os.sysconf("SC_PAGE_SIZE")).bit_length() - 1


def read_buddyinfo(proc_root: str | Path = "/proc") -> dict:
    """Free blocks per order per zone, and how much free memory could back a 2 MiB page right now.

    Returns {'zones': {'0/Normal': [count per order]}, 'free_kib': int, 'free_2mib_blocks': int,
    'free_2mib_fraction': float (share of free memory sitting in blocks of order >= 9)}.
    """
    page_kib = os.sysconf("SC_PAGE_SIZE") // 1024
    pmd_order = _pmd_order()
    zones: dict[str, list[int]] = {}
    for line in Path(proc_root, "buddyinfo").read_text().splitlines():
        match = re.match(r"Node\s+(\d+),\s+zone\s+(\S+)\s+(.*)", line)
        if match:
            zones[f"{match.group(1)}/{match.group(2)}"] = [int(c) for c in match.group(3).split()]
    free_kib = huge_kib = blocks = 0
    for counts in zones.values():
        for order, count in enumerate(counts):
            kib = count * page_kib << order
            free_kib += kib
            if order >= pmd_order:
                huge_kib += kib
                blocks += count << (order - pmd_order)
    fraction = huge_kib / free_kib if free_kib else 0.0
    return {"zones": zones, "free_kib": free_kib, "free_2mib_blocks": blocks, "free_2mib_fraction": fraction}


def read_thp_vmstat(proc_root: str | Path = "/proc") -> dict[str, int]:
    """The thp_* counters of /proc/vmstat."""
    counters = {}
    for line in Path(proc_root, "vmstat").read_text().splitlines():
        name, _, value = line.partition(" ")
        if name.startswith("thp_"):
            counters[name] = int(value)
    return counters


def read_mthp_stats(sys_root: str | Path = "/sys") -> dict[str, int]:
    """Per-size mTHP counters, flattened: {'mthp.2048kB.anon_fault_alloc': n, ...}."""
    counters = {}
    stats_dirs = Path(sys_root, THP_DIR).glob("hugepages-*kB/stats")
    for stats_dir in sorted(stats_dirs, key=lambda d: int(re.sub(r"\D", "", d.parent.name))):
        size = stats_dir.parent.name.removeprefix("hugepages-")
        for counter in sorted(stats_dir.iterdir()):
            try:
                counters[f"mthp.{size}.{counter.name}"] = int(counter.read_text())
            except (OSError, ValueError):
                continue  # a counter we cannot read is left out rather than faked
    return counters


def diff_counters(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """after - before for every counter present in both (e.g. the deltas over one run)."""
    return {name: after[name] - before[name] for name in after if name in before}
