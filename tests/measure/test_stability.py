"""The one stability rule (hugebench.stats.stability): spread, outliers, disturbed runs, and the guard on verdicts."""

import math

import pandas as pd
import pytest

from hugebench.report.verdicts import NOT_RESOLVED, claim_verdicts
from hugebench.stats.stability import Stability, assess, cell_stability, guard, outlier_mask


def test_a_tight_cell_is_stable():
    stab = assess([100, 101, 99, 100, 102, 98])
    assert not stab.unstable and stab.why is None and stab.label == "stable"
    assert stab.spread == pytest.approx(1.4826 * 1.0 / 100) and stab.outliers == 0


def test_outliers_by_the_modified_z_score():
    values = [100, 101, 99, 100, 102, 98, 180]
    assert outlier_mask(values).tolist() == [False] * 6 + [True]
    stab = assess(values)
    assert stab.outliers == 1 and not stab.unstable  # one of 7 is not above the 20 % share
    two = assess([100, 101, 99, 100, 170, 180])
    assert two.unstable and "2 of 6 runs outliers" in two.why


def test_wide_cell_is_unstable_and_says_the_cause():
    wide = assess([60, 80, 100, 120, 140, 160])
    assert (
        wide.unstable
        and wide.why.startswith("spread ")
        and "no run was flagged disturbed" in wide.why
    )
    hogged = assess(
        [60, 80, 100, 120, 140, 160],
        disturbed=3,
        causes=[
            "other work kept 0.95 CPUs busy > 0.5 (python3[42] 0.95 CPU)",
            "other work kept 0.97 CPUs busy > 0.5",
        ],
    )
    assert "likely the machine: other work kept 0.95 CPUs busy > 0.5" in hogged.why
    assert "3 of 6 runs disturbed" in hogged.why


def test_few_values_are_never_called_unstable_but_disturbed_ones_are():
    assert not assess([1, 100]).unstable and assess([1, 100]).label == "too few runs"
    assert assess([10, 10.1], disturbed=1).unstable
    assert math.isnan(assess([]).median) and not assess([]).unstable


def test_guard_withholds_a_resolved_verdict():
    stable, shaky = assess([1, 1, 1]), assess([60, 80, 100, 120, 140, 160])
    assert guard(True, stable, stable) == (True, None)
    resolved, why = guard(True, stable, shaky)
    assert resolved is None and why.startswith("unstable: spread")
    assert guard(False, shaky)[0] is False  # "not resolved" stays what it is


def _rows(cell_values: dict, disturbed: dict = {}):
    rows = []
    for allocator, values in cell_values.items():
        for i, v in enumerate(values):
            rows.append(
                {
                    "allocator": allocator,
                    "repetition": i,
                    "sweep_id": "s",
                    "status": "ok",
                    "warmup": False,
                    "ns": v,
                    "noise.disturbed": i < disturbed.get(allocator, 0),
                    "noise.why": "steal 30% > 10%" if i < disturbed.get(allocator, 0) else None,
                }
            )
    return pd.DataFrame(rows)


def test_cell_stability_reads_the_noise_columns():
    rows = _rows({"a": [10, 10.2, 9.9, 10.1, 10, 10.1]}, {"a": 3})
    stab = cell_stability(rows, "ns")
    assert isinstance(stab, Stability) and stab.disturbed == 3 and stab.unstable
    assert "steal 30% > 10%" in stab.why


def test_claim_verdict_on_an_unstable_cell_is_not_resolved():
    expected = {
        "metric": "ns",
        "claims": [{"cell": {"allocator": "b"}, "vs": {"allocator": "a"}, "ratio": 0.5}],
    }
    steady = _rows({"a": [100, 101, 99, 100, 102, 98], "b": [50, 51, 49, 50, 51, 49]})
    assert claim_verdicts(steady, expected)["verdict"][0] == "magnitude within the CI"
    shaky = _rows({"a": [100, 101, 99, 100, 102, 98], "b": [30, 40, 50, 60, 70, 45]})
    table = claim_verdicts(shaky, expected)
    assert table["verdict"][0] == NOT_RESOLVED
    assert table["why"][0].startswith("unstable: spread") and "(would be: " in table["why"][0]
