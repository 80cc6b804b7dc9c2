"""Per-size coverage and the coverage-gap explainer against the real kernel: small C programs
(tests/data/gap/), one per reason, each read while it waits, each landing in its bucket; and a 64 KiB-only
setting whose memory shows in 64 KiB folios, checked against the kernel's own per-size fault counter.

Needs root (pagemap's frame numbers, /proc/kpageflags); the 64 KiB test also writes hugepages-64kB/enabled
through the journaled knob writer and puts it back. The fallback bucket is reached two ways: by faulting 4 KiB pages
before the madvise (eligible, aligned, not huge), and for want of free 2 MiB blocks on the machine
``memory_state: fragmented`` makes (every free 2 MiB block holds a locked page; the program asks for more
than the few blocks the state's tolerance leaves).
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
from pathlib import Path

import pytest
from paths import DATA

from hugebench import kernel
from hugebench.kernel import LOCAL
from hugebench.measure.folio_coverage import columns, read_tree
from hugebench.system import SystemState, aging

pytestmark = [pytest.mark.needs_root]
GAP = DATA / "gap"
MIB = 1 << 20


@pytest.fixture(scope="module")
def programs(tmp_path_factory) -> Path:
    if shutil.which("cc") is None:
        pytest.skip("no C compiler (cc) to build the test programs")
    out = tmp_path_factory.mktemp("gap")
    for source in GAP.glob("*.c"):
        subprocess.run(
            ["cc", "-O1", "-pthread", "-o", str(out / source.stem), str(source)],
            check=True,
            timeout=60,
        )
    return out


@contextlib.contextmanager
def waiting(program: Path, *args: str):
    """The program started, set up and waiting; ended when the block ends."""
    proc = subprocess.Popen(
        [str(program), *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout.readline().strip() == "ready", f"{program.name} did not get ready"
        yield proc.pid
    finally:
        proc.stdin.close()
        proc.wait(timeout=10)


def assert_bucket(pid: int, reason: str, at_least: int) -> dict:
    reading = read_tree([pid])
    assert reading.basis == "pagemap", reading.reason
    buckets = reading.gap.buckets
    assert buckets.get(reason, 0) >= at_least, buckets
    assert max(buckets, key=buckets.get) == reason, buckets
    row = columns(reading, kernel.mthp_sizes_kb())
    assert row["gap.largest"] == reason
    assert reason in (row["gap.vmas"] or "")
    return row


@pytest.mark.needs_thp
def test_unaligned_heap_blocks(programs):
    with waiting(programs / "unaligned_heap") as pid:
        assert_bucket(pid, "unaligned", 15 * MIB)  # 64 blocks of 256 KiB, each its own mmap


def test_thread_stack(programs):
    with waiting(programs / "thread_stack") as pid:
        assert_bucket(pid, "stack", 5 * MIB)


def test_nohugepage_region(programs):
    with waiting(programs / "nohugepage") as pid:
        row = assert_bucket(pid, "nohugepage", 8 * MIB)
        assert row["folio_bytes.2048kB"] == 0


def test_prctl_disabled_process(programs):
    with waiting(programs / "prctl_disabled") as pid:
        assert kernel.process_thp_enabled(pid) is False
        assert_bucket(pid, "prctl", 8 * MIB)


@pytest.mark.needs_thp
def test_faulted_before_madvise_is_fallback(programs):
    if kernel.thp_modes().get("enabled") != "madvise":
        pytest.skip("THP enabled is not madvise here (the first touch must get 4 KiB pages)")
    with waiting(programs / "huge_region", "late") as pid:
        assert_bucket(pid, "fallback", 8 * MIB)


@pytest.mark.needs_thp
@pytest.mark.slow
def test_a_fallback_forced_on_the_fragmented_machine(programs, tmp_path):
    """Madvised, aligned memory faulted when no free 2 MiB block is left: the fallback bucket, and the
    kernel's own thp_fault_fallback counter moved by at least as many faults. THP defrag is ``never`` for
    the faults (journaled, back as found): under ``madvise`` a madvised fault stalls in direct compaction,
    which rebuilds free blocks from blocks of movable memory (page cache, other processes' pages) by moving
    them into the holes the fragmenter left; measured here with 256 MiB asked: 36 of 128 faults got a huge
    page that way (278 compaction stalls), none with ``never`` (128 of 128 fell back)."""
    with SystemState(journal_path=tmp_path / "journal.json") as state:
        state.apply({"thp.defrag": "never"})
        aged = aging.AgedMemory("fragmented", state, records=tmp_path / "runs").enter()
        try:
            if aged.failed and (
                aged.failed.startswith("not enough memory") or "no progress" in aged.failed
            ):  # too little memory, or other work freeing 2 MiB blocks as fast as they were taken
                pytest.skip(aged.failed)
            assert aged.failed is None, aged.failed
            left = aged.columns["memory.free_2mib_blocks"]  # what the tolerance leaves free
            before = kernel.read_vmstat()["thp_fault_fallback"]
            with waiting(programs / "huge_region", "now", str(2 * left + 256)) as pid:
                fell_back = kernel.read_vmstat()["thp_fault_fallback"] - before
                assert fell_back > 0, f"no THP fault fell back ({left} free 2 MiB blocks left)"
                row = assert_bucket(pid, "fallback", 4 * MIB)
        finally:
            aged.close()
    # every 2 MiB range of it that fell back is a fault the kernel counted (others' may count too); blocks
    # other processes free while it runs can still serve some of its faults
    assert 0 < row["gap.fallback_bytes"] <= fell_back * 2 * MIB, (row, fell_back)


@pytest.mark.needs_thp
def test_huge_region_on_2mib_folios_matches_anonhugepages(programs):
    if kernel.thp_modes().get("enabled") == "never":
        pytest.skip("THP enabled is never here")
    with waiting(programs / "huge_region") as pid:
        row = columns(read_tree([pid]), kernel.mthp_sizes_kb())
        anon_huge = kernel.read_smaps_rollup(pid)["AnonHugePages"]
    if anon_huge < 8 * MIB:
        pytest.skip(f"the kernel found no free 2 MiB blocks ({anon_huge >> 20} MiB huge)")
    assert row["folio_bytes.2048kB"] == row["folio.anonhuge_bytes"] == anon_huge
    assert row["folio_share.2048kB"] > 0.5


@pytest.mark.needs_thp
def test_64k_only_lands_in_64k_folios(programs, tmp_path):
    if 64 not in kernel.mthp_sizes_kb():
        pytest.skip("this kernel offers no 64 KiB anonymous folios")
    counter = "mthp.64kB.anon_fault_alloc"
    with SystemState(LOCAL, tmp_path / "journal.json") as state:
        state.apply({"thp.mthp.64kB": "always", "thp.mthp.2048kB": "never"})  # 64 KiB only
        before = kernel.read_mthp_stats(sizes=("64kB",))[counter]
        with waiting(programs / "huge_region", "mthp") as pid:
            faults = kernel.read_mthp_stats(sizes=("64kB",))[counter] - before
            row = columns(read_tree([pid]), kernel.mthp_sizes_kb())
    assert kernel.mthp_modes()["64kB"] == state.found("thp.mthp.64kB")
    assert kernel.mthp_modes()["2048kB"] == state.found("thp.mthp.2048kB")
    # 8 MiB touched: 128 faults of 64 KiB each, all this program's (others' faults only add to the counter)
    assert row["folio_bytes.64kB"] >= 8 * MIB
    assert faults * 64 * 1024 >= row["folio_bytes.64kB"] - 2 * MIB
    assert row["folio_share.64kB"] > 0.5
    assert row["gap.mthp_bytes"] >= 8 * MIB


def test_a_tree_reading_names_each_process_with_its_own_sizes(programs):
    with waiting(programs / "huge_region") as huge, waiting(programs / "nohugepage") as small:
        row = columns(read_tree([huge, small]), kernel.mthp_sizes_kb())
    assert row["folio.processes"] == 2
    parts = dict(part.split(": ", 1) for part in row["folio.by_process"].split("; "))
    assert set(parts) == {f"huge_region ({huge})", f"nohugepage ({small})"}, parts
    assert parts[f"nohugepage ({small})"].endswith("MiB anon, 4kB 100%"), parts
