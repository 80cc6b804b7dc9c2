"""hugebench doctor: individual checks on fake trees, the whole report and the CLI on this machine."""

from __future__ import annotations

import os
import shutil

import pytest
from click.testing import CliRunner
from fake_tree import write_tree

from hugebench import doctor
from hugebench.cli.doctor import doctor as doctor_command
from hugebench.kernel import Host
from hugebench.measure.events import EventChoice
from hugebench.measure.perf import PerfCapabilities

needs_perf = pytest.mark.skipif(
    shutil.which("perf") is None, reason="perf not installed (apt-get install linux-perf)"
)


def caps(**kw):
    base = dict(
        perf_path="/usr/bin/perf",
        perf_version="6.1.192",
        missing_reason=None,
        paranoid=2,
        supported=frozenset({"task-clock"}),
        unsupported=(),
        pmu_available=False,
        pmu_reason="KVM guest without vPMU",
        hypervisor="KVM",
        cpu_pmus=(),
    )
    base.update(kw)
    return PerfCapabilities(**base)


def test_hardware_counter_check_wording():
    kvm = doctor.check_hardware_counters(caps())
    assert not kvm.ok and kvm.detail == "not available (KVM guest without vPMU)"
    assert kvm.fix == "run on bare metal or enable vPMU (e.g. -cpu host,pmu=on)"
    metal = doctor.check_hardware_counters(
        caps(pmu_available=True, pmu_reason=None, hypervisor=None, cpu_pmus=("cpu",))
    )
    assert metal.ok and "available" in metal.detail


def test_perf_missing_check_gives_the_package():
    missing = doctor.check_perf(
        caps(perf_path=None, perf_version=None, missing_reason="perf not found on PATH")
    )
    assert not missing.ok and missing.fix == "apt-get install linux-perf"


def test_tlb_events_check():
    none = doctor.check_tlb_events(
        [EventChoice("stlb_misses", None, (), "not supported here: KVM guest without vPMU")]
    )
    assert not none.ok and "KVM guest without vPMU" in none.detail
    some = doctor.check_tlb_events(
        [
            EventChoice("stlb_misses", "dtlb_load_misses.walk_completed"),
            EventChoice("walk_cycles", None, (), "x"),
        ]
    )
    assert (
        some.ok
        and "stlb_misses=dtlb_load_misses.walk_completed" in some.detail
        and "walk_cycles" in some.detail
    )


def test_thp_mthp_and_hugetlb_checks_on_fake_trees(tmp_path):
    write_tree(
        tmp_path,
        {
            "sys/kernel/mm/transparent_hugepage/enabled": "always [madvise] never\n",
            "sys/kernel/mm/transparent_hugepage/defrag": "[madvise] never\n",
            "sys/kernel/mm/transparent_hugepage/hugepages-64kB/enabled": "always inherit madvise [never]\n",
            "sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages": "0\n",
            "sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages": "0\n",
            "proc/sys/vm/nr_hugepages": "0\n",
        },
    )
    thp = tmp_path / "sys/kernel/mm/transparent_hugepage"
    root = os.geteuid() == 0
    thp_check = doctor.check_thp(Host(sys=tmp_path / "sys"))
    assert "[madvise]" in thp_check.detail and thp_check.ok == os.access(thp / "enabled", os.W_OK)
    assert doctor.check_mthp(Host(sys=tmp_path / "sys")).detail == "64kB: never"
    hugetlb = doctor.check_hugetlb(Host(tmp_path / "proc", tmp_path / "sys"))
    assert "2048kB: nr=0 free=0" in hugetlb.detail
    assert hugetlb.ok or not root
    assert not doctor.check_thp(Host(sys=tmp_path / "nowhere")).ok


def test_allocator_rows_in_any_shape():
    assert doctor._as_check(
        ("jemalloc", False, "library not found", "apt-get install libjemalloc2")
    ) == doctor.Check(
        "allocator jemalloc", False, "library not found", "apt-get install libjemalloc2"
    )
    assert doctor._as_check({"name": "x", "found": True, "detail": "d"}).ok
    assert all(isinstance(c, doctor.Check) for c in doctor.allocator_checks())


def test_the_built_extension_and_the_allocator_registry_are_found():
    """The doctor's own imports work in this build (a package move once left them one level short, and
    the doctor then reported a built extension as missing)."""
    assert doctor.check_core().ok, doctor.check_core()
    checks = doctor.allocator_checks()
    assert checks and not any(c.name == "allocators" and not c.ok for c in checks), checks


@needs_perf
@pytest.mark.needs_perf
def test_doctor_report_on_this_machine():
    checks = {c.name: c for c in doctor.doctor_report()}
    assert checks["perf tool"].ok and "(perf " in checks["perf tool"].detail
    hw = checks["hardware counters"]
    from hugebench.measure.perf import detect

    if not detect().pmu_available:  # the dev VM (KVM without vPMU)
        assert not hw.ok and hw.detail.startswith("not available (") and "vPMU" in hw.fix
        assert not checks["TLB events"].ok
    else:
        assert hw.ok
    assert checks["root"].ok == (os.geteuid() == 0)
    assert "_core extension" in checks
    from hugebench.kernel import reporting

    told = checks["free page reporting"].detail
    if reporting.page_reporting()["active"] and os.geteuid() == 0:  # measured, not skipped
        assert "ms with reporting on" in told and "held off" in told, told


def test_doctor_report_without_perf():
    checks = {c.name: c for c in doctor.doctor_report(perf_bin="no-such-perf-binary", quick=True)}
    assert not checks["perf tool"].ok and "linux-perf" in checks["perf tool"].fix


def test_doctor_cli_prints_one_table():
    result = CliRunner().invoke(doctor_command, ["--quick"])
    assert result.exit_code == 0, result.output
    assert "hardware counters" in result.output and "THP sysfs" in result.output
    from hugebench.kernel import reporting

    if reporting.page_reporting()["active"]:  # --quick skips its measurement, and says so
        told = doctor.check_page_reporting(quick=True).detail
        assert "its cost not measured (--quick" in told, told
    assert "[madvise]" in result.output or "madvise" in result.output


def test_doctor_says_what_sudo_means_for_the_results(monkeypatch):
    """Under sudo the results are root's (issue 43); without sudo installed the fix does not assume it."""
    from hugebench.doctor import check_root

    monkeypatch.setattr("os.geteuid", lambda: 0)
    check = check_root({"SUDO_USER": "alice", "PATH": "/usr/bin"})
    assert check.ok and "SUDO_USER=alice" in check.detail and "root's, not alice's" in check.detail
    assert check.fix == "to hand a results directory back: sudo chown -R alice: DIR"
    assert "SUDO_USER" not in check_root({"PATH": "/usr/bin"}).detail
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    assert "sudo is not installed here: as root (su -)" in check_root({"PATH": "/nonexistent"}).fix
