"""The tmpfs pack at a small size, as root: fio appending to a file on a tmpfs mounted for the run in a
private mount namespace with each huge= option; the huge page options really gave the file huge pages (the
machine's ShmemHugePages with the file still there, which the pack records as shmem_huge_kib) and
huge=never did not; no mount left behind."""

from __future__ import annotations

from pathlib import Path

from real_pack import by_preset, needs, run_small

pytestmark = needs("fio", "unshare")


def test_the_tmpfs_pack_mounts_each_option_and_leaves_no_mount(tmp_path):
    pack, rows, report = run_small("tmpfs", tmp_path, {"size_mib": 96, "file_mib": 64})
    presets = by_preset(pack, rows)
    assert set(presets) == {"huge-never", "within-size", "huge-always"}
    assert all(r["bw_kib_s"] > 0 and r["iops"] > 0 for rs in presets.values() for r in rs)
    for name in ("within-size", "huge-always"):
        assert all(
            r["shmem_huge_kib"] >= 32 * 1024 for r in presets[name]
        )  # half the 64 MiB file at least
    assert all(r["shmem_huge_kib"] < 32 * 1024 for r in presets["huge-never"])
    assert "huge=within_size: appends 1560 -> 4720 MB/s" in report
    assert "hugebench-advice" not in Path("/proc/mounts").read_text()
