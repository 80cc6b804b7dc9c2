"""Which folio size backs each resident anonymous page of a process: /proc/PID/pagemap (virtual page ->
physical frame) with /proc/kpageflags (frame -> flags), the way the kernel's own ``tools/mm/thpmaps`` reads
them. Both need root (without CAP_SYS_ADMIN pagemap shows no frame numbers).

A page's folio is found from the flags alone: a compound head followed, at the next virtual pages, by tails
whose frames follow the head's. The run of such pages that is mapped contiguously is what a TLB can use, so a
page counts in the order of that run rounded down to a power of two (a whole 64 KiB folio mapped in one piece
is order 4; a 2 MiB folio of which 300 pages are still mapped counts as order 8). Pages that are not
anonymous (file, shmem, the zero page, hugetlb) are left out: smaps says how much of those there is.

Documentation: the kernel's Documentation/admin-guide/mm/pagemap.rst (bits 0-54 frame, 63 present;
kpageflags bits ANON 12, COMPOUND_HEAD 15, COMPOUND_TAIL 16, HUGE 17, ZERO_PAGE 24).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from hugebench.kernel.host import LOCAL, Host
from hugebench.kernel.read import read_ranges

PAGE = os.sysconf("SC_PAGE_SIZE")
PRESENT = np.uint64(1 << 63)
PFN_MASK = np.uint64((1 << 55) - 1)
KPF_ANON, KPF_HEAD, KPF_TAIL, KPF_HUGE, KPF_ZERO = 12, 15, 16, 17, 24
GAP_PAGES = (
    64  # frames this close are read in one kpageflags piece (512 bytes of flags between them)
)
PMD_ORDER = (
    9 if PAGE == 4096 else 0
)  # where it is not 4 KiB pages, orders are still reported, unnamed


@dataclass
class VmaFolios:
    """Resident anonymous bytes of one range by folio order ({0: 4 KiB pages, 4: 64 KiB, 9: 2 MiB}), and
    how many of its single (order-0) pages lie outside the range's 2 MiB-aligned interior (``outside``:
    pages that no 2 MiB page could ever back, whatever the kernel had free)."""

    by_order: dict[int, int] = field(default_factory=dict)
    outside: int = 0


def bit(flags: np.ndarray, n: int) -> np.ndarray:
    return (flags >> np.uint64(n)) & np.uint64(1) == 1


def run_orders(entries: np.ndarray, flags: np.ndarray) -> np.ndarray:
    """Per page of a virtual range: the order of the contiguously mapped folio run it is in, -1 for a page
    that is not resident anonymous memory. ``entries`` are its pagemap words, ``flags`` its frames'
    kpageflags (0 where not present). Pure: the tests give it arrays."""
    present = (entries & PRESENT) != 0
    pfn = (entries & PFN_MASK).astype(np.int64)
    anon = present & bit(flags, KPF_ANON) & ~bit(flags, KPF_HUGE) & ~bit(flags, KPF_ZERO)
    tail = bit(flags, KPF_TAIL)
    follows = np.zeros(len(entries), dtype=bool)
    if len(entries) > 1:
        follows[1:] = anon[1:] & anon[:-1] & tail[1:] & (pfn[1:] == pfn[:-1] + 1)
    run_id = np.cumsum(~follows) - 1
    lengths = np.bincount(run_id)
    order = np.floor(np.log2(np.maximum(lengths, 1))).astype(np.int64)[run_id]
    return np.where(anon, order, -1)


def tally(start: int, orders: np.ndarray, pmd_order: int = PMD_ORDER) -> VmaFolios:
    """Bytes by order of one range starting at ``start``, and its order-0 bytes outside its aligned interior."""
    out = VmaFolios()
    counts = np.bincount(orders[orders >= 0])
    out.by_order = {order: int(n) * PAGE for order, n in enumerate(counts) if n}
    if pmd_order:
        huge = PAGE << pmd_order
        end = start + len(orders) * PAGE
        first = -(-start // huge) * huge
        last = max(first, end // huge * huge)
        index = np.arange(len(orders)) * PAGE + start
        single = orders == 0
        out.outside = int(np.count_nonzero(single & ((index < first) | (index >= last)))) * PAGE
    return out


def _kpageflags(pfns: np.ndarray, proc: Path) -> np.ndarray:
    """kpageflags of each frame in ``pfns`` (any order), read in pieces of nearby frames."""
    if not len(pfns):
        return np.zeros(0, dtype=np.uint64)
    ordered = np.sort(pfns)  # (np.unique hashes: several times slower on a million frames)
    unique = ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))]
    breaks = np.nonzero(np.diff(unique) > GAP_PAGES)[0]
    first = np.concatenate(([0], breaks + 1))  # each piece's first and last index in ``unique``
    last = np.concatenate((breaks, [len(unique) - 1]))
    starts, ends = unique[first], unique[last] + 1
    pieces = read_ranges(
        proc / "kpageflags", [(int(s) * 8, int(e - s) * 8) for s, e in zip(starts, ends)]
    )
    table = np.zeros(len(unique), dtype=np.uint64)
    for lo, hi, s, e, raw in zip(first, last + 1, starts, ends, pieces):
        words = np.frombuffer(raw, dtype=np.uint64)
        table[lo:hi] = words[unique[lo:hi] - s] if len(words) == e - s else 0
    return table[np.searchsorted(unique, pfns)]


def read_folio_orders(
    pid: int | str, ranges: list[tuple[int, int]], host: Host = LOCAL
) -> list[VmaFolios]:
    """:class:`VmaFolios` of each ``(start, end)`` range of ``pid``'s address space. OSError when pagemap
    or kpageflags cannot be read; PermissionError when pagemap gives no frame numbers (not root)."""
    proc = host.proc
    pieces = read_ranges(
        proc / str(pid) / "pagemap", [(s // PAGE * 8, (e - s) // PAGE * 8) for s, e in ranges]
    )
    words = [np.frombuffer(raw, dtype=np.uint64) for raw in pieces]
    present = [w[(w & PRESENT) != 0] for w in words]
    pfns = np.concatenate([p & PFN_MASK for p in present]) if present else np.zeros(0, np.uint64)
    if len(pfns) and not pfns.any():
        raise PermissionError("/proc/PID/pagemap shows no frame numbers (CAP_SYS_ADMIN needed)")
    flags = _kpageflags(pfns.astype(np.int64), proc)
    out, at = [], 0
    for (start, _), w in zip(ranges, words):
        mask = (w & PRESENT) != 0
        page_flags = np.zeros(len(w), dtype=np.uint64)
        page_flags[mask] = flags[at : at + int(mask.sum())]
        at += int(mask.sum())
        out.append(tally(start, run_orders(w, page_flags)))
    return out
