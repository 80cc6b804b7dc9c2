"""The metrics ``try`` guards: a configuration that wins on the judged metric is not recommended when it is
resolved worse on a guarded one (a server's p99 when throughput is judged) by more than the smallest effect.

What belongs here: judging the best configuration's guarded metrics against as-is, and the words that say
why a guard refused it. Not here: which metrics a run records (:mod:`hugebench.workloads.command.metric`), the judged
metric's own verdict (:mod:`.verdict`).

The rule: the guarded metric's paired ratio to as-is, over every block both ran (selection and confirmation:
the guards took no part in choosing the best, so its selection runs are no biased sample of them), with a
confidence sequence at 5 % shared by the guards (Bonferroni), excludes 1 on the worse side, and its median is
worse than as-is by more than ``stability.SMALLEST_EFFECT``. The stability rule that keeps an unstable cell
from being called *better* does not hold a refusal back: a tail that is worse and unsteady is still worse.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import pandas as pd

from hugebench import stats
from hugebench.stats import sequential, stability
from hugebench.trial.race import paired_cs


def judge(lead: pd.DataFrame, base: pd.DataFrame, guards) -> list[dict]:
    """One entry per guarded (column, better): its ratio to as-is and whether it refuses the lead."""
    alpha = sequential.ALPHA / max(1, len(guards))
    out = []
    for column, better in guards:
        entry = {"metric": column, "better": better, "ratio": None, "refuses": False}
        measured = [f for f in (lead, base) if column in f.columns and stats.finite(f[column]).size]
        ratio = paired_cs(lead, base, column, alpha) if len(measured) == 2 else None
        if ratio is None or not math.isfinite(ratio.value) or not ratio.n:
            entry["why"] = f"{column} was not measured in both (see its .reason column)"
            out.append(entry)
            continue
        worse = ratio.value if better == "lower" else 1 / ratio.value if ratio.value else math.inf
        resolved_worse = ratio.resolved is True and (
            ratio.lo > 1 if better == "lower" else ratio.hi < 1
        )
        entry["ratio"] = {
            "value": ratio.value,
            "ci_lo": ratio.lo if math.isfinite(ratio.lo) and ratio.lo > 0 else None,
            "ci_hi": ratio.hi if math.isfinite(ratio.hi) else None,
            "n": ratio.n,
            "paired": True,
            "level": ratio.level,
            "family": max(1, len(guards)),
        }
        entry["refuses"] = bool(resolved_worse and worse > 1 + stability.SMALLEST_EFFECT)
        out.append(entry)
    return out


def refusal(name: str, judged: list[dict]) -> str | None:
    """Why ``name`` is not recommended though it won on the judged metric, or None when no guard refuses."""
    hit = [g for g in judged if g["refuses"]]
    if not hit:
        return None
    parts = [
        f"{g['metric']} {_worse(g)} [95% CI {_ci(g['ratio'])}, {g['ratio']['n']} pairs]"
        for g in hit
    ]
    return (
        f"guard: '{name}', the best on the judged metric, is resolved worse than as-is on "
        f"{'; '.join(parts)} (more than the ±{stability.SMALLEST_EFFECT:.0%} smallest effect), so it is "
        "not recommended"
    )


def _worse(guard: Mapping) -> str:
    value = guard["ratio"]["value"]
    return f"{value:.3f}x as-is ({'higher' if value > 1 else 'lower'}; {guard['better']} is better)"


def _ci(ratio: dict) -> str:
    lo = "0" if ratio["ci_lo"] is None else f"{ratio['ci_lo']:.3f}"
    hi = "inf" if ratio["ci_hi"] is None else f"{ratio['ci_hi']:.3f}"
    return f"{lo}-{hi}"


def lines(judged: Sequence[Mapping]) -> list[str]:
    """The best's guarded metrics, one line each, for the terminal verdict."""
    out = []
    for g in judged:
        if g["ratio"] is None:
            out.append(f"  guard {g['metric']}: {g.get('why', 'not measured')}")
            continue
        state = "REFUSES" if g["refuses"] else "holds"
        out.append(f"  guard {g['metric']}: {_worse(g)} [95% CI {_ci(g['ratio'])}]: {state}")
    return out
