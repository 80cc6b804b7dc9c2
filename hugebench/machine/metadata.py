"""The machine a sweep ran on, recorded once per sweep so that every number can be traced to its context.

Nothing here changes the system; every read degrades to None or a string saying what is unknown and why,
because a missing detail must never stop a sweep. The ``host`` (``hugebench.kernel.Host``) is injectable for tests.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import socket
from pathlib import Path

from hugebench import __version__, kernel
from hugebench._util import run_text
from hugebench.kernel import CpuInfo
from hugebench.kernel.host import LOCAL, Host
from hugebench.measure import perf as perf_mod

# Flags that matter for paging experiments: 1 GiB pages, PCID (cheaper TLB flushes), INVPCID, LA57 (5-level).
PAGING_FLAGS = ("pse", "pdpe1gb", "pcid", "invpcid", "la57", "hypervisor")


def cpu_info(host: Host = LOCAL) -> CpuInfo:
    """CPU 0's identity (vendor, family/model/stepping, flags) from /proc/cpuinfo."""
    return kernel.read_cpu_info(host)


def caches(host: Host = LOCAL, cpu: int = 0) -> list[dict]:
    """CPU ``cpu``'s caches from sysfs: level, type, size in bytes, ways, line size, sharing CPUs."""
    return kernel.cpu_caches(host, cpu)


def tlb_info(host: Host = LOCAL, cpuid_text: str | None = None) -> dict:
    """TLB geometry where the system tells it: AMD's 'TLB size' in /proc/cpuinfo, else the cpuid tool."""
    cpuinfo = kernel.read_optional(host.proc / "cpuinfo") or ""
    match = re.search(r"^TLB size\s*:\s*(.+)$", cpuinfo, re.MULTILINE)
    if match:
        return {"source": "/proc/cpuinfo", "entries": [f"TLB size: {match.group(1).strip()}"]}
    if cpuid_text is None:
        cpuid_text = run_text(["cpuid", "-1"])
    if cpuid_text:
        lines = [ln.strip() for ln in cpuid_text.splitlines() if "TLB" in ln or "tlb" in ln]
        if lines:
            return {"source": "cpuid -1", "entries": list(dict.fromkeys(lines))}
    return {
        "source": None,
        "entries": [],
        "unknown": "TLB geometry unknown: /proc/cpuinfo has no 'TLB size' (Intel) and the 'cpuid' tool "
        "is not installed (apt-get install cpuid)",
    }


def _lscpu_topology(lscpu_text: str | None) -> dict:
    fields = {}
    for line in (lscpu_text or "").splitlines():
        key, _, value = line.partition(":")
        fields[key.strip()] = value.strip()

    def as_int(key: str) -> int | None:
        value = fields.get(key, "")
        return int(value) if value.isdigit() else None

    threads_per_core, cores_per_socket, sockets = (
        as_int("Thread(s) per core"),
        as_int("Core(s) per socket"),
        as_int("Socket(s)"),
    )
    cores = cores_per_socket * sockets if cores_per_socket and sockets else None
    return {
        "sockets": sockets,
        "cores": cores,
        "threads_per_core": threads_per_core,
        "numa_nodes": as_int("NUMA node(s)"),
    }


def cpu_context(host: Host = LOCAL, lscpu_text: str | None = None) -> dict:
    """CPU identity and topology."""
    cpu = cpu_info(host)
    if lscpu_text is None:
        lscpu_text = run_text(["lscpu"])
    topo = _lscpu_topology(lscpu_text)
    return {
        "vendor": cpu.vendor,
        "vendor_id": cpu.vendor_id,
        "model_name": cpu.model_name,
        "family": cpu.family,
        "model": cpu.model,
        "stepping": cpu.stepping,
        "microarch": cpu.microarch,
        **topo,
        "logical_cpus": os.cpu_count(),
        "usable_cpus": len(os.sched_getaffinity(0)),
        "hypervisor": perf_mod.hypervisor_vendor(cpu, lscpu_text or ""),
        "paging_flags": [f for f in PAGING_FLAGS if f in cpu.flags],
    }


def memory_context(host: Host = LOCAL) -> dict:
    """Memory size, base and huge page sizes, THP/mTHP modes and hugetlb pools (read only)."""
    pools = {
        size: {"nr": pool.get("nr"), "free": pool.get("free")}
        for size, pool in kernel.read_hugetlb_pools(host).items()
    }
    return {
        "total_bytes": kernel.mem_total(host),
        "page_size": os.sysconf("SC_PAGE_SIZE"),
        "hpage_pmd_size": kernel.hpage_pmd_size(host),
        "thp": {**kernel.thp_modes(host), "mthp": kernel.mthp_modes(host)},
        "hugetlb_pools": pools,
    }


def source_dir() -> Path | None:
    """Where this hugebench came from: the package's parent when run from a checkout, else the directory
    pip recorded in direct_url.json (PEP 610) when it was installed from a local path."""
    package_parent = Path(__file__).resolve().parents[2]
    if "site-packages" not in package_parent.parts and (package_parent / "pyproject.toml").exists():
        return package_parent
    try:
        from importlib.metadata import distribution

        direct = json.loads(distribution("hugebench").read_text("direct_url.json") or "{}")
    except Exception:  # no metadata, not installed from a URL, unreadable JSON: nothing to say
        return None
    url = direct.get("url", "")
    return Path(url.removeprefix("file://")) if url.startswith("file://") else None


def git_state(directory: Path | None) -> dict:
    """HEAD sha and whether the tree has uncommitted changes; None when it is not a git checkout.

    For an installed package this is the source directory *now*, which may have moved on since the build.
    """
    if directory is None or shutil.which("git") is None:
        return {"git_sha": None, "git_dirty": None}
    sha = run_text(["git", "-C", str(directory), "rev-parse", "HEAD"])
    if not sha:
        return {"git_sha": None, "git_dirty": None}
    status = run_text(
        ["git", "-C", str(directory), "status", "--porcelain", "--untracked-files=no"]
    )
    return {
        "git_sha": sha.strip(),
        "git_dirty": bool(status.strip()) if status is not None else None,
    }


def core_build_info() -> dict | str:
    """``_core.build_info()`` (build type, compiler, flags), or why it is unavailable."""
    try:
        from hugebench import _core
    except ImportError as exc:
        return f"_core not importable: {exc}"
    try:
        return dict(_core.build_info())
    except Exception as exc:  # an extension from another engineer's half build: report, do not fail
        return f"_core.build_info() failed: {exc}"


def software_context() -> dict:
    """Kernel, libc, Python, hugebench and its provenance."""
    uname = platform.uname()
    src = source_dir()
    return {
        "kernel": {"release": uname.release, "version": uname.version, "machine": uname.machine},
        "glibc": os.confstr("CS_GNU_LIBC_VERSION")
        if "CS_GNU_LIBC_VERSION" in os.confstr_names
        else None,
        "python": {
            "version": platform.python_version(),
            "implementation": platform.python_implementation(),
        },
        "hugebench": {
            "version": __version__,
            "source_dir": str(src) if src else None,
            **git_state(src),
            "core_build": core_build_info(),
        },
    }


def machine_context(
    allocators: dict | None = None,
    *,
    perf_caps=None,
    host: Host = LOCAL,
) -> dict:
    """Everything about the machine worth storing once per sweep (JSON-serialisable).

    Keys: hostname, cpu, caches, tlb, memory, kernel, glibc, python, hugebench, perf, allocators.
    ``perf_caps`` (a ``PerfCapabilities``) avoids probing perf a second time when the caller already did.
    """
    if perf_caps is None:
        perf_caps = perf_mod.detect(host=host)
    return {
        "hostname": socket.gethostname(),
        "cpu": cpu_context(host),
        "caches": caches(host),
        "tlb": tlb_info(host),
        "memory": memory_context(host),
        **software_context(),
        "perf": perf_caps.to_dict(),
        "allocators": allocators,
    }
