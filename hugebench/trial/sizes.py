"""The page-size part of a try's verdict: each multi-size THP size set tried (and THP always, the 2 MiB
reference) with its effect, memory cost and the folio sizes its memory really got, and the smallest size
set within noise of the best of them.

"Within noise": its ratio's interval reaches the best one's (for lower-better metrics, its lower end is at or
below the best's upper end; mirrored for higher-better). Smallest: the set whose largest size is smallest
(then fewer sizes). Pure: it reads the configurations ``trial.verdict`` built.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from hugebench.knob_catalogue import MTHP_PREFIX
from hugebench.trial.verdict_types import Configuration

SAME_SHARE = 0.02  # every size's share of anonymous memory within 2 points: the same folios
MIN_ANON_BYTES = 4 << 20  # less anonymous memory than this is no evidence about folio sizes


def _largest_kb(cell: Mapping) -> int:
    if cell.get("mthp"):
        sizes = [
            int(k.rsplit(".", 1)[1][:-2])
            for k, v in cell.items()
            if k.startswith(MTHP_PREFIX) and v == "always"
        ]
        return max(sizes, default=0) * 16 + len(sizes)
    return 2048 * 16 + 9  # THP always: 2 MiB pages


def size_configs(configs: list[Configuration]) -> list[Configuration]:
    """The configurations about page sizes: the mTHP sets and THP always with the as-is allocator."""
    return [
        c
        for c in configs
        if c.runs
        and c.ratio
        and c.cell.get("allocator") == "as-is"
        and (c.cell.get("mthp") or c.cell.get("thp") == "always")
    ]


def _within(config: Configuration, best: Configuration, better: str) -> bool:
    a, b = config.ratio, best.ratio
    assert a is not None and b is not None  # size_configs keeps those with a ratio
    if better == "higher":
        return (a.ci_hi or a.value) >= (b.ci_lo or b.value)
    return (a.ci_lo or a.value) <= (b.ci_hi or b.value)


def page_sizes(configs: list[Configuration], better: str) -> dict | None:
    """{'sets': [...], 'best': name, 'smallest': name} or None when no size set was measured (plain data,
    as the JSON has it: each set's ratio is ``Ratio.to_dict()``)."""
    tried = size_configs(configs)
    if not any(c.cell.get("mthp") for c in tried):
        return None
    sign = -1 if better == "higher" else 1
    best = min(tried, key=lambda c: sign * c.ratio.value)  # type: ignore[union-attr]
    near = [c for c in tried if _within(c, best, better)]
    smallest = min(near, key=lambda c: _largest_kb(c.cell))
    sets = [
        {
            "name": c.name,
            "ratio": c.ratio.to_dict() if c.ratio else None,
            "memory": c.peak_rss_ratio.value if c.peak_rss_ratio else None,
            "folio_shares": c.folio_shares or {},
        }
        for c in tried
    ]
    return {"sets": sets, "best": best.name, "smallest": smallest.name}


def rank(cell: dict) -> float:
    """The order in which page-size configurations are kept when they got the same folios: THP always
    first (the reference, one sysfs line), then the size sets smallest first (:func:`_largest_kb`)."""
    return 0.0 if not cell.get("mthp") else float(_largest_kb(cell))


def folio_mix(rows: Iterable[Mapping], cell: str) -> dict[str, float] | None:
    """Each folio size's share of the anonymous memory in ``cell``'s first successful run (time-weighted
    over the run where it was sampled, else at the window's end); None without a per-size reading of at
    least :data:`MIN_ANON_BYTES`."""
    for row in rows:
        if row.get("cell_id") != cell or row.get("status") != "ok":
            continue
        anon = row.get("folio.anon_bytes")
        if not isinstance(anon, (int, float)) or not anon >= MIN_ANON_BYTES:
            return None
        for prefix in ("folio_share_tw.", "folio_share."):
            mix = {
                k[len(prefix) :]: float(v)
                for k, v in row.items()
                if k.startswith(prefix) and isinstance(v, (int, float)) and math.isfinite(v)
            }
            if mix:
                return mix
        return None
    return None


def same_folios(rows: list, sets: Mapping[str, tuple[float, str]]) -> dict[str, str]:
    """{cell id: why} for each page-size configuration (``sets``: cell id -> (:func:`rank`, name)) whose
    first run got the same folios as one ranked before it, which stays: the kernel used the same sizes
    under both, so the later one only costs runs. Chosen by what the runs measured, not by the menu."""
    mixes = {cell: mix for cell in sets if (mix := folio_mix(rows, cell))}
    ordered = sorted(mixes, key=lambda c: sets[c][0])
    out: dict[str, str] = {}
    for i, cell in enumerate(ordered):
        for kept in (c for c in ordered[:i] if c not in out):
            a, b = mixes[cell], mixes[kept]
            if all(abs(a.get(s, 0.0) - b.get(s, 0.0)) <= SAME_SHARE for s in set(a) | set(b)):
                out[cell] = (
                    f"its first run got the same folios as {sets[kept][1]} ({_mix_text(a)}); "
                    "that one is kept"
                )
                break
    return out


def _mix_text(mix: Mapping[str, float]) -> str:
    shown = [f"{size} {share:.0%}" for size, share in mix.items() if share >= 0.005]
    return ", ".join(shown) or "no huge or multi-size folios"


def _first_ok(rows: Iterable[Mapping], cell: str) -> Mapping | None:
    return next((r for r in rows if r.get("cell_id") == cell and r.get("status") == "ok"), None)


def same_pages_as_is(rows: list, cell: str, base: str) -> str | None:
    """Why a configuration asking for huge pages got as-is's pages in its first run (its verification run
    under try), or None: every folio size's share within :data:`SAME_SHARE` of as-is's and no folio above
    4 KiB; where folio sizes are not read (not root), both under 1 % huge-page coverage. glibc's hugetlb
    tunable on a program whose 256 KiB blocks are each mmapped is that case: it only costs runs."""
    mine, theirs = folio_mix(rows, cell), folio_mix(rows, base)
    if mine and theirs:
        big = sum(share for size, share in mine.items() if size != "4kB")
        same = all(
            abs(mine.get(s, 0.0) - theirs.get(s, 0.0)) <= SAME_SHARE
            for s in set(mine) | set(theirs)
        )
        seen = _first_ok(rows, cell) or {}
        cov = seen.get("hp_coverage")
        if isinstance(cov, (int, float)) and math.isfinite(cov) and cov >= 0.01:
            return None  # its coverage saw huge pages the few per-size readings missed
        if same and big <= SAME_SHARE:
            return f"the same pages as as-is: its first run got {_mix_text(mine)}, as as-is did"
        return None
    first, asis = _first_ok(rows, cell), _first_ok(rows, base)
    if not first or not asis:
        return None
    size = first.get("tree_peak_rss_bytes") or first.get("peak_rss_bytes")
    cov, base_cov = first.get("hp_coverage"), asis.get("hp_coverage")
    if not isinstance(size, (int, float)) or size < MIN_ANON_BYTES:
        return None
    if not all(isinstance(v, (int, float)) and math.isfinite(v) for v in (cov, base_cov)):
        return None
    if cov < 0.01 and base_cov < 0.01:  # type: ignore[operator]
        return (
            f"the same pages as as-is: its first run had {cov:.0%} of its memory on huge pages, "
            f"as as-is ({base_cov:.0%})"
        )
    return None
