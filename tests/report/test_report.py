"""Report tables: medians, CIs, ratios to the baseline, n/a reasons, failed cells, and the committed sample."""

from __future__ import annotations

import importlib.util
import io
import math

import hypothesis
import pandas as pd
import pytest
from paths import DATA, TESTS

from hugebench.errors import HugebenchError
from hugebench.report import (
    MetricSpec,
    as_metric,
    build_table,
    default_metrics,
    format_axis,
    format_bytes,
    format_si,
    render,
    report,
)
from hugebench.store import ResultStore

SAMPLE = TESTS / "data" / "sample_results"


@pytest.mark.parametrize(
    "value, text",
    [
        (0, "0 B"),
        (1023, "1023 B"),
        (1536, "1.5 KiB"),
        (3 * 2**30, "3.0 GiB"),
        (float("nan"), "n/a"),
    ],
)
def test_format_bytes(value, text):
    assert format_bytes(value) == text


@pytest.mark.parametrize(
    "value, text",
    [
        (0, "0"),
        (999, "999"),
        (1234567, "1.23M"),
        (999999, "1M"),
        (0.00012, "120u"),
        (-2500, "-2.5k"),
        (float("nan"), "n/a"),
    ],
)
def test_format_si(value, text):
    assert format_si(value) == text


@pytest.mark.parametrize(
    "value, text",
    [
        (1_000_000, "1M"),
        (10_000_000.0, "10M"),
        (1_500_000, "1.5M"),
        (1_234_567, "1234567"),
        (4, "4"),
        (2.0, "2"),
        ("never", "never"),
    ],
)
def test_axis_values_are_compact_but_never_rounded(value, text):
    assert format_axis(value) == text


@pytest.mark.parametrize("a, b", [(12_345_670, 12_345_680), (123_456_780_000, 123_456_790_000)])
def test_two_axis_values_never_share_a_label(a, b):
    assert format_axis(a) != format_axis(b)
    assert format_axis(a) in ("12345.67k", "123456.78M")


@hypothesis.given(
    hypothesis.strategies.integers(-(10**15), 10**15),
    hypothesis.strategies.integers(-(10**15), 10**15),
)
def test_format_axis_is_one_to_one(a, b):
    """Two distinct values never get one label (a cell would be shown twice under one name)."""
    hypothesis.assume(a != b)
    assert format_axis(a) != format_axis(b)
    assert format_axis(float(a)) == format_axis(a)


def test_metric_spec_formats_and_descriptors():
    assert MetricSpec("hp_coverage", "Coverage", ".0%").format(0.934) == "93%"
    assert MetricSpec("x", fmt="bytes", scale=1024).format(2048) == "2.0 MiB"
    assert MetricSpec("x").format(None) == "n/a"
    spec = as_metric(
        {"column": "pmu.cycles", "label": "Cycles", "fmt": "si", "scale": 1.0, "extra": 1}
    )
    assert spec == MetricSpec("pmu.cycles", "Cycles", "si") and as_metric(spec.to_dict()) == spec
    assert as_metric("pmu.stlb_misses").title == "STLB misses"


def frame(cells: dict, reps: int, drift=None, **columns) -> pd.DataFrame:
    """A long frame: cells maps (allocator, thp) -> ns per repetition block (scalar or list)."""
    rows = []
    for (allocator, thp), value in cells.items():
        for r in range(reps):
            ns = (value[r] if isinstance(value, list) else value) * (1 + (drift or 0) * r)
            rows.append(
                {
                    "sweep_id": "s",
                    "repetition": r,
                    "allocator": allocator,
                    "thp": thp,
                    "status": "ok",
                    "run_id": f"{allocator}{thp}{r}",
                    "ns": ns,
                    **columns,
                }
            )
    return pd.DataFrame(rows)


def test_build_table_ratios_and_resolved_flags():
    cells = {
        ("glibc", "never"): 100.0,
        ("glibc", "always"): 75.0,
        ("jemalloc", "never"): [101, 99, 102, 98, 101, 99],
        ("jemalloc", "always"): 80.0,
    }
    table = build_table(
        frame(cells, 6, drift=0.05), ["allocator", "thp"], ["ns"], baseline={"thp": "never"}
    ).set_index(["allocator", "thp"])
    # Baseline per allocator: the other axes stay equal.
    assert (
        table.loc[("glibc", "never"), "is_baseline"]
        and table.loc[("jemalloc", "never"), "is_baseline"]
    )
    assert table.loc[("glibc", "always"), "ratio"] == pytest.approx(0.75)
    assert table.loc[("jemalloc", "always"), "ratio"] == pytest.approx(0.8, rel=0.01)
    assert (
        table.loc[("glibc", "always"), "resolved"] is True
        and table.loc[("glibc", "always"), "ratio.paired"]
    )

    table = build_table(
        frame(cells, 6, drift=0.05),
        ["allocator", "thp"],
        ["ns"],
        baseline={"allocator": "glibc", "thp": "never"},
    ).set_index(["allocator", "thp"])
    unresolved = table.loc[("jemalloc", "never")]
    assert (
        unresolved["ratio.ci_lo"] <= 1.0 <= unresolved["ratio.ci_hi"]
        and unresolved["resolved"] is False
    )
    assert table.loc[("jemalloc", "always"), "ratio"] == pytest.approx(0.8, rel=0.01)


def test_too_few_runs_give_no_verdict():
    table = build_table(
        frame({("glibc", "never"): 100.0, ("glibc", "always"): 70.0}, 3),
        ["thp"],
        ["ns"],
        baseline={"thp": "never"},
    )
    always = table.set_index("thp").loc["always"]
    assert always["ratio"] == pytest.approx(0.7) and always["resolved"] is None
    assert "n<6" in render(table, "markdown")


def test_unmeasurable_columns_keep_their_reason_and_failed_cells_their_status():
    df = frame(
        {("glibc", "never"): 100.0, ("mimalloc", "never"): 90.0},
        2,
        **{"pmu.cycles": None, "pmu.cycles.reason": "not supported"},
    )
    df.loc[df["allocator"] == "mimalloc", ["status", "ns"]] = ["oom", None]
    specs = [
        MetricSpec("ns", "Latency"),
        MetricSpec("pmu.cycles", "Cycles"),
        MetricSpec("never.there"),
    ]
    table = build_table(df, ["allocator"], specs, baseline={"allocator": "glibc"})
    assert table.attrs["na_reasons"] == {
        "pmu.cycles": "not supported",
        "never.there": "not recorded in these runs",
    }
    failed = table.set_index("allocator").loc["mimalloc"]
    assert (failed["status"], failed["n"], failed["n_failed"]) == ("oom", 0, 2) and math.isnan(
        failed["ratio"]
    )
    text = render(table, "markdown")
    assert "| Cycles [1] |" in text and "[1] Cycles (pmu.cycles): n/a, not supported." in text
    assert "| mimalloc | 0 (+2 failed) | oom | — |" in text


def test_default_metrics_skip_columns_with_neither_value_nor_reason():
    df = pd.DataFrame(
        {
            "ns_per_lookup": [1.0],
            "minflt": [None],
            "pmu.cycles": [None],
            "pmu.cycles.reason": ["not supported"],
        }
    )
    assert [m.column for m in default_metrics(df, "ns_per_lookup")] == [
        "ns_per_lookup",
        "pmu.cycles",
    ]


def test_render_rejects_an_unknown_format():
    table = build_table(frame({("glibc", "never"): 1.0}, 2), ["thp"], ["ns"])
    with pytest.raises(HugebenchError, match="markdown"):
        render(table, "html")
    assert "vs baseline" not in render(table, "markdown")


# -- the committed sample store (synthetic test data) ---------------------------------------------


def test_sample_store_is_labelled_synthetic_and_reproducible(tmp_path):
    contexts = ResultStore(SAMPLE).contexts()
    assert contexts and all(
        c["synthetic"] is True and "SYNTHETIC" in c["note"] for c in contexts.values()
    )
    spec = importlib.util.spec_from_file_location(
        "make_sample", SAMPLE.parent / "make_sample_results.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main(tmp_path / "again")
    assert (tmp_path / "again" / "runs.jsonl").read_bytes() == (SAMPLE / "runs.jsonl").read_bytes()


def test_markdown_report_of_the_sample_store():
    text = report(SAMPLE, "markdown")
    assert text.index("### tlb-sample (hashlookup)") < text.index("### alloc-sample (alloctest)")
    header = "| Allocator | THP | n | status | Latency ns | Cycles [1] | STLB misses [2] | Huge-page coverage |"
    assert header in text
    lines = {
        tuple(c.strip() for c in line.strip("|").split("|")[:4]): line
        for line in text.splitlines()
        if line.startswith("| ")
    }
    # The warm-up row (500 ns) is not a repetition: the baseline cell has 6 runs and a median near 92 ns.
    assert (
        "| baseline |" in lines[("glibc", "never", "6", "ok")]
        and "| 91.9 [" in lines[("glibc", "never", "6", "ok")]
    )
    assert lines[("glibc", "always", "6", "ok")].endswith("| yes |")
    assert lines[("jemalloc", "never", "6", "ok")].endswith("| no |")
    assert lines[("mimalloc", "always", "5 (+1 failed)", "ok")].endswith("| n<6 |")
    assert lines[("mimalloc", "never", "0 (+6 failed)", "failed")].count("—") == 6
    assert "[1] Cycles (pmu.cycles): n/a, not supported." in text
    assert "[2] STLB misses (pmu.stlb_misses): n/a, not supported." in text
    assert "Orchestration overhead of sweep tlb-sample-0001:" in text and "= 1.08x." in text
    # The second experiment names no metrics in its context: the registry's columns for its workload.
    assert "| Allocator | Threads | n | ns/pair | p10 chunk ns [1] |" in text
    assert "Sweep alloc-sample-0001: no end recorded" in text


def test_rich_report_of_the_sample_store():
    text = report(SAMPLE, "rich")
    assert "tlb-sample (hashlookup)" in text and "┃ Allocator ┃ THP" in text
    row = next(line for line in text.splitlines() if line.startswith("│ jemalloc  │ never"))
    assert "│ n/a " in row and row.rstrip().endswith("│ no       │")
    assert "[1] Cycles (pmu.cycles): n/a, not supported." in text
    assert "failed" in next(
        line for line in text.splitlines() if line.startswith("│ mimalloc  │ never")
    )
    assert max(len(line) for line in text.splitlines()) > 160, "natural width, no wrapping"


def test_csv_report_is_machine_readable():
    df = pd.read_csv(io.StringIO(report(SAMPLE, "csv")))
    assert len(df) == 6 + 6 and set(df["experiment"]) == {"tlb-sample", "alloc-sample"}
    glibc_always = df[
        (df["experiment"] == "tlb-sample") & (df["allocator"] == "glibc") & (df["thp"] == "always")
    ]
    assert glibc_always["ratio"].iloc[0] == pytest.approx(0.74, abs=0.01)


def test_report_arguments_override_the_context():
    text = report(
        SAMPLE, "markdown", group_by=["allocator"], metrics=["ns_per_lookup", "ns_per_pair"]
    )
    assert "| Allocator | n | status | Latency ns | ns_per_pair [1] |" in text
    # Pooled cells have several runs per block, so the ratio is unpaired and its interval wide.
    assert "| jemalloc | 12 | ok |" in text


def test_report_of_an_empty_store_says_so(tmp_path):
    with pytest.raises(HugebenchError, match="no runs"):
        report(tmp_path, "markdown")


def test_machine_facts_show_why_the_core_build_is_unknown():
    """A machine whose worker imported hugebench without _core records why (a string): shown, not a crash."""
    from hugebench.report.provenance import machine_facts

    why = "_core not importable: cannot import name '_core'"
    facts = machine_facts({"machine": {"hugebench": {"core_build": why}}})
    assert facts["core build"] == why


def test_no_cell_slower_than_the_baseline_is_called_its_best_and_unstable_is_said_as_such():
    """Issue 43: when every compared cell is slower, the summary says no cell is ahead (it named a cell 19%
    slower "best"); a ratio resting on an unstable cell is called unstable, as the table says, not "too few
    runs"."""
    from hugebench.report import build_report, load_results
    from hugebench.report.sections import summary_lines

    results = load_results(DATA / "sample_results")
    section = build_report(results).sections[0]
    experiment = results.experiments()[0]
    table = section.data.copy()
    table.attrs = section.data.attrs
    compared = ~table["is_baseline"].astype(bool) & table["ratio"].notna()
    table.loc[compared, "ratio"] = table.loc[compared, "ratio"] + 0.5  # every cell now slower
    lines = summary_lines(table, experiment)
    assert not any(line.startswith("Best against the baseline") for line in lines), lines
    assert any(line.startswith("No cell is ahead of the baseline; the closest: ") for line in lines)
    table.loc[compared, "unstable"] = "spread 40% > 25%"
    assert any(
        ", unstable (no verdict rests on it)." in line for line in summary_lines(table, experiment)
    )
