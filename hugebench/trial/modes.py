"""Runs of one configuration that split into two modes, and the per-run column that splits with them.

What belongs here: a simple bimodality check on one cell's metric (:func:`split`) and the words that say
which recorded column (system time, faults, coverage, the machine's other work) separates the slow runs from
the fast ones (:func:`describe`), so that try's caveat names what the runs show instead of a guess about
CPU load. What does not: the stability rule itself (``hugebench.stats.stability``), the disturbance flags
(``hugebench.measure.disturbance``).

The check: the values sorted, the widest gap that leaves at least :data:`MIN_SIDE` runs (and a fifth of them)
on each side; two modes when that gap is wider than either side's own range and the slow side's median is
at least :data:`MIN_STEP` above the fast side's. A column *splits with* the modes when every slow run's
value lies on one side of every fast run's and their medians differ by at least :data:`COLUMN_STEP`
(relative; absolute for the machine's other CPUs, :data:`OTHER_CPUS_STEP`).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

MIN_SIDE = 2  # runs in the smaller mode
MIN_STEP = 0.10  # the slow mode's median at least 10 % above the fast one's
COLUMN_STEP = 0.25  # a column splits when its medians differ by 25 % or more between the modes
OTHER_CPUS_STEP = 0.25  # ... or, for the CPUs other work kept busy, by a quarter of a CPU
# the per-run columns that can say why (label, number format, unit); command rows hold the first five
COLUMNS = (
    ("stime_s", "system time", "{:.2f}", " s"),
    ("utime_s", "user time", "{:.2f}", " s"),
    ("minflt", "minor faults", "{:.3g}", ""),
    ("majflt", "major faults", "{:.3g}", ""),
    ("hp_coverage", "huge-page coverage", "{:.0%}", ""),
    ("noise.other_cpus", "other work", "{:.2f}", " CPUs"),
    ("noise.steal_pct", "steal", "{:.0f}", "%"),
)


def split(values) -> np.ndarray | None:
    """A boolean mask of the slow mode over ``values`` (same order), or None when they are not bimodal."""
    x = np.asarray(values, dtype=float)
    finite = np.isfinite(x)
    data = np.sort(x[finite])
    n = data.size
    side = max(MIN_SIDE, math.ceil(0.2 * n))
    if n < 2 * side:
        return None
    gaps = [(data[i] - data[i - 1], i) for i in range(side, n - side + 1)]
    gap, i = max(gaps)
    fast, slow = data[:i], data[i:]
    if gap <= max(fast[-1] - fast[0], slow[-1] - slow[0]):
        return None
    if np.median(slow) < (1 + MIN_STEP) * np.median(fast):
        return None
    return finite & (x >= slow[0])


def describe(rows: pd.DataFrame, metric: str) -> str | None:
    """'runs split into two modes: 4 at ~1.20 and 3 at ~3.32; with them: system time 0.16-0.21 s vs
    2.10-2.26 s (stime_s); other work 0.02-0.13 CPUs in the slow runs (not what split them)', or None."""
    if metric not in rows.columns or len(rows) < 2 * MIN_SIDE:
        return None
    values = pd.to_numeric(rows[metric], errors="coerce").to_numpy(float)
    slow = split(values)
    if slow is None:
        return None
    fast = np.isfinite(values) & ~slow
    text = (
        f"runs split into two modes: {int(fast.sum())} at ~{np.median(values[fast]):.3g} and "
        f"{int(slow.sum())} at ~{np.median(values[slow]):.3g}"
    )
    with_them, load = [], None
    for column, label, *fmt in COLUMNS:
        if column not in rows.columns or column == metric:
            continue
        col = pd.to_numeric(rows[column], errors="coerce").to_numpy(float)
        a, b = col[fast & np.isfinite(col)], col[slow & np.isfinite(col)]
        if not a.size or not b.size:
            continue
        if _separates(a, b, column):
            with_them.append(f"{label} {_span(a, fmt)} vs {_span(b, fmt)} ({column})")
        elif column == "noise.other_cpus":
            load = f"other work {_span(b, fmt)} in the slow runs (not what split them)"
    text += (
        "; with them: " + ", ".join(with_them)
        if with_them
        else "; no recorded column splits with them"
    )
    return text + (f"; {load}" if load else "")


def _span(values: np.ndarray, fmt: list) -> str:
    number, unit = fmt
    return f"{number.format(values.min())}-{number.format(values.max())}{unit}"


def _separates(fast: np.ndarray, slow: np.ndarray, column: str) -> bool:
    apart = fast.max() < slow.min() or slow.max() < fast.min()
    if not apart:
        return False
    a, b = float(np.median(fast)), float(np.median(slow))
    if column == "noise.other_cpus":
        return abs(b - a) >= OTHER_CPUS_STEP
    low, high = sorted((abs(a), abs(b)))
    return high > 0 and (high - low) >= COLUMN_STEP * high
