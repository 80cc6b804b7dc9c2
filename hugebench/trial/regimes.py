"""When a try measured the program in several regimes (back to back, after idle, ...), whether the same
configuration wins in one and loses in another: said on the verdict's first line, never left for the reader
to find in two verdicts (issue 55: the heap program's mimalloc with large pages, 0.56x back to back, was 1.84x
as-is when each run followed 5 s of idle).

What belongs here: comparing one configuration across the regimes' verdicts (:func:`disagreement`). What
does not: the verdicts themselves (``trial.verdict``), how a regime is run (``system.regime``).
"""

from __future__ import annotations

from hugebench.stats.stability import SMALLEST_EFFECT
from hugebench.trial.matrix import regime_name
from hugebench.trial.verdict_types import Configuration, Verdict


def _key(cell) -> tuple:
    return tuple(sorted((k, str(v)) for k, v in cell.items() if k != "regime"))


def _wins(ratio: float, better: str) -> int:
    """+1 when ``ratio`` is better than as-is by more than the smallest effect, -1 worse, 0 neither."""
    value = ratio if better == "lower" else (1.0 / ratio if ratio else float("inf"))
    if value < 1 - SMALLEST_EFFECT:
        return 1
    if value > 1 + SMALLEST_EFFECT:
        return -1
    return 0


def _configs(verdict: Verdict) -> list[Configuration]:
    return [c for c in (verdict.best, *verdict.others) if c and c.ratio and not c.dropped]


def disagreement(verdict: Verdict) -> str | None:
    """'mimalloc-large, THP madvise (as found): 0.56x as-is back to back, but 1.84x after 4 s idle -- it
    wins only back to back; deploy it only where the program runs that way', or None when every regime's
    best keeps its sign (beyond the smallest effect) in the others, or there is one regime."""
    axis, each = verdict.by_condition or (None, {})
    if axis != "regime" or len(each) < 2:
        return None
    # the recommended bests first, then the other regimes' bests
    order = sorted(each.items(), key=lambda kv: kv[1].recommend != "best")
    for regime, mine in order:
        best = mine.best
        if not best or not best.ratio:
            continue
        sign = _wins(best.ratio.value, mine.better)
        if not sign:
            continue
        for other_regime, other in each.items():
            if other_regime == regime:
                continue
            same = next((c for c in _configs(other) if _key(c.cell) == _key(best.cell)), None)
            if same is None or _wins(same.ratio.value, other.better) != -sign:  # type: ignore[union-attr]
                continue
            here, there = regime_name(regime), regime_name(other_regime)
            name = best.name.removesuffix(f", {here}")
            good, bad = (here, there) if sign > 0 else (there, here)
            return (
                f"{name}: {best.ratio.value:.2f}x as-is {here}, but "
                f"{same.ratio.value:.2f}x {there} -- it wins only {good}; deploy it only where the "  # type: ignore[union-attr]
                f"program runs {good}, not {bad}"
            )
    return None
