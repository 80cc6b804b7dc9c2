"""What a grouped bar chart says, as a value: bars, CI whiskers, ratio labels, ticks, legend, title, key.

:func:`bar_chart` makes every decision a bar chart of a cell table (``build_table``'s) takes: which rows are
drawn (the YAML's order, at most :data:`MAX_LEVELS` colours and :data:`MAX_BARS` bars), where each bar sits,
its colour, its error bar, the text over it (``1.42×?``, ``base``, ``failed``), the tick labels, axis labels,
title, legend and ratio key, as a ``svgbars.BarChart``. Two writers draw the same chart: ``bars`` with matplotlib (the PNG and
SVG files in ``plots/``, notebooks) and ``svgbars`` as the HTML page's inline SVG (issue 42: a page's 24
matplotlib figures cost ~4 s of CPU). Nothing here imports matplotlib.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from hugebench.report.figures.svgbars import BarChart, Mark, Series
from hugebench.report.rendering import format_axis, is_missing
from hugebench.report.tables import in_spec_order

GREY = "0.45"
MAX_BARS = 120  # bars one plot draws; a store of thousands of cells gets its first groups (the table has all)
MAX_LEVELS = 12  # bars (colours) a group draws
MAX_FIGURES = 24  # plots of one declared bar chart (one per value of the other axes)


def bar_chart(
    table: pd.DataFrame,
    keys: Sequence[str],
    y: str,
    *,
    ylabel: str | None = None,
    title: str | None = None,
    order: Mapping[str, Sequence] | None = None,
) -> BarChart:
    """The chart of ``table`` (``build_table``'s, its ``attrs`` kept) grouped by ``keys``: the last key picks
    the colour inside a group, the others name the groups."""
    inner, outer = keys[-1], list(keys[:-1])
    table, bar_values, group_labels, notes = _shown(table, keys, order)
    width = 0.8 / max(len(bar_values), 1)
    slots = _bar_slots(table, outer, inner, group_labels, bar_values, width)
    medians = table[y].to_numpy(float)
    heights, values = np.nan_to_num(medians), table[inner].tolist()
    series = []
    for j, value in enumerate(bar_values):
        mine = [i for i, v in enumerate(values) if v == value]
        series.append(Series(format_axis(value), j, [slots[i] for i in mine], heights[mine]))
    xticks: list[float]
    if outer:
        xticks, xticklabels = list(range(len(group_labels))), group_labels
    else:
        xticks, xticklabels = slots, [format_axis(v) for v in table[inner]]
    ratio_key = []
    if "ratio" in table.columns:
        where = ", ".join(f"{k}={format_axis(v)}" for k, v in table.attrs["baseline"].items())
        ratio_key = [
            f"ratio to {where}",
            "≈ CI of the ratio contains 1",
            "? too few runs for a verdict",
        ]
    return BarChart(
        size=(max(4.5, 1.2 + 0.55 * len(group_labels) * len(bar_values)), 4.2),
        width=width,
        series=series,
        errors=(slots, heights, yerr_of(table, y, f"{y}.ci_lo", f"{y}.ci_hi")),
        marks=_marks(table, slots, medians, y),
        xticks=xticks,
        xticklabels=xticklabels,
        xlabel=" / ".join(outer) if outer else inner,
        ylabel=ylabel or y,
        title=f"{title} ({'; '.join(notes)})" if title and notes else title,
        legend_title=inner if outer else None,
        ratio_key=ratio_key,
    )


def _marks(table: pd.DataFrame, slots, medians, y) -> list[Mark]:
    """Each bar's text: its status at the axis when it has no number, else its ratio over the CI (over the
    median when there is no CI)."""
    high = table[f"{y}.ci_hi"].to_numpy(float)
    tops = np.where(np.isnan(high), medians, high)
    ratios = _columns(table, ("is_baseline", "ratio", "resolved")) if "ratio" in table else None
    marks = []
    for k, (x, status) in enumerate(zip(slots, table["status"])):
        if status != "ok" or np.isnan(medians[k]):
            marks.append(Mark(x, 0.0, status if status != "ok" else "n/a", GREY, status=True))
        elif ratios is not None:
            words, shade = _ratio_text(ratios[k])
            marks.append(Mark(x, float(tops[k]), words, shade))
    return marks


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
