"""The JVM pack at a small size, as root: Debian's OpenJDK running HeapChurn.java with neither option,
-XX:+UseTransparentHugePages and -XX:+UseLargePages (the heap really on hugetlb pages from the pool the
preset sizes), under THP madvise and always; the pool back to as found afterwards."""

from __future__ import annotations

from real_pack import by_preset, needs, run_small

pytestmark = needs("java")


def test_the_jvm_pack_puts_the_heap_where_each_option_says(tmp_path):
    pack, rows, report = run_small(
        "jvm", tmp_path, {"live_mib": 40, "seconds": 1}, leftovers=("java",)
    )
    presets = by_preset(pack, rows)
    assert set(presets) == {"neither", "thp-flag", "large-pages"}
    for row in presets["large-pages"]:  # -XX:+UseLargePages took: the heap is on hugetlb pages
        assert row["smaps.Private_Hugetlb"] + row["smaps.Shared_Hugetlb"] > 0
    for row in presets["neither"] + presets["thp-flag"]:
        assert row["smaps.Private_Hugetlb"] == 0
    madvised = [r for r in presets["thp-flag"] if r["thp.enabled"] == "madvise"]
    assert madvised and all(r["smaps.AnonHugePages"] > 0 for r in madvised)  # the flag madvised it
    assert all(r["ops_per_s"] > 0 and r["gc_ms"] >= 0 for rs in presets.values() for r in rs)
    assert "large pages: less GC time (THP madvise)" in report
