"""Event profiles: which perf event each stable label gets on Intel, AMD and a machine without a PMU."""

from __future__ import annotations

import pytest

from hugebench.kernel import CpuInfo, parse_cpuinfo, read_cpu_info
from hugebench.measure.events import (
    SOFTWARE_LABELS,
    candidate_events,
    choose_events,
    chosen_events,
    label_for_event,
    override_pairs,
)

SOFTWARE = set(SOFTWARE_LABELS.values())
SKYLAKE = CpuInfo("intel", "GenuineIntel", 6, 0x55, 4, "Intel(R) Xeon(R) Gold 6130")
ICELAKE = CpuInfo("intel", "GenuineIntel", 6, 0x6A, 6, "Intel(R) Xeon(R) Platinum 8380")
ZEN3 = CpuInfo("amd", "AuthenticAMD", 0x19, 0x01, 1, "AMD EPYC 7763")
KVM_GUEST = CpuInfo(
    "intel", "GenuineIntel", 6, 207, 2, "Intel(R) Xeon(R) Processor", frozenset({"hypervisor"})
)


def by_label(choices):
    return {c.label: c for c in choices}


def test_intel_skylake_picks_the_first_supported_candidate():
    supported = SOFTWARE | {
        "cycles",
        "instructions",
        "dtlb_load_misses.miss_causes_a_walk",
        "dtlb_load_misses.walk_completed",
        "itlb_misses.walk_completed",
        "dtlb_load_misses.walk_active",
        "mem_inst_retired.stlb_miss_loads",
        "dTLB-load-misses",
        "itlb_misses.walk_completed_4k",
        "frontend_retired.itlb_miss",
    }
    c = by_label(choose_events(SKYLAKE, supported))
    assert c["dtlb_load_misses"].event == "dtlb_load_misses.miss_causes_a_walk"
    assert c["stlb_misses"].event == "dtlb_load_misses.walk_completed"
    assert c["itlb_misses"].event == "itlb_misses.walk_completed"
    assert c["walk_cycles"].event == "dtlb_load_misses.walk_active"
    assert c["itlb_misses_4k"].event == "itlb_misses.walk_completed_4k"
    assert c["itlb_frontend_misses"].event == "frontend_retired.itlb_miss"
    assert c["cycles"].event == "cycles" and c["task_clock"].event == "task-clock"
    assert all(ch.reason is None for ch in c.values())
    assert SKYLAKE.microarch == "skylake-family"


def test_intel_icelake_falls_back_when_the_skylake_name_is_missing():
    supported = SOFTWARE | {
        "cycles",
        "instructions",
        "dtlb_load_misses.walk_completed",
        "dtlb_load_misses.walk_active",
        "itlb_misses.walk_completed",
    }
    c = by_label(choose_events(ICELAKE, supported))
    assert c["dtlb_load_misses"].event == "dtlb_load_misses.walk_completed"
    assert c["stlb_misses"].event == "dtlb_load_misses.walk_completed"
    # one event serving two labels is passed to perf once
    assert chosen_events(list(c.values())).count("dtlb_load_misses.walk_completed") == 1


def test_haswell_walk_cycles_use_walk_duration_and_generic_fallback():
    haswell = CpuInfo("intel", "GenuineIntel", 6, 0x3F)
    supported = SOFTWARE | {
        "cycles",
        "dTLB-load-misses",
        "iTLB-load-misses",
        "dtlb_load_misses.walk_duration",
    }
    c = by_label(choose_events(haswell, supported))
    assert c["walk_cycles"].event == "dtlb_load_misses.walk_duration"
    assert c["dtlb_load_misses"].event == "dTLB-load-misses"
    assert c["itlb_misses"].event == "iTLB-load-misses"
    assert c["stlb_misses"].event is None and "none of" in c["stlb_misses"].reason
    assert haswell.microarch == "haswell-broadwell"


def test_amd_profile_and_walk_cycles_reason():
    supported = SOFTWARE | {
        "cycles",
        "instructions",
        "ls_l1_d_tlb_miss.all",
        "ls_l1_d_tlb_miss.all_l2_miss",
        "bp_l1_tlb_miss_l2_tlb_miss",
    }
    c = by_label(choose_events(ZEN3, supported))
    assert c["dtlb_load_misses"].event == "ls_l1_d_tlb_miss.all"
    assert c["stlb_misses"].event == "ls_l1_d_tlb_miss.all_l2_miss"
    assert c["itlb_misses"].event == "bp_l1_tlb_miss_l2_tlb_miss"
    assert c["walk_cycles"].event is None and "ls_tablewalker" in c["walk_cycles"].reason
    assert ZEN3.microarch == "zen3-zen4"
    assert "L2 TLB" in c["stlb_misses"].meaning


def test_no_pmu_keeps_every_hardware_label_with_the_pmu_reason():
    c = by_label(choose_events(KVM_GUEST, SOFTWARE, pmu_reason="KVM guest without vPMU"))
    for label in (
        "cycles",
        "instructions",
        "dtlb_load_misses",
        "stlb_misses",
        "itlb_misses",
        "walk_cycles",
    ):
        assert c[label].event is None
        assert c[label].reason == "not supported here: KVM guest without vPMU"
    assert {c[label].event for label in SOFTWARE_LABELS} == SOFTWARE


def test_choose_events_accepts_perf_capabilities():
    from hugebench.measure.perf import PerfCapabilities

    caps = PerfCapabilities(
        "/usr/bin/perf", "6.1", None, 2, frozenset(SOFTWARE), (), False, "KVM guest without vPMU"
    )
    c = by_label(choose_events(KVM_GUEST, caps))
    assert c["cycles"].reason == "not supported here: KVM guest without vPMU"
    assert c["page_faults"].event == "page-faults"


def test_unknown_vendor_uses_generic_events():
    arm = CpuInfo("other", "", 0, 0)
    c = by_label(choose_events(arm, SOFTWARE | {"cycles", "dTLB-load-misses"}))
    assert c["dtlb_load_misses"].event == "dTLB-load-misses"
    assert c["stlb_misses"].event is None and "generic" in c["stlb_misses"].reason


def test_override_list_mapping_and_mixed():
    supported = SOFTWARE | {"cycles", "cpu/event=0x08,umask=0x0e/"}
    c = by_label(
        choose_events(
            SKYLAKE, supported, override=["cycles", "cpu/event=0x08,umask=0x0e/", "r01c2"]
        )
    )
    assert c["cycles"].event == "cycles"
    assert c["cpu_event_0x08_umask_0x0e"].event == "cpu/event=0x08,umask=0x0e/"
    assert c["r01c2"].event is None and "not supported" in c["r01c2"].reason
    assert "dtlb_load_misses" not in c  # the override replaces the hardware profile...
    assert c["minor_faults"].event == "minor-faults"  # ...but software labels stay
    assert override_pairs({"walks": "dtlb_load_misses.walk_completed"}) == [
        ("walks", "dtlb_load_misses.walk_completed")
    ]
    assert override_pairs(["cycles", {"walks": "r0e08"}]) == [
        ("cycles", "cycles"),
        ("walks", "r0e08"),
    ]
    with pytest.raises(ValueError):
        override_pairs([3])


def test_candidate_events_cover_the_profile_once():
    names = candidate_events(SKYLAKE)
    assert len(names) == len(set(names))
    assert "dtlb_load_misses.walk_active" in names and "task-clock" in names
    assert candidate_events(SKYLAKE, override={"x": "r01c2"})[0] == "r01c2"


def test_label_for_event():
    assert (
        label_for_event("cpu/event=0x08,umask=0x10,cmask=1/u")
        == "cpu_event_0x08_umask_0x10_cmask_1_u"
    )
    assert label_for_event("dtlb_load_misses.walk_completed") == "dtlb_load_misses_walk_completed"


def test_parse_cpuinfo_amd_and_real():
    text = (
        "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 1\n"
        "model name\t: AMD EPYC 7763 64-Core Processor\nstepping\t: 1\nflags\t\t: fpu pse pdpe1gb\n"
        "TLB size\t: 2560 4K pages\n\nprocessor\t: 1\nvendor_id\t: GenuineIntel\n"
    )
    cpu = parse_cpuinfo(text)
    assert (cpu.vendor, cpu.family, cpu.model, cpu.stepping) == ("amd", 25, 1, 1)
    assert "pdpe1gb" in cpu.flags and not cpu.hypervisor
    real = read_cpu_info()
    assert real.vendor in ("intel", "amd", "other") and real.model_name


@pytest.mark.needs_perf
@pytest.mark.skipif(__import__("shutil").which("perf") is None, reason="perf not installed")
def test_override_events_unseen_by_detect_are_probed_once():
    from hugebench.measure.perf import detect

    caps = detect()
    c = by_label(
        choose_events(
            read_cpu_info(), caps, override={"faults": "page-faults", "bogus": "no_such_evt"}
        )
    )
    assert c["faults"].event == "page-faults"
    assert c["bogus"].event is None and "syntax error" in c["bogus"].reason
