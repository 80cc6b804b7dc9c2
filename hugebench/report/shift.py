"""Honest compare: a shift of the whole of B, within-sweep ratios that cancel it, and the summary of B / A.

What belongs here: the arithmetic and the words ``compare`` adds on top of each cell's B / A (``compare``
builds the table): :func:`within_ratio` (each cell's ratio to its own sweep's baseline, B's over A's;
:func:`within_ratios` computes it for every cell at once),
:func:`common_shift` (did every cell of B move by about the same factor?) and :func:`summary_lines`
(geometric mean with CI, counts better / same / worse, the largest resolved changes).

The common-shift rule (documented in docs/trusting-numbers.md), over the matched cells' log ratios
``l = log(B / A)``, with ``m`` their median and ``s = 1.4826 * MAD(l)``:

* nothing is said below :data:`MIN_CELLS` cells or when ``|m| < log(1 + SHIFT_MIN)`` (under 5 %);
* **common shift** -- at least :data:`SAME_SIDE` (80 %) of the cells moved to the side of ``m`` and
  ``s <= SPREAD_SHARE * |m|``: every cell moved by about ``exp(m)``; the machine (or what ran beside it)
  changed, not the configuration. The within-sweep ratios are the ones to read.
* **broad shift** -- 80 % on one side but more scattered: most of B moved the same way; still read the
  within-sweep ratios first.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from hugebench.report.sections import verdict
from hugebench.stats import (
    batched_medians,
    bootstrap_ci,
    finite,
    percentile_intervals,
    resample_indices,
    row_medians,
    size_chunks,
)
from hugebench.stats.stability import SMALLEST_EFFECT

MIN_CELLS = 3
SHIFT_MIN = SMALLEST_EFFECT  # the one smallest effect (hugebench.stats.stability)
SAME_SIDE = 0.8
SPREAD_SHARE = 0.5
LARGEST = 3  # resolved changes named in the summary


def within_ratio(
    a, a_base, b, b_base, level: float = 0.95, n_boot: int = 2000, seed: int = 0
) -> tuple[float, float, float]:
    """``(median(b)/median(b_base)) / (median(a)/median(a_base))`` and its percentile-bootstrap CI, each of
    the four samples resampled on its own. NaN where a side has no values (the CI: fewer than 2 each)."""
    samples = [finite(v) for v in (a, a_base, b, b_base)]
    if any(s.size == 0 for s in samples):
        return math.nan, math.nan, math.nan
    med = [float(np.median(s)) for s in samples]
    value = (med[2] / med[3]) / (med[0] / med[1]) if med[0] and med[1] and med[3] else math.nan
    if any(s.size < 2 for s in samples) or math.isnan(value):
        return value, math.nan, math.nan
    drawn = resample_indices(seed, n_boot, tuple(s.size for s in samples))
    if drawn is None:
        rng = np.random.default_rng(seed)
        drawn = [rng.integers(0, s.size, size=(n_boot, s.size)) for s in samples]
    boot = [np.median(s[at], axis=1) for s, at in zip(samples, drawn)]
    with np.errstate(divide="ignore", invalid="ignore"):
        stats = (boot[2] / boot[3]) / (boot[0] / boot[1])
    stats = stats[np.isfinite(stats)]
    tail = (1.0 - level) / 2.0
    lo, hi = np.quantile(stats, [tail, 1.0 - tail]) if stats.size else (math.nan, math.nan)
    return value, float(lo), float(hi)


def within_ratios(
    quads, level: float = 0.95, n_boot: int = 2000, seed: int = 0
) -> list[tuple[float, float, float]]:
    """``[within_ratio(a, a_base, b, b_base, level, n_boot, seed) for a, a_base, b, b_base in quads]``, the
    same numbers, computed together for the cells whose four samples have the same sizes (with one seed,
    such cells draw the same positions)."""
    data = [[finite(v) for v in quad] for quad in quads]
    out: list[tuple[float, float, float]] = [(math.nan,) * 3] * len(data)
    by_sizes: dict[tuple, list[int]] = {}
    for i, samples in enumerate(data):
        sizes = tuple(s.size for s in samples)
        if min(sizes) > 0:
            by_sizes.setdefault(sizes, []).append(i)
    for sizes, members in size_chunks(by_sizes):
        stacks = [np.stack([data[i][k] for i in members]) for k in range(4)]
        values = _within_values([row_medians(stack) for stack in stacks])
        drawn = resample_indices(seed, n_boot, sizes) if min(sizes) >= 2 else None
        if drawn is None:  # no interval (a sample of one), or samples too large to draw together
            for j, i in enumerate(members):
                a, a_base, b, b_base = data[i]
                out[i] = (
                    within_ratio(a, a_base, b, b_base, level, n_boot, seed)
                    if min(sizes) >= 2
                    else (float(values[j]), math.nan, math.nan)
                )
            continue
        with np.errstate(divide="ignore", invalid="ignore"):
            boot = [batched_medians(stack, at) for stack, at in zip(stacks, drawn)]
            stats = (boot[2] / boot[3]) / (boot[0] / boot[1])
        whole = np.isfinite(stats).all(axis=1) & np.isfinite(values)
        lows, highs = percentile_intervals(stats[whole], level)
        done = iter(zip(lows.tolist(), highs.tolist()))
        for j, i in enumerate(members):
            if not whole[j]:  # a resample's median of 0 (or no value): as within_ratio drops it
                a, a_base, b, b_base = data[i]
                out[i] = within_ratio(a, a_base, b, b_base, level, n_boot, seed)
            else:
                out[i] = (float(values[j]), *next(done))
    return out


def _within_values(medians: list[np.ndarray]) -> np.ndarray:
    """Each cell's ``(b / b_base) / (a / a_base)`` from the four samples' medians; NaN where a divisor is 0."""
    a, a_base, b, b_base = medians
    with np.errstate(divide="ignore", invalid="ignore"):
        values = (b / b_base) / (a / a_base)
    return np.where((a != 0) & (a_base != 0) & (b_base != 0), values, math.nan)


def common_shift(ratios) -> tuple[str | None, float]:
    """``("common" | "broad" | None, factor)`` for the matched cells' B / A ratios (see the module header)."""
    data = finite(ratios)
    data = data[data > 0]
    if data.size < MIN_CELLS:
        return None, math.nan
    logs = np.log(data)
    m = float(np.median(logs))
    if abs(m) < math.log1p(SHIFT_MIN):
        return None, math.exp(m)
    same_side = float(np.mean(np.sign(logs) == np.sign(m)))
    if same_side < SAME_SIDE:
        return None, math.exp(m)
    spread = 1.4826 * float(np.median(np.abs(logs - m)))
    return ("common" if spread <= SPREAD_SHARE * abs(m) else "broad"), math.exp(m)


def shift_sentence(kind: str | None, factor: float, n: int) -> str | None:
    """The common shift in words, or None."""
    if kind == "common":
        return (
            f"Every cell of B moved by about the same factor (x{factor:.3f} over {n} cells): the machine, or "
            "what ran beside it, changed, not the configuration. Read the within-sweep ratios, which cancel it."
        )
    if kind == "broad":
        return (
            f"Most cells of B moved the same way (median x{factor:.3f} over {n} cells, unevenly): the two "
            "sweeps ran on a machine in different states; read the within-sweep ratios before B / A."
        )
    return None


def geometric_mean_ci(ratios, level: float = 0.95) -> tuple[float, float, float]:
    """Geometric mean of the positive finite ratios and its bootstrap CI over cells."""
    data = finite(ratios)
    data = data[data > 0]
    if data.size == 0:
        return math.nan, math.nan, math.nan
    logs = np.log(data)
    lo, hi = bootstrap_ci(logs, np.mean, level)
    return math.exp(float(logs.mean())), math.exp(lo), math.exp(hi)


def summary_lines(
    data: pd.DataFrame, label, better: str | None, level: float, column: str = "ratio"
) -> list[str]:
    """Geometric mean with CI, counts better / same / worse / not judged, the largest resolved changes."""
    known = data[data[column].notna()]
    if known.empty:
        return [f"{len(data)} matching cells, no ratio."]
    gm, lo, hi = geometric_mean_ci(known[column], level)
    ci = "" if math.isnan(lo) else f" [{lo:.3f}, {hi:.3f}]"
    lines = [
        f"{len(known)} matching cells; B / A geometric mean {gm:.3f}{ci} ({level:.0%} CI over cells), "
        f"from {known[column].min():.3f} to {known[column].max():.3f}."
    ]
    said = known["resolved"].map(lambda v: verdict(v) or "few")
    if "unstable" in known.columns:
        said = said.where(~known["unstable"].map(lambda v: isinstance(v, str)), "unstable")
    resolved = known[said == "yes"]
    gain = (resolved[column] < 1) if better != "higher" else (resolved[column] > 1)
    counts = (
        f"B is better in {int(gain.sum())} cell(s) and worse in {int((~gain).sum())}"
        if better
        else f"{len(resolved)} resolved ({int((resolved[column] > 1).sum())} up, "
        f"{int((resolved[column] < 1).sum())} down)"
    )
    lines.append(
        f"At {level:.0%}: {counts}; {int((said == 'no').sum())} the same (CI contains 1), "
        f"{int((said == 'few').sum())} with too few runs, {int((said == 'unstable').sum())} unstable."
    )
    if len(resolved):
        top = resolved.assign(_size=np.abs(np.log(resolved[column]))).sort_values(
            "_size", ascending=False
        )
        lines.append(
            "Largest resolved changes: "
            + "; ".join(
                f"{label(row)} x{row[column]:.3f}" for _, row in top.head(LARGEST).iterrows()
            )
            + "."
        )
    return lines
