"""``hugebench doctor``: can this machine run the experiments, and what will be missing from the results?

Each check is read-only and says how to fix what it finds; the one exception is free page reporting's cost,
measured as root by holding ``page_reporting.order`` off for a few seconds (journaled, restored on any exit).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass

from hugebench import kernel, system
from hugebench.kernel.host import LOCAL, Host
from hugebench.knob_catalogue import DEFAULT_POOL
from hugebench.measure import perf as perf_mod
from hugebench.measure.events import EventChoice, choose_events

TLB_LABELS = ("dtlb_load_misses", "stlb_misses", "itlb_misses", "walk_cycles")


@dataclass(frozen=True)
class Check:
    """One line of the doctor's report."""

    name: str
    ok: bool
    detail: str
    fix: str = ""


def check_root(environ=None) -> Check:
    """Root or not; under sudo, whose results directories they will be; without sudo, how else to be root."""
    environ = os.environ if environ is None else environ
    uid = os.geteuid()
    user = environ.get("SUDO_USER")
    if uid == 0 and user:
        return Check(
            "root",
            True,
            f"running as root under sudo (SUDO_USER={user}): every kernel knob can be set; the results "
            f"directories and files a sweep or try creates are root's, not {user}'s ({user} can read and "
            f"report them, but not add runs to them without sudo)",
            f"to hand a results directory back: sudo chown -R {user}: DIR",
        )
    if uid == 0:
        return Check("root", True, "running as root: every kernel knob can be set")
    how = (
        f"sudo {system.sudo_hugebench()} sweep FILE"
        if shutil.which("sudo", path=environ.get("PATH"))
        else f"sudo is not installed here: as root (su -), {system.sudo_hugebench()} sweep FILE"
    )
    return Check(
        "root",
        False,
        f"running as uid {uid}: sweeps that change no kernel knob run (THP 'never' per "
        f"process via prctl); other THP modes, mTHP sizes, hugetlb pools and condition_memory need root",
        f"for those: {how}",
    )


def check_perf(caps: perf_mod.PerfCapabilities) -> Check:
    if caps.available:
        detail = f"{caps.perf_path} (perf {caps.perf_version}), perf_event_paranoid={caps.paranoid}"
        return Check("perf tool", True, detail)
    return Check(
        "perf tool", False, caps.missing_reason or "perf missing", "apt-get install linux-perf"
    )


def check_paranoid(caps: perf_mod.PerfCapabilities) -> Check:
    """What perf counts for the user running this, as the probe found it (not what the level promises)."""
    who, level = f"uid {os.geteuid()}", f"kernel.perf_event_paranoid={caps.paranoid}"
    if not caps.available:
        return Check(
            "perf permissions",
            False,
            f"{level}; not probed: {caps.missing_reason or 'perf missing'}",
        )
    if caps.scope == "user+kernel":
        return Check("perf permissions", True, f"{level}: {who} counts user and kernel space")
    if caps.scope == "user":
        return Check(
            "perf permissions",
            True,
            f"{level}: {who} counts user space only (perf's ':u'; rows say perf_scope=user): CPU time and "
            f"events in the kernel are left out, page faults still count",
            "kernel counts too: run as root, or `sudo sysctl kernel.perf_event_paranoid=1`",
        )
    if caps.supported:
        return Check(
            "perf permissions",
            True,
            f"{level}: {who}: perf accepts {len(caps.supported)} events "
            f"(none counted anything in the probe)",
        )
    reasons = sorted({why for _, why in caps.unsupported})
    return Check(
        "perf permissions",
        False,
        f"{level}: {who} can count nothing ({'; '.join(reasons) or 'no event'})",
        "`sudo sysctl kernel.perf_event_paranoid=2` (user space), or run as root",
    )


def check_hardware_counters(caps: perf_mod.PerfCapabilities) -> Check:
    if caps.pmu_available and caps.pmu_reason is None:
        return Check(
            "hardware counters", True, f"available (PMU: {', '.join(caps.cpu_pmus) or 'cpu'})"
        )
    if caps.pmu_available:
        return Check(
            "hardware counters",
            True,
            f"probably available ({caps.pmu_reason})",
            "apt-get install linux-perf to probe them",
        )
    fix = (
        "run on bare metal or enable vPMU (e.g. -cpu host,pmu=on)"
        if caps.hypervisor
        else "check that the kernel's PMU driver loaded (dmesg | grep -i 'performance events')"
    )
    return Check("hardware counters", False, f"not available ({caps.pmu_reason})", fix)


def check_tlb_events(choices: list[EventChoice]) -> Check:
    tlb = [c for c in choices if c.label in TLB_LABELS]
    found = [f"{c.label}={c.event}" for c in tlb if c.event]
    if found:
        missing = [c.label for c in tlb if not c.event]
        detail = ", ".join(found) + (f"; missing: {', '.join(missing)}" if missing else "")
        return Check("TLB events", True, detail)
    reasons = sorted({c.reason for c in tlb if c.reason})
    return Check(
        "TLB events",
        False,
        "none: " + "; ".join(reasons),
        "TLB misses need hardware counters (see above); page faults and huge-page coverage are "
        "still measured",
    )


def check_thp(host: Host = LOCAL) -> Check:
    base = host.sys / kernel.THP_DIR
    enabled = kernel.read_optional(base / "enabled")
    if enabled is None:
        return Check(
            "THP sysfs", False, f"{base} missing", "a kernel built with CONFIG_TRANSPARENT_HUGEPAGE"
        )
    writable = kernel.writable(base / "enabled") and kernel.writable(base / "defrag")
    detail = f"enabled: {enabled}; defrag: {kernel.read_optional(base / 'defrag')}; " + _writable(
        writable
    )
    return Check(
        "THP sysfs",
        writable,
        detail,
        ""
        if writable
        else "run as root, with /sys mounted read-write (THP 'never' needs neither: prctl per process)",
    )


def _writable(writable: bool) -> str:
    if writable:
        return "writable"
    return "read-only (mounted so)" if os.geteuid() == 0 else f"not writable by uid {os.geteuid()}"


def check_lock() -> Check:
    """Where the host's sweep lock is and whether this user can take it (every sweep does)."""
    paths = system.default_lock_paths()
    ok, detail = system.lock_status(paths)
    override = " (HUGEBENCH_LOCK)" if os.environ.get("HUGEBENCH_LOCK") else ""
    return Check(
        "sweep lock",
        ok,
        detail + override,
        ""
        if ok
        else f"root: `sudo chmod 666 {paths[0]}`; or set HUGEBENCH_LOCK to a file you may write",
    )


def check_mthp(host: Host = LOCAL) -> Check:
    modes = kernel.mthp_modes(host)
    if not modes:
        return Check(
            "mTHP sizes",
            False,
            "no per-size THP controls",
            "kernel 6.8 or later for multi-size THP",
        )
    return Check("mTHP sizes", True, ", ".join(f"{size}: {mode}" for size, mode in modes.items()))


def check_hugetlb(host: Host = LOCAL) -> Check:
    knob = host.proc / DEFAULT_POOL
    pools = [
        f"{size}: nr={pool.get('nr')} free={pool.get('free')}"
        for size, pool in kernel.read_hugetlb_pools(host).items()
    ]
    if not pools and kernel.read_optional(knob) is None:
        return Check(
            "hugetlb pool", False, "no hugetlb support", "a kernel built with CONFIG_HUGETLBFS"
        )
    writable = kernel.writable(knob)
    detail = "; ".join(pools) + f"; {knob} " + _writable(writable)
    return Check(
        "hugetlb pool", writable, detail, "" if writable else "run as root to reserve huge pages"
    )


def check_probe() -> Check:
    """What huge pages can save at most here, from this machine's cached `hugebench probe`."""
    from hugebench.workloads.tlbprobe.cache import read_summary
    from hugebench.workloads.tlbprobe.text import saving_line

    summary = read_summary()
    if summary is None:
        return Check(
            "huge-page ceiling",
            True,
            "not measured on this machine yet",
            "hugebench probe (a few minutes; sizes hugetlb pools temporarily)",
        )
    verdict = summary["verdict"]
    return Check(
        "huge-page ceiling",
        True,
        f"{saving_line(summary)}; TLB reach extended: {verdict['answer']} "
        f"(probe of {summary.get('measured_at', '?')})",
    )


def check_core() -> Check:
    try:
        from hugebench import _core
    except ImportError as exc:
        return Check(
            "_core extension",
            False,
            f"not importable: {exc}",
            "pip install --no-build-isolation . (builds the C++ extension)",
        )
    info = dict(_core.build_info())
    detail = f"{info.get('build_type')} build, {info.get('compiler')}"
    if info.get("debug") or str(info.get("build_type", "")).lower() == "debug":
        return Check(
            "_core extension",
            False,
            detail + " (numbers would be misleading)",
            "reinstall with the default Release build",
        )
    return Check("_core extension", True, detail)


def check_native_tools() -> list[Check]:
    """The launcher and the preload libraries built with the package (a half-installed tree lacks them)."""
    from hugebench.errors import ToolMissingError
    from hugebench.machine.environment import launcher
    from hugebench.machine.mallocprobe import probe_library

    checks = []
    for name, locate, what in (
        ("hb-exec", launcher, "every run's launcher: real exit status, no orphans"),
        ("libhbprobe.so", probe_library, "command workload: which malloc a program used"),
    ):
        try:
            checks.append(Check(name, True, f"{locate()} ({what})"))
        except ToolMissingError as exc:
            checks.append(
                Check(name, False, str(exc), "pip install --no-build-isolation . (builds it)")
            )
    return checks


def check_set_kinds() -> Check:
    """hashlookup's set kinds and hashes in this build; the package that adds each missing one."""
    from hugebench import _core, workloads

    try:
        info = _core.build_info()
    except Exception as exc:  # check_core reports an unusable extension
        return Check("hash sets", False, f"unknown ({exc})")
    kinds, hashes = info.get("set_kinds", ["flat", "node"]), info.get("hashes", ["own"])
    missing = [workloads.SET_PACKAGES[k] for k in workloads.SET_KINDS if k not in kinds]
    missing += [workloads.HASH_PACKAGES[h] for h in workloads.HASHES if h not in hashes]
    detail = f"set kinds {', '.join(kinds)}; hashes {', '.join(hashes)}"
    fix = (
        f"apt-get install {' '.join(missing)}, then pip install --no-build-isolation ."
        if missing
        else ""
    )
    return Check("hash sets", not missing, detail, fix)


def _as_check(row) -> Check:
    if isinstance(row, Check):
        return row
    if isinstance(row, dict):
        return Check(
            str(row.get("name")),
            bool(row.get("ok", row.get("found"))),
            str(row.get("detail", "")),
            str(row.get("fix", "") or ""),
        )
    name, ok, detail, fix = (list(row) + ["", "", ""])[:4]
    return Check(f"allocator {name}", bool(ok), str(detail), str(fix or ""))


def allocator_checks() -> list[Check]:
    """Rows from ``hugebench.machine.allocators.doctor_rows()``; absent module or failure becomes one row."""
    try:
        from hugebench.machine import allocators
    except ImportError:
        return [
            Check(
                "allocators", False, "hugebench.machine.allocators not available in this build", ""
            )
        ]
    try:
        return [_as_check(row) for row in allocators.doctor_rows()]
    except Exception as exc:  # a broken discovery must not hide every other check
        return [Check("allocators", False, f"discovery failed: {exc}", "")]


def doctor_report(
    *, perf_bin: str = "perf", host: Host = LOCAL, quick: bool = False
) -> list[Check]:
    """Every check, in the order a user would fix them; ``quick``: without the one that takes seconds
    (free page reporting's cost: two fault bursts after 4 s of idle each), which says so."""
    cpu = kernel.read_cpu_info(host)
    caps = perf_mod.detect(perf_bin, cpu=cpu, host=host)
    choices = choose_events(cpu, caps)
    return [
        check_root(),
        check_perf(caps),
        check_paranoid(caps),
        check_hardware_counters(caps),
        check_tlb_events(choices),
        check_thp(host),
        check_mthp(host),
        check_hugetlb(host),
        check_lock(),
        check_probe(),
        *allocator_checks(),
        check_core(),
        *check_native_tools(),
        check_set_kinds(),
        *noise_checks(host),
        check_page_reporting(host, quick),
    ]


def check_page_reporting(host: Host = LOCAL, quick: bool = False) -> Check:
    """Free page reporting and, on the real kernel as root, its cost measured (hugebench.doctor.reporting):
    the one check that writes a knob (journaled, restored)."""
    from hugebench.doctor.reporting import QUICK, finding
    from hugebench.errors import HugebenchError

    real = str(host.sys) == "/sys"  # a fake tree's knob says nothing about this machine's faults
    try:
        if quick:
            name, ok, detail, fix = finding(host, measure_it=False, skipped=QUICK)
        else:
            name, ok, detail, fix = finding(host, measure_it=real)
    except (OSError, HugebenchError) as exc:
        return Check("free page reporting", False, f"not measured: {exc}", "")
    return Check(name, ok, detail, fix)


def noise_checks(host: Host = LOCAL) -> list[Check]:
    """What makes this machine noisy (hugebench.doctor.noise), each with its fix."""
    from hugebench.doctor.noise import noise_findings

    return [
        Check(f"noise: {name}", ok, detail, fix) for name, ok, detail, fix in noise_findings(host)
    ]
