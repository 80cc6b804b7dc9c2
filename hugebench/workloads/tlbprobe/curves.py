"""Rows of a probe results directory -> curves (median and CI per working set) and the TLB-reach verdict.

A point enters a curve only when its runs got the pages the curve is named after (``page_check`` of
every row "ok"): a THP point whose buffer stayed on 4 KiB pages is refused with the reason, never drawn.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import pandas as pd

from hugebench import stats

REACH_RISE = 1.25  # 4 KiB pages must get this much slower over the reach sizes for a verdict
FLAT = 1.10  # a huge-page curve that rises less than this kept its translations in the TLB


@dataclass
class Curve:
    pattern: str
    backing: str
    points: list = field(default_factory=list)  # {working_set_bytes, median, ci_lo, ci_hi, n}
    refused: list = field(default_factory=list)  # {working_set_bytes, reason}

    def at(self, size: float) -> float | None:
        """Median ns per access at ``size``, interpolated on log size between points (None outside)."""
        import numpy as np

        xs = [p["working_set_bytes"] for p in self.points]
        if not xs or size < xs[0] or size > xs[-1]:
            return None
        return float(np.interp(np.log(size), np.log(xs), [p["median"] for p in self.points]))


def curves(rows: pd.DataFrame) -> list[Curve]:
    """One curve per (pattern, backing), points sorted by working set; refused points listed apart."""
    ok = stats.ok_rows(rows[~rows.get("warmup", False).astype(bool)]) if len(rows) else rows
    out = []
    for (pattern, backing), group in ok.groupby(["pattern", "backing"], sort=True):
        curve = Curve(pattern, backing)
        for size, cell in group.groupby("working_set_bytes", sort=True):
            bad = cell[cell.get("page_check", pd.Series("missing", index=cell.index)) != "ok"]
            if len(bad):
                reason = str(bad["page_check"].iloc[0]) if "page_check" in bad else "no page check"
                curve.refused.append({"working_set_bytes": int(size), "reason": reason})
                continue
            summary = stats.describe_cell(cell, "ns_per_access")
            curve.points.append(
                {
                    "working_set_bytes": int(size),
                    "median": summary["median"],
                    "ci_lo": summary["ci_lo"],
                    "ci_hi": summary["ci_hi"],
                    "n": summary["n"],
                }
            )
        out.append(curve)
    return out


def find(all_curves: list[Curve], pattern: str, backing: str) -> Curve | None:
    return next((c for c in all_curves if c.pattern == pattern and c.backing == backing), None)


@dataclass(frozen=True)
class Verdict:
    answer: str  # "yes", "no" or "inconclusive"
    reason: str
    rise_4k: float | None = None
    rise_huge: dict = field(default_factory=dict)  # backing -> rise over the same sizes

    def to_dict(self) -> dict:
        return asdict(self)


def _rise(curve: Curve | None) -> float | None:
    if curve is None or len(curve.points) < 2:
        return None
    return curve.points[-1]["median"] / curve.points[0]["median"]


def reach_verdict(all_curves: list[Curve]) -> Verdict:
    """Do huge pages extend TLB reach here? The reach pattern keeps the lines in the caches, so when
    4 KiB pages get slower with the working set the cost is translation; a huge-page curve that stays
    flat over the same sizes kept its translations in the TLB (yes); one that rises too did not: its TLB
    entries are no larger than 4 KiB (e.g. a guest on a host backing it with small pages), so any gain is a
    shorter page walk (no)."""
    rise_4k = _rise(find(all_curves, "reach", "4k"))
    rises = {c.backing: _rise(c) for c in all_curves if c.pattern == "reach" and c.backing != "4k"}
    huge = {b: r for b, r in rises.items() if r is not None}
    if rise_4k is None or not huge:
        return Verdict(
            "inconclusive",
            "needs reach curves on 4 KiB and on huge pages with two verified points each",
            rise_4k,
            huge,
        )
    if rise_4k < REACH_RISE:
        return Verdict(
            "inconclusive",
            f"4 KiB pages got only {rise_4k:.2f}x slower over the reach sizes: their "
            "TLB still covers them, so these sizes cannot tell",
            rise_4k,
            huge,
        )
    flat = sorted(b for b, r in huge.items() if r < FLAT)
    if flat:
        return Verdict(
            "yes",
            f"4 KiB pages {rise_4k:.2f}x slower over the reach sizes, {', '.join(flat)} flat "
            f"(< {FLAT:.2f}x)",
            rise_4k,
            huge,
        )
    risen = ", ".join(f"{b} {r:.2f}x" for b, r in sorted(huge.items()))
    return Verdict(
        "no",
        f"4 KiB pages {rise_4k:.2f}x slower over the reach sizes and huge pages too ({risen}): "
        "TLB entries are no larger than 4 KiB here; huge pages only shorten the page walk",
        rise_4k,
        huge,
    )


def best_saving(all_curves: list[Curve], pattern: str = "chase") -> dict | None:
    """At the largest working set measured on 4 KiB pages and a huge page size: the most a huge page size
    saves per dependent random access, {working_set_bytes, ns_4k, ns_huge, backing, saving}."""
    base = find(all_curves, pattern, "4k")
    if base is None or not base.points:
        return None
    best = None
    for curve in (c for c in all_curves if c.pattern == pattern and c.backing != "4k" and c.points):
        common = sorted(
            {p["working_set_bytes"] for p in base.points}
            & {p["working_set_bytes"] for p in curve.points}
        )
        if not common:
            continue
        size = common[-1]
        ns_4k, ns_huge = base.at(size), curve.at(size)
        if ns_4k is None or ns_huge is None:  # a size both measured is inside both curves
            continue
        candidate = {
            "working_set_bytes": size,
            "ns_4k": ns_4k,
            "ns_huge": ns_huge,
            "backing": curve.backing,
            "saving": 1 - ns_huge / ns_4k,
        }
        if best is None or (candidate["working_set_bytes"], candidate["saving"]) > (
            best["working_set_bytes"],
            best["saving"],
        ):
            best = candidate
    return best
