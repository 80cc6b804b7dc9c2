"""The fragmenter: a helper process that leaves free memory in small pieces (``memory_state: fragmented``).

Run as ``python -m hugebench.system.fragmenter --leave N --max-blocks M --chunk-blocks C --deadline S``, by
``hugebench.system.aging`` only. In bounded chunks it takes free 2 MiB blocks by faulting transparent huge
pages (an order-9 fault can only be served by a free 2 MiB block, never by the holes earlier chunks left),
then splits each huge page (``MADV_COLD`` on part of it splits it at once), keeps one ``mlock``ed 4 KiB page
of it and unmaps the other 511, which go back to the buddy allocator as order-0..8 pieces. With
``vm.compact_unevictable_allowed=0`` (the caller sets it, journaled) compaction cannot move the kept pages, so
no free 2 MiB block can be rebuilt in a pinned one while this process lives; when it exits, all of it is free.
With ``--movable`` the kept pages are not locked: ordinary anonymous memory, which compaction can migrate
(``memory_state: fragmented-movable``).

It stops when at most ``--leave`` free 2 MiB blocks are left (``/proc/buddyinfo``, every zone but DMA, plus
memory the kernel has not handed to the buddy allocator yet: a kernel booted with ``deferred_init=lazy``
hands it over section by section as the buddy allocator runs short, measured here: the buddy count stayed at
~1 530 blocks while 9.8 GiB were handed over under the fragmenter, then fell), or
it has pinned ``--max-blocks`` pages, or a chunk found no free 2 MiB block (its faults fell back to 4 KiB), or
five chunks in a row brought the count to no new low while the kernel handed over no memory (MemTotal did not
grow: something else frees blocks as fast; a CI run stopped at 1 203 blocks of 7 082 when it gave up after
three chunks that were not lower than the one before), or the deadline came.
Memory: it holds 4 KiB per pinned block (1/512 of what it took) and, while a chunk is faulted, that chunk
(``--chunk-blocks`` x 2 MiB) on top. Its report is one JSON line on stdout; then it waits to be killed
(it dies with its parent, and is the OOM killer's first choice: it holds nothing anyone needs).

What does not belong here: deciding the level, the safety bounds, verifying the state, starting and ending
this process (``hugebench.system.aging``).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import signal
import sys
import time
from pathlib import Path

from hugebench import kernel
from hugebench.kernel import reporting
from hugebench.kernel.host import LOCAL, Host

PAGE = os.sysconf("SC_PAGE_SIZE")
HUGE = 2 << 20
PROT_RW, MAP_PRIVATE_ANON = 0x3, 0x22
MADV_HUGEPAGE, MADV_COLD = 14, 20
STALLS_BEFORE_GIVING_UP = 5

LIBC = ctypes.CDLL(None, use_errno=True)
LIBC.mmap.restype = ctypes.c_void_p
LIBC.mmap.argtypes = [
    ctypes.c_void_p,
    ctypes.c_size_t,
    ctypes.c_int,
    ctypes.c_int,
    ctypes.c_int,
    ctypes.c_long,
]
for _name in ("munmap", "mlock"):
    getattr(LIBC, _name).argtypes = [ctypes.c_void_p, ctypes.c_size_t]
LIBC.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def free_huge_blocks(host: Host = LOCAL) -> int:
    """Free 2 MiB blocks in every zone a huge page can come from, with the memory the kernel has not handed
    to the buddy allocator yet (``hugebench.kernel.reporting``): where it hands memory out lazily, taking
    blocks makes it hand out more, and the buddy allocator's own count alone does not fall."""
    return reporting.free_2mib_blocks(host)


def _anon_huge_bytes() -> int:
    return kernel.read_smaps_rollup("self").get("AnonHugePages", 0)


def take_chunk(blocks: int, movable: bool = False) -> int:
    """Fault ``blocks`` huge pages, keep one 4 KiB page of each (locked unless ``movable``), free the rest;
    how many were huge."""
    length = (blocks + 1) * HUGE
    raw = LIBC.mmap(None, length, PROT_RW, MAP_PRIVATE_ANON, -1, 0)
    if raw in (None, ctypes.c_void_p(-1).value):
        raise OSError(ctypes.get_errno(), "mmap of a chunk failed")
    base = (raw + HUGE - 1) & ~(HUGE - 1)
    _check(LIBC.madvise(base, blocks * HUGE, MADV_HUGEPAGE), "madvise(MADV_HUGEPAGE)")
    huge_before = _anon_huge_bytes()
    for i in range(blocks):
        ctypes.memset(base + i * HUGE, 1, 1)  # one write faults the whole 2 MiB page
    huge = (_anon_huge_bytes() - huge_before) // HUGE
    for i in range(blocks):
        block = base + i * HUGE
        _check(
            LIBC.madvise(block, PAGE, MADV_COLD), "madvise(MADV_COLD)"
        )  # splits the huge page now
        if not movable:
            _check(LIBC.mlock(block, PAGE), "mlock")
        _check(LIBC.munmap(block + PAGE, HUGE - PAGE), "munmap")
    for start, end in ((raw, base), (base + blocks * HUGE, raw + length)):
        if end > start:
            _check(LIBC.munmap(start, end - start), "munmap")
    return huge


def fragment(
    leave: int,
    max_blocks: int,
    chunk_blocks: int,
    deadline_s: float,
    host: Host = LOCAL,
    movable: bool = False,
) -> dict:
    """Pin blocks chunk by chunk until a stop condition (see the module); the report."""
    started = time.monotonic()
    pinned = held_pages = chunks = stalls = 0
    stopped = "deadline"
    lowest, total = free_huge_blocks(host), kernel.mem_total(host) or 0
    while time.monotonic() - started < deadline_s:
        free = free_huge_blocks(host)
        if free <= leave:
            stopped = "level reached"
            break
        if held_pages >= max_blocks:
            stopped = "max blocks pinned"
            break
        blocks = min(chunk_blocks, free - leave, max_blocks - held_pages)
        huge = take_chunk(blocks, movable)
        pinned, held_pages, chunks = pinned + huge, held_pages + blocks, chunks + 1
        if huge == 0:
            stopped = "no free 2 MiB block left to take (huge-page faults fell back to 4 KiB)"
            break
        now, total_now = free_huge_blocks(host), kernel.mem_total(host) or 0
        stalls = 0 if now < lowest or total_now > total else stalls + 1
        lowest, total = min(lowest, now), max(total, total_now)
        if stalls >= STALLS_BEFORE_GIVING_UP:
            stopped = (
                f"no progress: {STALLS_BEFORE_GIVING_UP} chunks in a row brought free 2 MiB blocks to no "
                f"new low ({lowest}) while the kernel handed over no memory"
            )
            break
    hwm = kernel.read_status("self").get("VmHWM")
    return {
        "blocks_pinned": pinned,
        "held_bytes": held_pages * PAGE,
        "chunks": chunks,
        "peak_rss_bytes": hwm,
        "seconds": round(time.monotonic() - started, 3),
        "stopped": stopped,
        "free_2mib_blocks": free_huge_blocks(host),
        "movable": movable,
    }


def _prepare_process() -> None:
    """Die with the parent; be the OOM killer's first choice (what it holds, nobody needs)."""
    from hugebench.system.privilege import die_with_parent

    die_with_parent()
    try:
        Path("/proc/self/oom_score_adj").write_text("1000\n")
    except OSError:
        pass  # the report's peak and the caller's bounds keep it safe without


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hugebench.system.fragmenter")
    parser.add_argument(
        "--leave", type=int, required=True, help="stop at this many free 2 MiB blocks"
    )
    parser.add_argument("--max-blocks", type=int, required=True, help="pin at most this many pages")
    parser.add_argument(
        "--chunk-blocks", type=int, required=True, help="2 MiB blocks faulted at once"
    )
    parser.add_argument(
        "--deadline", type=float, default=300.0, help="seconds before it stops where it is"
    )
    parser.add_argument("--proc-root", default="/proc")
    parser.add_argument(
        "--movable", action="store_true", help="keep the pages unlocked (compaction can move them)"
    )
    args = parser.parse_args(argv)
    _prepare_process()
    try:
        report = fragment(
            args.leave,
            args.max_blocks,
            max(1, args.chunk_blocks),
            args.deadline,
            Host.at(proc_root=args.proc_root),
            args.movable,
        )
    except OSError as exc:
        report = {"error": str(exc)}
    print(json.dumps(report), flush=True)
    if "error" in report:
        return 1
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    while True:  # hold the pinned pages until killed
        signal.pause()


if __name__ == "__main__":
    sys.exit(main())
