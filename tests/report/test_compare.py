"""`hugebench compare A B` on two committed sample stores (synthetic: two "machines" with different kernels)."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from paths import TESTS

from hugebench.cli import main
from hugebench.report import load_results
from hugebench.report.compare import cell_keys, compare_report
from hugebench.store import ResultStore

DATA = TESTS / "data"
A, B = DATA / "sample_results", DATA / "sample_results_b"


@pytest.fixture(scope="module")
def compared():
    return compare_report(load_results(A), load_results(B))


def _main(report):
    return next(s for s in report.sections if s.kind == "compare")


def test_matching_cells_get_both_medians_and_the_ratio_of_b_to_a(compared):
    section = _main(compared)
    data = section.data.set_index(["allocator", "thp"])
    assert sorted(data.index) == [
        ("glibc", "always"),
        ("glibc", "never"),
        ("jemalloc", "always"),
        ("mimalloc", "always"),
    ]
    rows_a, rows_b = load_results(A).rows, load_results(B).rows

    def pick(rows):
        return rows[
            (rows["allocator"] == "glibc")
            & (rows["thp"] == "always")
            & (rows["status"] == "ok")
            & ~rows["warmup"].astype(bool)
        ]["ns_per_lookup"]

    cell = data.loc[("glibc", "always")]
    assert cell["a.median"] == pytest.approx(np.median(pick(rows_a)))
    assert cell["b.median"] == pytest.approx(np.median(pick(rows_b)))
    assert cell["ratio"] == pytest.approx(cell["b.median"] / cell["a.median"])
    assert cell["ratio.ci_lo"] < cell["ratio"] < cell["ratio.ci_hi"] < 1 and cell["resolved"] in (
        True,
    )
    same = data.loc[("glibc", "never")]
    assert same["ratio.ci_lo"] < 1 < same["ratio.ci_hi"] and same["resolved"] in (False,)
    assert data.loc[("mimalloc", "always"), "a.n"] == 5  # one timeout on side A
    assert "B is better in 1 cell(s) and worse in 0" in " ".join(section.summary)


def test_cells_without_a_match_and_the_differing_machine_context(compared):
    unmatched = next(s for s in compared.sections if s.kind == "unmatched").data
    assert unmatched.values.tolist() == [
        ["A", "tlb-sample", "allocator=jemalloc, thp=never"],
        ["A", "tlb-sample", "allocator=mimalloc, thp=never"],
        ["B", "tlb-sample", "allocator=tcmalloc, thp=always"],
        ["A", "alloc-sample", "(the whole experiment)"],
    ]
    context = next(s for s in compared.sections if s.title == "Machine context that differs").table
    assert context.values.tolist() == [
        ["host", "synthetic-a", "synthetic-b"],
        ["kernel", "6.1.0-synthetic", "6.19.0-synthetic"],
    ]


@pytest.mark.parametrize(
    "fmt, expected",
    [
        ("markdown", "| glibc | always | 6 | 67.9 [61.0, 75.3] | 6 | 46.1 [41.3, 50.7] | 0.678 ["),
        ("rich", "tlb-sample: Latency ns, B / A"),
    ],
)
def test_terminal_and_markdown_output(fmt, expected):
    outcome = CliRunner().invoke(main, ["compare", str(A), str(B), "--format", fmt])
    assert outcome.exit_code == 0, outcome.output
    assert expected in outcome.output and "Cells without a match" in outcome.output
    assert (
        "6.19.0-synthetic" in outcome.output
        and "warning: B is synthetic test data" in outcome.output
    )


def test_csv_output_has_one_row_per_matching_cell():
    outcome = CliRunner().invoke(main, ["compare", str(A), str(B), "--format", "csv"])
    table = pd.read_csv(io.StringIO(outcome.output))
    assert len(table) == 4 and {
        "a.median",
        "b.median",
        "ratio",
        "ratio.ci_lo",
        "experiment",
    } <= set(table.columns)


def test_html_output(tmp_path):
    outcome = CliRunner().invoke(
        main, ["compare", str(A), str(B), "--html", str(tmp_path / "c.html")]
    )
    assert outcome.exit_code == 0, outcome.output
    text = (tmp_path / "c.html").read_text()
    assert text.count("<svg") == 1 and "A: Sweeps" in text and "B: Machine" in text


def _store(path: Path, objects: int, values: dict) -> Path:
    store = ResultStore(path)
    store.write_context(
        "s",
        {
            "experiment": "e",
            "workload": "fleet",
            "axes": ["allocator"],
            "primary_metric": "requests_per_s",
            "primary_better": "higher",
        },
    )
    for rep in range(6):
        for allocator, value in values.items():
            store.append(
                {
                    "run_id": f"{allocator}{rep}",
                    "sweep_id": "s",
                    "experiment": "e",
                    "workload": "fleet",
                    "status": "ok",
                    "repetition": rep,
                    "allocator": allocator,
                    "param.objects": objects,
                    "requests_per_s": value + rep,
                }
            )
    return path


def test_fixed_parameters_are_part_of_a_cell(tmp_path):
    a = _store(tmp_path / "a", 1000, {"glibc": 100.0, "jemalloc": 120.0})
    b = _store(tmp_path / "b", 1000.0, {"glibc": 150.0})
    c = _store(tmp_path / "c", 2000, {"glibc": 150.0})
    (experiment_a,), (experiment_b,) = load_results(a).experiments(), load_results(b).experiments()
    assert cell_keys(experiment_a, experiment_b) == ["allocator", "param.objects"]
    matched = _main(compare_report(load_results(a), load_results(b))).data
    assert matched["allocator"].tolist() == ["glibc"] and matched["ratio"].iloc[0] == pytest.approx(
        152.5 / 102.5
    )
    assert _main(compare_report(load_results(a), load_results(c))).data.empty
    outcome = CliRunner().invoke(main, ["compare", str(a), str(c), "--format", "markdown"])
    assert (
        "No cell matches between A and B." not in outcome.output
    )  # summaries are for the HTML page
    assert "| B | e | allocator=glibc, param.objects=2000 |" in outcome.output
