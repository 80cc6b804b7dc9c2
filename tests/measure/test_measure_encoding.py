"""Encoding perf events as (type, config, config1) for the in-process counters of _core."""

from __future__ import annotations

from pathlib import Path

import pytest
from paths import TESTS

from hugebench.kernel import Host, parse_pmu_format
from hugebench.measure import encoding as enc
from hugebench.measure.events import EventChoice

DATA = TESTS / "data" / "perf"

INTEL_FORMAT = {
    "event": "config:0-7",
    "umask": "config:8-15",
    "edge": "config:18",
    "pc": "config:19",
    "any": "config:21",
    "inv": "config:23",
    "cmask": "config:24-31",
    "in_tx": "config:32",
    "in_tx_cp": "config:33",
    "ldlat": "config1:0-15",
    "offcore_rsp": "config1:0-63",
    "frontend": "config1:0-23",
}
AMD_FORMAT = {
    "event": "config:0-7,32-35",
    "umask": "config:8-15",
    "edge": "config:18",
    "inv": "config:23",
    "cmask": "config:24-31",
}


def fake_pmu(root: Path, name: str, fmt: dict, pmu_type: int) -> Path:
    base = root / "bus/event_source/devices" / name
    (base / "format").mkdir(parents=True)
    (base / "type").write_text(f"{pmu_type}\n")
    for term, spec in fmt.items():
        (base / "format" / term).write_text(spec + "\n")
    return root


@pytest.fixture
def intel_sys(tmp_path):
    return fake_pmu(tmp_path, "cpu", INTEL_FORMAT, 4)


def test_generic_encodings_follow_the_kernel_abi():
    assert enc.hw_cache_config(3, 0, 1) == 0x10003  # dTLB, read, miss
    assert enc.GENERIC_EVENTS["dTLB-load-misses"] == (enc.PERF_TYPE_HW_CACHE, 0x10003)
    assert enc.GENERIC_EVENTS["iTLB-load-misses"] == (enc.PERF_TYPE_HW_CACHE, 0x10004)
    assert enc.GENERIC_EVENTS["cycles"] == (0, 0) and enc.GENERIC_EVENTS["instructions"] == (0, 1)
    assert enc.GENERIC_EVENTS["task-clock"] == (1, 1) and enc.GENERIC_EVENTS["minor-faults"] == (
        1,
        5,
    )
    assert enc.GENERIC_EVENTS["major-faults"] == (1, 6) and enc.GENERIC_EVENTS[
        "context-switches"
    ] == (1, 3)


def test_parse_format_spec():
    assert parse_pmu_format("config:0-7,32-35\n") == [("config", 0, 7), ("config", 32, 35)]
    assert parse_pmu_format("config:23") == [("config", 23, 23)]
    assert parse_pmu_format("config1:0-15") == [("config1", 0, 15)]


def test_encode_terms_intel_and_amd_split_event_field():
    intel = {k: parse_pmu_format(v) for k, v in INTEL_FORMAT.items()}
    amd = {k: parse_pmu_format(v) for k, v in AMD_FORMAT.items()}
    walk_active = enc.encode_terms(
        enc.parse_terms("cmask=1,event=0x8,period=0x186a3,umask=0x10"), intel
    )
    assert walk_active["config"] == 0x01001008
    assert enc.encode_terms(enc.parse_terms("event=0xd0,umask=0x11,ldlat=3"), intel) == {
        "config": 0x11D0,
        "config1": 3,
        "config2": 0,
    }
    assert (
        enc.encode_terms(enc.parse_terms("event=0x1c0,umask=0x01"), amd)["config"] == 0x1_0000_01C0
    )
    with pytest.raises(enc.EncodingError, match="not in this PMU's format"):
        enc.encode_terms({"bogus": 1}, intel)
    with pytest.raises(enc.EncodingError, match="does not fit"):
        enc.encode_terms({"umask": 0x1FF}, intel)


def test_parse_perf_list_details_formats():
    sky = enc.parse_perf_list_details((DATA / "built_perf_list_details_skylake.txt").read_text())
    assert sky["dtlb_load_misses.walk_completed"] == [("cpu", "event=0x8,period=0x186a3,umask=0xe")]
    assert sky["dtlb_load_misses.walk_active"] == [
        ("cpu", "cmask=1,event=0x8,period=0x186a3,umask=0x10")
    ]
    old = enc.parse_perf_list_details((DATA / "built_perf_list_details_old.txt").read_text())
    assert old["dtlb_load_misses.walk_completed"] == [
        ("cpu", "event=0x12,period=0x186a3,umask=0xe")
    ]
    hybrid = enc.parse_perf_list_details((DATA / "built_perf_list_details_hybrid.txt").read_text())
    assert [p for p, _ in hybrid["dtlb_load_misses.walk_completed"]] == ["cpu_atom", "cpu_core"]


def test_encode_vendor_events_from_details(intel_sys):
    details = enc.parse_perf_list_details(
        (DATA / "built_perf_list_details_skylake.txt").read_text()
    )
    assert enc.encode_event("dtlb_load_misses.walk_completed", details, Host(sys=intel_sys)) == (
        4,
        0x0E08,
        0,
        None,
    )
    assert enc.encode_event("dtlb_load_misses.miss_causes_a_walk", details, Host(sys=intel_sys))[
        :3
    ] == (
        4,
        0x0108,
        0,
    )
    assert enc.encode_event("itlb_misses.walk_completed", details, Host(sys=intel_sys))[:3] == (
        4,
        0x0E85,
        0,
    )
    assert enc.encode_event("dtlb_load_misses.walk_active", details, Host(sys=intel_sys))[:3] == (
        4,
        0x01001008,
        0,
    )
    with pytest.raises(enc.EncodingError, match="perf list"):
        enc.encode_event("mem_inst_retired.stlb_miss_loads", details, Host(sys=intel_sys))


def test_encode_amd_events(tmp_path):
    sysfs = fake_pmu(tmp_path, "cpu", AMD_FORMAT, 4)
    details = enc.parse_perf_list_details((DATA / "built_perf_list_details_zen3.txt").read_text())
    assert enc.encode_event("ls_l1_d_tlb_miss.all", details, Host(sys=sysfs))[:3] == (4, 0xFF45, 0)
    assert enc.encode_event("ls_l1_d_tlb_miss.all_l2_miss", details, Host(sys=sysfs))[:3] == (
        4,
        0xF045,
        0,
    )


def test_encode_hybrid_prefers_the_core_pmu(tmp_path):
    sysfs = fake_pmu(tmp_path, "cpu_core", INTEL_FORMAT, 4)
    fake_pmu(tmp_path, "cpu_atom", INTEL_FORMAT, 10)
    details = enc.parse_perf_list_details((DATA / "built_perf_list_details_hybrid.txt").read_text())
    kind, config, _, note = enc.encode_event(
        "dtlb_load_misses.walk_completed", details, Host(sys=sysfs)
    )
    assert (kind, config) == (4, 0x0E12) and "cpu_core only" in note


def test_encode_raw_pmu_and_generic_strings(intel_sys):
    assert enc.encode_event("cpu/event=0x08,umask=0x0e/", None, Host(sys=intel_sys)) == (
        4,
        0x0E08,
        0,
        None,
    )
    kind, config, _, note = enc.encode_event(
        "cpu/event=0x08,umask=0x10,cmask=1/u", None, Host(sys=intel_sys)
    )
    assert config == 0x01001008 and "':u' dropped" in note
    assert enc.encode_event("r01c2", None, Host(sys=intel_sys)) == (4, 0x01C2, 0, None)
    assert enc.encode_event("cycles:u", None, Host(sys=intel_sys))[:3] == (0, 0, 0)
    assert enc.encode_event("dTLB-load-misses", None, Host(sys=intel_sys)) == (3, 0x10003, 0, None)
    with pytest.raises(enc.EncodingError, match="no PMU 'cpu'"):
        enc.encode_event("cpu/event=0x8/", None, Host(sys=intel_sys / "nowhere"))


def test_resolve_counters_keeps_reasons_and_counter_specs_leaves_them_out(intel_sys):
    choices = [
        EventChoice("cycles", "cycles"),
        EventChoice("stlb_misses", "dtlb_load_misses.walk_completed"),
        EventChoice("walk_cycles", "mem_inst_retired.stlb_miss_loads"),
        EventChoice(
            "itlb_misses", None, ("itlb_misses.walk_completed",), "not supported here: KVM"
        ),
        EventChoice("page_faults", "page-faults"),
    ]
    details = (DATA / "built_perf_list_details_skylake.txt").read_text()
    specs = {
        s.label: s
        for s in enc.resolve_counters(choices, host=Host(sys=intel_sys), details_text=details)
    }
    assert specs["stlb_misses"].as_tuple() == ("stlb_misses", 4, 0x0E08, 0)
    assert "perf list" in specs["walk_cycles"].reason
    assert specs["itlb_misses"].reason == "not supported here: KVM"
    tuples = enc.counter_specs(choices, host=Host(sys=intel_sys), details_text=details)
    assert tuples == [("cycles", 0, 0, 0), ("stlb_misses", 4, 0x0E08, 0), ("page_faults", 1, 2, 0)]


def test_no_pmu_machine_resolves_software_counters_only(tmp_path):
    choices = [
        EventChoice("task_clock", "task-clock"),
        EventChoice("page_faults", "page-faults"),
        EventChoice("stlb_misses", "dtlb_load_misses.walk_completed"),
    ]
    specs = enc.resolve_counters(choices, host=Host(sys=tmp_path), details_text="")
    assert [s.as_tuple() for s in specs if s.reason is None] == [
        ("task_clock", 1, 1, 0),
        ("page_faults", 1, 2, 0),
    ]
