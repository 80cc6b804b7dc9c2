"""Machine context: fake sysfs/procfs trees for the parsers, this machine for the whole record."""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess

import pytest
from fake_tree import write_tree

from hugebench.kernel import Host
from hugebench.machine import metadata
from hugebench.measure.perf import PerfCapabilities

FAKE_CAPS = PerfCapabilities(
    "/usr/bin/perf",
    "6.1.192",
    None,
    2,
    frozenset({"task-clock"}),
    (("cycles", "x"),),
    False,
    "KVM guest without vPMU",
    "KVM",
    (),
)


def make_cache(root, index, level, kind, size, ways="8", line="64", shared="0"):
    d = root / f"devices/system/cpu/cpu0/cache/index{index}"
    d.mkdir(parents=True)
    for name, value in (
        ("level", level),
        ("type", kind),
        ("size", size),
        ("ways_of_associativity", ways),
        ("coherency_line_size", line),
        ("shared_cpu_list", shared),
    ):
        (d / name).write_text(f"{value}\n")


def test_caches_from_fake_sysfs(tmp_path):
    make_cache(tmp_path, 0, 1, "Data", "48K", "12")
    make_cache(tmp_path, 3, 3, "Unified", "307200K", "20", shared="0-1")
    make_cache(tmp_path, 10, 2, "Unified", "2048K", "16")
    caches = metadata.caches(Host(sys=tmp_path))
    assert [c["level"] for c in caches] == [1, 3, 2]  # index order, numeric (index10 after index3)
    assert caches[0] == {
        "level": 1,
        "type": "Data",
        "size_bytes": 48 * 1024,
        "ways": 12,
        "line_bytes": 64,
        "shared_cpu_list": "0",
    }
    assert caches[1]["size_bytes"] == 300 * 2**20
    assert metadata.caches(Host(sys=tmp_path / "missing")) == []


def test_tlb_info_amd_cpuinfo_cpuid_tool_and_unknown(tmp_path):
    (tmp_path / "cpuinfo").write_text("vendor_id\t: AuthenticAMD\nTLB size\t: 3072 4K pages\n")
    assert metadata.tlb_info(Host(proc=tmp_path))["entries"] == ["TLB size: 3072 4K pages"]
    (tmp_path / "cpuinfo").write_text("vendor_id\t: GenuineIntel\n")
    cpuid = (
        "   L1 TLB/cache information: 2M/4M pages & L1 TLB (0x80000005/eax):\n"
        "   --- cache 0 ---\n      data TLB: 4K pages, 4-way, 64 entries\n      data TLB: 4K pages, 4-way, 64 entries\n"
    )
    info = metadata.tlb_info(Host(proc=tmp_path), cpuid_text=cpuid)
    assert (
        info["source"] == "cpuid -1"
        and info["entries"].count("data TLB: 4K pages, 4-way, 64 entries") == 1
    )
    unknown = metadata.tlb_info(Host(proc=tmp_path), cpuid_text="")
    assert unknown["source"] is None and "unknown" in unknown["unknown"]


def test_memory_context_from_fake_trees(tmp_path):
    thp, pool = "sys/kernel/mm/transparent_hugepage/", "sys/kernel/mm/hugepages/hugepages-2048kB/"
    write_tree(
        tmp_path,
        {
            "proc/meminfo": "MemTotal:       24731864 kB\nMemFree: 1 kB\n",
            thp + "enabled": "always [madvise] never\n",
            thp + "defrag": "always defer defer+madvise [madvise] never\n",
            thp + "hpage_pmd_size": "2097152\n",
            thp + "khugepaged/defrag": "1\n",
            thp + "hugepages-64kB/enabled": "always inherit madvise [never]\n",
            pool + "nr_hugepages": "0\n",
            pool + "free_hugepages": "0\n",
        },
    )
    proc, sysfs = tmp_path / "proc", tmp_path / "sys"
    mem = metadata.memory_context(Host(proc, sysfs))
    assert mem["total_bytes"] == 24731864 * 1024
    assert mem["hpage_pmd_size"] == 2 * 2**20 and mem["page_size"] == os.sysconf("SC_PAGE_SIZE")
    assert mem["thp"]["enabled"] == "madvise" and mem["thp"]["defrag"] == "madvise"
    assert mem["thp"]["khugepaged_defrag"] == "1" and mem["thp"]["shmem_enabled"] is None
    assert mem["thp"]["mthp"] == {"64kB": "never"}
    assert mem["hugetlb_pools"] == {"2048kB": {"nr": 0, "free": 0}}


def test_lscpu_topology_parsing():
    text = "Thread(s) per core:  2\nCore(s) per socket:  16\nSocket(s):           2\nNUMA node(s):        2\n"
    assert metadata._lscpu_topology(text) == {
        "sockets": 2,
        "cores": 32,
        "threads_per_core": 2,
        "numa_nodes": 2,
    }
    assert metadata._lscpu_topology(None)["cores"] is None


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_git_state_of_a_checkout(tmp_path):
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "f").write_text("1")
    subprocess.run(git + ["add", "f"], check=True)
    subprocess.run(git + ["commit", "-q", "-m", "x"], check=True)
    state = metadata.git_state(tmp_path)
    assert len(state["git_sha"]) == 40 and state["git_dirty"] is False
    (tmp_path / "f").write_text("2")
    assert metadata.git_state(tmp_path)["git_dirty"] is True
    assert metadata.git_state(tmp_path / "not-a-repo-dir") == {"git_sha": None, "git_dirty": None}
    assert metadata.git_state(None) == {"git_sha": None, "git_dirty": None}


def test_machine_context_of_this_machine_is_complete_and_json():
    ctx = metadata.machine_context({"glibc": {"path": None}}, perf_caps=FAKE_CAPS)
    json.dumps(ctx)  # stored as JSON once per sweep
    assert ctx["kernel"]["release"] == platform.release()
    assert ctx["cpu"]["vendor"] in ("intel", "amd", "other") and ctx["cpu"]["model_name"]
    assert ctx["cpu"]["logical_cpus"] == os.cpu_count()
    assert ctx["memory"]["total_bytes"] > 0 and ctx["memory"]["page_size"] == 4096
    assert ctx["glibc"].startswith("glibc ")
    assert ctx["python"]["version"] == platform.python_version()
    assert ctx["hugebench"]["version"]
    assert "core_build" in ctx["hugebench"] and "git_sha" in ctx["hugebench"]
    assert ctx["perf"]["pmu_reason"] == "KVM guest without vPMU"
    assert ctx["allocators"] == {"glibc": {"path": None}}
    assert ctx["tlb"]["entries"] or ctx["tlb"]["unknown"]
    assert any(c["level"] == 1 for c in ctx["caches"])
    if "hypervisor" in metadata.cpu_info().flags:
        assert ctx["cpu"]["hypervisor"]


def test_core_build_info_reports_release_when_built():
    info = metadata.core_build_info()
    if isinstance(info, str):
        pytest.skip(info)
    assert info["build_type"] and info["debug"] is False
