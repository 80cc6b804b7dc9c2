"""``hugebench doctor``'s noise checks: what makes this machine's numbers noisy, with the fix.

Read-only, from one look at the machine (``hugebench.measure.disturbance``) and /sys: steal and other load,
the CPU frequency governor, THP defrag stalls, and khugepaged / kdamond activity. Each finding is a tuple
``(name, ok, detail, fix)``; ``hugebench.doctor`` turns them into its checks.
"""

from __future__ import annotations

import os

from hugebench.kernel.host import LOCAL, Host
from hugebench.knob_catalogue import THP_DIR, sys_path
from hugebench.measure import disturbance

LOOK_S = 1.0
BACKGROUND = (
    "khugepaged",
    "kdamond",
    "kcompactd",
)  # kernel threads whose work disturbs huge-page runs
BACKGROUND_CPUS = 0.05  # more than this share of a CPU during the look is reported


def noise_findings(host: Host = LOCAL, look_s: float = LOOK_S) -> list[tuple]:
    before = disturbance.snapshot(host)
    disturbance.time.sleep(look_s)
    after = disturbance.snapshot(host)
    wall = after.at - before.at
    cols = disturbance.machine_columns(before, after, wall, 0.0, exclude={os.getpid()})
    return [
        _load(cols),
        _steal(cols),
        _governor(host),
        _defrag(host),
        _background(before, after, wall),
    ]


def _load(cols: dict) -> tuple:
    other = cols.get("noise.other_cpus")
    if other is None:
        return ("other load", True, f"unknown: {cols.get('noise.other_cpus.reason')}", "")
    detail = f"{other:.2f} CPUs busy with other work" + (
        f" ({cols['noise.top_others']})" if cols.get("noise.top_others") else ""
    )
    ok = other <= disturbance.THRESHOLDS.other_cpus
    return (
        "other load",
        ok,
        detail,
        ""
        if ok
        else "stop or wait for the processes named, or sweep with "
        "--quiet-machine SECONDS (waits for a quiet machine before each block)",
    )


def _steal(cols: dict) -> tuple:
    steal = cols.get("noise.steal_pct")
    if steal is None:
        return ("steal", True, f"unknown: {cols.get('noise.steal_pct.reason')}", "")
    ok = steal <= disturbance.THRESHOLDS.steal_pct
    return (
        "steal",
        ok,
        f"the hypervisor took {steal:.1f}% of the CPU time",
        ""
        if ok
        else "a VM with dedicated (pinned) vCPUs, or a quieter host: steal cannot be fixed from inside the guest",
    )


def _governor(host: Host) -> tuple:
    found = sorted(
        {
            p.read_text().strip()
            for p in host.sys.glob("devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor")
            if p.is_file()
        }
    )
    if not found:
        return (
            "CPU governor",
            True,
            "no cpufreq (a VM guest or no driver): the frequency is not this machine's to set",
            "",
        )
    ok = found == ["performance"]
    return (
        "CPU governor",
        ok,
        ", ".join(found),
        ""
        if ok
        else "cpupower frequency-set -g performance "
        "(a changing frequency changes every time measured)",
    )


def _defrag(host: Host) -> tuple:
    path = host.sys / THP_DIR / "defrag"
    try:
        text = path.read_text()
    except OSError:
        return ("THP defrag", True, "no THP in this kernel", "")
    mode = text[text.index("[") + 1 : text.index("]")] if "[" in text else text.strip()
    ok = mode != "always"
    return (
        "THP defrag",
        ok,
        f"{mode}" + ("" if ok else ": every THP fault may stall in direct compaction"),
        ""
        if ok
        else f"echo madvise > {path} (an experiment that asks for defrag=always sets it per cell)",
    )


def _background(before, after, wall: float) -> tuple:
    busy = []
    for pid, (comm, ticks, start) in after.procs.items():
        if comm.startswith(BACKGROUND):
            prev = before.procs.get(pid)
            delta = (ticks - prev[1]) if prev and prev[2] == start else ticks
            share = delta / disturbance._CLK_TCK / wall if wall > 0 else 0.0
            if share > BACKGROUND_CPUS:
                busy.append(f"{comm}[{pid}] {share:.2f} CPU")
    if not busy:
        return ("khugepaged/kdamond", True, "idle during the look", "")
    return (
        "khugepaged/kdamond",
        False,
        "busy: " + ", ".join(busy),
        f"khugepaged: raise {sys_path(THP_DIR)}/khugepaged/scan_sleep_millisecs; kdamond: stop "
        "DAMON (echo off > /sys/kernel/mm/damon/admin/kdamonds/*/state)",
    )
