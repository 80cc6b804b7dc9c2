"""Changing the kernel: huge-page knobs with verified writes, a crash journal, restore on every exit,
memory conditioning, and the privilege checks that come before any of it.

What belongs here: anything that writes /sys or /proc (and the prctl the worker applies to itself).
What does not: reading for its own sake — every read goes through ``hugebench.kernel``.
"""

from hugebench.system import aging
from hugebench.system.journal import (
    check_no_stale_journal,
    default_journal_path,
    journal_path,
    restore_from_journal,
)
from hugebench.system.knobs import (
    HugetlbShortfall,
    Knob,
    KnobValueError,
    UnknownKnobError,
    discover_knobs,
    resolve_name,
)
from hugebench.system.lock import SweepLock, default_lock_path, default_lock_paths, lock_status
from hugebench.system.memory import condition_memory
from hugebench.system.overview import show
from hugebench.system.privilege import (
    check_privileges,
    die_with_parent,
    disable_thp_for_this_process,
    process_thp_supported,
    set_process_thp,
    sudo_hugebench,
)
from hugebench.system.state import SystemState, Terminated

__all__ = [
    "aging",
    "HugetlbShortfall",
    "Knob",
    "KnobValueError",
    "SystemState",
    "Terminated",
    "UnknownKnobError",
    "check_no_stale_journal",
    "check_privileges",
    "condition_memory",
    "default_journal_path",
    "die_with_parent",
    "disable_thp_for_this_process",
    "process_thp_supported",
    "set_process_thp",
    "SweepLock",
    "default_lock_path",
    "default_lock_paths",
    "lock_status",
    "journal_path",
    "discover_knobs",
    "resolve_name",
    "restore_from_journal",
    "show",
    "sudo_hugebench",
]
