"""What must hold before a program starts for its ``text_pages`` mode: can the mode work here, and the
binary's page cache put in a known state.

The page cache is part of the condition. The kernel maps a file's text with PMDs (``FilePmdMapped``) only
from 2 MiB folios already in the cache, and only where the text's address minus its file offset is a
multiple of 2 MiB. So a binary whose text an earlier ``file-thp`` run left in large folios gets huge pages
in an ``off`` run too, and a ``file-thp`` run after ordinary reads gets none. :func:`prepare_page_cache`
therefore evicts the binary's cache before every run and, for ``file-thp``, fills it with large folios
through ``hb-textfill`` (mapping with MADV_HUGEPAGE makes the readahead allocate 2 MiB folios on file
systems that support large folios, e.g. ext4 since 6.16 and xfs; no CONFIG_READ_ONLY_THP_FOR_FS needed).

Found on kernel 6.18 / ext4 (tests/textpages/test_text_pages.py shows each): a binary loaded 2 MiB-aligned (ET_EXEC
with p_vaddr = p_offset mod 2 MiB, or a PIE linked with ``-z max-page-size=0x200000``) gets its whole
interior PMD-mapped after the fill; a PIE with the default 4 KiB p_align is loaded at a 4 KiB-granular base
and never can be; a cache warmed by ordinary reads (cp, a plain run) holds readahead-sized folios and gives
no PMD at all. An evicted cache alone also works when nothing touched the text before the library's
constructor (its own MADV_HUGEPAGE fault then reads 2 MiB folios); the fill makes that independent of
whether e.g. IFUNC resolvers in the program ran first.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import tempfile
from dataclasses import dataclass

from hugebench.kernel import mthp_modes, process_thp_enabled, read_hugetlb_pools, thp_modes
from hugebench.kernel.host import LOCAL, Host
from hugebench.knob_catalogue import HUGETLB_2MB, THP_DIR
from hugebench.machine.textpages.reports import HUGE, MODES, fill_tool, interior

PT_LOAD, PF_X, ET_EXEC = 1, 1, 2
PAGE = 4096
SELF_TEST_BYTES = 2 * HUGE
RELINK = "link it with -Wl,-z,max-page-size=0x200000"


@dataclass(frozen=True)
class TextSegment:
    """The largest executable PT_LOAD of an ELF file, as the kernel will map it."""

    path: str
    elf_type: int  # 2 ET_EXEC (fixed address), 3 ET_DYN (PIE: the kernel picks the base)
    vaddr: int
    offset: int
    filesz: int
    max_align: int  # the largest p_align of the PT_LOADs: a PIE's base is aligned to it
    segments: int  # executable PT_LOADs

    @property
    def congruent(self) -> bool:
        """p_vaddr and p_offset differ by a multiple of 2 MiB (else no PMD can map the file's folios)."""
        return (self.vaddr - self.offset) % HUGE == 0

    @property
    def load_aligned(self) -> bool:
        """The text's address minus its file offset will be a multiple of 2 MiB once loaded."""
        return self.congruent and (self.elf_type == ET_EXEC or self.max_align >= HUGE)

    def hugetlb_pages(self) -> int:
        """2 MiB pages the aligned interior needs (exact when the load address is aligned, else at most)."""
        start, end = self.vaddr // PAGE * PAGE, -(-(self.vaddr + self.filesz) // PAGE) * PAGE
        if self.load_aligned:
            lo, hi, _, _ = interior(start, end)
            return (hi - lo) // HUGE
        return (end - start) // HUGE


def read_text_segment(path: str | os.PathLike) -> TextSegment:
    """The executable segment of a 64-bit little-endian ELF file; ValueError for anything else."""
    with open(path, "rb") as f:
        ident = f.read(64)
        if len(ident) < 64 or ident[:4] != b"\x7fELF" or ident[4] != 2 or ident[5] != 1:
            raise ValueError(f"{path}: not a 64-bit little-endian ELF file")
        (elf_type,) = struct.unpack_from("<H", ident, 16)
        (phoff,) = struct.unpack_from("<Q", ident, 32)
        phentsize, phnum = struct.unpack_from("<HH", ident, 54)
        f.seek(phoff)
        table = f.read(phentsize * phnum)
    best, align, count = None, 0, 0
    for i in range(len(table) // phentsize if phentsize >= 56 else 0):
        p_type, flags, offset, vaddr, _, filesz, _, p_align = struct.unpack_from(
            "<IIQQQQQQ", table, i * phentsize
        )
        if p_type != PT_LOAD:
            continue
        align = max(align, p_align)
        if flags & PF_X:
            count += 1
            if best is None or filesz > best[2]:
                best = (vaddr, offset, filesz)
    if best is None:
        raise ValueError(f"{path}: no executable PT_LOAD segment")
    return TextSegment(str(path), elf_type, *best, max_align=align, segments=count)


def evict_page_cache(path: str | os.PathLike) -> None:
    """Drop the file's clean pages from the page cache (pages another process maps stay)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def _fill(args: list[str]) -> dict:
    """Run hb-textfill; its JSON reply (``error`` set when it could not fill)."""
    result = subprocess.run([fill_tool(), *args], capture_output=True, text=True, timeout=120)
    try:
        reply = json.loads(result.stdout)
    except ValueError:
        reply = {"error": f"hb-textfill exited {result.returncode}: {result.stderr.strip()[-300:]}"}
    return reply


def prepare_page_cache(path: str | os.PathLike, mode: str) -> dict:
    """Put the binary's page cache in the state ``mode`` is measured from; row columns saying what was done.

    Every mode: fsync + POSIX_FADV_DONTNEED, so no run inherits the folios of the one before. file-thp: then
    ``hb-textfill`` maps the text's aligned interior with MADV_HUGEPAGE and populates it, leaving 2 MiB
    folios for the program's own mapping (``text.page_cache_pmd_bytes``: how much it got PMD-mapped).
    """
    if mode not in MODES:
        raise ValueError(f"unknown text_pages mode {mode!r}: one of {', '.join(MODES)}")
    evict_page_cache(path)
    if mode != "file-thp":
        return {"text.page_cache": "evicted"}
    reply = _fill([os.fspath(path)])
    if reply.get("error"):
        raise RuntimeError(
            f"text_pages 'file-thp': hb-textfill could not fill {path}: {reply['error']}"
        )
    return {
        "text.page_cache": "evicted+filled-large",
        "text.page_cache_filled_bytes": reply["bytes"],
        "text.page_cache_pmd_bytes": reply["FilePmdMapped"],
    }


def _file_thp_self_test(directory: str) -> str | None:
    """Why a fresh file in ``directory``, evicted then mapped with MADV_HUGEPAGE and populated, gets no
    FilePmdMapped; None when it does."""
    with tempfile.NamedTemporaryFile(dir=directory, prefix=".hb-textfill-selftest-") as f:
        f.write(b"\xc3" * SELF_TEST_BYTES)
        f.flush()
        evict_page_cache(f.name)
        reply = _fill(["--range", "0", str(SELF_TEST_BYTES), f.name])
    if reply.get("error"):
        return f"the self-test could not map a file in {directory}: {reply['error']}"
    if not reply.get("FilePmdMapped"):
        return (
            f"a {SELF_TEST_BYTES >> 20} MiB file in {directory}, evicted, then mapped with MADV_HUGEPAGE and "
            "populated, shows no FilePmdMapped: this file system gives the page cache no 2 MiB folios "
            "(no large-folio support) and the kernel cannot collapse file text (no CONFIG_READ_ONLY_THP_FOR_FS)"
        )
    return None


def _binary_refusal(mode: str, segment: TextSegment, host: Host, pool_sized: bool) -> str | None:
    if mode == "hugetlb" and not pool_sized:
        pool = read_hugetlb_pools(host).get("2048kB", {})
        needed, available = segment.hugetlb_pages(), pool.get("free", 0) - pool.get("resv", 0)
        if needed > available:
            return (
                f"the 2 MiB hugetlb pool is too small: the text of {segment.path} needs {needed} pages, "
                f"{available} are free and unreserved: raise nr_hugepages (the {HUGETLB_2MB} knob)"
            )
    if mode == "file-thp" and not segment.congruent:
        return (
            f"{segment.path}: its text's p_vaddr {segment.vaddr:#x} and p_offset {segment.offset:#x} differ by "
            f"no multiple of 2 MiB, so no PMD can map its page cache: {RELINK}"
        )
    if mode == "file-thp" and not segment.load_aligned:
        return (
            f"{segment.path}: a PIE whose largest p_align is {segment.max_align:#x}: the kernel loads it at a "
            f"base aligned only to that, so its text cannot be PMD-mapped from the page cache: {RELINK}"
        )
    return None


def _kernel_refusal(mode: str, host: Host, thp_set: bool) -> str | None:
    if mode in ("thp", "file-thp") and process_thp_enabled("self", host) is False:
        return "THP is disabled for this process and its children (prctl PR_SET_THP_DISABLE)"
    if mode == "thp":
        enabled = thp_modes(host)["enabled"]
        if enabled is None:
            return "the kernel has no transparent huge pages"
        if not thp_set and (enabled == "never" or mthp_modes(host).get("2048kB") == "never"):
            return (
                f"{THP_DIR}/enabled is 'never' (or hugepages-2048kB is): MADV_HUGEPAGE gets no THP"
            )
    if mode == "hugetlb" and "2048kB" not in read_hugetlb_pools(host):
        return "the kernel has no 2 MiB hugetlb pool"
    return None


def check_mode(
    mode: str,
    host: Host = LOCAL,
    binary: str | os.PathLike | None = None,
    *,
    sweep_sets_thp: bool = False,
    sweep_sizes_pool: bool = False,
) -> str | None:
    """Why ``mode`` cannot work on this machine (and, given ``binary``, for that program); None when it can.

    thp: THP 'never' or disabled for us. hugetlb: no 2 MiB pool, or fewer free pages than the binary's
    interior needs (at least one without a binary). file-thp: THP disabled for us, a binary whose loaded
    text cannot be PMD-mapped (address minus file offset not a multiple of 2 MiB), or a self-test on a real
    file in the binary's directory (else the temp directory) showing no FilePmdMapped.
    """
    if mode not in MODES:
        return f"unknown text_pages mode {mode!r}: one of {', '.join(MODES)}"
    if mode == "off":
        return None
    why = _kernel_refusal(mode, host, sweep_sets_thp)
    if why:
        return why
    segment = read_text_segment(binary) if binary is not None else None
    if segment is not None:
        why = _binary_refusal(mode, segment, host, sweep_sizes_pool)
    elif mode == "hugetlb" and not sweep_sizes_pool:
        pool = read_hugetlb_pools(host)["2048kB"]
        why = (
            None
            if pool.get("free", 0) > pool.get("resv", 0)
            else "the 2 MiB hugetlb pool has no free page"
        )
    if why or mode != "file-thp":
        return why
    directory = (
        os.path.dirname(os.path.abspath(binary)) if binary is not None else tempfile.gettempdir()
    )
    return _file_thp_self_test(
        directory if os.access(directory, os.W_OK) else tempfile.gettempdir()
    )
