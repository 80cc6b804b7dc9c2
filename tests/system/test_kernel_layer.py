"""The kernel-reading layer: it is the only code that reads /proc and /sys, and its parsers on strings."""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path

import pytest

from hugebench import kernel
from hugebench.kernel import LOCAL, Host

_watching: list[set] = []


def _first_project_module() -> str | None:
    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        if name.startswith("hugebench") or name == "conftest" or name.startswith("test_"):
            return name
        frame = frame.f_back
    return None


def _audit(event: str, args: tuple) -> None:
    if not _watching or event != "open" or not isinstance(args[0], (str, os.PathLike)):
        return
    path, mode = str(args[0]), args[1] or "r"
    if any(c in str(mode) for c in "wa+"):
        return  # writing is the system package's job
    if (
        not path.startswith(("/proc/", "/sys/")) and "/fake/" not in path
    ):  # the real or the fake_sys tree
        return
    module = _first_project_module()
    if module and module.startswith("hugebench") and not module.startswith("hugebench.kernel"):
        _watching[-1].add((module, path))


sys.addaudithook(_audit)


@pytest.fixture
def opened_outside_kernel():
    offenders: set = set()
    _watching.append(offenders)
    yield offenders
    _watching.pop()


def test_only_the_kernel_layer_reads_proc_and_sys(fake_sys, opened_outside_kernel):
    from hugebench import doctor, system
    from hugebench.machine import metadata
    from hugebench.measure import phases
    from hugebench.measure.perf import PerfCapabilities
    from hugebench.run.worker import WorkerRequest, run

    caps = PerfCapabilities(
        None,
        None,
        "perf not probed in this test",
        None,
        frozenset(),
        (),
        False,
        "not probed",
        None,
        (),
    )
    for host in (LOCAL, fake_sys.host):
        metadata.machine_context(perf_caps=caps, host=host)
        (
            doctor.check_thp(host),
            doctor.check_mthp(host),
            doctor.check_hugetlb(host),
        )
        system.show(host)
        with system.SystemState(host, fake_sys.journal_path) as state:
            state.snapshot()
    recorder = phases.PhaseRecorder("touch")
    recorder("touch", "begin"), recorder("touch", "end")
    request = WorkerRequest(
        run={"workload": "hashlookup", "params": {"keys": 1000, "set_kind": "flat"}},
        allocator="glibc",
    )
    row = run(request)
    assert row["lookups"] == 1000 and row["allocator_mapped"] == "glibc"
    assert not opened_outside_kernel, (
        f"read /proc or /sys outside hugebench.kernel: {sorted(opened_outside_kernel)}"
    )


def test_the_audit_sees_a_read_outside_the_layer(opened_outside_kernel):
    exec("open('/proc/meminfo').close()", {"__name__": "hugebench.somewhere"})
    assert opened_outside_kernel == {("hugebench.somewhere", "/proc/meminfo")}
    opened_outside_kernel.clear()


def test_parsers_on_strings():
    reading = kernel.parse_choice("always [madvise] never\n")
    assert reading.value == "madvise" and reading.choices == ("always", "madvise", "never")
    assert kernel.selected("garbage words") is None and kernel.selected(None) is None
    assert kernel.parse_kb_fields("MemTotal:  10 kB\nHugePages_Total: 0\n") == {"MemTotal": 10240}
    assert kernel.parse_vmstat("a 1\nb -2\nc x\n") == {"a": 1, "b": -2}
    delta = kernel.counter_delta({"a": 1, "b": 2}, {"a": 4, "c": 9}, ("a", "b"))
    assert delta["a"] == 3 and math.isnan(delta["b"])
    assert kernel.counter_delta({"a": 1}, {"a": 3, "b": 5}) == {"a": 2}
    zones = kernel.parse_buddyinfo("Node 0, zone   Normal  1 0 0 0 0 0 0 0 0 2 1\n")
    summary = kernel.summarize_buddyinfo(zones, 4096)
    assert summary["free_2mib_blocks"] == 2 + 2 and summary["free_kib"] == 4 + 2 * 2048 + 4096
    assert kernel.parse_pmu_format("config:0-7,32-35") == [("config", 0, 7), ("config", 32, 35)]


def test_readers_degrade_on_a_kernel_without_the_files(tmp_path):
    empty = Host(tmp_path, tmp_path)
    assert kernel.read_meminfo(empty) == {} and kernel.mem_available(empty) is None
    assert kernel.thp_modes(empty)["enabled"] is None and kernel.mthp_modes(empty) == {}
    assert kernel.read_hugetlb_pools(empty) == {} and kernel.cpu_caches(empty) == []
    assert (
        kernel.read_pmu_format("cpu", empty) is None and kernel.read_pmu_type("cpu", empty) is None
    )
    assert kernel.process_start_ticks(2**22 + 7, empty) is None
    with pytest.raises(FileNotFoundError):
        kernel.read_vmstat(empty)


def test_readers_on_this_kernel():
    meminfo = kernel.read_meminfo()
    assert meminfo["MemTotal"] >= meminfo["MemAvailable"] > 0
    assert kernel.process_start_ticks(os.getpid()) > 0
    assert "thp_fault_alloc" in kernel.read_thp_vmstat()
    assert Path("/proc/self/maps").exists() and "[stack]" in kernel.read_maps()
