"""Bootstrap intervals, ratios (independent and paired), the resolved verdict, and per-cell summaries."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from hugebench.stats import (
    Ratio,
    bootstrap_ci,
    compare,
    min_runs_for,
    pair_ratios,
    paired_ratio_ci,
    ratio_ci,
    summarize,
)


def test_constant_data_gives_a_zero_width_interval():
    assert bootstrap_ci([5.0] * 8) == (5.0, 5.0)


@pytest.mark.parametrize("values", [[], [3.0], [float("nan"), 2.0, None]])
def test_fewer_than_two_values_give_no_interval(values):
    lo, hi = bootstrap_ci(values)
    assert math.isnan(lo) and math.isnan(hi)


def test_interval_is_reproducible_and_ignores_missing_values():
    data = np.random.default_rng(1).normal(10, 1, 25)
    assert bootstrap_ci(data, seed=3) == bootstrap_ci(list(data) + [float("nan")], seed=3)
    assert bootstrap_ci(data, np.mean, seed=3) != bootstrap_ci(data, np.mean, seed=4)
    lo, hi = bootstrap_ci(data)
    assert lo < np.median(data) < hi


def _coverage(level: float, trials: int = 2000) -> float:
    """Share of `trials` samples (40 normal values each, fixed seeds) whose interval holds the true median 0."""
    rng = np.random.default_rng(7)
    return (
        sum(
            lo <= 0.0 <= hi
            for lo, hi in (
                bootstrap_ci(rng.normal(0, 1, 40), level=level, n_boot=400, seed=s)
                for s in range(trials)
            )
        )
        / trials
    )


def test_interval_of_normal_samples_covers_the_true_median_at_about_the_nominal_rate():
    """Tight enough that a 90% interval labelled 95% fails: over 2000 samples the binomial noise of the rate is
    0.005, the percentile bootstrap of a median of 40 covers ~0.94 at 95% and ~0.88 at 90% (slightly below
    nominal, as is known for it), so 0.925 lies 3 noise widths below the one and 9 above the other."""
    covered = _coverage(0.95)
    assert 0.925 <= covered <= 0.97
    assert 0.86 <= _coverage(0.90) <= 0.915 < covered


def test_wider_level_gives_wider_interval_and_other_statistics_work():
    data = np.random.default_rng(2).normal(0, 1, 50)
    lo90, hi90 = bootstrap_ci(data, level=0.90)
    lo99, hi99 = bootstrap_ci(data, level=0.99)
    assert lo99 < lo90 and hi90 < hi99
    lo, hi = bootstrap_ci(data, stat=np.mean)
    assert lo < data.mean() < hi
    assert bootstrap_ci(data, stat=lambda v: float(np.max(v)))[1] == data.max()  # no axis= support
    with pytest.raises(ValueError, match="level"):
        bootstrap_ci(data, level=95)


def test_ratio_interval_contains_the_true_ratio():
    rng = np.random.default_rng(3)
    a, b = rng.normal(200, 5, 30), rng.normal(100, 2.5, 30)
    lo, hi = ratio_ci(a, b)
    assert lo < 2.0 < hi and hi - lo < 0.1
    assert ratio_ci([4.0, 4.0], [2.0, 2.0]) == (2.0, 2.0)
    assert all(math.isnan(x) for x in ratio_ci([1.0], [1.0, 2.0]))


def test_pairing_cancels_drift_that_independent_resampling_cannot():
    drift = np.linspace(1.0, 1.5, 10)  # the machine slows down from block to block
    noise = np.random.default_rng(4).lognormal(0, 0.005, (2, 10))
    a, b = 90 * drift * noise[0], 100 * drift * noise[1]
    paired = paired_ratio_ci(a, b)
    independent = ratio_ci(a, b)
    assert paired[0] < 0.9 < paired[1] and paired[1] < 1.0
    assert independent[1] - independent[0] > 5 * (paired[1] - paired[0])


def test_pair_ratios_drop_incomplete_pairs_and_check_lengths():
    assert pair_ratios([2.0, np.nan, 6.0, 1.0], [1.0, 1.0, 3.0, 0.0]).tolist() == [2.0, 2.0]
    with pytest.raises(ValueError, match="equal lengths"):
        pair_ratios([1.0], [1.0, 2.0])


def test_min_runs_for_level():
    assert [min_runs_for(level) for level in (0.75, 0.9, 0.95, 0.99)] == [3, 5, 6, 8]


@pytest.mark.parametrize(
    "lo, hi, n, resolved",
    [
        (0.97, 1.02, 10, False),  # the interval contains 1: no resolved difference
        (0.80, 0.90, 10, True),
        (0.80, 0.90, 3, None),  # excludes 1, but three values cannot carry a 95% verdict
        (0.97, 1.02, 3, False),
        (float("nan"), float("nan"), 1, None),
    ],
)
def test_resolved_verdict(lo, hi, n, resolved):
    assert Ratio(0.9, lo, hi, True, n).resolved is resolved


def cell(value, reps, **extra):
    return pd.DataFrame(
        {
            "source": "x",
            "sweep_id": "s",
            "repetition": range(reps),
            "status": "ok",
            "ns": value,
            **extra,
        }
    )


def test_compare_pairs_by_repetition_block_when_it_can():
    drift = np.linspace(1.0, 1.3, 8)
    ratio = compare(cell(80 * drift, 8), cell(100 * drift, 8), "ns")
    assert ratio.paired and ratio.n == 8 and ratio.value == pytest.approx(0.8)
    assert ratio.resolved is True and ratio.lo == pytest.approx(0.8)

    pooled = pd.concat([cell(80.0, 8), cell(81.0, 8)])  # two configurations per block: cannot pair
    ratio = compare(pooled, cell(100.0, 8), "ns")
    assert not ratio.paired and ratio.value == pytest.approx(0.805)


def test_compare_excludes_failed_rows():
    a = cell([80.0, 80.0, 1e9, 80.0], 4).assign(status=["ok", "ok", "failed", "ok"])
    ratio = compare(a, cell(100.0, 4), "ns")
    assert ratio.value == pytest.approx(0.8) and ratio.n == 3


def test_summarize_counts_failures_and_ignores_warmups():
    df = pd.DataFrame(
        {
            "allocator": ["glibc"] * 5 + ["mimalloc"] * 3,
            "run_id": ["g0", "g1", "g2", "g3", "gw", "m0", "m1", "m0"],
            "status": ["ok", "ok", "timeout", "ok", "ok", "failed", "failed", "failed"],
            "warmup": [False, False, False, False, True, False, False, False],
            "ns": [10.0, 12.0, None, 11.0, 500.0, None, None, None],
        }
    )
    summary = summarize(df, "allocator", "ns").set_index("allocator")
    glibc, mimalloc = summary.loc["glibc"], summary.loc["mimalloc"]
    assert (glibc["status"], glibc["n"], glibc["n_failed"]) == ("ok", 3, 1)
    assert (glibc["median"], glibc["min"], glibc["max"]) == (11.0, 10.0, 12.0)
    assert glibc["ci_lo"] <= 11.0 <= glibc["ci_hi"]
    assert (mimalloc["status"], mimalloc["n"], mimalloc["n_failed"]) == ("failed", 0, 3)
    assert math.isnan(mimalloc["median"]) and math.isnan(mimalloc["ci_lo"])


def test_a_failure_retried_successfully_is_not_counted_as_failed():
    df = pd.DataFrame(
        {
            "k": ["a"] * 3,
            "run_id": ["r0", "r1", "r1"],
            "status": ["ok", "crashed", "ok"],
            "ns": [1.0, None, 2.0],
        }
    )
    summary = summarize(df, ["k"], "ns")
    assert summary["n"].tolist() == [2] and summary["n_failed"].tolist() == [0]


def test_summarize_names_a_missing_group_column():
    from hugebench.errors import HugebenchError

    with pytest.raises(HugebenchError, match="'thp'"):
        summarize(pd.DataFrame({"ns": [1.0]}), ["thp"], "ns")
