"""Every kernel knob hugebench knows, declared once: its name, aliases, file, kind, family and bounds.

What belongs here: the vocabulary. Experiment validation (which names an experiment may use, and which two
spellings are one knob), machine checks, the store's owned columns, the report and ``hugebench system`` all
read this table; ``hugebench.system.knobs`` turns its entries into readable, writable knobs for the files this
kernel has. What does not: any I/O (this module reads no file; the roots of /sys and /proc are the caller's).

Adding a knob is one entry in ``DECLARED`` (a family of sizes, like the mTHP modes, is a pattern and a
``*_decl`` function: ``_MTHP`` and ``mthp_decl``), and, where code names the knob, a constant beside the others
below; see docs/architecture.md. Code elsewhere names a knob, a knob's directory or a tool-owned axis by the
constants here, never by a literal (tests/house/test_vocabulary.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Where the knobs live: directories under the /sys or /proc root (a Host's), and the absolute form for messages
# and deploy lines (``sys_path``).
THP_DIR = "kernel/mm/transparent_hugepage"  # under /sys
HUGETLB_DIR = "kernel/mm/hugepages"  # under /sys
REPORTING_DIR = "module/page_reporting/parameters"  # under /sys
VM_DIR = "sys/vm"  # under /proc
DEFAULT_POOL = f"{VM_DIR}/nr_hugepages"  # under /proc: the pool of the default huge page size

# The knobs code names (each one entry of DECLARED below).
THP_ENABLED = "thp.enabled"
THP_DEFRAG = "thp.defrag"
THP_SHMEM_ENABLED = "thp.shmem_enabled"
HUGETLB_2MB = "hugetlb.2MB"
HUGETLB_1GB = "hugetlb.1GB"
COMPACT_UNEVICTABLE = "vm.compact_unevictable_allowed"
PERCPU_HIGH_FRACTION = "vm.percpu_pagelist_high_fraction"
COMPACTION_PROACTIVENESS = "vm.compaction_proactiveness"
REPORTING_ORDER = "page_reporting.order"
MTHP_PREFIX = "thp.mthp."  # + "<N>kB": a multi-size THP's own mode (mthp_decl)

# The axes the tool owns besides the knobs and a workload's parameters (an experiment's ``axes:``).
ALLOCATOR_AXIS = "allocator"
TEXT_AXIS = "text_pages"  # how the program's code is backed (hugebench.machine.textpages)
MEMORY_AXIS = "memory_state"  # the memory's state before each run (hugebench.system.aging)
REGIME_AXIS = "regime"  # free page reporting's regime (hugebench.system.regime)
TOOL_AXES = (ALLOCATOR_AXIS, TEXT_AXIS, MEMORY_AXIS, REGIME_AXIS)
UINT_MAX = 2**32 - 1
PTES = "ptes"  # a maximum of (base pages per PMD huge page) - 1, known only on the machine


@dataclass(frozen=True)
class KnobDecl:
    """One knob. root: 'sys' or 'proc' (the file is under that root); kind: 'choice' (a bracketed list),
    'int' (a bounded integer) or 'pool' (hugetlb pages); family: what `system show` groups by; user: may
    be named in an experiment's ``axes:`` or ``system:`` (the others hugebench sets for itself)."""

    name: str
    root: str
    path: str
    kind: str
    family: str
    minimum: int = 0
    maximum: int | str | None = None
    least_nonzero: int = 0  # int knobs: values between 0 and this are refused (the kernel's EINVAL)
    aliases: tuple[str, ...] = ()
    user: bool = True
    page_kb: int = 0  # pools: the huge page size
    doc: str = ""


def _thp(name, rel, kind, family="thp", lo=0, hi=None, aliases=(), doc=""):
    return KnobDecl(name, "sys", f"{THP_DIR}/{rel}", kind, family, lo, hi, 0, aliases, doc=doc)


DECLARED: tuple[KnobDecl, ...] = (
    _thp(THP_ENABLED, "enabled", "choice", aliases=("thp",), doc="THP mode for anonymous memory"),
    _thp(THP_DEFRAG, "defrag", "choice", doc="whether a THP fault stalls to compact"),
    _thp(THP_SHMEM_ENABLED, "shmem_enabled", "choice", doc="THP for shmem and tmpfs"),
    _thp("thp.use_zero_page", "use_zero_page", "int", hi=1),
    _thp(
        "thp.shrink_underused",
        "shrink_underused",
        "int",
        hi=1,
        doc="split THPs that are mostly zero-filled under memory pressure (thp_underused_split_page)",
    ),
    _thp("thp.khugepaged.defrag", "khugepaged/defrag", "int", "khugepaged", hi=1),
    _thp("thp.khugepaged.max_ptes_none", "khugepaged/max_ptes_none", "int", "khugepaged", hi=PTES),
    _thp("thp.khugepaged.max_ptes_swap", "khugepaged/max_ptes_swap", "int", "khugepaged", hi=PTES),
    _thp(
        "thp.khugepaged.max_ptes_shared", "khugepaged/max_ptes_shared", "int", "khugepaged", hi=PTES
    ),
    _thp(
        "thp.khugepaged.pages_to_scan",
        "khugepaged/pages_to_scan",
        "int",
        "khugepaged",
        lo=1,
        hi=UINT_MAX,
    ),
    _thp(
        "thp.khugepaged.scan_sleep_millisecs",
        "khugepaged/scan_sleep_millisecs",
        "int",
        "khugepaged",
        hi=UINT_MAX,
    ),
    _thp(
        "thp.khugepaged.alloc_sleep_millisecs",
        "khugepaged/alloc_sleep_millisecs",
        "int",
        "khugepaged",
        hi=UINT_MAX,
    ),
    # hugetlb.2MB's file depends on the machine's default huge page size (system.knobs picks it).
    KnobDecl(
        HUGETLB_2MB,
        "sys",
        f"{HUGETLB_DIR}/hugepages-2048kB/nr_hugepages",
        "pool",
        "hugetlb",
        aliases=("hugetlb",),
        page_kb=2048,
        doc="persistent 2 MiB hugetlb pages",
    ),
    KnobDecl(
        HUGETLB_1GB,
        "sys",
        f"{HUGETLB_DIR}/hugepages-1048576kB/nr_hugepages",
        "pool",
        "hugetlb",
        page_kb=1048576,
        doc="persistent 1 GiB hugetlb pages",
    ),
    # /proc/sys/vm knobs hugebench sets for itself: 0 keeps compaction off mlocked pages (what lets
    # ``memory_state: fragmented`` hold); percpu_pagelist_high_fraction set high for a moment makes the
    # per-CPU lists give their pages back (the sysctl refuses 1..7); compaction_proactiveness 0 keeps
    # kcompactd from compacting a ``fragmented-movable`` state away.
    KnobDecl(
        COMPACT_UNEVICTABLE,
        "proc",
        f"{VM_DIR}/compact_unevictable_allowed",
        "int",
        "vm",
        0,
        1,
        user=False,
    ),
    KnobDecl(
        PERCPU_HIGH_FRACTION,
        "proc",
        f"{VM_DIR}/percpu_pagelist_high_fraction",
        "int",
        "vm",
        0,
        2**31 - 1,
        8,
        user=False,
    ),
    KnobDecl(
        COMPACTION_PROACTIVENESS,
        "proc",
        f"{VM_DIR}/compaction_proactiveness",
        "int",
        "vm",
        0,
        100,
        1,
        user=False,
    ),
)

# Free page reporting (a VM's balloon hands free blocks of at least 2**order pages back to the host): the
# smallest order reported; its maximum is the machine's largest buddy order + 1 ("off"), set where it is read.
PAGE_REPORTING = KnobDecl(
    REPORTING_ORDER,
    "sys",
    f"{REPORTING_DIR}/page_reporting_order",
    "int",
    "page_reporting",
    doc="free page reporting's smallest reported order ('off': one above the largest)",
)
DECLARED += (PAGE_REPORTING,)

_MTHP = re.compile(r"^thp\.mthp\.(\d+)kB$")


_MTHP_SHMEM = re.compile(r"^thp\.mthp_shmem\.(\d+)kB$")


def sys_path(rel: str) -> str:
    """A path under the real /sys as a person types it (messages, deploy lines): ``/sys/`` + ``rel``."""
    return f"/sys/{rel}"


def mthp_name(size: int | str) -> str:
    """The knob of one multi-size THP's mode: ``thp.mthp.64kB`` (``size``: 64 or '64kB')."""
    return f"{MTHP_PREFIX}{str(size).removesuffix('kB')}kB"


def mthp_decl(size_kb: int) -> KnobDecl:
    """The per-size THP mode of multi-size THP (`thp.mthp.<N>kB`, Linux 6.8+)."""
    return _thp(mthp_name(size_kb), f"hugepages-{size_kb}kB/enabled", "choice", "mthp")


def mthp_shmem_decl(size_kb: int) -> KnobDecl:
    """The per-size THP mode of shmem and tmpfs (`thp.mthp_shmem.<N>kB`, Linux 6.11+; 8 KiB upward)."""
    return _thp(
        f"thp.mthp_shmem.{size_kb}kB",
        f"hugepages-{size_kb}kB/shmem_enabled",
        "choice",
        "mthp_shmem",
        doc="per-size THP for shmem and tmpfs",
    )


BY_NAME = {d.name: d for d in DECLARED}
ALIASES = {alias: d.name for d in DECLARED for alias in d.aliases}
# The first word of every name an experiment may use for a knob (the row columns under them are the tool's).
USER_FAMILIES = ("thp", "hugetlb", "page_reporting")
COLUMN_PREFIXES = ("thp.", "hugetlb.")  # the knob columns a row carries under their own names


def canonical(name: str) -> str:
    """The one name of a knob however it is spelled (`thp` is `thp.enabled`); other names unchanged."""
    name = name.strip()
    return ALIASES.get(name, name)


def is_knob(name: str) -> bool:
    """True when an experiment's axis or system name is a kernel knob: an alias or a user family's name."""
    return name in ALIASES or name.split(".")[0] in USER_FAMILIES


def declaration(name: str) -> KnobDecl | None:
    """The declaration of a canonical or aliased name (mTHP sizes included), or None."""
    name = canonical(name)
    if name in BY_NAME:
        return BY_NAME[name]
    match = _MTHP.match(name)
    if match:
        return mthp_decl(int(match.group(1)))
    match = _MTHP_SHMEM.match(name)
    return mthp_shmem_decl(int(match.group(1))) if match else None


def family(name: str) -> str | None:
    decl = declaration(name)
    return decl.family if decl else None


def spellings(name: str) -> tuple[str, ...]:
    """Every spelling of a knob: its name, then its aliases (for messages and for finding a file's key)."""
    name = canonical(name)
    return (name, *(a for a, c in ALIASES.items() if c == name))


def alias_note() -> str:
    """'thp is thp.enabled, hugetlb is hugetlb.2MB': the aliases, for messages."""
    return ", ".join(f"{a} is {c}" for a, c in ALIASES.items())
