"""The probe as an ordinary experiment: working sets, page sizes and pools -> an ExperimentSpec.

Pure except for :func:`grantable_pools`, which asks the kernel (through ``SystemState``, journaled and
restored) whether each hugetlb pool the probe needs can be had right now.
"""

from __future__ import annotations

import yaml

from hugebench.errors import SystemStateError
from hugebench.kernel.host import LOCAL, Host
from hugebench.knob_catalogue import HUGETLB_1GB, HUGETLB_2MB

MIB, GIB = 1 << 20, 1 << 30
SMALLEST = 4 * MIB
REACH_LARGEST = (
    256 * MIB
)  # reach nodes are one line per 4 KiB page: 4 MiB of lines here, cache-resident
FREE_MEMORY_SHARE = (
    0.25  # the largest buffer: the 2 MiB and 1 GiB pools and a 4k buffer must fit at once
)
POOL_PAGE = {"hugetlb-2m": (HUGETLB_2MB, 2 * MIB), "hugetlb-1g": (HUGETLB_1GB, GIB)}
BACKINGS = ("4k", "thp", "hugetlb-2m", "hugetlb-1g")


def working_sets(largest: int, available: int | None) -> list[int]:
    """4 MiB, x4 ... up to ``largest``, capped at a safe share of available memory; the cap itself ends it."""
    top = largest if available is None else min(largest, int(available * FREE_MEMORY_SHARE))
    top -= top % (2 * MIB)
    sizes, size = [], SMALLEST
    while size <= top:
        sizes.append(size)
        size *= 4
    if sizes and top > sizes[-1] * 1.5:
        sizes.append(top)
    return sizes or [SMALLEST]


def pool_pages(largest: int) -> dict[str, int]:
    """Pages of each hugetlb pool that hold the largest buffer (runs are one at a time)."""
    return {knob: -(-largest // page) for knob, page in POOL_PAGE.values()}


def grantable_pools(wanted: dict[str, int], *, host: Host = LOCAL, journal=None) -> dict[str, str]:
    """knob -> "" if the kernel gives that pool now, else why not. Every pool is put back on the way out."""
    from hugebench.system import SystemState

    answers = {}
    with SystemState(host, journal, purpose="probe pool trial") as state:
        for knob, pages in wanted.items():
            if knob not in state.knobs:
                answers[knob] = f"this kernel has no {knob} pool"
                continue
            try:
                state.apply({knob: pages})
                answers[knob] = ""
            except SystemStateError as exc:
                answers[knob] = str(exc)
    return answers


def probe_spec_text(
    sizes: list[int], backings: list[str], system: dict, repetitions: int, accesses: int = 2_000_000
) -> str:
    """The probe's experiment as YAML (what `hugebench sweep` would read): chase, mlp and reach per page size."""
    excluded = [{"pattern": "reach", "working_set_bytes": s} for s in sizes if s > REACH_LARGEST]
    document = {
        "name": "probe",
        "workload": "tlbprobe",
        "description": "What a random access costs per page size and working set (hugebench probe).",
        "repetitions": repetitions,
        "seed": 1,
        "timeout": 600,
        "perf": "off",
        "counters": "off",
        "baseline": {"backing": "4k"},
        "params": {"accesses": accesses, "chains": 16},
        "axes": {
            "backing": list(backings),
            "pattern": ["chase", "mlp", "reach"],
            "working_set_bytes": sizes,
        },
        "exclude": excluded,
        "system": system,
    }
    return yaml.safe_dump(document, sort_keys=False)
