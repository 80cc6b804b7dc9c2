"""Grouped bar charts: the median of a metric per cell with CI error bars and ratio labels, at a fixed layout.

:func:`bar_plot` tabulates a frame (``build_table``) and draws it; :func:`bar_figure` draws a table already
built (``figures._bar_plots`` builds one table for every part of an experiment and draws each part's rows).
The layout is computed once by :func:`fix_layout` from the extents of the few texts around the axes (tick
labels, axis labels, title, legend, labels beside the plot), not by matplotlib's constrained layout, which
draws the whole figure a second time and measures every text in it (half the cost of a report's figures,
issue 42). The legend sits outside the axes, right of the plot, so no search for a free spot inside is needed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.transforms import Bbox, ScaledTranslation

from hugebench.report.figures.barchart import (  # noqa: F401 (re-exported: what a chart shows is decided there)
    GREY,
    MAX_BARS,
    MAX_FIGURES,
    MAX_LEVELS,
    BarChart,
    axis_levels,
    bar_chart,
    yerr_of,
)
from hugebench.report.tables import MetricSpec, build_table
from hugebench.stats import as_list

PAD_IN = 0.08  # inches between the outermost text and the figure's edge
GAP_IN = 0.1  # inches between labels beside the plot and the legend
# a ratio over its bar: a text shifted by a transform (an annotation per bar cost twice as much to draw)
RATIO_STYLE = {"ha": "center", "va": "bottom", "fontsize": "x-small"}


def bar_plot(
    df: pd.DataFrame,
    group_by: str | Sequence[str],
    y: str,
    baseline: Mapping | None = None,
    *,
    ylabel: str | None = None,
    title: str | None = None,
    level: float = 0.95,
    order: Mapping[str, Sequence] | None = None,
) -> Figure:
    """Grouped bars of the median of ``y`` with CI error bars and, with a baseline, ratio annotations.

    The last ``group_by`` column picks the bar colour inside a group; the others name the groups
    (e.g. ``["allocator", "thp"]``: one group per allocator, one bar per THP mode). A ratio whose CI
    contains 1 is written grey with a leading "≈" (no resolved difference). The figure is laid out; a
    caller that adds artists beside the plot calls :func:`fix_layout` again.
    """
    keys = as_list(group_by)
    table = build_table(df, keys, [MetricSpec(y)], baseline, primary=y, level=level)
    fig = bar_figure(table, keys, y, ylabel=ylabel, title=title, order=order)
    fix_layout(fig)
    return fig


def bar_figure(
    table: pd.DataFrame,
    keys: Sequence[str],
    y: str,
    *,
    ylabel: str | None = None,
    title: str | None = None,
    order: Mapping[str, Sequence] | None = None,
) -> Figure:
    """The bars of ``table`` (``build_table``'s, its ``attrs`` kept) grouped by ``keys``, not yet laid out."""
    return chart_figure(bar_chart(table, keys, y, ylabel=ylabel, title=title, order=order))


def chart_figure(chart: BarChart) -> Figure:
    """A matplotlib figure of ``chart`` (:mod:`.barchart`), not yet laid out."""
    fig = Figure(figsize=chart.size)
    ax = fig.subplots()
    _draw_bars(ax, chart)
    ax.set_xticks(chart.xticks, chart.xticklabels)
    if chart.legend_title is not None:  # one axis has none: each bar's tick names its value
        ax.legend(title=chart.legend_title, fontsize="small", loc="upper left", borderaxespad=0)
    ax.set_xlabel(chart.xlabel)
    ax.set_ylabel(chart.ylabel)
    if chart.title:  # in lines as wide as the plot leaves room for (the legend is beside it)
        width_pt = (fig.get_figwidth() - 1.5) * 72
        ax.set_title(
            fit_lines(chart.title.split(" "), width_pt, "medium", sep=" "), fontsize="medium"
        )
    ax.grid(True, axis="y", alpha=0.3)
    ax.margins(y=0.15)
    if chart.ratio_key:
        fig.supxlabel(
            fit_lines(chart.ratio_key, fig.get_figwidth() * 72, "x-small"),
            fontsize="x-small",
            color=GREY,
            y=PAD_IN / fig.get_figheight(),
            va="bottom",
        )
    return fig


def fix_layout(fig: Figure) -> None:
    """Place the one axes of a bar figure so that its tick labels, axis labels, title, the ratio key under it
    and what sits beside it (labels right of the plot, then the legend) fit the figure's size, which is kept.

    One measuring pass over those texts only (the bars and their labels inside the plot are not measured),
    then the axes' position is fixed; nothing is laid out again when the figure is drawn. The title counts
    for the height only (:func:`bar_figure` wraps it to the plot's width)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    ax, legend = fig.axes[0], fig.axes[0].get_legend()
    renderer = FigureCanvasAgg(fig).get_renderer()
    dpi, (width, height) = fig.dpi, fig.get_size_inches()
    frame = ax.get_window_extent(renderer)
    side = _extents([ax.xaxis, ax.yaxis, *(t for t in ax.texts if t.get_in_layout())], renderer)
    above = _extents([side, ax.title], renderer)
    under = [b.y1 for b in _boxes(fig.texts, renderer) if b.y0 < frame.y0]  # the ratio key
    left = max(0.0, frame.x0 - side.x0) / dpi + PAD_IN
    beside = max(0.0, side.x1 - frame.x1) / dpi
    bottom = max(0.0, frame.y0 - side.y0) / dpi + (max(under) / dpi if under else 0.0) + PAD_IN
    top = max(0.0, above.y1 - frame.y1) / dpi + PAD_IN
    right = beside + PAD_IN
    if legend is not None:  # right of the plot and of what is labelled beside it
        shift = beside + GAP_IN
        legend.set_bbox_to_anchor(
            (1, 1), ax.transAxes + ScaledTranslation(shift, 0, fig.dpi_scale_trans)
        )
        right = shift + legend.get_window_extent(renderer).width / dpi + PAD_IN
    plot = (max(0.5, width - left - right), max(0.5, height - bottom - top))
    ax.set_position((left / width, bottom / height, plot[0] / width, plot[1] / height))


def fit_lines(parts: Sequence[str], width_pt: float, size="x-small", sep: str = ";  ") -> str:
    """``parts`` joined by ``sep``, broken into lines that fit ``width_pt`` points at font ``size`` (a legend
    under a narrow figure must not run off both edges)."""
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import TextToPath

    measure, font = TextToPath(), FontProperties(size=size)
    lines: list[str] = []
    for part in parts:
        candidate = f"{lines[-1]}{sep}{part}" if lines else part
        if (
            lines
            and measure.get_text_width_height_descent(candidate, font, ismath=False)[0]
            <= 0.92 * width_pt
        ):
            lines[-1] = candidate
        else:
            lines.append(part)
    return "\n".join(lines)


# -- helpers ---------------------------------------------------------------------------------------


def _boxes(artists, renderer) -> list[Bbox]:
    """The extents of ``artists`` (a box, an axis with its tick labels and label, or a text) that show
    something."""
    boxes = [
        a
        if isinstance(a, Bbox)
        else a.get_tightbbox(renderer)
        if hasattr(a, "get_ticklabels")
        else a.get_window_extent(renderer)
        for a in artists
        if isinstance(a, Bbox) or a.get_visible()
    ]
    return [b for b in boxes if b is not None and b.width > 0]


def _extents(artists, renderer) -> Bbox:
    return Bbox.union(_boxes(artists, renderer))


def _draw_bars(ax, chart: BarChart) -> None:
    """One bar series per value of the colour axis (a colour, a legend entry), the error bars of all of them
    in one call (an ``errorbar`` a series cost more than its bars), a ratio or status label on each bar."""
    for series in chart.series:
        ax.bar(series.xs, series.heights, chart.width, color=f"C{series.index}", label=series.label)
    xs, heights, yerr = chart.errors
    ax.errorbar(xs, heights, yerr=yerr, fmt="none", ecolor="k", capsize=3, label="_nolegend_")
    above = ax.transData + ScaledTranslation(0, 3 / 72, ax.figure.dpi_scale_trans)  # 3 points up
    for mark in chart.marks:
        if mark.status:
            text = ax.text(
                mark.x,
                0,
                mark.text,
                rotation=90,
                ha="center",
                va="bottom",
                fontsize="x-small",
                color=GREY,
            )
        else:
            text = ax.text(
                mark.x, mark.y, mark.text, transform=above, **RATIO_STYLE, color=mark.color
            )
        text.set_in_layout(False)  # inside the plot (ax.margins keeps room): not measured
