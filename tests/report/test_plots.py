"""Figures from the committed sample store (synthetic test data): lines, bars, annotations, saved files."""

from __future__ import annotations

import pytest
from matplotlib.container import BarContainer, ErrorbarContainer
from matplotlib.figure import Figure
from paths import TESTS

import hugebench
from hugebench.report import figures as plots

SAMPLE = TESTS / "data" / "sample_results"


@pytest.fixture(scope="module")
def sample():
    df = hugebench.load(SAMPLE)
    return {name: rows for name, rows in df.groupby("experiment")}


def test_line_plot_draws_one_line_per_hue_with_error_bars(sample):
    fig = plots.line_plot(
        sample["alloc-sample"],
        "threads",
        "ns_per_pair",
        hue="allocator",
        ylabel="ns per malloc/free pair",
        logx=True,
    )
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
    fig = plots.line_plot(
        sample["tlb-sample"], "thp", "ns_per_lookup", hue="allocator", col="allocator"
    )
    assert len(fig.axes) == 3
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == ["allocator = glibc", "allocator = jemalloc", "allocator = mimalloc"]
    points = [len(c.lines[0].get_xdata()) for ax in fig.axes for c in ax.containers]
    assert points == [2, 2, 1], "mimalloc/never has no successful run: no point"


def test_line_plot_without_hue_draws_a_single_line(sample):
    fig = plots.line_plot(
        sample["alloc-sample"], "threads", "peak_rss_bytes", title="memory overhead"
    )
    assert len(fig.axes[0].containers) == 1 and fig.axes[0].get_legend() is None
    assert fig.get_suptitle() == "memory overhead"


def test_bar_plot_groups_bars_and_annotates_ratios(sample):
    fig = plots.bar_plot(
        sample["tlb-sample"],
        ["allocator", "thp"],
        "ns_per_lookup",
        baseline={"allocator": "glibc", "thp": "never"},
        ylabel="ns per lookup",
    )
    (ax,) = fig.axes
    bars = [c for c in ax.containers if isinstance(c, BarContainer)]
    assert len(bars) == 2 and [len(b) for b in bars] == [
        3,
        3,
    ]  # thp always/never x three allocators
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


def _drawn(fig):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return canvas.get_renderer()


def test_an_excluded_cell_leaves_no_gap_in_its_group(sample):
    rows = sample["tlb-sample"]
    rows = rows[
        ~((rows["allocator"] == "jemalloc") & (rows["thp"] == "never"))
    ]  # as `exclude:` would
    fig = plots.bar_plot(
        rows, ["allocator", "thp"], "ns_per_lookup", baseline={"allocator": "glibc", "thp": "never"}
    )
    centres = sorted(
        round(bar.get_x() + bar.get_width() / 2, 6)
        for c in fig.axes[0].containers
        if isinstance(c, BarContainer)
        for bar in c
    )
    width = 0.4
    assert centres == [
        round(c, 6) for c in (-width / 2, width / 2, 1.0, 2 - width / 2, 2 + width / 2)
    ], "jemalloc's one bar sits on its group's centre; mimalloc's failed cell keeps its slot"


def test_the_ratio_legend_under_a_narrow_plot_stays_inside_the_figure(sample):
    rows = sample["tlb-sample"]
    fig = plots.bar_plot(
        rows[rows["allocator"] == "glibc"],
        ["allocator", "thp"],
        "ns_per_lookup",
        baseline={"allocator": "glibc", "thp": "never"},
    )
    assert fig.get_figwidth() <= 4.5 and "\n" in fig.get_supxlabel()
    renderer = _drawn(fig)
    box = fig._supxlabel.get_window_extent(renderer)
    assert box.x0 >= 0 and box.x1 <= fig.bbox.width


def test_probe_labels_sit_beside_the_plot_not_on_the_last_group(sample):
    from hugebench.workloads.tlbprobe.figure import underlay_bars

    rows = sample["tlb-sample"].assign(peak_rss_bytes=180e6)
    fig = plots.bar_plot(
        rows, ["allocator", "thp"], "ns_per_lookup", baseline={"allocator": "glibc", "thp": "never"}
    )
    points = [
        {"working_set_bytes": 4 << 20, "median": 60.0},
        {"working_set_bytes": 1 << 30, "median": 120.0},
    ]
    summary = {
        "curves": [
            {"pattern": "chase", "backing": "4k", "points": points},
            {
                "pattern": "chase",
                "backing": "thp",
                "points": [dict(p, median=p["median"] * 0.99) for p in points],
            },
        ]
    }
    assert underlay_bars(fig.axes[0], rows, summary)
    plots.fix_layout(
        fig
    )  # the layout is fixed, not redone at each draw: laid out again after adding
    renderer = _drawn(fig)
    ax = fig.axes[0]
    labels = [t for t in ax.texts if t.get_text().startswith("probe ")]
    boxes = [t.get_window_extent(renderer) for t in labels]
    assert len(boxes) == 2 and all(b.x0 >= ax.bbox.x1 and b.x1 <= fig.bbox.width for b in boxes)
    assert not boxes[0].overlaps(boxes[1]), "two close probe lines: their labels are moved apart"
    legend = ax.get_legend().get_window_extent(renderer)
    assert legend.x0 >= max(b.x1 for b in boxes) and legend.x1 <= fig.bbox.width, (
        "the legend sits right of the probe labels, inside the figure"
    )


def test_a_bar_plot_is_laid_out_once_with_everything_inside_the_figure(sample):
    """The layout is fixed when the figure is built (no layout engine drawing it twice, issue 42): the
    title, tick labels, axis labels, ratio key and the legend (outside the plot, right of it) all fit."""
    fig = plots.bar_plot(
        sample["tlb-sample"],
        ["allocator", "thp"],
        "ns_per_lookup",
        baseline={"allocator": "glibc", "thp": "never"},
        title="tlb-sample: a title that says what the plot shows",
    )
    assert fig.get_layout_engine() is None
    renderer = _drawn(fig)
    (ax,) = fig.axes
    legend = ax.get_legend().get_window_extent(renderer)
    assert legend.x0 > ax.bbox.x1, "the legend sits outside the bars"
    texts = [ax.title, *fig.texts]  # the axes' own title, the ratio key under the plot
    boxes = [t.get_window_extent(renderer) for t in texts if t.get_text()]
    boxes += [ax.xaxis.get_tightbbox(renderer), ax.yaxis.get_tightbbox(renderer), legend]
    for box in boxes:  # the axes' boxes hold their tick labels in view and their labels
        assert (
            0 <= box.x0 and box.x1 <= fig.bbox.width and 0 <= box.y0 and box.y1 <= fig.bbox.height
        )
    assert ax.xaxis.get_tightbbox(renderer).y1 <= ax.bbox.y0 + 1 and ax.get_xlabel() == "allocator"
