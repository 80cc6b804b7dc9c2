"""Void-allocator compensation and the plots a results directory gets."""

import shutil

import numpy as np
import pandas as pd
import pytest
from paths import TESTS

from hugebench.report import render_void, void_compensation
from hugebench.report.figures import write_plots
from hugebench.stats import difference_ci

SAMPLE = TESTS / "data" / "sample_results"


def _rows(allocator, threads, values):
    return [
        {
            "allocator": allocator,
            "threads": threads,
            "status": "ok",
            "ns_per_pair": v,
            "warmup": False,
            "repetition": i,
        }
        for i, v in enumerate(values)
    ]


def test_difference_ci_brackets_the_true_difference():
    rng = np.random.default_rng(1)
    a, b = 100 + rng.normal(0, 1, 50), 40 + rng.normal(0, 1, 50)
    lo, hi = difference_ci(a, b)
    assert lo < 60 < hi and hi - lo < 2
    assert np.isnan(difference_ci([1.0], [2.0, 3.0])[0])


def test_void_compensation_subtracts_the_matching_void_cell():
    df = pd.DataFrame(
        _rows("void", 1, [10, 11, 12])
        + _rows("void", 2, [20, 21, 22])
        + _rows("glibc", 1, [50, 51, 52])
        + _rows("glibc", 2, [90, 91, 92])
    )
    table = void_compensation(df, ["allocator", "threads"]).set_index(["allocator", "threads"])
    assert (
        table.loc[("glibc", 1), "difference"] == 40 and table.loc[("glibc", 2), "difference"] == 70
    )
    assert table.loc[("glibc", 1), "ci_lo"] <= 40 <= table.loc[("glibc", 1), "ci_hi"]
    text = render_void(void_compensation(df, ["allocator", "threads"]), "markdown")
    assert "| glibc | 1 | 3/3 | 51.0 | 11.0 | 40.0 [" in text


def test_void_compensation_in_the_original_alloc_test_unit():
    df = pd.DataFrame(_rows("void", 1, [10, 11, 12]) + _rows("glibc", 1, [50, 51, 52]))
    df["ms_per_mop"] = df["ns_per_pair"] * 3
    table = void_compensation(df, ["allocator", "threads"], "ms_per_mop")
    assert table.set_index("allocator").loc["glibc", "difference"] == 120
    text = render_void(table, "markdown", "ms/Mop")
    assert "alloc-test's unit" in text and "| glibc | 1 | 3/3 | 153.0 | 33.0 | 120.0 [" in text


def test_plots_of_the_sample_store(tmp_path):
    pytest.importorskip("matplotlib")
    results = tmp_path / "res"
    shutil.copytree(SAMPLE, results)
    files = write_plots(results)
    names = {p.name for p in files}
    assert any(n.startswith("alloc-sample-ns_per_pair-vs-threads") for n in names)
    assert any(n.startswith("tlb-sample-latency") and n.endswith(".png") for n in names)
    assert all(p.stat().st_size > 1000 for p in files)


def test_plot_levels_follow_the_yaml_order():
    from hugebench.report.figures import _levels

    frame = pd.DataFrame({"thp.enabled": ["always", "never", "madvise", "never"]})
    assert _levels(frame, "thp.enabled") == ["always", "madvise", "never"]
    assert _levels(frame, "thp.enabled", {"thp.enabled": ["never", "madvise", "always"]}) == [
        "never",
        "madvise",
        "always",
    ]
