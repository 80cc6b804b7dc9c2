"""Honest compare on synthetic stores: a common shift said in words and cancelled by within-sweep ratios,
a cell resting on disturbed runs and an unstable cell marked, a summary in every format."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from hugebench.cli import main
from hugebench.report import load_results, render_sections
from hugebench.report.compare import compare_report
from hugebench.report.shift import common_shift, geometric_mean_ci, within_ratio
from hugebench.store import ResultStore

CELLS = {"glibc": 100.0, "jemalloc": 80.0, "tcmalloc": 90.0, "mimalloc": 70.0}
JITTER = [0.0, 0.5, -0.5, 0.25, -0.25, 0.1]


def _store(
    path: Path, values: dict, factor: float = 1.0, disturbed: dict = {}, spread: dict = {}
) -> Path:
    store = ResultStore(path)
    store.write_context(
        "s",
        {
            "experiment": "e",
            "workload": "hashlookup",
            "axes": ["allocator"],
            "baseline": {"allocator": "glibc"},
            "primary_metric": "ns",
            "primary_better": "lower",
        },
    )
    for rep, jitter in enumerate(JITTER):
        for allocator, value in values.items():
            wide = spread.get(allocator, 0.0) * (rep - 2.5)
            hit = rep < disturbed.get(allocator, 0)
            store.append(
                {
                    "run_id": f"{allocator}{rep}",
                    "cell_id": allocator,
                    "sweep_id": "s",
                    "experiment": "e",
                    "workload": "hashlookup",
                    "status": "ok",
                    "repetition": rep,
                    "allocator": allocator,
                    "ns": value * factor * (1 + wide) + jitter,
                    "noise.disturbed": hit,
                    "noise.why": "other work kept 0.98 CPUs busy > 0.5 (python3[4242] 0.98 CPU)"
                    if hit
                    else None,
                }
            )
    return path


def _compare(a, b):
    report = compare_report(load_results(a), load_results(b))
    return report, next(s for s in report.sections if s.kind == "compare")


def test_common_shift_is_said_and_within_sweep_ratios_cancel_it(tmp_path):
    a = _store(tmp_path / "a", CELLS)
    b = _store(tmp_path / "b", CELLS, factor=1.4)  # the same configuration on a slower machine
    report, section = _compare(a, b)
    data = section.data.set_index("allocator")
    assert data["ratio"].between(1.38, 1.42).all() and (data["resolved"] == True).all()  # noqa: E712
    assert data["within"].between(0.98, 1.02).all()
    text = " ".join(section.summary)
    assert "Every cell of B moved by about the same factor (x1.400 over 4 cells)" in text
    assert "Within-sweep ratios" in text and "geometric mean 1.000" in text
    assert "B is better in 0 cell(s) and worse in 4" in text
    terminal = render_sections(report.sections, "rich", width=200)
    assert (
        "Summary" in terminal
        and "Every cell of B moved" in terminal
        and "geometric mean" in terminal
    )


def test_a_real_change_in_one_cell_is_not_a_shift(tmp_path):
    a = _store(tmp_path / "a", CELLS)
    b = _store(tmp_path / "b", {**CELLS, "jemalloc": 60.0})
    _, section = _compare(a, b)
    assert not any("moved" in line for line in section.summary)
    assert "Largest resolved changes: allocator=jemalloc x0.75" in " ".join(section.summary)
    assert section.data.set_index("allocator").loc["jemalloc", "within"] == pytest.approx(
        0.75, rel=0.01
    )


def test_disturbed_and_unstable_cells_are_marked_and_not_resolved(tmp_path):
    a = _store(tmp_path / "a", CELLS)
    b = _store(
        tmp_path / "b",
        {**CELLS, "jemalloc": 60.0, "mimalloc": 50.0},
        disturbed={"jemalloc": 3},
        spread={"mimalloc": 0.2},
    )
    report, section = _compare(a, b)
    data = section.data.set_index("allocator")
    assert data.loc["jemalloc", "b.disturbed"] == 3 and data.loc["jemalloc", "resolved"] is None
    assert data.loc["jemalloc", "unstable"].startswith(
        "B unstable: 3 of 6 runs disturbed; likely the machine: other work kept 0.98 CPUs busy"
    )
    assert data.loc["mimalloc", "unstable"].startswith("B unstable: spread")
    warnings = " ".join(flag.text for flag in section.warnings)
    assert "2 cell(s) unstable, no verdict" in warnings
    assert "B: runs measured on a disturbed machine in allocator=jemalloc (3 of 6)" in warnings
    shown = section.table.set_index(section.table.columns[0])
    assert (
        shown.loc["jemalloc", "resolved"] == "unstable"
        and shown.loc["jemalloc", "runs"] == "B: 3 disturbed"
    )
    assert "2 unstable" in " ".join(section.summary)
    markdown = CliRunner().invoke(main, ["compare", str(a), str(b), "--format", "markdown"]).output
    assert "## Summary" in markdown or "Summary" in markdown.splitlines()[0]
    assert "2 unstable" in markdown


def test_shift_rule_and_helpers():
    assert common_shift([1.4, 1.41, 1.39, 1.4])[0] == "common"
    assert common_shift([1.2, 1.9, 1.1, 2.4, 1.3])[0] == "broad"
    assert common_shift([0.8, 1.2, 1.0, 1.01])[0] is None and common_shift([2, 2])[0] is None
    gm, lo, hi = geometric_mean_ci([0.5, 2.0, 1.0])
    assert gm == pytest.approx(1.0) and lo <= 1.0 <= hi
    value, lo, hi = within_ratio(
        [10, 10.1, 9.9], [20, 20.2, 19.8], [14, 14.1, 13.9], [28, 28.2, 27.8]
    )
    assert value == pytest.approx(1.0) and lo < 1.01 and hi > 0.99


def test_report_names_disturbed_and_unstable_cells(tmp_path):
    from hugebench.report import build_report

    path = _store(
        tmp_path / "r",
        {**CELLS, "jemalloc": 60.0, "mimalloc": 50.0},
        disturbed={"jemalloc": 3},
        spread={"mimalloc": 0.2},
    )
    main_section = next(s for s in build_report(load_results(path)).sections if s.kind == "main")
    data = main_section.data.set_index("allocator")
    assert data.loc["jemalloc", "resolved"] is None and data.loc["jemalloc", "unstable"].startswith(
        "unstable: 3 of 6"
    )
    assert (
        data.loc["tcmalloc", "resolved"] == True  # noqa: E712
        and data.loc["tcmalloc", "stability"] == "stable"
    )
    text = render_sections([main_section], "markdown")
    assert "warning: 2 unstable cell(s); a verdict resting on one is not shown as resolved" in text
    assert (
        "allocator=jemalloc (3 of 6 runs disturbed; likely the machine: other work kept 0.98 CPUs busy"
        in text
    )
    assert (
        "runs measured on a disturbed machine (kept, flagged in noise.disturbed) in allocator=jemalloc (3 of 6)"
        in text
    )
    assert "2 resting on an unstable cell" in " ".join(main_section.summary)
