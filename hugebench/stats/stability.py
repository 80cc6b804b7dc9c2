"""Is a cell's sample stable enough to judge? The ONE stability rule of every verdict (report, compare, try).

A verdict from a confidence interval assumes the runs measured one thing. On a shared machine they often
did not: a neighbour's build, the hypervisor's steal, a compaction storm. This module says, per cell,
how widely its runs spread and which are outliers, names the likely cause from the runs' ``noise.*``
columns (``hugebench.measure.disturbance``), and :func:`guard` turns a resolved verdict resting on an
unstable cell into "not resolved: unstable".

The rule (documented in docs/trusting-numbers.md):

* **spread** -- the robust coefficient of variation, ``1.4826 * MAD / |median|`` (equals the CV for normal
  data, but one wild run does not move it).
* **outlier** -- a run whose modified z-score ``0.6745 * |x - median| / MAD`` exceeds 3.5 (Iglewicz and
  Hoaglin's rule; hyperfine warns about outliers with the same kind of score). With MAD = 0 nothing is an outlier.
* **unstable** -- spread above :data:`SPREAD_LIMIT` (25 %), more than :data:`OUTLIER_SHARE` (20 %) of the
  runs outliers, or more than :data:`DISTURBED_SHARE` (a third) of the runs measured on a disturbed machine
  (``noise.disturbed``): the verdict would rest on them. pyperf warns from a 10 % standard deviation; this
  rule withholds a verdict rather than warns, and a bootstrap CI already widens with an even spread, so its
  limit is higher: it catches the spread a CI cannot be trusted over (drift, bimodal runs). Fewer than
  :data:`MIN_N` values are never called unstable by spread or outliers (there is nothing to judge; the
  verdict's own run-count rule, ``stats.min_runs_for``, already refuses them).
* **no difference worth deploying** -- a ratio to the baseline whose 95 % CI lies within
  ``[1 / (1 + SMALLEST_EFFECT), 1 + SMALLEST_EFFECT]`` (within 5 % either way), on enough runs, with neither
  cell unstable (:func:`equivalent`). 5 % is the smallest change hugebench names anywhere: a common shift in
  ``compare``, a step in ``history``. On the calibration machine, configurations that change nothing a
  program depends on came out within it (docs/trusting-numbers.md), so a smaller difference is within what
  the machine itself moves.

Public API: :func:`assess` (plain values; :func:`assess_many` for many cells at once), :func:`cell_stability` (a cell's run rows), :func:`guard` (a
verdict and the stabilities it rests on), :func:`equivalent` (a ratio that shows no difference). Lower layer: imports only ``stats``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np
import pandas as pd

from hugebench.stats import finite, min_runs_for, ok_rows, row_medians, size_chunks

SPREAD_LIMIT = 0.25  # robust CV above which a cell is unstable
OUTLIER_Z = 3.5  # modified z-score above which a run is an outlier
OUTLIER_SHARE = 0.20  # more outliers than this share of the runs: unstable
DISTURBED_SHARE = 1 / 3  # more of the runs disturbed than this: unstable
SMALLEST_EFFECT = 0.05  # a ratio within 5 % of 1 is no difference worth naming or deploying
MIN_N = 3  # fewer values: never judged unstable (the disturbed share is judged from 2)
DISTURBED = "noise.disturbed"
WHY = "noise.why"


@dataclass(frozen=True)
class Stability:
    """How stable one cell's values are, and why not."""

    n: int
    median: float
    spread: float  # robust CV (NaN with fewer than 2 values)
    outliers: int
    disturbed: int  # runs flagged by hugebench.measure.disturbance
    unstable: bool
    why: str | None  # the rule that fired and the likely cause; None when stable

    @property
    def label(self) -> str:
        return "unstable" if self.unstable else ("stable" if self.n >= MIN_N else "too few runs")


def outlier_mask(values) -> np.ndarray:
    """Which of the finite ``values`` are outliers by the modified z-score rule."""
    data = finite(values)
    if data.size < MIN_N:
        return np.zeros(data.size, dtype=bool)
    median = np.median(data)
    mad = np.median(np.abs(data - median))
    if mad == 0:
        return np.zeros(data.size, dtype=bool)
    return 0.6745 * np.abs(data - median) / mad > OUTLIER_Z


def assess(values, disturbed: int = 0, causes=(), limit: float = SPREAD_LIMIT) -> Stability:
    """The stability of one cell's ``values``; ``disturbed`` runs of it were flagged, for the ``causes``
    (their ``noise.why`` texts) that name the likely reason."""
    data = finite(values)
    if data.size == 0:
        return Stability(0, float("nan"), float("nan"), 0, disturbed, False, None)
    median = float(np.median(data))
    mad = float(np.median(np.abs(data - median)))
    spread = 1.4826 * mad / abs(median) if data.size >= 2 and median != 0 else float("nan")
    outliers = int(outlier_mask(data).sum())
    return _judged(int(data.size), median, spread, outliers, disturbed, causes, limit)


def assess_many(samples, disturbed, causes, limit: float = SPREAD_LIMIT) -> list[Stability]:
    """``[assess(v, d, c, limit) for v, d, c in zip(samples, disturbed, causes)]``, the same numbers, the
    medians, spreads and outliers of the samples of one size computed together."""
    data = [finite(v) for v in samples]
    out: list[Stability | None] = [None] * len(data)
    by_size: dict[int, list[int]] = {}
    for i, values in enumerate(data):
        by_size.setdefault(values.size, []).append(i)
    for size, members in size_chunks(by_size):
        if size == 0:
            for i in members:
                out[i] = assess(data[i], disturbed[i], causes[i], limit)
            continue
        stack = np.stack([data[i] for i in members])
        median = row_medians(stack)
        distance = np.abs(stack - median[:, None])
        mad = row_medians(distance)
        with np.errstate(divide="ignore", invalid="ignore"):
            spread = 1.4826 * mad / np.abs(median)
            far = (0.6745 * distance / mad[:, None] > OUTLIER_Z).sum(axis=1)
        spread = np.where((median != 0) & (size >= 2), spread, np.nan)
        outliers = np.where((mad != 0) & (size >= MIN_N), far, 0)
        for j, i in enumerate(members):
            numbers = (float(median[j]), float(spread[j]), int(outliers[j]))
            out[i] = _judged(size, *numbers, disturbed[i], causes[i], limit)
    return out  # type: ignore[return-value]


def _judged(n, median, spread, outliers, disturbed, causes, limit) -> Stability:
    """The rules of :func:`assess` applied to a cell's numbers."""
    rules = []
    if n >= MIN_N and spread > limit:
        rules.append(f"spread {spread:.0%} > {limit:.0%}")
    if n >= MIN_N and outliers > OUTLIER_SHARE * n:
        rules.append(f"{outliers} of {n} runs outliers")
    if n >= 2 and disturbed > DISTURBED_SHARE * n:
        rules.append(f"{disturbed} of {n} runs disturbed")
    if not rules:
        return Stability(n, median, spread, outliers, disturbed, False, None)
    why = "; ".join(rules) + "; " + likely_cause(disturbed, n, causes)
    return Stability(n, median, spread, outliers, disturbed, True, why)


def likely_cause(disturbed: int, n: int, causes=()) -> str:
    """The likely cause of a cell's instability, in words, from its runs' disturbance flags."""
    if disturbed:
        common = Counter(_first_reason(c) for c in causes if isinstance(c, str)).most_common(1)
        said = f": {common[0][0]}" if common else ""
        return f"likely the machine{said}"
    return (
        "no run was flagged disturbed: the workload itself varies, or noise hugebench does not see"
    )


def cell_stability(rows: pd.DataFrame, metric: str, limit: float = SPREAD_LIMIT) -> Stability:
    """The stability of a cell from its run rows (successful measured runs; ``noise.*`` for the cause)."""
    ok = ok_rows(rows)
    values = (
        pd.to_numeric(ok[metric], errors="coerce")
        if metric in ok.columns
        else pd.Series(dtype=float)
    )
    return assess(values.to_numpy(float), *disturbance(ok), limit=limit)


def disturbance(rows: pd.DataFrame) -> tuple[int, list]:
    """How many successful measured runs among ``rows`` were flagged disturbed, and their ``noise.why``."""
    ok = ok_rows(rows)
    if DISTURBED not in ok.columns:
        return 0, []
    flags = ok[DISTURBED].map(lambda v: v is True or v == 1 or v == "true")
    return int(flags.sum()), (ok.loc[flags, WHY].tolist() if WHY in ok.columns else [])


def disturbed_runs(rows: pd.DataFrame) -> int:
    """How many successful measured runs among ``rows`` were flagged disturbed."""
    return disturbance(rows)[0]


def guard(resolved: bool | None, *stabilities: Stability) -> tuple[bool | None, str | None]:
    """A verdict (True resolved, False not, None no verdict) after the stability rule: a resolved verdict
    resting on an unstable cell becomes None, with the reason (the first unstable cell's)."""
    unstable = [s for s in stabilities if s.unstable]
    if not unstable:
        return resolved, None
    return (None if resolved else resolved), f"unstable: {unstable[0].why}"


def equivalent(ratio, *stabilities: Stability, margin: float = SMALLEST_EFFECT) -> bool:
    """``ratio`` (a ``stats.Ratio``) shows *no difference worth deploying*: its CI lies within ``margin``
    of 1 both ways, it rests on at least ``stats.min_runs_for`` its level, and no cell it rests on is unstable
    (an unstable cell's CI is no more a proof of sameness than of difference)."""
    if ratio is None or not (np.isfinite(ratio.lo) and np.isfinite(ratio.hi)):
        return False
    if ratio.n < min_runs_for(ratio.level) or any(s.unstable for s in stabilities):
        return False
    return 1.0 / (1.0 + margin) <= ratio.lo and ratio.hi <= 1.0 + margin


def _first_reason(why: str) -> str:
    return why.split(";")[0].split(" (")[0].strip()
