"""Shared fixtures and the skip logic for the privilege markers.

`fake_sys` builds a /sys + /proc tree under tmp_path shaped like this machine's kernel 6.18, and gives its
`Host` (`fake_sys.host`: the fake roots, `FakeKernel` as the knob writer) so writes behave like sysfs: a bracketed file takes one of its words and
re-brackets it, integer files check their range, hugetlb pools grant at most `pool_capacity` pages.
A test can make it misbehave: `ignore_writes` (the kernel keeps the old value), `refuse_writes` (errno).
"""

from __future__ import annotations

import errno
import functools
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from hugebench.kernel import Host
from hugebench.kernel.parse import selected

THP = "sys/kernel/mm/transparent_hugepage"
HUGETLB = "sys/kernel/mm/hugepages"
REPORTING = "sys/module/page_reporting/parameters"
MTHP_SIZES_KB = (16, 32, 64, 128, 256, 512, 1024, 2048)
MTHP_STATS = (
    "anon_fault_alloc",
    "anon_fault_fallback",
    "anon_fault_fallback_charge",
    "split",
    "swpout",
)

# pytest imports readline early (_pytest.capture), and GNU readline, where TERM names a terminal, exports
# COLUMNS and LINES into the process's C environment (not os.environ): every process a test starts would
# then see COLUMNS=80 and the CLI wrap its messages, as on no user's pipe. Undone here, once.
for _name in ("COLUMNS", "LINES"):
    if _name not in os.environ:
        os.unsetenv(_name)

FAKE_FILES = {
    f"{THP}/enabled": "always [madvise] never",
    f"{THP}/defrag": "always defer defer+madvise [madvise] never",
    f"{THP}/shmem_enabled": "always within_size advise [never] deny force",
    f"{THP}/hpage_pmd_size": "2097152",
    f"{THP}/use_zero_page": "1",
    f"{THP}/khugepaged/defrag": "1",
    f"{THP}/khugepaged/max_ptes_none": "511",
    f"{THP}/khugepaged/max_ptes_swap": "64",
    f"{THP}/khugepaged/max_ptes_shared": "256",
    f"{THP}/khugepaged/pages_to_scan": "4096",
    f"{THP}/khugepaged/scan_sleep_millisecs": "10000",
    f"{THP}/khugepaged/alloc_sleep_millisecs": "60000",
    f"{THP}/khugepaged/full_scans": "0",
    f"{THP}/khugepaged/pages_collapsed": "0",
    # 6.18 has an 8kB directory with shmem_enabled only: it must not become an mTHP knob.
    f"{THP}/hugepages-8kB/shmem_enabled": "always inherit within_size advise [never]",
    "proc/sys/vm/nr_hugepages": "0",
    "proc/sys/vm/nr_overcommit_hugepages": "0",
    "proc/sys/vm/compact_memory": "",
    "proc/sys/vm/compact_unevictable_allowed": "1",
    "proc/sys/vm/percpu_pagelist_high_fraction": "0",
    "proc/sys/vm/compaction_proactiveness": "20",
    "proc/sys/vm/drop_caches": "",
    "proc/meminfo": "MemTotal:       24000000 kB\nHugePages_Total:       0\nHugepagesize:       2048 kB\n",
    "proc/buddyinfo": (
        "Node 0, zone      DMA      0      0      0      0      0      0      0      0      1      1      3 \n"
        "Node 0, zone    DMA32      1      2      4      2      5      4      3      3      4      2    752 \n"
        "Node 0, zone   Normal    221   1501    577    340     70     41    173    109     13      9     37 \n"
    ),
    "proc/vmstat": "nr_free_pages 1074996\nthp_fault_alloc 32\nthp_fault_fallback 3\nthp_collapse_alloc 0\n",
    # free page reporting as this KVM guest has it: a virtio balloon with the REPORTING feature (bit 5)
    f"{REPORTING}/page_reporting_order": "9",
    f"{REPORTING}/reported_kib": "3977904",
    f"{REPORTING}/passes": "60",
    f"{REPORTING}/free_bitmap_enable": "Y",
    "sys/bus/virtio/devices/virtio0/device": "0x0005",
    "sys/bus/virtio/devices/virtio0/features": "0110010100000000000000000000000010000000",
    "sys/bus/virtio/devices/virtio0/driver/bind": "",
    "sys/bus/virtio/devices/virtio1/device": "0x0002",
    "sys/bus/virtio/devices/virtio1/features": "0010001001100100000000000000000100100000",
    "sys/bus/virtio/devices/virtio1/driver/bind": "",
}
INT_LIMITS = {  # what the kernel's store handlers accept (EINVAL otherwise)
    "use_zero_page": (0, 1),
    "defrag": (0, 1),
    "max_ptes_none": (0, 511),
    "max_ptes_swap": (0, 511),
    "max_ptes_shared": (0, 511),
    "pages_to_scan": (1, 2**32 - 1),
    "page_reporting_order": (0, 11),  # 6.18 here: 0..NR_PAGE_ORDERS (11 reports nothing)
}


def _fake_files() -> dict[str, str]:
    files = dict(FAKE_FILES)
    for size in MTHP_SIZES_KB:
        d = f"{THP}/hugepages-{size}kB"
        active = "inherit" if size == 2048 else "never"
        choices = ("always", "inherit", "madvise", "never")
        files[f"{d}/enabled"] = " ".join(f"[{c}]" if c == active else c for c in choices)
        files[f"{d}/shmem_enabled"] = "always inherit within_size advise [never]"
        for counter in MTHP_STATS:
            files[f"{d}/stats/{counter}"] = "0"
    for size in (2048, 1048576):
        for name in ("nr", "free", "surplus", "resv", "nr_overcommit"):
            files[f"{HUGETLB}/hugepages-{size}kB/{name}_hugepages"] = "0"
    return files


class FakeKernel:
    """A SysfsIO over the fake tree that answers writes the way sysfs does."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.sys_root, self.proc_root = self.root / "sys", self.root / "proc"
        self.host = Host(
            self.proc_root, self.sys_root, self
        )  # the fake machine, written through self
        self.pool_capacity = {"2048kB": 1_000_000, "1048576kB": 1_000_000}
        self.ignore_writes: set[str] = set()  # relative paths whose writes are silently dropped
        self.refuse_writes: dict[str, int] = {}  # relative path -> errno
        self.writes: list[tuple[str, str]] = []

    def build(self) -> FakeKernel:
        for rel, text in _fake_files().items():
            path = self.root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text + ("\n" if text and not text.endswith("\n") else ""))
        # The CPU is this machine's: perf detection under the fake roots sees the CPU it really runs on.
        (self.proc_root / "cpuinfo").write_text(Path("/proc/cpuinfo").read_text())
        return self

    def host_at(self) -> classmethod:
        """A ``Host.at`` whose hosts write through this fake kernel (paths outside its tree: plain writes)."""
        kernel = self

        def at(cls, sys_root=None, proc_root=None) -> Host:
            return cls(Path(proc_root or "/proc"), Path(sys_root or "/sys"), kernel)

        return classmethod(at)

    def rel(self, path: Path) -> str:
        return str(Path(path).relative_to(self.root))

    def read(self, rel: str) -> str:
        return (self.root / rel).read_text().strip()

    def files(self) -> dict[str, str]:
        """Every file of the fake tree and its content: 'exactly as before' compares these."""
        return {self.rel(p): p.read_text() for p in sorted(self.root.rglob("*")) if p.is_file()}

    def read_text(self, path: Path) -> str:
        return Path(path).read_text()

    def write_text(self, path: Path, text: str) -> None:
        path = Path(path)
        if self.root not in path.parents:
            path.write_text(text)
            return
        rel, value = self.rel(path), text.strip()
        self.writes.append((rel, value))
        if rel in self.refuse_writes:
            raise OSError(self.refuse_writes[rel], os.strerror(self.refuse_writes[rel]), str(path))
        if rel in self.ignore_writes:
            return
        if rel.endswith("nr_hugepages"):
            self._resize_pool(rel, int(value))
        elif "[" in path.read_text():
            self._choose(path, value)
        elif path.read_text().strip().lstrip("-").isdigit():
            self._store_int(path, value)
        else:
            path.write_text(text)  # write-only triggers: compact_memory, drop_caches

    def _choose(self, path: Path, value: str) -> None:
        words = [w.strip("[]") for w in path.read_text().split()]
        if value not in words:
            raise OSError(errno.EINVAL, "Invalid argument", str(path))
        path.write_text(" ".join(f"[{w}]" if w == value else w for w in words) + "\n")

    def _store_int(self, path: Path, value: str) -> None:
        lo, hi = INT_LIMITS.get(path.name, (0, 2**32 - 1))
        if not value.isdigit() or not lo <= int(value) <= hi:
            raise OSError(errno.EINVAL, "Invalid argument", str(path))
        path.write_text(value + "\n")

    def _resize_pool(self, rel: str, asked: int) -> None:
        size = (
            "2048kB" if rel.startswith("proc/") else rel.split("/")[-2].removeprefix("hugepages-")
        )
        got = min(asked, self.pool_capacity[size])
        targets = [
            f"{HUGETLB}/hugepages-{size}/nr_hugepages",
            f"{HUGETLB}/hugepages-{size}/free_hugepages",
        ]
        if size == "2048kB":  # /proc/sys/vm/nr_hugepages is the default-size pool, the same counter
            targets.append("proc/sys/vm/nr_hugepages")
        for target in targets:
            (self.root / target).write_text(f"{got}\n")


@pytest.fixture
def fake_sys(tmp_path, monkeypatch) -> FakeKernel:
    """A fake /sys + /proc answering like kernel 6.18: ``fake_sys.host`` (its roots are ``sys_root`` and
    ``proc_root``), and the writer of every host an entry point builds (``Host.at``); HUGEBENCH_JOURNAL
    points into tmp_path so no test touches the real journal."""
    kernel = FakeKernel(tmp_path / "fake").build()
    monkeypatch.setattr(Host, "at", kernel.host_at())
    monkeypatch.setenv("HUGEBENCH_JOURNAL", str(tmp_path / "journal.json"))
    kernel.journal_path = tmp_path / "journal.json"
    return kernel


@pytest.fixture(autouse=True)
def _private_sweep_lock(tmp_path, monkeypatch):
    """Each test's sweeps take their own host lock, so a test never waits for (or refuses) another session's
    sweep; the lock's own tests point HUGEBENCH_LOCK where they need it."""
    monkeypatch.setenv("HUGEBENCH_LOCK", str(tmp_path / "hugebench.lock"))


# -- markers that skip with a reason -------------------------------------------------------------

REAL_THP_ENABLED = Path("/sys/kernel/mm/transparent_hugepage/enabled")


def _perf_stat(event: str) -> subprocess.CompletedProcess | None:
    if shutil.which("perf") is None:
        return None
    try:
        return subprocess.run(
            ["perf", "stat", "-x,", "-e", event, "--", "true"],
            capture_output=True,
            text=True,
            timeout=20,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None


@functools.cache
def missing_capability(marker: str) -> str | None:
    """Why the capability behind `marker` is missing here, or None when it is available."""
    if marker == "needs_root":
        return (
            None
            if os.geteuid() == 0
            else "needs root (writes kernel knobs): run the tests with sudo"
        )
    if marker == "needs_thp":
        if not REAL_THP_ENABLED.exists():
            return f"kernel without transparent huge pages ({REAL_THP_ENABLED} missing)"
        return (
            None
            if os.access(REAL_THP_ENABLED, os.W_OK)
            else f"{REAL_THP_ENABLED} is not writable here"
        )
    if marker == "needs_perf":
        result = _perf_stat("task-clock")
        return (
            None
            if result is not None and result.returncode == 0
            else "the perf tool is missing or does not run"
        )
    if marker == "needs_pmu":
        result = _perf_stat("cycles")
        if result is None or result.returncode != 0:
            return "cannot check the PMU: perf is missing or does not run"
        first_field = (result.stderr.strip().splitlines() or [""])[-1].split(",")[0]
        return (
            None
            if first_field.isdigit()
            else f"no hardware counters (perf stat -e cycles: {first_field})"
        )
    return None


def pytest_configure(config: pytest.Config) -> None:
    """A session of both the fast and the real lanes runs the fast one beside it (tests/fast_lane.py)."""
    import fast_lane

    config.pluginmanager.register(fast_lane.FastLaneBeside(), "hugebench-fast-lane")


def pytest_collection_finish(session: pytest.Session) -> None:
    """The session takes its turn (a root session with a test outside the fast lane), then the wheel tests'
    builds start, in the background (tests/wheel_build.py); --collect-only runs nothing."""
    import wheel_build

    if session.config.option.collectonly:
        return
    if not _fast_only(session):
        _take_turn(session)
    wheel_build.start({item.path.name for item in session.items})


_SESSION_LOCK: list = []  # the open lock file, held until the process exits


def _take_turn(session: pytest.Session) -> None:
    """Test sessions run as root take turns: each puts kernel knobs back as it found them, and two at once
    restore each other's values (a session beside another left THP at never for half an hour). The tests'
    own sweeps keep private locks (`_private_sweep_lock`), so this one file is the turn. A session of the
    fast lane alone writes no knob and reads none, so it runs beside any other."""
    import fcntl

    import fast_lane

    if os.geteuid() != 0:
        return  # a user's tests cannot write the knobs
    if fast_lane.in_child():
        return  # the session this one runs beside holds the turn
    _FOUND_DIR.mkdir(parents=True, exist_ok=True)
    handle = open(_FOUND_DIR.parent / "test-sessions.lock", "a+")  # held until the process exits
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(
                f"waiting for another test session run as root ({handle.name}) to finish"
            )
        fcntl.flock(handle, fcntl.LOCK_EX)
    _SESSION_LOCK.append(handle)


def pytest_sessionfinish(session: pytest.Session) -> None:
    import wheel_build

    wheel_build.stop()


def pytest_runtest_setup(item: pytest.Item) -> None:
    for marker in ("needs_root", "needs_thp", "needs_perf", "needs_pmu"):
        if item.get_closest_marker(marker) is not None:
            reason = missing_capability(marker)
            if reason:
                pytest.skip(reason)


# -- the lanes ------------------------------------------------------------------------------------
# Every test is in the fast lane unless it is marked by what it needs or starts (pyproject.toml's markers):
# by its own marks, by the fixtures it uses, by its room, or by the table below. `pytest -m fast` runs the
# logic alone (fake kernel trees, no real sweep, try, server or wheel) in a few minutes, beside any other
# session; `pytest -m "not fast"` the real lanes; plain `pytest` all (docs/architecture.md, "Tests in lanes").

HEAVY_MARKS = (
    "needs_root",
    "needs_thp",
    "needs_perf",
    "needs_pmu",
    "slow",
    "live_kernel",
    "real_sweep",
    "real_try",
    "server",
    "cluster",
    "wheel",
)
HEAVY_FIXTURES = {  # a fixture -> the lane of a test that uses it
    "unprivileged": "live_kernel",  # runs hugebench as another user, on the real machine
    "thp_found_madvise": "live_kernel",
}
HEAVY_ROOMS = {"cluster": "cluster"}  # tests/<room>/ -> its lane
# rooms whose real tests write no kernel knob of this machine and run beside the real lanes, with the fast
# one (tests/fast_lane.py): the cluster lab's machines are fake kernels (cluster_lab.Lab), its ssh and SLURM
# sweeps have no knob axis, and every sweep of theirs takes its own lock and journal
BESIDE_ROOMS = {"cluster"}
# Tests whose own marks do not say what they start (test file, or file::test) -> their lane: the ones that read
# the live kernel (found by the guard below: a test of the fast lane that opens a live kernel file fails and
# names itself for this table) and the slow ones (measured with --durations). A test moved to fake_sys.host
# leaves this table for the fast lane.
HEAVY_TESTS: dict[str, str] = {
    "command/test_allocator_elf.py::test_try_refuses_an_allocator_that_is_not_one_naming_the_option": "live_kernel",
    "command/test_command_parts.py::test_sampler_sees_huge_pages_of_a_real_child": "live_kernel",
    "command/test_command_program.py::test_a_real_program_that_frees_before_exit": "live_kernel",
    "command/test_command_program.py::test_a_templated_program_is_resolved_when_the_run_starts": "live_kernel",
    "command/test_command_program.py::test_binary_output_keeps_a_bounded_text_safe_tail": "live_kernel",
    "command/test_command_program.py::test_redis_server_links_jemalloc_and_the_glibc_row_says_so": "live_kernel",
    "command/test_command_program.py::test_stdin_from_a_file_and_stdout_to_a_file": "live_kernel",
    "command/test_command_program.py::test_stdout_discard_and_the_default_stdin": "live_kernel",
    "command/test_command_program.py::test_the_report_names_the_command_that_was_measured": "live_kernel",
    "command/test_command_program.py::test_the_sampler_records_the_executable_of_every_process_it_reads": "live_kernel",
    "command/test_command_program.py::test_under_perf_the_users_program_runs_and_the_row_names_it": "live_kernel",
    "command/test_command_scope.py::test_stdout_below_cwd_and_in_the_runs_own_tmp_are_written": "live_kernel",
    "command/test_command_scope.py::test_the_experiments_env_reaches_the_program_but_not_perf_or_hb_exec": "live_kernel",
    "command/test_command_workload.py::test_a_program_under_two_allocators_with_substituted_params": "live_kernel",
    "command/test_command_workload.py::test_a_real_redis_server_under_redis_benchmark": "live_kernel",
    "command/test_command_workload.py::test_a_server_that_never_becomes_ready": "live_kernel",
    "command/test_command_workload.py::test_coverage_of_a_program_that_maps_thp_memory": "live_kernel",
    "command/test_command_workload.py::test_markers_time_only_the_marked_window": "live_kernel",
    "command/test_command_workload.py::test_memory_of_the_whole_process_tree_not_only_its_largest_process": "live_kernel",
    "command/test_command_workload.py::test_program_failures_become_rows_with_reason_and_output": "live_kernel",
    "command/test_probe.py::test_doctor_and_latency_bars_use_the_cached_probe": "live_kernel",
    "command/test_server_metrics.py::test_a_failed_driver_keeps_both_tails": "live_kernel",
    "command/test_server_metrics.py::test_a_secondary_metric_missing_is_absent_with_its_reason": "live_kernel",
    "command/test_server_metrics.py::test_every_process_of_a_forking_program_is_proven": "live_kernel",
    "command/test_server_metrics.py::test_redis_benchmark_as_a_driver_gives_every_metric": "live_kernel",
    "command/test_soak.py::test_a_soak_of_a_few_seconds_gives_medians_a_memory_slope_and_a_figure": "real_sweep",
    "core/test_core_faultstorm.py::test_hugetlb_maps_2mb_kernel_pages": "live_kernel",
    "core/test_core_faultstorm.py::test_hugetlb_without_a_pool_names_the_fix": "live_kernel",
    "core/test_core_faultstorm.py::test_hugetlb_workload_runs_on_the_pool": "live_kernel",
    "core/test_core_faultstorm.py::test_lazy_backings_fault_once_per_page_in_the_steady_phase": "live_kernel",
    "core/test_core_faultstorm.py::test_madv_hugepage_gets_transparent_huge_pages": "live_kernel",
    "core/test_core_fleet.py::test_recorder_records_the_series_and_its_cost": "live_kernel",
    "core/test_core_hashsets.py::test_a_tiny_sweep_reports_the_kinds_side_by_side": "real_sweep",
    "core/test_core_hashsets.py::test_the_memory_model_bounds_measured_peaks": "real_sweep",
    "experiment/test_adaptive.py::test_real_sweep_adds_blocks_until_max_and_resumes": "real_sweep",
    "experiment/test_adaptive.py::test_real_sweep_stops_at_min_when_every_cell_is_tight": "real_sweep",
    "experiment/test_plan.py::test_plan_of_keys_far_beyond_memory_is_fast_and_says_it_cannot_run": "live_kernel",
    "experiment/test_user_names.py::test_a_measurement_named_like_an_axis_never_relabels_the_cell": "live_kernel",
    "experiment/test_user_names.py::test_every_column_of_a_command_row_is_reserved_or_the_user_s": "live_kernel",
    "house/test_cli.py::test_doctor_runs": "live_kernel",
    "house/test_cli.py::test_plan_prints_counts_and_runs": "live_kernel",
    "house/test_cli.py::test_repetitions_flag_beats_the_file": "live_kernel",
    "house/test_docs.py::test_documented_commands_run": "real_sweep",
    "house/test_widths.py::test_each_command_fits_the_terminal": "live_kernel",
    "house/test_widths.py::test_piped_output_keeps_paths_whole": "live_kernel",
    "measure/test_disturbance.py::test_sweep_beside_a_cpu_hog_flags_its_runs": "real_sweep",
    "measure/test_disturbance.py::test_sweep_with_quiet_machine_records_the_wait": "live_kernel",
    "measure/test_measure_doctor.py::test_doctor_cli_prints_one_table": "live_kernel",
    "measure/test_measure_doctor.py::test_doctor_report_without_perf": "live_kernel",
    "measure/test_measure_procfs.py::test_phase_recorder_accumulates_repeated_phases_and_flags_unbalanced_edges": "live_kernel",
    "measure/test_measure_procfs.py::test_phase_recorder_attributes_faults_to_the_right_phase": "live_kernel",
    "measure/test_measure_procfs.py::test_real_proc_self": "live_kernel",
    "report/test_column_reference.py::test_every_column_of_a_real_small_sweep_is_documented": "live_kernel",
    "report/test_figures.py::test_plots_of_the_sample_store": "live_kernel",
    "report/test_notebook.py::test_notebook_code_cells_run": "live_kernel",
    "report/test_plots_every_workload.py::test_a_command_sweep_gets_its_metric_by_allocator": "live_kernel",
    "report/test_plots_every_workload.py::test_a_sweep_over_allocators_only_gets_a_figure": "live_kernel",
    "report/test_report_browser.py::test_report_page_renders_in_chromium": "live_kernel",
    "report/test_report_browser.py::test_the_first_screen_is_the_heat_maps_and_the_summary": "live_kernel",
    "report/test_report_package.py::test_report_with_plots_reads_the_store_once": "live_kernel",
    "report/test_report_package.py::test_table_and_plots_use_the_same_sweep_context": "live_kernel",
    "report/test_svgbars.py::test_the_page_inlines_each_chart_as_its_figure_code_decided": "live_kernel",
    "report/test_terminal.py::test_plan_prices_the_runs_left_from_the_stored_history": "live_kernel",
    "run/test_containment.py::test_a_process_killed_by_the_oom_killer_is_an_oom_row": "live_kernel",
    "run/test_inprocess.py::test_a_command_run_has_no_worker_and_its_program_is_in_the_runs_cgroup": "live_kernel",
    "run/test_inprocess.py::test_a_hanging_program_is_killed_with_its_tree_at_the_timeout": "live_kernel",
    "run/test_inprocess.py::test_a_supervisor_that_raises_is_a_failed_row_and_the_sweep_goes_on": "live_kernel",
    "run/test_memory_limit.py::test_a_limit_that_cannot_be_had_fails_the_run_before_it_starts": "live_kernel",
    "run/test_memory_limit.py::test_a_program_over_the_limit_is_an_oom_row_in_every_report": "live_kernel",
    "run/test_metadata.py::test_machine_context_of_this_machine_is_complete_and_json": "live_kernel",
    "run/test_orchestrator.py::test_changed_fixed_settings_refused": "live_kernel",
    "run/test_orchestrator.py::test_interrupted_sweep_resumes_without_duplicates": "live_kernel",
    "run/test_orchestrator.py::test_memory_preflight_skips_cells_that_cannot_fit": "live_kernel",
    "run/test_orchestrator.py::test_tiny_real_sweep_rows": "live_kernel",
    "run/test_orchestrator.py::test_worker_failures_become_rows": "live_kernel",
    "run/test_run_hardening.py::test_a_second_sweep_is_refused_naming_the_holder": "live_kernel",
    "run/test_run_hardening.py::test_a_torn_context_file_refuses_to_mix_runs": "live_kernel",
    "run/test_run_hardening.py::test_sigkill_of_the_sweep_process_group_leaves_no_process_behind": "live_kernel",
    "run/test_run_hardening.py::test_torn_store_warning_printed_once": "live_kernel",
    "run/test_sweep_crash.py::test_killed_sweep_then_restore_on_fake_tree": "live_kernel",
    "run/test_toy_workload.py::test_a_toy_workload_from_its_own_module_plans_sweeps_and_reports": "live_kernel",
    "store/test_broken_stores.py::test_list_valued_axis_columns_are_skipped_not_a_crash": "live_kernel",
    "store/test_broken_stores.py::test_rows_stored_twice_are_counted_once_with_a_warning": "live_kernel",
    "store/test_broken_stores.py::test_stray_values_in_rows_never_crash_a_report": "live_kernel",
    "store/test_broken_stores.py::test_the_html_report_onto_a_directory_or_a_full_device_is_a_clean_error": "live_kernel",
    "store/test_write_errors.py::test_csv_and_html_reports_say_why_runs_failed": "live_kernel",
    "system/test_aging.py::test_try_aged_puts_every_configuration_in_both_states": "live_kernel",
    "system/test_kernel_layer.py::test_only_the_kernel_layer_reads_proc_and_sys": "live_kernel",
    "system/test_kernel_layer.py::test_readers_on_this_kernel": "live_kernel",
    "system/test_kernel_layer.py::test_the_audit_sees_a_read_outside_the_layer": "live_kernel",
    "system/test_page_reporting.py::test_plan_lists_the_knob_a_warm_regime_sets": "live_kernel",
    "system/test_page_reporting.py::test_try_refuses_idle_without_a_cold_regime_and_regime_with_aged": "live_kernel",
    "system/test_system_memory.py::test_buddyinfo_summary": "live_kernel",
    "system/test_system_memory.py::test_thp_vmstat": "live_kernel",
    "textpages/test_text_pages.py::test_thp_moves_the_text_onto_huge_pages": "live_kernel",
    "command/test_run_bounds.py::test_a_stdin_named_pipe_nobody_writes_is_a_timeout_row": "real_sweep",
    "command/test_run_bounds.py::test_a_stdin_named_pipe_with_a_writer_is_read": "real_sweep",
    "command/test_run_bounds.py::test_a_backtracking_metric_regex_is_a_timeout_row_within_the_run": "real_sweep",
    "command/test_where.py::test_where_names_the_hot_region_as_the_one_that_pays": "live_kernel",
    "command/test_where.py::test_a_program_that_madvises_itself_is_reported_as_such": "live_kernel",
    "command/test_where.py::test_the_hot_regions_are_drawn_over_time": "live_kernel",
    "command/test_where.py::test_the_html_page_shows_the_table_the_lines_and_the_picture": "live_kernel",
    "command/test_where.py::test_the_suggested_rule_deployed_gives_the_hot_region_alone_huge_pages": "live_kernel",
    "command/test_where.py::test_a_size_rule_leaves_the_regions_outside_its_window": "live_kernel",
    "command/test_where.py::test_the_heap_rule_puts_the_grown_heap_on_huge_pages": "live_kernel",
    "trial/test_try.py": "real_try",
    "trial/test_try_asis.py::test_a_program_linked_against_jemalloc_gets_an_as_is_row_served_by_jemalloc": "real_try",
    "trial/test_try_asis.py::test_a_program_that_disables_its_own_thp_is_reported_as_overriding": "real_try",
    "trial/test_try_brief.py": "real_try",
    "trial/test_try_guards.py": "real_try",
    "trial/test_try_options.py::test_a_refusal_names_the_option_typed_and_leaves_nothing": "real_try",
    "trial/test_try_options.py::test_a_too_long_argument_is_refused_as_the_programs_argument": "real_try",
    "trial/test_try_options.py::test_o_that_is_not_a_directory_is_a_clean_error": "real_try",
    "trial/test_try_options.py::test_the_program_receives_braces_as_typed": "real_try",
}


def _lane_marks(item: pytest.Item) -> set[str]:
    rel = Path(str(item.path)).relative_to(Path(__file__).parent).as_posix()
    marks = {m.name for m in item.iter_markers() if m.name in HEAVY_MARKS}
    marks |= {lane for f, lane in HEAVY_FIXTURES.items() if f in getattr(item, "fixturenames", ())}
    if rel.split("/")[0] in HEAVY_ROOMS:
        marks.add(HEAVY_ROOMS[rel.split("/")[0]])
    for key in (rel, f"{rel}::{item.name}", f"{rel}::{item.name.split('[')[0]}"):
        if key in HEAVY_TESTS:
            marks.add(HEAVY_TESTS[key])
    return marks


@pytest.hookimpl(tryfirst=True)  # before -m deselects by the lanes
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        marks = _lane_marks(item)
        for mark in marks:
            item.add_marker(mark)
        if not marks:
            item.add_marker("fast")
        elif Path(str(item.path)).parent.name in BESIDE_ROOMS:
            item.add_marker("beside")


def _fast_only(session: pytest.Session) -> bool:
    items = getattr(session, "items", None)
    return bool(items) and all(item.get_closest_marker("fast") for item in items)


# The live kernel a test of the fast lane must not read: another process may change it during the run.
LIVE_KERNEL = (
    "/sys/kernel/mm/",
    "/proc/sys/vm/",
    "/sys/module/page_reporting/",
    "/proc/meminfo",
    "/proc/buddyinfo",
    "/proc/vmstat",
    "/proc/pagetypeinfo",
)
_live_reads: list[str] | None = None  # the live files a fast test opened (None: not watching)


def _watch_live_kernel(event: str, args: tuple) -> None:
    if _live_reads is None or event != "open" or not args:
        return
    path = args[0]
    if isinstance(path, bytes):
        path = path.decode(errors="replace")
    if isinstance(path, str) and path.startswith(LIVE_KERNEL):
        _live_reads.append(path)


sys.addaudithook(_watch_live_kernel)


OWN_HOST = {"test_host.py"}  # the tests of Host.at itself (they read no file)


@pytest.fixture(autouse=True)
def _fast_lane_machine(request, tmp_path_factory, monkeypatch):
    """In the fast lane an entry point's machine (``Host.at()`` without roots, and a command's hidden
    ``--sys-root``/``--proc-root`` by their environment variables) is a fake tree under tmp_path, so `plan` and the other commands check against this fake 6.18 kernel, never the
    live one (a test's `fake_sys` still replaces it with its own)."""
    if request.node.get_closest_marker("fast") is None or request.node.path.name in OWN_HOST:
        return
    kernel = FakeKernel(tmp_path_factory.mktemp("fast-lane-machine")).build()

    def at(cls, sys_root=None, proc_root=None) -> Host:
        return cls(Path(proc_root or kernel.proc_root), Path(sys_root or kernel.sys_root), kernel)

    monkeypatch.setattr(Host, "at", classmethod(at))
    monkeypatch.setenv(
        "HUGEBENCH_SYS_ROOT", str(kernel.sys_root)
    )  # the commands' hidden root options,
    monkeypatch.setenv(
        "HUGEBENCH_PROC_ROOT", str(kernel.proc_root)
    )  # in this process and its children


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item):
    """A test of the fast lane that opens a live kernel file fails, naming the file: give it a fake Host
    (`fake_sys`), or put it in its lane (HEAVY_TESTS)."""
    global _live_reads
    watching = item.get_closest_marker("fast") is not None
    _live_reads = [] if watching else None
    try:
        outcome = yield
    finally:
        reads, _live_reads = _live_reads, None
    if watching and reads and outcome.excinfo is None:
        rel = Path(str(item.path)).relative_to(Path(__file__).parent).as_posix()
        pytest.fail(
            f"{rel}::{item.name} is in the fast lane but read the live kernel "
            f"({', '.join(sorted(set(reads))[:3])}): give it fake_sys.host, or put it in its lane "
            "(tests/conftest.py HEAVY_TESTS)",
            pytrace=False,
        )


# -- the machine is left as found ------------------------------------------------------------------

_THP = "/sys/kernel/mm/transparent_hugepage"
_GUARDED = (
    f"{_THP}/enabled",
    f"{_THP}/defrag",
    f"{_THP}/khugepaged/max_ptes_none",
    f"{_THP}/shrink_underused",
    "/proc/sys/vm/nr_hugepages",
    "/proc/sys/vm/compact_unevictable_allowed",
    "/proc/sys/vm/percpu_pagelist_high_fraction",
    "/proc/sys/vm/compaction_proactiveness",
    "/sys/module/page_reporting/parameters/page_reporting_order",
)


def _guarded_paths() -> list[str]:
    """The knobs above and every multi-size THP's own setting (hugepages-<size>kB/enabled)."""
    sizes = sorted(str(p) for p in Path(_THP).glob("hugepages-*kB/enabled"))
    return [*_GUARDED, *sizes]


def _read_guarded() -> dict[str, str]:
    out = {}
    for path in _guarded_paths():
        try:
            out[path] = Path(path).read_text().strip()
        except OSError:
            pass
    return out


def _selected(text: str) -> str:
    """What to write back for a value read: a knob file's active value (kernel.parse.selected), else the text."""
    return selected(text) or text.strip()


# A test session records the knobs as it found them here, and removes the record when it ends. A session
# that was killed (a CI timeout, a stopped shell: its sweeps' journals lived in its tmp_path) leaves its
# record behind; the next session puts those knobs back before it reads them as found.
_FOUND_DIR = (
    Path("/var/lib/hugebench/test-sessions")
    if os.geteuid() == 0
    else Path(
        os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache", "hugebench", "test-sessions"
    )
)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _restore_killed_sessions() -> list[str]:
    """Put back what killed test sessions found (the oldest record last: it is what the machine had before
    any of them); returns what was written, for the session's header."""
    import json

    if not _FOUND_DIR.is_dir():
        return []
    records = []
    for path in _FOUND_DIR.glob("*.json"):
        try:
            record = json.loads(path.read_text())
            pid, started, knobs = (
                int(record["pid"]),
                float(record["started"]),
                dict(record["knobs"]),
            )
        except (OSError, ValueError, KeyError, TypeError):
            path.unlink(missing_ok=True)
            continue
        if not _pid_alive(pid):
            records.append((started, path, knobs))
    written = []
    for _started, path, knobs in sorted(records, key=lambda r: r[0], reverse=True):
        for knob, value in knobs.items():
            wanted = _selected(value)
            try:
                if _selected(Path(knob).read_text().strip()) == wanted:
                    continue
                Path(knob).write_text(wanted + "\n")
                written.append(f"{knob}={wanted}")
            except OSError as error:
                written.append(f"{knob}: could not put back {wanted!r} ({error.strerror})")
        path.unlink(missing_ok=True)
    return written


def _record_found(knobs: dict[str, str]) -> Path | None:
    import json
    import time

    try:
        _FOUND_DIR.mkdir(parents=True, exist_ok=True)
        path = _FOUND_DIR / f"{os.getpid()}.json"
        path.write_text(json.dumps({"pid": os.getpid(), "started": time.time(), "knobs": knobs}))
        return path
    except OSError:
        return None


def _other_sweep_running() -> bool:
    """A live sweep outside the tests owns the default journal: it may change THP while we run."""
    from hugebench.system.journal import default_journal_path, read_journal

    try:
        record = read_journal(default_journal_path())
    except Exception:
        return False
    return record is not None and record.owner_alive()


def thp_mode_found() -> str:
    """The machine's THP mode now (the bracketed one): what `try` measures as-is under."""
    return _selected(REAL_THP_ENABLED.read_text())


def thp_mode_needing_root() -> str:
    """A THP mode other than the one found, which only root may have a run in."""
    return "always" if thp_mode_found() != "always" else "madvise"


@pytest.fixture
def thp_found_madvise():
    """The test expects the machine's THP mode to be madvise (a fresh Debian's): it is set so for the test
    when the machine was left otherwise, and put back after."""
    found = thp_mode_found()
    if found != "madvise":
        REAL_THP_ENABLED.write_text("madvise\n")
    yield
    if found != "madvise":
        REAL_THP_ENABLED.write_text(f"{found}\n")


@pytest.fixture(scope="session", autouse=True)
def machine_left_as_found(request):
    """After the whole test session THP, the hugetlb pool, compaction of mlocked pages (which
    ``memory_state: fragmented`` turns off) and free page reporting's order must read exactly as before it.
    A session of the fast lane alone neither writes nor reads them: nothing to check."""
    import fast_lane

    if _fast_only(request.session) or fast_lane.in_child():  # the parent session guards the child's
        yield
        return
    restored = _restore_killed_sessions()
    if restored:
        warnings.warn(
            f"a killed test session had left kernel settings changed; put back: {restored}",
            stacklevel=1,
        )
    before = _read_guarded()
    record = _record_found(before)
    yield
    after = _read_guarded()
    if record is not None:
        record.unlink(missing_ok=True)
    if after != before and not _other_sweep_running():
        changed = {
            p: (before.get(p), after.get(p)) for p in before if before.get(p) != after.get(p)
        }
        pytest.fail(f"the tests left kernel settings changed (before, after): {changed}")


# -- an unprivileged user ---------------------------------------------------------------------------

UNPRIVILEGED_USER = "nobody"


class Unprivileged:
    """Runs commands as a user without root: ``nobody`` when the tests run as root (privileges dropped in
    the child: uid, gid, no supplementary groups, no capabilities), else the user running the tests.

    ``home`` is a fresh directory that user owns (also its cwd and $HOME); ``python`` an interpreter that
    user can execute with this test session's packages importable: the session's own when the user can
    run it, else a venv of the same Python version made for it, whose .pth names the session's
    site-packages (a venv's python often lives under /root, which no other user may enter).
    """

    def __init__(self, uid: int, gid: int, python: str, home: Path):
        self.uid, self.gid, self.python, self.home = uid, gid, python, home
        self.dropping = os.geteuid() == 0 and uid != 0

    def run(
        self, argv, *, env: dict | None = None, cwd=None, timeout: float = 300
    ) -> subprocess.CompletedProcess:
        """Run ``argv`` as the user: a small environment (PATH with the interpreter's bin first, HOME,
        LC_ALL=C) plus ``env``; nothing of the test's own HUGEBENCH_* settings leaks in."""
        base = {
            "PATH": f"{Path(self.python).parent}:/usr/local/bin:/usr/bin:/bin",
            "HOME": str(self.home),
            "LC_ALL": "C.UTF-8",
            "TMPDIR": "/tmp",
        }
        kwargs = {"user": self.uid, "group": self.gid, "extra_groups": []} if self.dropping else {}
        return subprocess.run(
            [str(a) for a in argv],
            env={**base, **(env or {})},
            cwd=cwd or self.home,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            **kwargs,
        )

    def hugebench(self, *args, **kwargs) -> subprocess.CompletedProcess:
        """``hugebench ARGS`` as the user, by the venv's ``hugebench`` script (as a user types it)."""
        script = Path(self.python).parent / "hugebench"
        if script.exists():
            return self.run([script, *args], **kwargs)
        main = "import sys; from hugebench.cli import main; sys.argv[0] = 'hugebench'; sys.exit(main())"
        return self.run([self.python, "-c", main, *args], **kwargs)

    def python_code(self, code: str, **kwargs) -> subprocess.CompletedProcess:
        return self.run([self.python, "-c", code], **kwargs)

    def owned_dir(self, path: Path) -> Path:
        """``path`` created (with its parents) and given to the user."""
        path.mkdir(parents=True, exist_ok=True)
        if self.dropping:
            os.chown(path, self.uid, self.gid)
        return path


def _runs_as(uid: int, gid: int, argv: list[str]) -> subprocess.CompletedProcess | None:
    kwargs = {"user": uid, "group": gid, "extra_groups": []} if os.geteuid() == 0 else {}
    try:
        return subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            cwd="/",
            env={"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"},
            **kwargs,
        )
    except (OSError, subprocess.SubprocessError):
        return None


def _python_for(uid: int, gid: int, root: Path) -> tuple[str | None, str]:
    """An interpreter ``uid`` can run with this session's packages: (path, '') or (None, why not)."""
    import sys
    import sysconfig

    check = ["-c", "import hugebench._core, sys; print(sys.version_info[:2])"]
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    ran = _runs_as(uid, gid, [sys.executable, *check])
    if ran is not None and ran.returncode == 0:
        return sys.executable, ""
    candidates = [
        p
        for p in (
            f"/usr/bin/python{version}",
            f"/usr/local/bin/python{version}",
            shutil.which(f"python{version}"),
        )
        if p
    ]
    for candidate in dict.fromkeys(candidates):
        probe = _runs_as(uid, gid, [candidate, "-c", "import sys; print(sys.version_info[:2])"])
        if (
            probe is None
            or probe.returncode != 0
            or probe.stdout.strip() != str(sys.version_info[:2])
        ):
            continue
        venv = root / "venv"
        made = subprocess.run(
            [candidate, "-m", "venv", "--without-pip", str(venv)], capture_output=True, text=True
        )
        if made.returncode != 0:
            return None, f"cannot make a venv with {candidate}: {made.stderr.strip()}"
        site = Path(
            subprocess.run(
                [
                    str(venv / "bin/python"),
                    "-c",
                    "import sysconfig; print(sysconfig.get_paths()['purelib'])",
                ],
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
        )
        ours = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
        (site / "hugebench-session.pth").write_text("".join(f"{p}\n" for p in ours))
        script = venv / "bin/hugebench"  # the console script, as pip would write it
        script.write_text(
            f"#!{venv / 'bin/python'}\nimport sys\nfrom hugebench.cli import main\n"
            f"sys.exit(main())\n"
        )
        script.chmod(0o755)
        for path in [root, *root.rglob("*")]:
            path.chmod(
                path.stat().st_mode | 0o555 if path.is_dir() else path.stat().st_mode | 0o444
            )
        ran = _runs_as(uid, gid, [str(venv / "bin/python"), *check])
        if ran is not None and ran.returncode == 0:
            return str(venv / "bin/python"), ""
        return (
            None,
            f"the session's packages are not readable by uid {uid}: {(ran.stderr if ran else '').strip()}",
        )
    return (
        None,
        f"uid {uid} cannot run {sys.executable}, and no python{version} it can run was found",
    )


@pytest.fixture(scope="session")
def _unprivileged_base():
    """(uid, gid, python, root dir) once per session, or the reason there is no unprivileged user to be."""
    import pwd
    import tempfile

    if os.geteuid() != 0:
        uid, gid = os.geteuid(), os.getegid()
    else:
        try:
            entry = pwd.getpwnam(UNPRIVILEGED_USER)
        except KeyError:
            pytest.skip(f"no user {UNPRIVILEGED_USER!r} to drop privileges to")
        uid, gid = entry.pw_uid, entry.pw_gid
    root = Path(tempfile.mkdtemp(prefix="hb-unprivileged-", dir="/tmp"))
    root.chmod(0o755)  # pytest's own tmp_path is private to root
    try:
        python, why = _python_for(uid, gid, root)
        if python is None:
            pytest.skip(why)
        yield uid, gid, python, root
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def unprivileged(_unprivileged_base, request) -> Unprivileged:
    """A user without root to run commands as (see ``Unprivileged``), with a fresh home of its own."""
    uid, gid, python, root = _unprivileged_base
    home = root / "homes" / request.node.name.replace("/", "_")[:80]
    user = Unprivileged(uid, gid, python, home)
    (root / "homes").mkdir(exist_ok=True)
    (root / "homes").chmod(0o755)
    user.owned_dir(home)
    yield user
    shutil.rmtree(home, ignore_errors=True)


# -- fixtures added for issue 26 (section 8) ---------------------------------------------------------------

NON_DEFAULT = {  # knob -> a value no kernel starts with: a restore that writes defaults cannot pass for it
    "thp.enabled": "never",
    "thp.defrag": "always",
    "thp.khugepaged.pages_to_scan": "1234",
    "thp.khugepaged.max_ptes_none": "100",
    "thp.mthp.64kB": "madvise",
    "hugetlb.2MB": "2",
}


@pytest.fixture
def fake_sys_changed(fake_sys) -> FakeKernel:
    """`fake_sys` whose machine starts away from the kernel defaults (NON_DEFAULT), written through the fake
    sysfs so the tree stays consistent (a 2MB pool of 2 shows in every file that counts it)."""
    from hugebench.system.knobs import discover_knobs

    knobs = discover_knobs(fake_sys.host)
    for name, value in NON_DEFAULT.items():
        knobs[name].write(value)
    fake_sys.writes.clear()
    return fake_sys


@pytest.fixture(autouse=True)
def _private_journal(tmp_path, monkeypatch):
    """Each test's sweeps keep their crash journal in its own tmp_path (as `fake_sys` does), so a test never
    refuses to start because another session's sweep holds the machine's journal, and never touches it."""
    monkeypatch.setenv("HUGEBENCH_JOURNAL", str(tmp_path / "journal.json"))


def refused_once(result, *says: str) -> str:
    """A CLI result that failed with one clean error (no traceback) saying each of ``says``; its output."""
    output = result.output
    assert result.exit_code not in (0, None), output
    assert "Traceback" not in output and output.count("hugebench: error:") == 1, output
    for words in says:
        assert words in output, output
    return output
