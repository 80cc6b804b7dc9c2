"""`hugebench system show`: every knob, the THP counters and the hugetlb pools, in one dict."""

from __future__ import annotations

from hugebench import kernel
from hugebench.errors import SystemStateError
from hugebench.kernel.host import LOCAL, Host
from hugebench.system.knobs import discover_knobs


def show(host: Host = LOCAL) -> dict:
    """Returns {'knobs': {name: {value, choices, allowed, path, writable}}, 'thp_vmstat': {...},
    'hugetlb': {size: {nr, free, surplus, resv}}}."""
    knobs = {}
    for name, knob in discover_knobs(host).items():
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
            "writable": kernel.writable(knob.path),
        }
    try:
        vmstat = kernel.read_thp_vmstat(host)
    except OSError:
        vmstat = {}
    return {"knobs": knobs, "thp_vmstat": vmstat, "hugetlb": kernel.read_hugetlb_pools(host)}
