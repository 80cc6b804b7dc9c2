"""Did a tlbprobe run get the pages it asked for? A curve is only what its label says when every cell is.

Read from the row the worker wrote: the process's smaps at the end of the timed phase, less what the
interpreter had on huge pages before the workload, over the buffer's mapped bytes.
"""

from __future__ import annotations

import math

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
    if math.isnan(share):
        why = "no smaps reading of the buffer"
    elif backing == "4k":
        stray = share * (row.get("mapped_bytes") or 0)
        why = None if stray <= STRAY_HUGE_BYTES else f"the 4k buffer got {share:.0%} huge pages"
    elif backing == "thp":
        why = None if share >= THP_MIN_COVERAGE else (
            f"THP coverage {share:.0%} of the buffer (< {THP_MIN_COVERAGE:.0%}): not a THP measurement")
    else:
        why = None if share >= 0.999 else f"{backing} buffer only {share:.0%} on hugetlb pages"
    return {"buffer_hp_coverage": share, "page_check": why or "ok"}
