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

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.transforms import Bbox, ScaledTranslation

from ..stats import as_list
from .rendering import format_axis, is_missing
from .tables import MetricSpec, build_table, in_spec_order

GREY = "0.45"
MAX_BARS = 120  # bars one plot draws; a store of thousands of cells gets its first groups (the table has all)
MAX_LEVELS = 12  # bars (colours) a group draws
MAX_FIGURES = 24  # plots of one declared bar chart (one per value of the other axes)
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
    inner, outer = keys[-1], list(keys[:-1])
    table, bar_values, group_labels, notes = _shown(table, keys, order)
    title = f"{title} ({'; '.join(notes)})" if title and notes else title
    width = 0.8 / max(len(bar_values), 1)
    fig = Figure(figsize=(max(4.5, 1.2 + 0.55 * len(group_labels) * len(bar_values)), 4.2))
    ax = fig.subplots()
    slots = _bar_slots(table, outer, inner, group_labels, bar_values, width)
    _draw_bars(ax, table, slots, inner, bar_values, width, y)
    if outer:
        ax.set_xticks(range(len(group_labels)), group_labels)
        ax.legend(title=inner, fontsize="small", loc="upper left", borderaxespad=0)
    else:  # one axis: each bar names its own value (an empty group label and a legend said it less directly)
        ax.set_xticks(slots, [format_axis(v) for v in table[inner]])
    ax.set_xlabel(" / ".join(outer) if outer else inner)
    ax.set_ylabel(ylabel or y)
    if title:  # in lines as wide as the plot leaves room for (the legend is beside it)
        width_pt = (fig.get_figwidth() - 1.5) * 72
        ax.set_title(fit_lines(title.split(" "), width_pt, "medium", sep=" "), fontsize="medium")
    ax.grid(True, axis="y", alpha=0.3)
    ax.margins(y=0.15)
    if "ratio" in table.columns:
        _ratio_key(fig, table.attrs["baseline"])
    return fig


def _shown(table: pd.DataFrame, keys: Sequence[str], order: Mapping | None):
    """``(table, bar values, group labels, notes)``: the rows a plot draws, in the YAML's order, cut to
    :data:`MAX_LEVELS` colours and :data:`MAX_BARS` bars, with notes saying what was left out."""
    if order:
        table = in_spec_order(table, keys, order)
    inner, outer = keys[-1], list(keys[:-1])
    table = _keep(table, ~table[inner].map(is_missing))  # no value of the colour axis: no colour
    bar_values = axis_levels(table, inner, order)
    notes = []
    if outer and len(bar_values) > MAX_LEVELS:  # more colours than a legend can tell apart
        notes.append(f"the first {MAX_LEVELS} of {len(bar_values)} values of {inner}")
        bar_values = bar_values[:MAX_LEVELS]
        table = _keep(table, table[inner].isin(bar_values))
    group_labels = _group_labels(table, outer)
    table, group_labels, shown = _first_bars(table, outer, group_labels, len(bar_values))
    attrs, table = table.attrs, table.reset_index(drop=True)
    table.attrs = attrs
    return table, bar_values, group_labels, notes + ([shown] if shown else [])


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
    ax.set_position([left / width, bottom / height, plot[0] / width, plot[1] / height])


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


def _ratio_key(fig: Figure, baseline: Mapping) -> None:
    where = ", ".join(f"{k}={format_axis(v)}" for k, v in baseline.items())
    parts = [f"ratio to {where}", "≈ CI of the ratio contains 1", "? too few runs for a verdict"]
    fig.supxlabel(
        fit_lines(parts, fig.get_figwidth() * 72, "x-small"),
        fontsize="x-small",
        color=GREY,
        y=PAD_IN / fig.get_figheight(),
        va="bottom",
    )


def _keep(table: pd.DataFrame, mask) -> pd.DataFrame:
    kept = table[mask]
    kept.attrs = table.attrs
    return kept


def _first_bars(table: pd.DataFrame, outer, group_labels: list, per_group: int):
    """``(table, group_labels, note)`` cut to the first groups that hold :data:`MAX_BARS` bars, with the
    note saying so ("" when nothing was left out): a plot of thousands of bars says nothing and takes
    minutes to lay out."""
    keep = group_labels[: max(1, MAX_BARS // max(per_group, 1))] if outer else group_labels
    if len(table) <= MAX_BARS or (outer and len(keep) == len(group_labels)):
        return table, group_labels, ""
    if outer:
        wanted = set(keep)
        cut = _keep(table, [label in wanted for label in _row_labels(table, outer)])
        return cut, keep, f"the first {len(keep)} of {len(group_labels)} groups"
    cut = table.iloc[:MAX_BARS]
    cut.attrs = table.attrs
    return cut, keep, f"the first {MAX_BARS} of {len(table)} cells"


def _bar_slots(table: pd.DataFrame, outer, inner, group_labels, bar_values, width) -> list[float]:
    """x of each table row's bar: the bars a group has are centred on it, so a cell the experiment excluded
    leaves no hole (a cell that ran and failed keeps its slot: it is a row, marked "failed")."""
    members: dict[str, list] = {label: [] for label in group_labels}
    rank = {value: k for k, value in enumerate(bar_values)}
    for i, (label, value) in enumerate(zip(_row_labels(table, outer), table[inner].tolist())):
        members[label].append((rank[value], i))
    slots = [0.0] * len(table)
    for centre, group in enumerate(group_labels):
        found = sorted(members[group])
        for k, (_, i) in enumerate(found):
            slots[i] = centre + (k - (len(found) - 1) / 2) * width
    return slots


def _draw_bars(ax, table: pd.DataFrame, slots, inner, bar_values, width, y) -> None:
    """One bar series per value of ``inner`` (a colour, a legend entry), the error bars of all of them in one
    call (an ``errorbar`` a series cost more than its bars), a ratio or status label on each bar."""
    medians = table[y].to_numpy(float)
    heights, values = np.nan_to_num(medians), table[inner].tolist()
    for j, value in enumerate(bar_values):
        mine = [i for i, v in enumerate(values) if v == value]
        ax.bar(
            [slots[i] for i in mine], heights[mine], width, color=f"C{j}", label=format_axis(value)
        )
    yerr = yerr_of(table, y, f"{y}.ci_lo", f"{y}.ci_hi")
    ax.errorbar(slots, heights, yerr=yerr, fmt="none", ecolor="k", capsize=3, label="_nolegend_")
    high = table[f"{y}.ci_hi"].to_numpy(float)
    tops = np.where(np.isnan(high), medians, high)  # a ratio sits over the CI, else the median
    ratios = _columns(table, ("is_baseline", "ratio", "resolved")) if "ratio" in table else None
    above = ax.transData + ScaledTranslation(0, 3 / 72, ax.figure.dpi_scale_trans)  # 3 points up
    for k, (x, status) in enumerate(zip(slots, table["status"])):
        if status != "ok" or np.isnan(medians[k]):
            text = ax.text(
                x,
                0,
                status if status != "ok" else "n/a",
                rotation=90,
                ha="center",
                va="bottom",
                fontsize="x-small",
                color=GREY,
            )
        elif ratios is not None:
            words, shade = _ratio_text(ratios[k])
            text = ax.text(x, tops[k], words, transform=above, **RATIO_STYLE, color=shade)
        else:
            continue
        text.set_in_layout(False)  # inside the plot (ax.margins keeps room): not measured


def _columns(rows: pd.DataFrame, names: Sequence[str]) -> list[dict]:
    """Each row's values of ``names`` as a dict (cheaper than a Series or a record of every column)."""
    return [dict(zip(names, values)) for values in zip(*(rows[n].tolist() for n in names))]


def _ratio_text(row: Mapping) -> tuple[str, str]:
    if row["is_baseline"]:
        return "base", "black"
    if pd.isna(row["ratio"]):
        return "", "black"
    if row["resolved"] is False:
        return f"≈{row['ratio']:.2f}×", GREY
    if row["resolved"] is None:
        return f"{row['ratio']:.2f}×?", GREY
    return f"{row['ratio']:.2f}×", "black"


def yerr_of(rows: pd.DataFrame, centre: str, lo: str, hi: str) -> np.ndarray:
    """Error bar lengths below and above ``centre`` (0 where a bound is missing)."""
    middle = rows[centre].to_numpy(float)
    below = np.nan_to_num(middle - rows[lo].to_numpy(float))
    above = np.nan_to_num(rows[hi].to_numpy(float) - middle)
    return np.vstack([np.clip(below, 0, None), np.clip(above, 0, None)])


def axis_levels(frame: pd.DataFrame, column: str, order: Mapping | None = None) -> list:
    """The values of ``column`` in the order ``order`` (axis -> values, the YAML's) gives, else sorted."""
    values = frame[column].dropna().unique().tolist()
    wanted = [str(v) for v in (order or {}).get(column) or []]
    if wanted:
        return sorted(
            values, key=lambda v: wanted.index(str(v)) if str(v) in wanted else len(wanted)
        )
    try:
        return sorted(values)
    except TypeError:  # mixed types: keep the order of appearance
        return values


def _row_labels(table: pd.DataFrame, outer: Sequence[str]) -> list[str]:
    """Each row's group label ("glibc / never"), "" without group axes."""
    if not outer:
        return [""] * len(table)
    columns = [[format_axis(v) for v in table[c].tolist()] for c in outer]
    return [" / ".join(parts) for parts in zip(*columns)]


def _group_labels(table: pd.DataFrame, outer: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(_row_labels(table, outer)))
