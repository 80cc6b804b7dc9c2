"""Figures from the committed sample store (synthetic test data): lines, bars, annotations, saved files."""

from __future__ import annotations

from pathlib import Path

import pytest
from matplotlib.container import BarContainer, ErrorbarContainer
from matplotlib.figure import Figure

import hugebench
from hugebench.report import figures as plots

SAMPLE = Path(__file__).parent / "data" / "sample_results"


@pytest.fixture(scope="module")
def sample():
    df = hugebench.load(SAMPLE)
    return {name: rows for name, rows in df.groupby("experiment")}


def test_line_plot_draws_one_line_per_hue_with_error_bars(sample):
    fig = plots.line_plot(sample["alloc-sample"], "threads", "ns_per_pair", hue="allocator",
                          ylabel="ns per malloc/free pair", logx=True)
    assert isinstance(fig, Figure)
    (ax,) = fig.axes
    lines = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    assert len(lines) == 2
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["glibc", "jemalloc"]
    assert list(lines[0].lines[0].get_xdata()) == [1, 2, 4]
    glibc_medians = lines[0].lines[0].get_ydata()
    assert glibc_medians[0] < glibc_medians[1] < glibc_medians[2]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "2", "4"]
    assert ax.get_ylabel() == "ns per malloc/free pair"


def test_line_plot_facets_by_column_and_leaves_failed_cells_out(sample):
    fig = plots.line_plot(sample["tlb-sample"], "thp", "ns_per_lookup", hue="allocator", col="allocator")
    assert len(fig.axes) == 3
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == ["allocator = glibc", "allocator = jemalloc", "allocator = mimalloc"]
    points = [len(c.lines[0].get_xdata()) for ax in fig.axes for c in ax.containers]
    assert points == [2, 2, 1], "mimalloc/never has no successful run: no point"


def test_line_plot_without_hue_draws_a_single_line(sample):
    fig = plots.line_plot(sample["alloc-sample"], "threads", "peak_rss_bytes", title="memory overhead")
    assert len(fig.axes[0].containers) == 1 and fig.axes[0].get_legend() is None
    assert fig.get_suptitle() == "memory overhead"


def test_bar_plot_groups_bars_and_annotates_ratios(sample):
    fig = plots.bar_plot(sample["tlb-sample"], ["allocator", "thp"], "ns_per_lookup",
                         baseline={"allocator": "glibc", "thp": "never"}, ylabel="ns per lookup")
    (ax,) = fig.axes
    bars = [c for c in ax.containers if isinstance(c, BarContainer)]
    assert len(bars) == 2 and [len(b) for b in bars] == [3, 3]  # thp always/never x three allocators
    assert [t.get_text() for t in ax.get_xticklabels()] == ["glibc", "jemalloc", "mimalloc"]
    texts = {t.get_text() for t in ax.texts}
    assert {"base", "0.74×", "≈1.01×", "0.72×?", "failed"} <= texts
    assert "ratio to allocator=glibc, thp=never" in fig.get_supxlabel()


def test_bar_plot_with_one_axis_and_no_baseline(sample):
    fig = plots.bar_plot(sample["alloc-sample"], "threads", "ns_per_pair")
    bars = [c for c in fig.axes[0].containers if isinstance(c, BarContainer)]
    assert len(bars) == 3 and not fig.axes[0].texts


def test_save_writes_png_and_svg(tmp_path, sample):
    fig = plots.line_plot(sample["alloc-sample"], "threads", "ns_per_pair", hue="allocator")
    png, svg = plots.save(fig, tmp_path, "alloc: ns per pair")
    assert png == tmp_path / "plots" / "alloc_ns_per_pair.png" and svg.suffix == ".svg"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    assert svg.read_text().lstrip().startswith("<?xml") and "<svg" in svg.read_text()
