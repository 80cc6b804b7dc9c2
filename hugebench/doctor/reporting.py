"""``hugebench doctor``'s free page reporting check: is it on here, and what does it cost a huge-page fault?

Read: ``hugebench.kernel.reporting`` (order, balloon, counters). Measured, as root where reporting is active
and THP can be madvised: a burst of 2 MiB faults on ``BURST_BYTES`` (``MADV_HUGEPAGE``, one write per huge
page, the kernel zeroes each) after ``IDLE_S`` of idle, once with reporting as found and once held off
(``page_reporting.order`` set to ``off`` through a ``SystemState``: journaled before the write, restored on
any exit, so ``hugebench system restore`` undoes a doctor killed meanwhile). The only knob doctor writes.
"""

from __future__ import annotations

import ctypes
import os
import time

from hugebench import kernel
from hugebench.kernel import reporting
from hugebench.kernel.host import LOCAL, Host
from hugebench.knob_catalogue import REPORTING_ORDER

BURST_BYTES = 256 << 20
HUGE = 2 << 20
IDLE_S = 4.0  # issue 40's gap; the blocks freed before it are reported meanwhile
MADV_HUGEPAGE = 14
SLOWER = 1.5  # a ratio above this is called a cost worth a regime choice


def fault_burst_s(size: int = BURST_BYTES) -> tuple[float, int]:
    """(seconds to fault ``size`` in 2 MiB pages, how many were huge): one write per 2 MiB."""
    from hugebench.system.fragmenter import LIBC, MAP_PRIVATE_ANON, PROT_RW

    raw = LIBC.mmap(None, size + HUGE, PROT_RW, MAP_PRIVATE_ANON, -1, 0)
    if raw in (None, ctypes.c_void_p(-1).value):
        raise OSError(ctypes.get_errno(), "mmap of the fault burst failed")
    try:
        base = (raw + HUGE - 1) & ~(HUGE - 1)
        LIBC.madvise(base, size, MADV_HUGEPAGE)
        huge_before = kernel.read_smaps_rollup("self").get("AnonHugePages", 0)
        started = time.perf_counter()
        for offset in range(0, size, HUGE):
            ctypes.memset(base + offset, 1, 1)
        seconds = time.perf_counter() - started
        huge = (kernel.read_smaps_rollup("self").get("AnonHugePages", 0) - huge_before) // HUGE
        return seconds, huge
    finally:
        LIBC.munmap(raw, size + HUGE)


def after_idle(idle_s: float = IDLE_S) -> tuple[float, int]:
    """A burst to free blocks, ``idle_s`` of idle, then the timed burst on what is free then."""
    fault_burst_s()
    time.sleep(idle_s)
    return fault_burst_s()


def measure(state, idle_s: float = IDLE_S) -> dict:
    """{'on': s, 'off': s, 'huge': pages} with reporting as found, then held off on ``state``."""
    on, huge_on = after_idle(idle_s)
    state.apply({REPORTING_ORDER: "off"})
    off, huge_off = after_idle(idle_s)
    return {"on": on, "off": off, "huge": min(huge_on, huge_off)}


QUICK = f"not measured (--quick; without it doctor measures it in ~{2 * IDLE_S + 1.5:.0f} s)"


def finding(
    host: Host = LOCAL, measure_it: bool = True, skipped: str = "not measured (asked)"
) -> tuple:
    """(name, ok, detail, fix) for doctor; ``skipped``: what the detail says when not ``measure_it``."""
    now = reporting.page_reporting(host)
    name = "free page reporting"
    if not now["present"] or not now["active"]:
        return (name, True, f"not active: {now['reason']}; no regime to choose", "")
    reported = now["counters"].get("reported_kib")
    told = f"on (order {now['order']}, balloon {', '.join(now['devices']) or '?'}"
    told += f", {reported / 2**20:,.1f} GiB reported so far)" if reported else ")"
    fix = (
        "choose the regime your deployment has: `regime: [warm, cold]` as an axis, "
        f"`system: {{{REPORTING_ORDER}: 'off'}}` for a sweep, or `try --regime warm|cold|both` "
        "(docs/trusting-numbers.md)"
    )
    why_not = _why_not_measured(host) if measure_it else skipped
    if why_not:
        return (name, False, f"{told}; its cost {why_not}", fix)
    from hugebench.system import SystemState

    with SystemState(host) as state:
        got = measure(state)
    mib = BURST_BYTES >> 20
    detail = (
        f"{told}: a {mib} MiB burst of 2 MiB faults after {IDLE_S:g} s idle took "
        f"{got['on'] * 1000:.0f} ms with reporting on, {got['off'] * 1000:.0f} ms held off "
        f"({got['on'] / got['off']:.1f}x; {got['huge']} huge pages), order back to {now['order']}"
    )
    return (name, got["on"] < SLOWER * got["off"], detail, fix)


def _why_not_measured(host: Host) -> str | None:
    if os.geteuid() != 0:
        return f"is not measured without root (holding reporting off writes {REPORTING_ORDER})"
    if kernel.thp_modes(host).get("enabled") not in ("always", "madvise"):
        return "is not measured: THP is 'never' here, no 2 MiB fault to time"
    return None
