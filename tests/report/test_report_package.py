"""The report package reads a store once and reports tables and plots with one and the same sweep context."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from paths import TESTS

import hugebench.store
from hugebench.cli import main
from hugebench.report import figures, load_results, sweep_context
from hugebench.store import ResultStore
from hugebench.workloads import WORKLOADS, BarPlot

SAMPLE = TESTS / "data" / "sample_results"
EARLIER, LATER = "tlb-resume-20240101T000000Z-1", "tlb-resume-20240102T000000Z-1"


def _context(baseline: dict) -> dict:
    return {
        "experiment": "tlb-resume",
        "workload": "hashlookup",
        "axes": ["allocator", "thp"],
        "baseline": baseline,
        "primary_metric": "ns_per_lookup",
        "spec": {"axes": {"allocator": ["glibc", "jemalloc"], "thp": ["never", "always"]}},
    }


def _resumed_store(path: Path) -> Path:
    """A sweep, then its resumption with another baseline (sweep ids sort by start time, as in preflight)."""
    store = ResultStore(path)
    store.write_context(EARLIER, _context({"allocator": "glibc", "thp": "never"}))
    store.write_context(LATER, _context({"allocator": "jemalloc", "thp": "never"}))
    ns = {
        ("glibc", "never"): 100.0,
        ("glibc", "always"): 80.0,
        ("jemalloc", "never"): 90.0,
        ("jemalloc", "always"): 70.0,
    }
    for sweep_id in (EARLIER, LATER):
        for repetition in range(3):
            for (allocator, thp), value in ns.items():
                store.append(
                    {
                        "run_id": f"{sweep_id}-{allocator}-{thp}-{repetition}",
                        "sweep_id": sweep_id,
                        "experiment": "tlb-resume",
                        "workload": "hashlookup",
                        "status": "ok",
                        "warmup": False,
                        "repetition": repetition,
                        "allocator": allocator,
                        "thp": thp,
                        "ns_per_lookup": value + repetition,
                    }
                )
    return path


def test_the_latest_sweep_of_the_rows_gives_the_context(tmp_path):
    results = load_results(_resumed_store(tmp_path / "res"))
    (experiment,) = results.experiments()
    assert (
        experiment.context["sweep_id"] == LATER and experiment.baseline["allocator"] == "jemalloc"
    )
    earlier_rows = experiment.rows[experiment.rows["sweep_id"] == EARLIER]
    assert sweep_context(earlier_rows, results.contexts)["sweep_id"] == EARLIER
    assert sweep_context(experiment.rows.drop(columns="sweep_id"), results.contexts) == {}


def test_table_and_plots_use_the_same_sweep_context(tmp_path, monkeypatch):
    results_dir = _resumed_store(tmp_path / "res")
    drawn = []

    def record(fig, directory, name):
        drawn.append(
            (name, fig.get_supxlabel().replace("\n", ";  "))
        )  # the legend wraps to the figure's width
        return []

    monkeypatch.setattr(figures, "save", record)
    result = CliRunner().invoke(
        main, ["report", str(results_dir), "--format", "markdown", "--plots"]
    )
    assert result.exit_code == 0, result.output
    assert "to the cell with allocator=jemalloc, thp=never" in result.output
    assert drawn == [
        (
            "tlb-resume-latency",
            "ratio to allocator=jemalloc, thp=never;  ≈ CI of the ratio contains 1;"
            "  ? too few runs for a verdict",
        )
    ]


def test_report_with_plots_reads_the_store_once(tmp_path, monkeypatch):
    results_dir = tmp_path / "res"
    shutil.copytree(SAMPLE, results_dir)
    reads = {"rows": 0, "contexts": 0}
    iter_rows, contexts = hugebench.store._iter_rows, ResultStore.contexts

    def counting_rows(*args, **kwargs):  # the one place the runs file is read
        reads["rows"] += 1
        return iter_rows(*args, **kwargs)

    def counting_contexts(self):
        reads["contexts"] += 1
        return contexts(self)

    frames = hugebench.store.columnar.frames

    def counting_frames(*args, **kwargs):  # the columnar form and the journal after it: one read
        reads["frames"] = reads.get("frames", 0) + 1
        return frames(*args, **kwargs)

    monkeypatch.setattr(hugebench.store, "_iter_rows", counting_rows)
    monkeypatch.setattr(hugebench.store.columnar, "frames", counting_frames)
    monkeypatch.setattr(ResultStore, "contexts", counting_contexts)
    result = CliRunner().invoke(main, ["report", str(results_dir), "--plots"])
    assert result.exit_code == 0, result.output
    assert "plots:" in result.output and "tlb-sample-latency.png" in result.output
    # the rows are read once, through the columnar form (hugebench.store.columnar) and the journal after it
    assert reads["contexts"] == 1 and reads["frames"] == 1 and reads["rows"] <= 1, reads


def test_bar_plots_are_declared_in_the_registry():
    assert WORKLOADS["hashlookup"].bars == (
        BarPlot(
            ("allocator", "thp.enabled"),
            "ns_per_lookup",
            "ns per lookup",
            "lookup latency",
            "latency",
        ),
    )
    assert not WORKLOADS["alloctest"].bars


@pytest.mark.parametrize(
    "columns, wanted",
    [(["allocator", "thp"], "thp"), (["thp.enabled", "thp"], "thp.enabled"), (["allocator"], None)],
)
def test_a_declared_knob_axis_finds_its_shorthand_column(columns, wanted):
    assert figures._column(pd.DataFrame(columns=columns), "thp.enabled") == wanted
