"""Readers of /sys: THP and mTHP settings and counters, hugetlb pools, CPU caches, PMU descriptions.

Each takes ``host`` and returns plain values; a file this kernel lacks gives None, {} or () rather
than an error, because a missing detail must never stop a sweep (the caller decides what is required).
"""

from __future__ import annotations

import re
from pathlib import Path

from hugebench.kernel.host import LOCAL, Host
from hugebench.kernel.parse import (
    parse_cache_size,
    parse_extfrag,
    parse_int,
    parse_pmu_format,
    selected,
)
from hugebench.kernel.read import read_optional, read_text
from hugebench.knob_catalogue import HUGETLB_DIR, THP_DIR

PMU_DIR = "bus/event_source/devices"
POOL_FIELDS = {
    "nr": "nr_hugepages",
    "free": "free_hugepages",
    "surplus": "surplus_hugepages",
    "resv": "resv_hugepages",
}
_THP_SETTINGS = {
    "enabled": "enabled",
    "defrag": "defrag",
    "shmem_enabled": "shmem_enabled",
    "khugepaged_defrag": "khugepaged/defrag",
    "use_zero_page": "use_zero_page",
}


def read_choice(path: str | Path) -> str | None:
    """The active value of a knob file ('madvise' of 'always [madvise] never', '511'); None if unreadable."""
    return selected(read_optional(path))


def thp_modes(host: Host = LOCAL) -> dict[str, str | None]:
    """The global THP settings: enabled, defrag, shmem_enabled, khugepaged_defrag, use_zero_page."""
    base = Path(host.sys, THP_DIR)
    return {key: read_choice(base / rel) for key, rel in _THP_SETTINGS.items()}


def hpage_pmd_size(host: Host = LOCAL) -> int | None:
    """Bytes of a PMD-mapped THP (2 MiB on x86-64), or None without THP."""
    return parse_int(read_optional(Path(host.sys, THP_DIR, "hpage_pmd_size")))


def _size_dirs(base: Path) -> list[tuple[int, Path]]:
    """(size in kB, directory) of every hugepages-<N>kB directory below ``base``, smallest first."""
    found = []
    for d in base.glob("hugepages-*kB"):
        match = re.fullmatch(r"hugepages-(\d+)kB", d.name)
        if match:
            found.append((int(match.group(1)), d))
    return sorted(found)


def mthp_sizes_kb(host: Host = LOCAL) -> list[int]:
    """Sizes (kB) of the per-size anonymous mTHP controls present, smallest first (kernel 6.8+; else [])."""
    return [kb for kb, d in _size_dirs(Path(host.sys, THP_DIR)) if (d / "enabled").exists()]


def mthp_shmem_sizes_kb(host: Host = LOCAL) -> list[int]:
    """Sizes (kB) with a per-size shmem control (hugepages-<N>kB/shmem_enabled, 6.11+), smallest first."""
    return [kb for kb, d in _size_dirs(Path(host.sys, THP_DIR)) if (d / "shmem_enabled").exists()]


def mthp_modes(host: Host = LOCAL) -> dict[str, str]:
    """{'64kB': 'never', '2048kB': 'inherit', ...} for every per-size anonymous control that reads."""
    base = Path(host.sys, THP_DIR)
    modes = {
        f"{kb}kB": read_choice(base / f"hugepages-{kb}kB/enabled") for kb in mthp_sizes_kb(host)
    }
    return {size: mode for size, mode in modes.items() if mode is not None}


def active_mthp_sizes(host: Host = LOCAL) -> tuple[str, ...]:
    """mTHP sizes ('64kB', '2048kB', ...) whose anon setting is not 'never'."""
    return tuple(size for size, mode in mthp_modes(host).items() if mode != "never")


def read_mthp_stats(
    host: Host = LOCAL,
    sizes: tuple[str, ...] | None = None,
    names: tuple[str, ...] | None = None,
) -> dict[str, int]:
    """System-wide per-size mTHP counters, flattened: {'mthp.64kB.anon_fault_alloc': 12, ...}.

    ``sizes`` None: every size with a stats directory; ``names`` None: every counter there. A counter that
    cannot be read is left out rather than faked.
    """
    base = Path(host.sys, THP_DIR)
    if sizes is None:
        sizes = tuple(f"{kb}kB" for kb, d in _size_dirs(base) if (d / "stats").is_dir())
    out: dict[str, int] = {}
    for size in sizes:
        stats = base / f"hugepages-{size}" / "stats"
        counters = names if names is not None else sorted(p.name for p in stats.glob("*"))
        for name in counters:
            value = parse_int(read_optional(stats / name))
            if value is not None:
                out[f"mthp.{size}.{name}"] = value
    return out


def read_hugetlb_pools(host: Host = LOCAL) -> dict[str, dict[str, int]]:
    """{'2048kB': {'nr': 0, 'free': 0, 'surplus': 0, 'resv': 0}, '1048576kB': {...}} for each pool size."""
    pools = {}
    for kb, pool_dir in _size_dirs(Path(host.sys, HUGETLB_DIR)):
        fields = {
            key: parse_int(read_optional(pool_dir / filename))
            for key, filename in POOL_FIELDS.items()
        }
        pools[f"{kb}kB"] = {key: value for key, value in fields.items() if value is not None}
    return pools


def cpu_caches(host: Host = LOCAL, cpu: int = 0) -> list[dict]:
    """CPU ``cpu``'s caches: level, type, size in bytes, ways, line size, sharing CPUs."""
    base = host.sys / f"devices/system/cpu/cpu{cpu}/cache"
    out = []
    for index in sorted(base.glob("index*"), key=lambda p: int(p.name[5:] or 0)):

        def field(name: str, i=index) -> str | None:
            return read_optional(i / name)

        out.append(
            {
                "level": parse_int(field("level")),
                "type": field("type"),
                "size_bytes": parse_cache_size(field("size")),
                "ways": parse_int(field("ways_of_associativity")),
                "line_bytes": parse_int(field("coherency_line_size")),
                "shared_cpu_list": field("shared_cpu_list"),
            }
        )
    return out


def cpu_pmu_devices(host: Host = LOCAL) -> tuple[str, ...]:
    """Core PMU drivers registered by the kernel: ('cpu',), or ('cpu_atom', 'cpu_core') on hybrid Intel."""
    base = host.sys / PMU_DIR
    return tuple(name for name in ("cpu", "cpu_core", "cpu_atom") if (base / name).exists())


def read_pmu_format(
    pmu: str = "cpu", host: Host = LOCAL
) -> dict[str, list[tuple[str, int, int]]] | None:
    """Bit layout of a PMU's terms: {'event': [('config', 0, 7)], 'ldlat': [('config1', 0, 15)]}; None without it."""
    fmt_dir = host.sys / PMU_DIR / pmu / "format"
    if not fmt_dir.is_dir():
        return None
    return {f.name: parse_pmu_format(read_text(f)) for f in sorted(fmt_dir.iterdir())}


def read_pmu_type(pmu: str = "cpu", host: Host = LOCAL) -> int | None:
    """perf_event_attr.type of a dynamic PMU (4 for x86 'cpu', i.e. PERF_TYPE_RAW); None without it."""
    return parse_int(read_optional(host.sys / PMU_DIR / pmu / "type"))


EXTFRAG_DIR = "kernel/debug/extfrag"


def read_unusable_index(host: Host = LOCAL) -> dict[str, list[float]] | None:
    """debugfs ``extfrag/unusable_index`` per zone and order (0: all free memory usable for a block of that
    order, 1: none), or None where debugfs is not mounted (or not readable)."""
    text = read_optional(host.sys / EXTFRAG_DIR / "unusable_index")
    return parse_extfrag(text) if text else None


def read_khugepaged_counters(host: Host = LOCAL) -> dict[str, int]:
    """khugepaged's monotonic counters (full_scans, pages_collapsed); those this kernel lacks are left out."""
    base = Path(host.sys, THP_DIR, "khugepaged")
    values = {
        name: parse_int(read_optional(base / name)) for name in ("full_scans", "pages_collapsed")
    }
    return {name: value for name, value in values.items() if value is not None}
