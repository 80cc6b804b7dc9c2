"""/proc readers on fake files and on this process, and the per-phase recorder on real page faults."""

from __future__ import annotations

import math
import mmap
from pathlib import Path

import pytest

from hugebench import kernel
from hugebench.kernel import Host
from hugebench.measure import phases

SMAPS_ROLLUP = """\
55f0c1b6a000-7ffc62122000 ---p 00000000 00:00 0                          [rollup]
Rss:              204800 kB
Pss:              204000 kB
Anonymous:        200000 kB
AnonHugePages:    102400 kB
ShmemPmdMapped:        0 kB
FilePmdMapped:         0 kB
Shared_Hugetlb:        0 kB
Private_Hugetlb:    2048 kB
Swap:                  0 kB
"""

STATUS = (
    "Name:\tpython\nVmPeak:\t  500000 kB\nVmHWM:\t  300000 kB\nVmRSS:\t  250000 kB\nThreads:\t4\n"
)

VMSTAT = "nr_free_pages 123\nthp_fault_alloc 10\nthp_fault_fallback 2\nthp_split_page 1\nnr_anon_transparent_hugepages 5\n"


@pytest.fixture
def fake_proc(tmp_path):
    pid_dir = tmp_path / "1234"
    pid_dir.mkdir()
    (pid_dir / "smaps_rollup").write_text(SMAPS_ROLLUP)
    (pid_dir / "status").write_text(STATUS)
    (tmp_path / "vmstat").write_text(VMSTAT)
    return tmp_path


def test_smaps_rollup_in_bytes_and_coverage(fake_proc):
    smaps = kernel.read_smaps_rollup(1234, Host(proc=fake_proc))
    assert smaps["Rss"] == 204800 * 1024
    assert smaps["AnonHugePages"] == 102400 * 1024
    assert smaps["Private_Hugetlb"] == 2048 * 1024
    assert phases.coverage(smaps) == pytest.approx(0.5)
    assert math.isnan(phases.coverage({"Rss": 0, "AnonHugePages": 0}))
    assert math.isnan(phases.coverage({}))


def test_status_peak_rss_and_non_kb_fields_skipped(fake_proc):
    status = kernel.read_status(1234, Host(proc=fake_proc))
    assert status["VmHWM"] == 300000 * 1024 and status["VmRSS"] == 250000 * 1024
    assert "Threads" not in status and "Name" not in status


def test_vmstat_and_delta_with_missing_counter(fake_proc):
    before = kernel.read_vmstat(Host(proc=fake_proc))
    assert before["thp_fault_alloc"] == 10
    after = dict(before, thp_fault_alloc=15, thp_split_page=4)
    delta = kernel.counter_delta(
        before, after, ("thp_fault_alloc", "thp_split_page", "thp_collapse_alloc")
    )
    assert delta["thp_fault_alloc"] == 5 and delta["thp_split_page"] == 3
    assert math.isnan(delta["thp_collapse_alloc"])  # this (fake) kernel lacks it: NaN, not 0


def test_mthp_sizes_and_stats_on_fake_sysfs(tmp_path):
    base = tmp_path / "kernel/mm/transparent_hugepage"
    for size, mode, allocs in (
        ("64kB", "always [inherit] madvise never", 7),
        ("2048kB", "always inherit madvise [never]", 0),
    ):
        (base / f"hugepages-{size}" / "stats").mkdir(parents=True)
        (base / f"hugepages-{size}" / "enabled").write_text(mode + "\n")
        (base / f"hugepages-{size}" / "stats" / "anon_fault_alloc").write_text(f"{allocs}\n")
    assert kernel.active_mthp_sizes(Host(sys=tmp_path)) == ("64kB",)
    stats = kernel.read_mthp_stats(Host(sys=tmp_path), ("64kB",))
    assert stats == {"mthp.64kB.anon_fault_alloc": 7}
    assert kernel.active_mthp_sizes(Host(sys=tmp_path / "none")) == ()


def test_real_proc_self():
    smaps = kernel.read_smaps_rollup()
    status = kernel.read_status()
    assert smaps["Rss"] > 0 and "AnonHugePages" in smaps
    assert 0.0 <= phases.coverage(smaps) <= 1.0
    assert status["VmHWM"] >= status["VmRSS"] > 0
    vm = kernel.read_vmstat()
    assert "thp_fault_alloc" in vm and "pgfault" in vm


def test_rusage_units_and_delta():
    a = phases.rusage_snapshot()
    buf = bytearray(8 << 20)  # 8 MiB, touched by the zero fill
    b = phases.rusage_snapshot()
    delta = phases.rusage_delta(a, b)
    assert set(delta) == set(phases.RUSAGE_KEYS)
    assert delta["minflt"] >= 0 and delta["utime_s"] >= 0
    # ru_maxrss is KiB on Linux: in bytes it must match VmHWM to within a page or two
    assert abs(b["maxrss_bytes"] - kernel.read_status()["VmHWM"]) < (1 << 20)
    assert delta["maxrss_bytes"] == b["maxrss_bytes"]
    del buf


def private_anon(size: int) -> mmap.mmap:
    # mmap(-1, n) alone is MAP_SHARED: shmem, which follows shmem_enabled, not the anon THP mode.
    return mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)


def touch_small_pages(size: int) -> mmap.mmap:
    region = private_anon(size)
    region.madvise(mmap.MADV_NOHUGEPAGE)  # 4 KiB faults whatever the THP mode
    for offset in range(0, size, mmap.PAGESIZE):
        region[offset] = 1
    return region


def test_phase_recorder_attributes_faults_to_the_right_phase():
    rec = phases.PhaseRecorder(timed_phase="touch")
    rec("idle", "begin")
    rec("idle", "end")
    rec("touch", "begin")
    region = touch_small_pages(64 << 20)
    rec("touch", "end")
    m = rec.metrics()
    assert m["phase.touch.minflt"] >= 16000  # 64 MiB / 4 KiB = 16384 first-touch faults
    assert m["phase.idle.minflt"] < 100
    assert m["phase.touch.smaps.Rss"] >= 64 << 20
    assert m["smaps.Rss"] == m["phase.touch.smaps.Rss"]  # the row's smaps are the timed phase's end
    assert 0.0 <= m["hp_coverage"] <= 1.0
    assert m["phase.touch.wall_s"] > 0 and "phase.touch.vmstat.thp_fault_alloc" in m
    assert rec.phases == ["idle", "touch"]
    region.close()


def test_phase_recorder_accumulates_repeated_phases_and_flags_unbalanced_edges():
    rec = phases.PhaseRecorder(timed_phase="touch")
    regions = []
    for _ in range(2):
        rec("touch", "begin")
        regions.append(touch_small_pages(8 << 20))
        rec("touch", "end")
    rec("orphan", "end")
    rec("dangling", "begin")
    m = rec.metrics()
    assert m["phase.touch.minflt"] >= 2 * 2000  # both passes counted
    assert m["phase.orphan.hook_error"] == "end without begin"
    assert m["phase.dangling.hook_error"] == "begin without end"
    with pytest.raises(ValueError):
        rec("touch", "middle")
    for region in regions:
        region.close()


def _thp_mode() -> str | None:
    try:
        text = Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text()
    except OSError:
        return None
    return text.split("[")[1].split("]")[0]


@pytest.mark.needs_thp
@pytest.mark.skipif(
    _thp_mode() not in ("always", "madvise"), reason="THP is disabled (enabled=never) or absent"
)
def test_phase_recorder_sees_huge_pages_of_a_madvised_region():
    rec = phases.PhaseRecorder(timed_phase="huge")
    size = 16 << 20
    rec("huge", "begin")
    region = private_anon(size)
    region.madvise(mmap.MADV_HUGEPAGE)
    for offset in range(0, size, mmap.PAGESIZE):
        region[offset] = 1
    rec("huge", "end")
    m = rec.metrics()
    if m["phase.huge.vmstat.thp_fault_alloc"] == 0:
        pytest.skip("the kernel fell back to small pages (fragmented memory)")
    assert m["smaps.AnonHugePages"] >= 2 << 20
    assert m["hp_coverage"] > 0
    assert m["phase.huge.minflt"] < size // mmap.PAGESIZE // 2  # one fault per 2 MiB, not per 4 KiB
    region.close()
