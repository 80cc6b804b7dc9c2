"""The one read-only layer over the kernel: everything hugebench learns from /proc and /sys comes through here.

* ``parse``: pure functions from a file's text to values (no I/O; tested on strings).
* ``host``: the one value naming the machine (``Host``: the /proc and /sys roots and the knob writer;
  ``LOCAL`` is this machine), built once at the entry points and passed down.
* ``procfs``, ``sysfs``: readers that open files under a ``Host``'s roots (tests point them at fake trees
  under ``tmp_path``) and return plain values: bytes for sizes, ints for
  counters, ``None`` where the kernel does not have the file.
* ``cpu``: the CPU's identity from /proc/cpuinfo.

What belongs here: reading and parsing. What does not: writing (``hugebench.system`` writes knobs and
conditions memory, reading back through this layer), deciding what a reading means for a sweep
(``system``, ``measure``, ``setup``), and formatting for people (``doctor``, ``report``). Nothing outside
this package opens a file under /proc or /sys.
"""

from hugebench.kernel.cpu import CpuInfo, parse_cpuinfo, read_cpu_info
from hugebench.kernel.host import LOCAL, FileIO, Host, SysfsIO
from hugebench.kernel.parse import (
    Reading,
    counter_delta,
    huge_blocks_by_zone,
    parse_buddyinfo,
    parse_choice,
    parse_kb_fields,
    parse_pmu_format,
    parse_status_number,
    parse_vmstat,
    selected,
    summarize_buddyinfo,
)
from hugebench.kernel.procfs import (
    THP_VMSTAT,
    cgroup_mounts,
    default_hugepage_kb,
    free_huge_blocks,
    mem_available,
    mem_total,
    pcp_pages,
    process_comm,
    process_environ,
    process_start_ticks,
    process_thp_enabled,
    process_tree,
    read_buddyinfo,
    read_maps,
    read_meminfo,
    read_paranoid,
    read_smaps_rollup,
    read_status,
    read_thp_vmstat,
    read_vmstat,
)
from hugebench.kernel.read import read_optional, read_text, writable
from hugebench.kernel.sysfs import (
    HUGETLB_DIR,
    THP_DIR,
    active_mthp_sizes,
    cpu_caches,
    cpu_pmu_devices,
    hpage_pmd_size,
    mthp_modes,
    mthp_shmem_sizes_kb,
    mthp_sizes_kb,
    read_choice,
    read_hugetlb_pools,
    read_khugepaged_counters,
    read_mthp_stats,
    read_pmu_format,
    read_pmu_type,
    read_unusable_index,
    thp_modes,
)

__all__ = [
    "LOCAL",
    "CpuInfo",
    "FileIO",
    "Host",
    "SysfsIO",
    "HUGETLB_DIR",
    "Reading",
    "THP_DIR",
    "THP_VMSTAT",
    "active_mthp_sizes",
    "cgroup_mounts",
    "counter_delta",
    "cpu_caches",
    "cpu_pmu_devices",
    "default_hugepage_kb",
    "free_huge_blocks",
    "huge_blocks_by_zone",
    "hpage_pmd_size",
    "mem_available",
    "mem_total",
    "mthp_modes",
    "mthp_shmem_sizes_kb",
    "mthp_sizes_kb",
    "parse_buddyinfo",
    "parse_choice",
    "parse_cpuinfo",
    "parse_kb_fields",
    "parse_pmu_format",
    "parse_status_number",
    "parse_vmstat",
    "process_environ",
    "process_start_ticks",
    "process_comm",
    "process_thp_enabled",
    "process_tree",
    "pcp_pages",
    "read_buddyinfo",
    "read_choice",
    "read_cpu_info",
    "read_hugetlb_pools",
    "read_khugepaged_counters",
    "read_maps",
    "read_meminfo",
    "read_mthp_stats",
    "read_optional",
    "read_paranoid",
    "read_pmu_format",
    "read_pmu_type",
    "read_smaps_rollup",
    "read_status",
    "read_text",
    "read_thp_vmstat",
    "read_unusable_index",
    "read_vmstat",
    "selected",
    "summarize_buddyinfo",
    "thp_modes",
    "writable",
]
