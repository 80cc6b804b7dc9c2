"""The probe summary as text: a table of the key points and the verdict (terminal, README, doctor)."""

from __future__ import annotations

ORDER = ("4k", "thp", "hugetlb-2m", "hugetlb-1g")


def _mib(size: int) -> str:
    return f"{size >> 30} GiB" if size >= 1 << 30 and size % (1 << 30) == 0 else f"{size >> 20} MiB"


def table(summary: dict) -> str:
    """Markdown: one row per (pattern, working set), ns per access per page size (median [CI])."""
    by = {
        (c["pattern"], c["backing"]): {p["working_set_bytes"]: p for p in c["points"]}
        for c in summary["curves"]
    }
    backings = [b for b in ORDER if any(k[1] == b for k in by)]
    lines = [
        "| pattern | working set | " + " | ".join(backings) + " |",
        "|---|---:|" + "---:|" * len(backings),
    ]
    for pattern in ("chase", "mlp", "reach"):
        sizes = sorted({s for (pat, _), points in by.items() if pat == pattern for s in points})
        for size in sizes:
            cells = []
            for b in backings:
                p = by.get((pattern, b), {}).get(size)
                cells.append("—" if p is None else f"{p['median']:.1f}")
            lines.append(f"| {pattern} | {_mib(size)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def saving_line(summary: dict) -> str:
    best = summary.get("best_saving")
    if not best:
        return "huge pages save at most: unknown (no chase curves on 4 KiB and huge pages)"
    return (
        f"huge pages save at most {best['saving']:.0%} of a dependent random access here "
        f"({best['ns_4k']:.0f} -> {best['ns_huge']:.0f} ns with {best['backing']} at "
        f"{_mib(best['working_set_bytes'])})"
    )


def describe(summary: dict) -> str:
    verdict = summary["verdict"]
    refused = [
        f"{c['pattern']}/{c['backing']} at {_mib(r['working_set_bytes'])}: {r['reason']}"
        for c in summary["curves"]
        for r in c["refused"]
    ]
    parts = [
        table(summary),
        "",
        saving_line(summary),
        f"huge pages extend TLB reach here: {verdict['answer']} ({verdict['reason']})",
    ]
    if refused:
        parts.append("refused points (pages not as asked): " + "; ".join(refused))
    return "\n".join(parts)
