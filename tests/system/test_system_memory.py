"""Memory conditioning and the counters recorded per run (fake tree, plus read-only real /proc)."""

from __future__ import annotations

import pytest

from hugebench.errors import PrivilegeError
from hugebench.kernel import counter_delta as diff_counters
from hugebench.kernel import read_buddyinfo, read_mthp_stats, read_thp_vmstat
from hugebench.system import condition_memory


def test_condition_memory_writes_both_triggers(fake_sys):
    done = condition_memory(fake_sys.host, euid=0)
    assert done["dropped_caches"] and done["compacted"] and done["seconds"] >= 0
    assert [(rel.rsplit("/", 1)[1], value) for rel, value in fake_sys.writes] == [
        ("drop_caches", "3"),
        ("compact_memory", "1"),
    ]


def test_condition_memory_needs_root(fake_sys):
    with pytest.raises(PrivilegeError, match="needs root"):
        condition_memory(fake_sys.host, euid=1000)
    assert (
        condition_memory(fake_sys.host, compact=False, drop_caches=False, euid=1000)["compacted"]
        is False
    )
    assert fake_sys.writes == []


def test_buddyinfo_summary(fake_sys):
    info = read_buddyinfo(fake_sys.host)
    assert info["zones"]["0/Normal"][:2] == [221, 1501]
    # order 9 and 10 blocks, counted in 2 MiB units: DMA 1 + 3*2, DMA32 2 + 752*2, Normal 9 + 37*2
    assert info["free_2mib_blocks"] == 1 + 6 + 2 + 1504 + 9 + 74
    assert 0 < info["free_2mib_fraction"] <= 1
    real = read_buddyinfo()
    assert real["free_kib"] > 0 and real["zones"]


def test_mthp_stats_and_deltas(fake_sys):
    before = read_mthp_stats(fake_sys.host)
    assert before["mthp.2048kB.anon_fault_alloc"] == 0
    assert list(before)[0].startswith("mthp.16kB.")  # sizes in numeric order
    stat = (
        fake_sys.sys_root / "kernel/mm/transparent_hugepage/hugepages-2048kB/stats/anon_fault_alloc"
    )
    stat.write_text("7\n")
    after = read_mthp_stats(fake_sys.host)
    assert diff_counters(before, after)["mthp.2048kB.anon_fault_alloc"] == 7
    assert diff_counters({"a": 1}, {"a": 3, "b": 5}) == {"a": 2}


def test_thp_vmstat(fake_sys):
    expected = {"thp_fault_alloc": 32, "thp_fault_fallback": 3, "thp_collapse_alloc": 0}
    assert read_thp_vmstat(fake_sys.host) == expected
    assert "thp_fault_alloc" in read_thp_vmstat()
