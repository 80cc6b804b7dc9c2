"""perf stat CSV parsing (captured on the dev VM and hand-built PMU outputs), argv, detection, row columns."""

from __future__ import annotations

import math
import shutil

import pytest
from paths import TESTS

from hugebench.measure import perf
from hugebench.measure.events import CpuInfo, EventChoice, choose_events

DATA = TESTS / "data" / "perf"
needs_perf = pytest.mark.skipif(
    shutil.which("perf") is None, reason="perf not installed (apt-get install linux-perf)"
)


def load(name: str) -> str:
    return (DATA / name).read_text()


# ---- captured on this VM (perf 6.1, no vPMU) ----


def test_captured_software_events_are_real_counts():
    counters = perf.parse_perf_csv(load("captured_software_events.csv"))
    assert counters["page-faults"].value == 25764
    assert (
        counters["minor-faults"].value == 25764
    )  # 64 MiB bytearray: ~16k faults plus interpreter start-up
    assert counters["major-faults"].value == 0
    assert counters["task-clock"].unit == "ns" and counters["task-clock"].value == pytest.approx(
        190.05e6
    )
    assert all(c.running_pct == 100.0 and not c.multiplexed for c in counters.values())


def test_captured_not_supported_hardware_events_have_reason_and_no_value():
    counters = perf.parse_perf_csv(load("captured_kvm_no_pmu.csv"))
    for event in ("cycles", "instructions", "dTLB-load-misses", "iTLB-load-misses"):
        assert counters[event].value is None
        assert "not supported" in counters[event].reason
    assert counters["page-faults"].value == 49 and counters["page-faults"].reason is None


def test_captured_repeat_variance_column_is_skipped_into_variance_pct():
    counters = perf.parse_perf_csv(load("captured_repeat_variance.csv"))
    assert counters["page-faults"].value == 48
    assert counters["page-faults"].variance_pct == pytest.approx(0.69)
    assert counters["page-faults"].running_pct == 100.0
    assert counters["cycles"].value is None


def test_captured_interval_rows_sum_and_not_counted_intervals_add_nothing():
    counters = perf.parse_perf_csv(load("captured_interval.csv"))
    assert counters["page-faults"].value == 77 + 0
    assert counters["page-faults"].rows == 3
    assert counters["task-clock"].value == pytest.approx((0.50 + 0.05) * 1e6)


def test_captured_per_cpu_rows_are_summed():
    counters = perf.parse_perf_csv(load("captured_per_cpu.csv"))
    assert counters["context-switches"].value == 31
    assert counters["task-clock"].value == pytest.approx((51.35 + 51.37) * 1e6)


def test_captured_modifiers_keep_the_printed_event_name():
    counters = perf.parse_perf_csv(load("captured_modifiers.csv"))
    assert counters["cycles:u"].value is None
    assert counters["page-faults:u"].value == 46


# ---- hand-built PMU outputs ----


def test_intel_multiplexed_counters_are_flagged_with_running_pct():
    counters = perf.parse_perf_csv(load("built_intel_skylake_multiplexed.csv"))
    cycles = counters["cycles"]
    assert (
        cycles.value == 8021337412
        and cycles.multiplexed
        and cycles.running_pct == pytest.approx(66.67)
    )
    assert (
        counters["instructions"].value == 5012345678
    )  # the metric columns (IPC) are not the value
    assert counters["dtlb_load_misses.walk_active"].value == 812345678
    assert not counters["page-faults"].multiplexed


def test_amd_events_and_labels():
    cpu = CpuInfo("amd", "AuthenticAMD", 0x19, 0x21)
    supported = {
        "cycles",
        "instructions",
        "ls_l1_d_tlb_miss.all",
        "ls_l1_d_tlb_miss.all_l2_miss",
        "bp_l1_tlb_miss_l2_tlb_miss",
        "task-clock",
        "page-faults",
    }
    choices = choose_events(cpu, supported)
    counters = perf.parse_perf_csv(load("built_amd_zen3.csv"), choices)
    assert counters["stlb_misses"].value == 45678901
    assert counters["dtlb_load_misses"].value == 98765432
    assert counters["itlb_misses"].value == 23456
    assert counters["walk_cycles"].value is None and "AMD" in counters["walk_cycles"].reason
    assert counters["minor_faults"].value is None  # not in `supported`, so not chosen
    assert counters["page_faults"].value == 65536


def test_hybrid_rows_merge_into_the_plain_event_name():
    counters = perf.parse_perf_csv(load("built_intel_hybrid.csv"))
    assert counters["cycles"].value == 1234567890  # the <not counted> atom row adds nothing
    assert counters["dtlb_load_misses.walk_completed"].value == 345678 + 1200
    assert counters["cycles"].rows == 2


def test_raw_events_with_commas_and_not_counted():
    counters = perf.parse_perf_csv(load("built_raw_events.csv"))
    assert counters["cpu/event=0x08,umask=0x0e/"].value == 19123456
    assert counters["cpu/event=0x08,umask=0x10,cmask=0x1/u"].value == 812345678
    assert counters["r01c2"].value == 7777
    stlb_hit = counters["dtlb_load_misses.stlb_hit"]
    assert stlb_hit.value is None and stlb_hit.reason.startswith("not counted")


def test_semicolon_separator_and_garbage_lines():
    text = "# comment\n\nError: something\n0.34;msec;task-clock;338389;100.00;0.519;CPUs utilized\n"
    counters = perf.parse_perf_csv(text, sep=";")
    assert list(counters) == ["task-clock"]
    assert counters["task-clock"].value == pytest.approx(340000.0)


def test_by_label_reports_missing_and_unsupported_labels():
    choices = [
        EventChoice("cycles", None, ("cycles",), "not supported here: KVM guest without vPMU"),
        EventChoice("page_faults", "page-faults", ("page-faults",)),
        EventChoice("context_switches", "context-switches", ("context-switches",)),
    ]
    counters = perf.by_label(choices, perf.parse_perf_csv("12,,page-faults,100,100.00,,\n"))
    assert counters["cycles"].reason == "not supported here: KVM guest without vPMU"
    assert counters["page_faults"].value == 12
    assert (
        counters["context_switches"].value is None
        and "missing" in counters["context_switches"].reason
    )


# ---- argv, columns, derived metrics ----


def test_perf_stat_argv_shape():
    argv = perf.perf_stat_argv(
        "/usr/bin/perf", ["cycles", "cpu/event=0x8,umask=0xe/"], "/tmp/out.csv"
    )
    assert argv == [
        "/usr/bin/perf",
        "stat",
        "-x,",
        "--no-big-num",
        "-o",
        "/tmp/out.csv",
        "-e",
        "cycles,cpu/event=0x8,umask=0xe/",
        "--",
    ]
    with pytest.raises(ValueError):
        perf.perf_stat_argv("perf", [], "x")


def test_row_columns_for_perf_counters():
    counters = {
        "cycles": perf.Counter(None, reason="not supported here"),
        "page_faults": perf.Counter(10.0, running_pct=100.0),
    }
    row = perf.row_columns("perf", counters)
    assert math.isnan(row["perf.cycles"]) and row["perf.cycles.reason"] == "not supported here"
    assert math.isnan(row["perf.cycles.running_pct"])
    assert row["perf.page_faults"] == 10.0 and row["perf.page_faults.reason"] is None
    assert row["perf.page_faults.running_pct"] == 100.0


def test_row_columns_for_in_process_results():
    results = {
        "cycles": {
            "value": 1500.0,
            "raw_value": 1000,
            "time_enabled_ns": 300,
            "time_running_ns": 200,
            "error": None,
        },
        "stlb_misses": {
            "value": None,
            "raw_value": None,
            "time_enabled_ns": None,
            "time_running_ns": None,
            "error": "perf_event_open failed: No such file or directory (errno 2)",
        },
        "idle": {
            "value": 0.0,
            "raw_value": 0,
            "time_enabled_ns": 500,
            "time_running_ns": 0,
            "error": None,
        },
    }
    row = perf.row_columns("pmu.", results)
    assert row["pmu.cycles"] == 1500.0 and row["pmu.cycles.running_pct"] == pytest.approx(200 / 3)
    assert math.isnan(row["pmu.stlb_misses"]) and "perf_event_open" in row["pmu.stlb_misses.reason"]
    assert math.isnan(row["pmu.idle"]) and row["pmu.idle.reason"].startswith("not counted")


def test_derive_metrics_and_nan_when_inputs_missing():
    row = {
        "pmu.cycles": 4.0e9,
        "pmu.stlb_misses": 2.0e6,
        "pmu.walk_cycles": 1.0e9,
        "pmu.page_faults": 512.0,
        "elapsed_ns": 1.0e9,
    }
    d = perf.derive(row, ops=1e7, bytes_touched=2 * 2**30)
    assert d["ns_per_op"] == pytest.approx(100.0)
    assert d["cycles_per_op"] == pytest.approx(400.0)
    assert d["stlb_misses_per_1k_ops"] == pytest.approx(200.0)
    assert d["walk_cycles_share"] == pytest.approx(0.25)
    assert d["faults_per_gib"] == pytest.approx(256.0)
    bare = perf.derive(
        {"pmu.cycles": math.nan, "pmu.minor_faults": 10, "pmu.major_faults": 0},
        ops=10,
        bytes_touched=2**30,
        elapsed_ns=50.0,
    )
    assert bare["ns_per_op"] == 5.0 and bare["faults_per_gib"] == 10.0
    assert all(
        math.isnan(bare[k])
        for k in ("cycles_per_op", "stlb_misses_per_1k_ops", "walk_cycles_share")
    )


# ---- against the real perf on this machine ----


@needs_perf
@pytest.mark.needs_perf
def test_probe_separates_unknown_and_unsupported_events():
    supported, reasons = perf.probe_events(
        shutil.which("perf"), ["task-clock", "page-faults", "no_such_event_xyz"]
    )
    assert {"task-clock", "page-faults"} <= supported
    assert "no_such_event_xyz" not in supported and "syntax error" in reasons["no_such_event_xyz"]


@needs_perf
@pytest.mark.needs_perf
def test_detect_on_this_machine():
    caps = perf.detect()
    assert caps.available and caps.perf_version and caps.path
    assert {"task-clock", "page-faults", "minor-faults"} <= caps.supported
    assert caps.paranoid is not None
    if not caps.pmu_available:  # the dev VM: KVM without vPMU
        assert "cycles" not in caps.supported and caps.pmu_reason
        assert caps.reason_for("cycles")
    assert perf.detect(perf_bin="no-such-perf-binary").missing_reason.startswith("perf not found")


@needs_perf
@pytest.mark.needs_perf
def test_wrapping_a_command_and_parsing_its_counts(tmp_path):
    import subprocess
    import sys

    out = tmp_path / "stat.csv"
    argv = perf.perf_stat_argv("perf", ["page-faults", "minor-faults", "task-clock"], out)
    code = (
        "import mmap; m = mmap.mmap(-1, 32 << 20, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS); m.madvise(mmap.MADV_NOHUGEPAGE)\n"
        "for i in range(0, len(m), 4096): m[i] = 1"
    )
    subprocess.run(
        argv + [sys.executable, "-c", code],
        check=True,
        env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"},
    )
    counters = perf.parse_perf_csv(out.read_text())
    assert counters["minor-faults"].value >= 8192  # 32 MiB of 4 KiB pages
    assert counters["task-clock"].value > 0


def test_pmu_columns_keep_reasons_of_labels_left_out_of_the_counters():
    from hugebench.measure.encoding import CounterSpec

    resolved = [
        CounterSpec("cycles", None, reason="not supported here: KVM guest without vPMU"),
        CounterSpec("page_faults", "page-faults", 1, 2, 0),
        CounterSpec("minor_faults", "minor-faults", 1, 5, 0),
    ]
    results = {
        "page_faults": {
            "value": 7.0,
            "raw_value": 7,
            "time_enabled_ns": 10,
            "time_running_ns": 10,
            "error": None,
        }
    }
    row = perf.pmu_columns(resolved, results)
    assert math.isnan(row["pmu.cycles"]) and row["pmu.cycles.reason"].endswith("vPMU")
    assert row["pmu.page_faults"] == 7.0 and row["pmu.page_faults.running_pct"] == 100.0
    assert math.isnan(row["pmu.minor_faults"]) and "no result" in row["pmu.minor_faults.reason"]
