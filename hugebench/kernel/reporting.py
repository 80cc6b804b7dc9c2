"""Readers of the memory a VM hands back to its host, and of memory the kernel has not handed out yet.

* Free page reporting (``/sys/module/page_reporting/parameters``): a balloon driver (virtio_balloon with
  its REPORTING feature, Hyper-V's balloon) tells the host which free blocks of at least
  ``page_reporting_order`` it may take back. The next fault on such a block pays the host's fault and
  zeroing: a 2 MiB huge-page fault after a moment of idle costs several times one back to back.
  ``page_reporting_order`` above the largest buddy order (``len(orders)``: no free block is ever that
  large) stops it, where the kernel accepts such a value.
* Lazily initialised memory: some kernels (``deferred_init=lazy``) hand memory to the buddy allocator in
  sections only when it runs short; ``MemFree`` counts it, ``nr_free_pages`` does not yet. Free 2 MiB
  blocks counted in ``/proc/buddyinfo`` are then only the part handed out so far.

Plain values, ``None`` or ``{}`` where the kernel lacks a file. What does not belong here: writing the
order (``hugebench.system.knobs``), deciding a regime (``hugebench.system.regime``).
"""

from __future__ import annotations

import os
from pathlib import Path

from hugebench.kernel.host import LOCAL, Host
from hugebench.kernel.parse import parse_buddyinfo, parse_int, parse_kb_fields, parse_vmstat
from hugebench.kernel.procfs import free_huge_blocks
from hugebench.kernel.read import read_optional
from hugebench.knob_catalogue import REPORTING_DIR

ORDER_FILE = f"{REPORTING_DIR}/page_reporting_order"
VIRTIO_DIR = "bus/virtio/devices"
VIRTIO_ID_BALLOON = 0x5
VIRTIO_BALLOON_F_REPORTING = 5  # feature bit: the device takes free page reports
HUGE_ORDER = 9  # a 2 MiB block on x86-64


def buddy_orders(host: Host = LOCAL) -> int | None:
    """How many orders the buddy allocator has (11 on x86-64: orders 0..10); None without buddyinfo."""
    text = read_optional(host.proc / "buddyinfo")
    if not text:
        return None
    return max((len(counts) for counts in parse_buddyinfo(text).values()), default=None)


def reporting_devices(host: Host = LOCAL) -> tuple[str, ...]:
    """virtio balloon devices bound to a driver that offer free page reporting ('virtio0', ...)."""
    found = []
    for dev in sorted(Path(host.sys, VIRTIO_DIR).glob("virtio*")):
        device = _hex(read_optional(dev / "device"))
        features = read_optional(dev / "features") or ""
        bound = (dev / "driver").exists()
        if (
            device == VIRTIO_ID_BALLOON
            and bound
            and features[VIRTIO_BALLOON_F_REPORTING:][:1] == "1"
        ):
            found.append(dev.name)
    return tuple(found)


def _hex(text: str | None) -> int | None:
    try:
        return int(text, 16) if text else None
    except ValueError:
        return None


def page_reporting(host: Host = LOCAL) -> dict:
    """What free page reporting does here: {present, order, active, reason, devices, counters}.

    ``active``: the module is there, its order is within the buddy orders (free blocks that large exist)
    and, where virtio devices are listed, a balloon with the REPORTING feature is bound. ``counters``:
    every other integer parameter the module exposes (reported_kib where this kernel counts it).
    """
    base = Path(host.sys, REPORTING_DIR)
    order = parse_int(read_optional(base / "page_reporting_order"))
    if order is None:
        return {
            "present": False,
            "active": False,
            "order": None,
            "devices": (),
            "counters": {},
            "off_order": None,
            "reason": "this kernel has no free page reporting (no page_reporting module)",
        }
    counters = {}
    for path in sorted(base.iterdir()):
        value = parse_int(read_optional(path)) if path.name != "page_reporting_order" else None
        if value is not None:
            counters[path.name] = value
    devices = reporting_devices(host)
    orders = buddy_orders(host)
    virtio_listed = Path(host.sys, VIRTIO_DIR).is_dir()
    reason = None
    if orders is not None and order >= orders:
        reason = (
            f"page_reporting_order {order} is above the largest free block (order {orders - 1})"
        )
    elif virtio_listed and not devices:
        reason = "no virtio balloon with free page reporting is bound"
    return {
        "present": True,
        "order": order,
        "active": reason is None,
        "reason": reason,
        "devices": devices,
        "counters": counters,
        "off_order": orders,
    }


def reported_kib(host: Host = LOCAL) -> int | None:
    """KiB reported to the host so far (a counter some kernels expose); None where there is none."""
    return parse_int(read_optional(Path(host.sys, REPORTING_DIR, "reported_kib")))


def unpopulated_free_bytes(host: Host = LOCAL) -> int:
    """Free memory the kernel has not handed to the buddy allocator yet (MemFree - nr_free_pages), 0 on a
    kernel that initialises all memory at boot (the two are the same counter there)."""
    meminfo = parse_kb_fields(read_optional(host.proc / "meminfo") or "")
    vmstat = parse_vmstat(read_optional(host.proc / "vmstat") or "")
    if "MemFree" not in meminfo or "nr_free_pages" not in vmstat:
        return 0
    return max(0, meminfo["MemFree"] - vmstat["nr_free_pages"] * os.sysconf("SC_PAGE_SIZE"))


def free_2mib_blocks(host: Host = LOCAL) -> int:
    """Free 2 MiB blocks a huge page can come from: those in /proc/buddyinfo (every zone but DMA) plus the
    memory not handed to the buddy allocator yet (whole free sections, handed over when it runs short)."""
    pending = unpopulated_free_bytes(host) // (2 << 20)
    return sum(free_huge_blocks(host).values()) + pending
