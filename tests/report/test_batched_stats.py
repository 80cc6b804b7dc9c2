"""The batched statistics of compare and report give the per-cell functions' numbers bit for bit (issue 42).

``shift.within_ratios``, ``stability.assess_many`` and ``CellFrame.describe_many`` / ``stability_many``
compute many cells at once (cells of one size stacked, one set of bootstrap draws per size); each is checked
here against the function it replaces, cell by cell, on random data that has every kind of cell: sizes 0 to
40 (samples too large to draw together go the per-cell way), a run of NaN, medians of 0, constant cells,
failed and disturbed runs.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from hugebench.report import shift
from hugebench.report.cellstats import Cell, CellFrame, described
from hugebench.stats import describe_cell
from hugebench.stats.stability import assess, assess_many, cell_stability

SIZES = [0, 1, 2, 3, 4, 5, 6, 7, 20, 40]
WEIGHTS = [0.02, 0.03, 0.3, 0.2, 0.1, 0.1, 0.1, 0.05, 0.05, 0.05]


def _same(x, y) -> bool:
    """Equal bit for bit, NaN equal to NaN."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    return x.shape == y.shape and bool(np.all((x == y) | (np.isnan(x) & np.isnan(y))))


def _same_description(got: dict, want: dict) -> bool:
    numbers = ("median", "min", "max", "ci_lo", "ci_hi")
    return list(got) == list(want) and all(
        _same(got[k], want[k]) if k in numbers else got[k] == want[k] for k in want
    )


def _same_stability(got, want) -> bool:
    return (
        (got.n, got.outliers, got.disturbed, got.unstable, got.why)
        == (want.n, want.outliers, want.disturbed, want.unstable, want.why)
        and _same(got.median, want.median)
        and _same(got.spread, want.spread)
    )


def _sample(rng, size: int) -> np.ndarray:
    values = rng.lognormal(3.0, 0.2, size=size)
    kind = rng.random()
    if kind < 0.05:
        values[:] = 0.0  # a median of 0: no ratio
    elif kind < 0.1 and size:
        values[0] = np.nan  # a missing value, dropped
    elif kind < 0.15:
        values[:] = 7.0  # constant: zero spread, no outliers
    elif kind < 0.2 and size > 2:
        values[-1] *= 50  # an outlier
    return values


@pytest.mark.parametrize("seed", [1, 2])
def test_within_ratios_equal_within_ratio_bit_for_bit(seed):
    rng = np.random.default_rng(seed)
    quads = []
    for _ in range(600):
        sizes = rng.choice(SIZES, size=4, p=WEIGHTS)
        if rng.random() < 0.5:  # most cells of a real store: four samples of one size
            sizes[:] = sizes[0]
        quads.append([_sample(rng, int(n)) for n in sizes])
    many = shift.within_ratios(quads, 0.9)
    one = [shift.within_ratio(*quad, 0.9) for quad in quads]
    assert len(many) == len(one)
    for i, (got, want) in enumerate(zip(many, one)):
        assert _same(got, want), (i, got, want, [q.size for q in quads[i]])
    assert sum(not math.isnan(v[1]) for v in one) > 300, "most cells should have an interval"
    assert any(math.isnan(v[0]) for v in one), "some cells should have no ratio"


def test_assess_many_equals_assess():
    rng = np.random.default_rng(3)
    samples = [_sample(rng, int(rng.choice(SIZES, p=WEIGHTS))) for _ in range(800)]
    disturbed = [int(rng.integers(0, 3)) for _ in samples]
    causes = [["steal 12% (cpu)"] * d for d in disturbed]
    many = assess_many(samples, disturbed, causes)
    for values, d, c, got in zip(samples, disturbed, causes, many):
        assert _same_stability(got, assess(values, d, c))
    assert any(s.unstable for s in many) and any(s.outliers for s in many)


def _frame(rng, cells: int) -> pd.DataFrame:
    rows = []
    for cell in range(cells):
        for rep in range(int(rng.choice(SIZES[1:], p=np.array(WEIGHTS[1:]) / sum(WEIGHTS[1:])))):
            failed = rng.random() < 0.1
            rows.append(
                {
                    "cell": cell,
                    "run_id": f"{cell}-{rep % 4}",  # some failed runs retried under the same id
                    "repetition": rep,
                    "status": "failed" if failed else "ok",
                    "error": "exit status 1" if failed else None,
                    "metric": None if failed else float(rng.lognormal(3.0, 0.3)),
                    "noise.disturbed": bool(rng.random() < 0.3),
                    "noise.why": "steal 20% (cpu); x",
                }
            )
    return pd.DataFrame(rows)


def test_cellframe_describes_and_assesses_many_cells_as_cell_by_cell():
    rng = np.random.default_rng(4)
    frame = _frame(rng, 300)
    cells = CellFrame(frame, ["cell"])
    codes = list(range(len(cells)))
    many = cells.describe_many(codes, "metric", 0.9)
    stable = cells.stability_many(codes, "metric")
    # described() answers for cells in any order (here reversed) from their frames
    pairs = described([Cell(cells, code) for code in reversed(codes)], "metric", 0.9)[::-1]
    for code, (key,) in enumerate(cells.keys_of):
        rows = frame[frame["cell"] == key]
        assert _same_description(many[code], describe_cell(rows, "metric", 0.9)), key
        assert _same_stability(stable[code], cell_stability(rows, "metric")), key
        assert _same_description(pairs[code][0], many[code])
        assert _same_stability(pairs[code][1], stable[code])
    assert any(d["n_failed"] for d in many) and any(s.unstable for s in stable)
