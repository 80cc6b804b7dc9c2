"""Huge-page kernel knobs: discover, read, verified writes, a crash journal, and restore on every exit."""

from hugebench.system.journal import check_no_stale_journal, default_journal_path, journal_path, restore_from_journal
from hugebench.system.knobs import (
    HugetlbShortfall,
    Knob,
    KnobValueError,
    UnknownKnobError,
    discover_knobs,
    mthp_sizes_kb,
    read_active,
    resolve_name,
)
from hugebench.system.memory import (
    condition_memory,
    diff_counters,
    read_buddyinfo,
    read_mthp_stats,
    read_thp_vmstat,
)
from hugebench.system.overview import read_hugetlb_pools, show
from hugebench.system.preflight import disable_thp_for_this_process, preflight
from hugebench.system.state import SystemState, Terminated

__all__ = [
    "HugetlbShortfall",
    "Knob",
    "KnobValueError",
    "SystemState",
    "Terminated",
    "UnknownKnobError",
    "check_no_stale_journal",
    "condition_memory",
    "default_journal_path",
    "diff_counters",
    "disable_thp_for_this_process",
    "journal_path",
    "discover_knobs",
    "mthp_sizes_kb",
    "read_active",
    "preflight",
    "read_buddyinfo",
    "read_hugetlb_pools",
    "read_mthp_stats",
    "read_thp_vmstat",
    "resolve_name",
    "restore_from_journal",
    "show",
]
