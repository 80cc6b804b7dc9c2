"""`hugebench system show`: every knob, the THP counters and the hugetlb pools, in one dict."""

from __future__ import annotations

import os
import re
from pathlib import Path

from hugebench.errors import SystemStateError
from hugebench.system.knobs import HUGETLB_DIR, SysfsIO, discover_knobs
from hugebench.system.memory import read_thp_vmstat

POOL_FIELDS = {"nr": "nr_hugepages", "free": "free_hugepages", "surplus": "surplus_hugepages", "resv": "resv_hugepages"}


def read_hugetlb_pools(sys_root: str | Path = "/sys") -> dict[str, dict[str, int]]:
    """{'2048kB': {'nr': 0, 'free': 0, 'surplus': 0, 'resv': 0}, '1048576kB': {...}} for each pool size."""
    pools = {}
    pool_dirs = Path(sys_root, HUGETLB_DIR).glob("hugepages-*kB")
    for pool_dir in sorted(pool_dirs, key=lambda d: int(re.sub(r"\D", "", d.name))):
        fields = {}
        for key, filename in POOL_FIELDS.items():
            try:
                fields[key] = int((pool_dir / filename).read_text())
            except (OSError, ValueError):
                continue
        pools[pool_dir.name.removeprefix("hugepages-")] = fields
    return pools


def show(sys_root: str | Path = "/sys", proc_root: str | Path = "/proc", io: SysfsIO | None = None) -> dict:
    """Returns {'knobs': {name: {value, choices, allowed, path, writable}}, 'thp_vmstat': {...},
    'hugetlb': {size: {nr, free, surplus, resv}}}."""
    knobs = {}
    for name, knob in discover_knobs(sys_root, proc_root, io).items():
        try:
            reading = knob.reading()
            value, choices = reading.value, list(reading.choices)
        except (OSError, SystemStateError) as e:
            value, choices = f"<unreadable: {e}>", []
        knobs[name] = {
            "value": value,
            "choices": choices,
            "allowed": " ".join(choices) if choices else knob.allowed(),
            "path": str(knob.path),
            "writable": os.access(knob.path, os.W_OK),
        }
    try:
        vmstat = read_thp_vmstat(proc_root)
    except OSError:
        vmstat = {}
    return {"knobs": knobs, "thp_vmstat": vmstat, "hugetlb": read_hugetlb_pools(sys_root)}
