"""The page-size part of a try's verdict: each multi-size THP size set tried (and THP always, the 2 MiB
reference) with its effect, memory cost and the folio sizes its memory really got, and the smallest size
set within noise of the best of them.

"Within noise": its ratio's interval reaches the best one's (for lower-better metrics, its lower end is at or
below the best's upper end; mirrored for higher-better). Smallest: the set whose largest size is smallest
(then fewer sizes). Pure: it reads the configurations ``trial.verdict`` built.
"""

from __future__ import annotations


def _largest_kb(config: dict) -> int:
    cell = config["cell"]
    if cell.get("mthp"):
        sizes = [
            int(k.rsplit(".", 1)[1][:-2])
            for k, v in cell.items()
            if k.startswith("thp.mthp.") and v == "always"
        ]
        return max(sizes, default=0) * 16 + len(sizes)
    return 2048 * 16 + 9  # THP always: 2 MiB pages


def size_configs(configs: list[dict]) -> list[dict]:
    """The configurations about page sizes: the mTHP sets and THP always with the as-is allocator."""
    return [
        c
        for c in configs
        if c.get("runs")
        and c.get("ratio")
        and c["cell"].get("allocator") == "as-is"
        and (c["cell"].get("mthp") or c["cell"].get("thp") == "always")
    ]


def _within(config: dict, best: dict, better: str) -> bool:
    a, b = config["ratio"], best["ratio"]
    if better == "higher":
        return (a.get("ci_hi") or a["value"]) >= (b.get("ci_lo") or b["value"])
    return (a.get("ci_lo") or a["value"]) <= (b.get("ci_hi") or b["value"])


def page_sizes(configs: list[dict], better: str) -> dict | None:
    """{'sets': [...], 'best': name, 'smallest': name} or None when no size set was measured."""
    tried = size_configs(configs)
    if not any(c["cell"].get("mthp") for c in tried):
        return None
    sign = -1 if better == "higher" else 1
    best = min(tried, key=lambda c: sign * c["ratio"]["value"])
    near = [c for c in tried if _within(c, best, better)]
    smallest = min(near, key=_largest_kb)
    sets = [
        {
            "name": c["name"],
            "ratio": c["ratio"],
            "memory": (c.get("peak_rss_ratio") or {}).get("value"),
            "folio_shares": c.get("folio_shares") or {},
        }
        for c in tried
    ]
    return {"sets": sets, "best": best["name"], "smallest": smallest["name"]}
