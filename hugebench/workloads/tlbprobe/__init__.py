"""tlbprobe: dependent loads along one random cycle per page size, what a random access costs here (probe).

Did a run get the pages it asked for? A curve is only what its label says when every cell is.

Read from the row the worker wrote: the process's smaps at the end of the timed phase, less what the
interpreter had on huge pages before the workload, over the buffer's mapped bytes.
"""

from __future__ import annotations

import math

from hugebench.workloads.base import CHUNK_P10, STARTUP_S, Param, Workload, loop_params, register

THP_MIN_COVERAGE = 0.9  # a THP cell with less of its buffer on huge pages is not a THP measurement
STRAY_HUGE_BYTES = 2 << 20  # a 4k buffer may not gain more than one stray huge page


def buffer_coverage(row: dict) -> float:
    """Share of the buffer on huge pages (THP or hugetlb), NaN when the row lacks the readings."""
    mapped = row.get("mapped_bytes") or 0
    if not mapped:
        return math.nan
    if str(row.get("backing", "")).startswith("hugetlb"):
        # Both: smaps files a private hugetlb page under Shared_Hugetlb when the kernel's mapcount heuristic
        # says "maybe mapped shared" (seen here on 1 GiB pages reused from the pool by the next run). The
        # process has no other hugetlb mapping, so the sum is the buffer's.
        parts = [row.get(f"phase.chase.smaps.{k}_Hugetlb") for k in ("Private", "Shared")]
        huge = None if all(p is None for p in parts) else sum(p or 0 for p in parts)
    else:
        after = row.get("phase.chase.smaps.AnonHugePages")
        huge = None if after is None else after - (row.get("anon_huge_before_workload_bytes") or 0)
    return math.nan if huge is None else max(0.0, min(1.0, huge / mapped))


def page_check(row: dict) -> dict:
    """{buffer_hp_coverage, page_check}: page_check is "ok" or why the cell is not what its backing says."""
    share = buffer_coverage(row)
    backing = row.get("backing")
    why: str | None
    if math.isnan(share):
        why = "no smaps reading of the buffer"
    elif backing == "4k":
        stray = share * (row.get("mapped_bytes") or 0)
        why = None if stray <= STRAY_HUGE_BYTES else f"the 4k buffer got {share:.0%} huge pages"
    elif backing == "thp":
        why = (
            None
            if share >= THP_MIN_COVERAGE
            else (
                f"THP coverage {share:.0%} of the buffer (< {THP_MIN_COVERAGE:.0%}): not a THP measurement"
            )
        )
    else:
        why = None if share >= 0.999 else f"{backing} buffer only {share:.0%} on hugetlb pages"
    return {"buffer_hp_coverage": share, "page_check": why or "ok"}


def _nodes(p: dict) -> int:
    unit = 4096 if p.get("pattern") == "reach" else 64
    return min(p["working_set_bytes"] // unit, p["max_nodes"])


def _memory(p: dict) -> int:
    # The buffer (hugetlb pages come out of the pool but are memory all the same) and 20 B per node for
    # the cycle's order and addresses while it is linked.
    page = {"hugetlb-1g": 1 << 30}.get(p["backing"], 2 << 20)
    return int(-(-p["working_set_bytes"] // page) * page + 20 * _nodes(p) + (32 << 20))


def _time(p: dict) -> float:
    # ~0.5 s per GiB populated on 4 KiB pages, ~150 ns per node linked, up to ~400 ns per timed access
    # (plus a quarter untimed) over 4 GiB on 4 KiB pages in a 2-core KVM guest.
    return (
        STARTUP_S
        + 0.5 * p["working_set_bytes"] / 2**30
        + 1.5e-7 * _nodes(p)
        + 1.25 * 2e-7 * p["accesses"]
    )


WORKLOAD = register(
    Workload(
        name="tlbprobe",
        doc="Dependent loads along one random cycle per page size: what a random access costs here (probe).",
        params={
            "backing": Param(
                str,
                "4k",
                choices=("4k", "thp", "hugetlb-2m", "hugetlb-1g"),
                help="4k: MADV_NOHUGEPAGE; thp: MADV_HUGEPAGE (coverage checked); hugetlb-*: the pool",
            ),
            "working_set_bytes": Param(
                int, 64 << 20, minimum=256 << 10, help="buffer the nodes spread over"
            ),
            "pattern": Param(
                str,
                "chase",
                choices=("chase", "mlp", "reach"),
                help="chase: one dependent chain; mlp: `chains` chains at once; reach: one "
                "cache-resident line per 4 KiB page (TLB reach)",
            ),
            "chains": Param(
                int, 16, minimum=1, help="independent chains of the mlp pattern (1..64)"
            ),
            "accesses": Param(int, 2_000_000, minimum=1, help="timed loads over all chains"),
            "max_nodes": Param(
                int,
                1 << 22,
                minimum=2,
                help="nodes at most; a larger working set gets one node per equal stratum",
            ),
            **loop_params(seed="seed of the cycle and the nodes' lines"),
        },
        timed_phase="chase",
        ops_column="accesses",
        memory_estimate=_memory,
        time_estimate=_time,
        metrics=(
            ("ns_per_access", "ns/access", ".1f"),
            CHUNK_P10,
            ("buffer_hp_coverage", "Buffer on huge pages", ".0%"),
        ),
        extra_metrics=page_check,
    )
)
