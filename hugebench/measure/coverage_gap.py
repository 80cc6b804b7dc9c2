"""Why resident memory is not on 2 MiB pages: every resident byte that is not on a PMD-sized page put in
exactly one bucket by its reason, with the mappings behind each bucket and the fix each reason suggests.

The reasons, in the order they are tried (the first that holds takes a mapping's bytes):
``file`` (page cache, shmem), ``prctl`` (THP disabled for the process), ``stack`` (the kernel maps stacks
no-huge), ``nohugepage`` (``nh``: madvise(MADV_NOHUGEPAGE)), ``mthp`` (on folios smaller than 2 MiB), then
for the 4 KiB pages left: ``unaligned`` (the mapping has no 2 MiB-aligned 2 MiB range, or the page lies
outside it: no 2 MiB page can back it; the kernel reports such a mapping ``THPeligible: 0`` too),
``ineligible`` (``THPeligible: 0`` otherwise: THP mode madvise and the range not madvised, or never) and
``fallback`` (4 KiB pages where a 2 MiB page could have been: no free 2 MiB block at the fault, or faulted
before THP applied; khugepaged may collapse them later).

Pure: it takes parsed mappings (``kernel.smaps``) and folio counts (``kernel.folios``); tests give it values.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hugebench.kernel.folios import PMD_ORDER, VmaFolios
from hugebench.kernel.smaps import Vma

HUGE = 2 << 20
TOP_VMAS = 3  # mappings named per bucket

FIXES = {
    "file": "file and shmem memory: not anonymous THP's to fix (large folios in the filesystem, or "
    "shmem_enabled / hugepages-<N>kB/shmem_enabled for shmem; code: text pages)",
    "prctl": "THP is disabled for the process by prctl(PR_SET_THP_DISABLE) (redis: disable-thp yes); "
    "turn that off (redis: disable-thp no) or measure it as-is",
    "stack": "thread and main stacks: the kernel maps MAP_STACK no-huge; small, rarely worth a fix",
    "nohugepage": "the program or its allocator called madvise(MADV_NOHUGEPAGE) on it (jemalloc "
    "thp:never, a runtime's own setting): find and drop that call",
    "ineligible": "THPeligible 0: THP mode madvise and the range not madvised (or never): "
    "madvise(MADV_HUGEPAGE) it, an allocator that does (tcmalloc, jemalloc thp:always), or mode always",
    "unaligned": "mappings smaller than or not aligned to 2 MiB (glibc mmaps each block above its "
    "mmap threshold): raise the threshold (GLIBC_TUNABLES=glibc.malloc.mmap_threshold=...) or use an "
    "allocator that aligns its arenas to 2 MiB (jemalloc, tcmalloc, mimalloc)",
    "mthp": "on multi-size THP folios smaller than 2 MiB: fewer faults, but a 4 KiB TLB entry each "
    "(AMD coalesces some); enable 2048kB too if TLB reach matters",
    "fallback": "eligible, aligned, yet 4 KiB pages: no free 2 MiB block at the fault "
    "(thp_fault_fallback; defrag madvise/always lets the fault compact), or faulted before THP "
    "applied; khugepaged may collapse it later",
}
REASONS = tuple(FIXES)


@dataclass
class Gap:
    """Bytes per reason, the largest mappings behind each (label, bytes) and the resident bytes examined."""

    buckets: dict[str, int] = field(default_factory=dict)
    vmas: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    resident: int = 0
    huge: int = 0

    def add(self, reason: str, label: str, size: int) -> None:
        if size <= 0:
            return
        self.buckets[reason] = self.buckets.get(reason, 0) + size
        self.vmas.setdefault(reason, []).append((label, size))

    def merged(self, other: Gap) -> Gap:
        out = Gap(dict(self.buckets), {k: list(v) for k, v in self.vmas.items()})
        out.resident, out.huge = self.resident + other.resident, self.huge + other.huge
        for reason, size in other.buckets.items():
            out.buckets[reason] = out.buckets.get(reason, 0) + size
            out.vmas.setdefault(reason, []).extend(other.vmas.get(reason, []))
        return out

    def largest(self, n: int = TOP_VMAS) -> dict[str, list[tuple[str, int]]]:
        return {r: sorted(v, key=lambda x: -x[1])[:n] for r, v in self.vmas.items()}


def aligned_interior(vma: Vma) -> int:
    """Bytes of the mapping that 2 MiB pages could back (its 2 MiB-aligned whole blocks)."""
    first = -(-vma.start // HUGE) * HUGE
    return max(0, vma.end // HUGE * HUGE - first)


def is_stack(vma: Vma, previous: Vma | None, stack_pointers: list[int]) -> bool:
    """The main stack, a mapping a blocked thread's stack pointer is in, or a no-huge mapping right above
    a no-access guard mapping (how glibc lays out a thread's stack)."""
    if vma.name == "[stack]" or any(vma.start <= sp < vma.end for sp in stack_pointers):
        return True
    guard = previous is not None and previous.end == vma.start and previous.perms.startswith("---")
    return guard and "nh" in vma.flags and not vma.file_backed


def explain(
    vmas: list[Vma],
    folios: list[VmaFolios] | None,
    thp_enabled: bool | None = True,
    stack_pointers: list[int] | None = None,
    pid: int | None = None,
) -> Gap:
    """The gap of one process. ``folios`` (one per mapping, from pagemap) splits an eligible mapping's
    bytes by page; without it (not root) a mapping's non-huge anonymous bytes go whole to ``unaligned``
    when it has no aligned interior, else to ``fallback`` (smaps cannot tell mTHP from 4 KiB pages)."""
    gap, previous = Gap(), None
    for i, vma in enumerate(vmas):
        label = f"{'' if pid is None else f'pid {pid} '}{vma.label()}"
        anon = vma.fields.get("Anonymous", 0)
        counts = folios[i] if folios is not None else None
        file = max(0, vma.fields.get("Rss", 0) - anon)
        # the anonymous bytes of the same reading as the buckets (pagemap's, read after smaps)
        gap.resident += file + (sum(counts.by_order.values()) if counts is not None else anon)
        gap.add("file", label, file)
        huge = _huge_bytes(vma, counts)
        gap.huge += huge
        _place_anon(gap, vma, label, anon, huge, counts, thp_enabled, stack_pointers, previous)
        previous = vma
    return gap


def _huge_bytes(vma: Vma, counts: VmaFolios | None) -> int:
    if counts is None:
        return vma.fields.get("AnonHugePages", 0)
    return sum(b for o, b in counts.by_order.items() if o >= PMD_ORDER > 0)


def _place_anon(gap, vma, label, anon, huge, counts, thp_enabled, stack_pointers, previous) -> None:
    if counts is not None:
        anon = sum(counts.by_order.values())
    small = anon - huge
    if small <= 0:
        return
    if thp_enabled is False:
        gap.add("prctl", label, small)
    elif is_stack(vma, previous, stack_pointers or []):
        gap.add("stack", label, small)
    elif "nh" in vma.flags:
        gap.add("nohugepage", label, small)
    else:
        mthp = sum(b for o, b in counts.by_order.items() if 0 < o < PMD_ORDER) if counts else 0
        gap.add("mthp", label, mthp)
        _place_single(gap, vma, label, small - mthp, counts)


def _place_single(gap: Gap, vma: Vma, label: str, single: int, counts: VmaFolios | None) -> None:
    """The 4 KiB pages of a mapping THP could apply to: too small or unaligned, ineligible, or fell back."""
    if not aligned_interior(vma):
        gap.add("unaligned", label, single)
    elif vma.thp_eligible == 0:
        gap.add("ineligible", label, single)
    else:
        outside = min(counts.outside, single) if counts is not None else 0
        gap.add("unaligned", label, outside)
        gap.add("fallback", label, single - outside)


def columns(gap: Gap, prefix: str = "gap.") -> dict:
    """Flat row columns: ``gap.<reason>_bytes`` for every reason, the resident and huge bytes examined,
    ``gap.largest`` (the top reason) and ``gap.vmas`` (the mappings behind the largest buckets, text)."""
    out: dict = {f"{prefix}{r}_bytes": gap.buckets.get(r, 0) for r in REASONS}
    out[f"{prefix}resident_bytes"] = gap.resident
    out[f"{prefix}huge_bytes"] = gap.huge
    ranked = sorted(gap.buckets.items(), key=lambda x: -x[1])
    out[f"{prefix}largest"] = ranked[0][0] if ranked else None
    top = gap.largest()
    out[f"{prefix}vmas"] = (
        "; ".join(
            f"{r}: " + ", ".join(f"{label} ({size >> 10} KiB)" for label, size in top[r])
            for r, _ in ranked[:3]
        )
        or None
    )
    return out


def lines(row: dict, prefix: str = "gap.", limit: int = 4) -> list[str]:
    """The explainer as text lines from a row's gap columns: the largest buckets, share of the resident
    memory each, and its fix; [] when the row has no gap reading."""
    resident = row.get(f"{prefix}resident_bytes")
    if not resident:
        return []
    sizes = [(r, row.get(f"{prefix}{r}_bytes") or 0) for r in REASONS]
    sizes = sorted((x for x in sizes if x[1] > 0), key=lambda x: -x[1])[:limit]
    out = [
        f"{reason}: {size / 2**20:.1f} MiB ({size / resident:.0%} of resident) — {FIXES[reason]}"
        for reason, size in sizes
    ]
    if out and row.get(f"{prefix}vmas"):
        out.append(f"mappings: {row[f'{prefix}vmas']}")
    return out
