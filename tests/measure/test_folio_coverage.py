"""Per-size coverage and the coverage-gap explainer on values: pagemap words and kpageflags as arrays,
smaps as text. The real kernel's side is tests/measure/test_folio_coverage_real.py."""

from __future__ import annotations

import numpy as np

from hugebench.kernel.folios import PAGE, VmaFolios, run_orders, tally
from hugebench.kernel.smaps import parse_smaps, parse_syscall_sp
from hugebench.measure import coverage_gap
from hugebench.measure.folio_coverage import (
    FolioReading,
    by_process,
    columns,
    time_weighted_columns,
)

PRESENT = 1 << 63
ANON, HEAD, TAIL, ZERO = 1 << 12, 1 << 15, 1 << 16, 1 << 24
MIB = 1 << 20

SMAPS = """\
00400000-00401000 r-xp 00000000 08:01 42        /usr/bin/prog
Rss:                   4 kB
Anonymous:             0 kB
AnonHugePages:         0 kB
THPeligible:    0
VmFlags: rd ex mr mw me
7f0000000000-7f0000800000 rw-p 00000000 00:00 0
Rss:                8192 kB
Anonymous:          8192 kB
AnonHugePages:      4096 kB
THPeligible:    1
VmFlags: rd wr mr mw me ac hg
7f0000800000-7f0000801000 ---p 00000000 00:00 0
Rss:                   0 kB
Anonymous:             0 kB
THPeligible:    0
VmFlags: mr mw me
7f0000801000-7f0001001000 rw-p 00000000 00:00 0
Rss:                 512 kB
Anonymous:           512 kB
AnonHugePages:         0 kB
THPeligible:    0
VmFlags: rd wr mr mw me ac nh
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]
Rss:                  64 kB
Anonymous:            64 kB
THPeligible:    0
VmFlags: rd wr mr mw me gd ac
"""


def folio(pfn: int, pages: int) -> tuple[list[int], list[int]]:
    """pagemap words and flags of one folio of ``pages`` mapped in order from frame ``pfn``."""
    words = [PRESENT | (pfn + i) for i in range(pages)]
    flags = [ANON | (HEAD if i == 0 and pages > 1 else TAIL if i else 0) for i in range(pages)]
    return words, flags


def orders_of(*pieces) -> np.ndarray:
    words = np.array(sum((w for w, _ in pieces), []), dtype=np.uint64)
    flags = np.array(sum((f for _, f in pieces), []), dtype=np.uint64)
    return run_orders(words, flags)


def test_run_orders_tell_folio_sizes_apart():
    orders = orders_of(folio(1000, 1), folio(2048, 16), folio(5000, 4), folio(7, 1))
    assert list(orders) == [0] + [4] * 16 + [2] * 4 + [0]


def test_adjacent_single_pages_stay_order_zero_and_absent_pages_are_skipped():
    words = np.array([PRESENT | 10, PRESENT | 11, 0, PRESENT | 12], dtype=np.uint64)
    flags = np.array([ANON, ANON, 0, ANON], dtype=np.uint64)
    assert list(run_orders(words, flags)) == [0, 0, -1, 0]


def test_zero_page_and_file_pages_are_not_anonymous():
    words = np.array([PRESENT | 1, PRESENT | 2], dtype=np.uint64)
    flags = np.array([ZERO, 0], dtype=np.uint64)
    assert list(run_orders(words, flags)) == [-1, -1]


def test_partly_mapped_folio_counts_by_its_mapped_run():
    words, flags = folio(4096, 512)
    orders = run_orders(np.array(words[:300], np.uint64), np.array(flags[:300], np.uint64))
    assert set(orders) == {8}


def test_tally_counts_single_pages_outside_the_aligned_interior():
    start = 2 * MIB - 2 * PAGE  # two pages below the first 2 MiB boundary, then 2 MiB more
    orders = np.zeros(2 + 512, dtype=np.int64)
    result = tally(start, orders)
    assert result.by_order == {0: (2 + 512) * PAGE}
    assert result.outside == 2 * PAGE


def test_smaps_parsed_per_mapping():
    vmas = parse_smaps(SMAPS)
    assert [v.name for v in vmas] == ["/usr/bin/prog", "", "", "", "[stack]"]
    assert vmas[1].fields["AnonHugePages"] == 4 * MIB and vmas[1].thp_eligible == 1
    assert "hg" in vmas[1].flags and "nh" in vmas[3].flags
    assert vmas[0].file_backed and not vmas[4].file_backed


def test_syscall_stack_pointer():
    assert parse_syscall_sp("202 0x1 0x2 0x3 0x4 0x5 0x6 0x7ffd0000f000 0x7f00") == 0x7FFD0000F000
    assert parse_syscall_sp("running") is None


def test_explain_without_pagemap_puts_every_byte_in_one_bucket():
    vmas = parse_smaps(SMAPS)
    gap = coverage_gap.explain(vmas, None)
    assert gap.buckets == {
        "file": 4096,
        "fallback": 4 * MIB,  # eligible, aligned, half of it not huge
        "stack": 512 * 1024 + 64 * 1024,  # a guarded no-huge mapping and the main stack
    }
    assert gap.huge == 4 * MIB
    assert gap.resident == sum(gap.buckets.values()) + gap.huge


def test_explain_with_folios_splits_mthp_and_unaligned():
    vmas = parse_smaps(SMAPS)
    folios = [VmaFolios() for _ in vmas]
    folios[1] = VmaFolios({9: 4 * MIB, 4: 2 * MIB, 0: 2 * MIB}, outside=0)
    gap = coverage_gap.explain(vmas, folios, stack_pointers=[])
    assert gap.buckets["mthp"] == 2 * MIB and gap.buckets["fallback"] == 2 * MIB


def test_explain_reasons_in_order():
    vmas = parse_smaps(SMAPS)
    assert set(coverage_gap.explain(vmas, None, thp_enabled=False).buckets) == {"file", "prctl"}
    small = parse_smaps(SMAPS.replace("7f0000000000-7f0000800000", "7f0000000000-7f0000100000"))
    assert "unaligned" in coverage_gap.explain(small, None).buckets


def test_columns_name_every_offered_size_and_the_gap():
    reading = FolioReading(by_order={0: 3 * MIB, 4: 1 * MIB}, processes=1)
    reading.gap.add("mthp", "pid 1 7f-80 rw-p anonymous", MIB)
    reading.gap.resident = 4 * MIB
    row = columns(reading, [16, 64, 2048])
    assert row["folio_share.4kB"] == 0.75 and row["folio_share.64kB"] == 0.25
    assert row["folio_share.2048kB"] == 0.0 and row["folio_bytes.16kB"] == 0
    assert row["gap.largest"] == "mthp" and "anonymous" in row["gap.vmas"]
    assert coverage_gap.lines(row)[0].startswith("mthp: 1.0 MiB (25% of resident)")


def test_columns_without_root_say_why():
    reading = FolioReading(basis="smaps", reason="folio sizes need root", processes=1)
    row = columns(reading, [64])
    assert row["folio.reason"] == "folio sizes need root" and "folio_share.64kB" not in row
    assert columns(None, [64], "gone")["folio.reason"] == "gone"


def test_time_weighted_shares():
    a = FolioReading(by_order={0: 4 * MIB}, processes=1)
    b = FolioReading(by_order={0: 2 * MIB, 9: 2 * MIB}, processes=1)
    out = time_weighted_columns([(0.0, a), (1.0, b), (3.0, b)])
    assert out["folio.samples"] == 3
    assert abs(out["folio_share_tw.2048kB"] - 4 / 12) < 1e-9


def test_the_last_reading_holds_until_the_program_ended():
    """issue 55: read at its start (20 MiB on 4 KiB pages) and once its 1 GiB array was on 2 MiB pages, then
    ended 0.4 s later: the array's byte-seconds dominate. Without the end, the last reading had no weight
    and the run read '4kB 100%' beside a huge-page coverage of 96%."""
    start = FolioReading(by_order={0: 20 * MIB}, processes=1)
    array = FolioReading(by_order={0: 20 * MIB, 9: 1024 * MIB}, processes=1)
    assert time_weighted_columns([(0.0, start), (0.4, array)])["folio_share_tw.4kB"] == 1.0
    out = time_weighted_columns([(0.0, start), (0.4, array)], until=0.8)
    assert out["folio.samples"] == 2
    assert out["folio_share_tw.2048kB"] > 0.9
    # an end before the last reading (or at it) changes nothing
    same = time_weighted_columns([(0.0, start), (0.4, array)], until=0.4)
    assert same["folio_share_tw.4kB"] == 1.0


def test_each_process_of_the_tree_keeps_its_own_sizes():
    """A server on 2 MiB pages beside its driver on 4 KiB pages: the tree's sum is 80% huge, the per-process
    column says which process is which; the largest comes first, at most TOP_PROCESSES of them."""
    reading = FolioReading(
        by_order={9: 8 * MIB, 0: 2 * MIB},
        processes=6,
        per_process=[
            (11, "driver", {0: 2 * MIB}),
            (10, "server", {9: 8 * MIB}),
            *((20 + i, "idle", {}) for i in range(4)),
        ],
    )
    row = columns(reading, [2048])
    assert row["folio_share.2048kB"] == 0.8 and row["folio.processes"] == 6
    assert row["folio.by_process"] == (
        "server (10): 8.0 MiB anon, 2048kB 100%; driver (11): 2.0 MiB anon, 4kB 100%"
    )
    assert by_process(reading, limit=1).startswith("server (10)")
