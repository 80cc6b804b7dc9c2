"""Claims about how runs end (``status: oom`` in ``expected:``): "without the shrinker the program is
OOM-killed, with it not". No metric: each side's runs are counted by how they ended.

A side is judged by the share of its runs that ended with the claimed status, with an exact two-sided
binomial test against one half: the share is resolved above (below) one half when the test's p-value is
below 1 - level. That is the sign test behind ``stats.min_runs_for``: at 95 % six runs all ending one way
resolve a side, five do not. The claim holds ("direction holds") when the cell's runs resolve to the status
and vs's resolve away from it; it is contradicted when either side resolves the other way; otherwise it is
not resolved. Runs that ended in neither the claimed status nor ``ok`` (failed, timeout, crashed) are left
out and counted in the why; warm-ups, skipped and disturbed runs are left out.

What belongs here: that verdict, as ``verdicts.claim_verdicts`` records it (:func:`status_record`, given
the verdict names: this module imports nothing of ``verdicts``). What does not: reading the claim
(``hugebench.experiment.claims``).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from hugebench.stats import measured_rows, min_runs_for

LEFT_OUT = ("skipped", "disturbed")


def two_sided_p(k: int, n: int) -> float:
    """Exact two-sided binomial p-value of ``k`` of ``n`` against a share of one half (1.0 when n = 0)."""
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(max(k, n - k), n + 1)) / 2**n
    return min(1.0, 2 * tail)


def side(rows: pd.DataFrame, status: str, level: float) -> dict:
    """How one side's runs ended: ``hits`` of ``n`` with ``status`` (the rest ok), ``other`` left out,
    ``resolved``: True (most end so), False (most do not) or None (the test does not resolve)."""
    ended = measured_rows(rows)["status"].dropna().astype(str) if "status" in rows else pd.Series()
    ended = ended[~ended.isin(LEFT_OUT)]
    hits = int((ended == status).sum())
    n = hits + int((ended == "ok").sum())
    other = ended[~ended.isin((status, "ok"))].value_counts().to_dict()
    p = two_sided_p(hits, n)
    resolved = None if p >= 1 - level or 2 * hits == n else 2 * hits > n
    return {"hits": hits, "n": n, "other": other, "p": p, "resolved": resolved}


def status_record(
    claim, cell_rows: pd.DataFrame, vs_rows: pd.DataFrame, level: float, names: tuple
) -> dict:
    """The verdict record (``verdicts.COLUMNS``) of a ``status`` claim; ``names``: the verdicts for
    holds, contradicted and not resolved."""
    holds, contradicted, unresolved = names
    status = claim["status"]
    cell = side(cell_rows, status, level)
    vs = side(vs_rows, status, level) if claim.get("vs") else None
    measured = f"{status} in {cell['hits']}/{cell['n']}" + (
        f" vs {vs['hits']}/{vs['n']}" if vs else ""
    )
    wanted = [(cell, True, "the claimed cell")] + (
        [(vs, False, "the compared-to cell")] if vs else []
    )
    wrong = [name for s, want, name in wanted if s["resolved"] is (not want)]
    if wrong:
        verdict, why = contradicted, f"{' and '.join(wrong)}: most runs ended the other way"
    elif all(s["resolved"] is want for s, want, _ in wanted):
        verdict, why = (
            holds,
            f"as published (exact binomial test, each side p < {1 - level:.2g})",
        )
    elif any(s["n"] == 0 for s, _, _ in wanted):
        empty = next(name for s, _, name in wanted if s["n"] == 0)
        verdict, why = unresolved, f"no run of {empty} ended {status} or ok"
    else:
        needed = min_runs_for(level)
        verdict, why = (
            unresolved,
            f"p = {max(s['p'] for s, _, _ in wanted):.2g}: too few runs ending one way "
            f"({needed} a side all alike are the fewest for a {level:.0%} verdict)",
        )
    others = {k: v for s, _, _ in wanted for k, v in s["other"].items()}
    if others:
        why += "; left out: " + ", ".join(f"{v} {k}" for k, v in others.items())
    return {
        "kind": "status",
        "published": f"{status}" + (" vs not" if vs else ""),
        "published_from": None,
        "published_to": None,
        "measured": measured,
        "ci_lo": np.nan,
        "ci_hi": np.nan,
        "n": min(s["n"] for s, _, _ in wanted),
        "verdict": verdict,
        "why": why,
    }
