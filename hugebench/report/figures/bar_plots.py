"""The bar plots a workload declares (``Workload.bars``) for one experiment: one cell table for all of them,
one chart per part (a value of the axes the plot does not group by, :data:`MAX_FIGURES` at most).

Each plot is a :class:`~.barchart.BarChart` value; drawn by matplotlib (``bars``, for ``plots/`` and
notebooks) unless the caller asks for the values (the HTML page writes them as SVG itself, ``svgbars``).
Split out of ``figures`` (issue 42), which keeps the line, ratio and per-run plots.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from hugebench.experiment import canonical_knob
from hugebench.report.figures.barchart import MAX_FIGURES, bar_chart
from hugebench.report.rendering import format_axis
from hugebench.report.results import Experiment
from hugebench.report.tables import MetricSpec, build_table, cell_columns
from hugebench.workloads import Workload

PROBE_UNDERLAY = ("hashlookup",)  # workloads whose latency bars get the probe's curves underneath


def bar_plots(
    experiment: Experiment, workload: Workload, rows: pd.DataFrame, charts: bool = False
) -> list[tuple]:
    """(file stem, figure) of each declared bar plot's parts; with ``charts`` (stem, BarChart)."""
    drawn: list[tuple] = []
    for bars in workload.bars:
        found = [axis_column(rows, axis) for axis in bars.groups]
        groups = [g for g in found if g is not None]
        if len(groups) < len(found):
            continue
        varying = _varying(rows, [a for a in experiment.axes if a not in groups])
        extra = [c for c in (f"{bars.y}.reason", "peak_rss_bytes") if c in rows.columns]
        narrow = rows[cell_columns(rows, groups + varying, [bars.y]) + extra]  # rows are ~360 wide
        parts, total = _first_parts(narrow, varying)
        # one table for every part drawn (a table per part cost as much again as drawing it)
        table = build_table(
            pd.concat([part for _, part in parts]),
            groups + varying,
            [MetricSpec(bars.y)],
            experiment.baseline,
            primary=bars.y,
        )
        for i, (keys, part) in enumerate(parts):
            suffix = "".join(f"-{k}{format_axis(v)}" for k, v in keys)
            more = (  # said on the last plot drawn: a plot per part of thousands of cells says nothing
                f" (plots of the first {MAX_FIGURES} of {total} parts; the table has every cell)"
                if i == MAX_FIGURES - 1 and total > MAX_FIGURES
                else ""
            )
            chart = bar_chart(
                _rows_with(table, keys),
                groups,
                bars.y,
                ylabel=bars.label,
                title=f"{part_title(experiment.name, keys)}: {bars.title}{more}",
                order=experiment.axis_order,
            )
            stem = f"{experiment.name}-{bars.name}{suffix}"
            if charts:
                chart.levels = _probe_levels(workload, part)
                drawn.append((stem, chart))
            else:
                from hugebench.report.figures.bars import chart_figure, fix_layout

                fig = chart_figure(chart)
                _probe_underlay(fig, workload, part)
                fix_layout(fig)
                drawn.append((stem, fig))
    return drawn


def _varying(rows: pd.DataFrame, axes: list[str]) -> list[str]:
    return [a for a in axes if a in rows.columns and rows[a].nunique() > 1]


def _first_parts(rows: pd.DataFrame, varying: list[str]) -> tuple[list, int]:
    """The first :data:`MAX_FIGURES` of ``figures._split``'s parts and how many there are in all."""
    if not varying:
        return [((), rows)], 1
    number = rows.groupby(varying).ngroup()
    kept = rows[number.between(0, MAX_FIGURES - 1)].groupby(varying)
    parts = [(tuple(zip(varying, v if isinstance(v, tuple) else (v,))), p) for v, p in kept]
    return parts, int(number.max()) + 1


def _rows_with(table: pd.DataFrame, keys) -> pd.DataFrame:
    """The rows of ``table`` with the values ``keys`` ((axis, value), ...) names, its ``attrs`` kept."""
    mask = np.ones(len(table), dtype=bool)
    for axis, value in keys:
        mask &= (table[axis] == value).to_numpy()
    part = table[mask].reset_index(drop=True)
    part.attrs = table.attrs
    return part


def _probe_underlay(fig, workload: Workload, rows: pd.DataFrame) -> None:
    """Latency of a random access on this machine (the cached `hugebench probe`) under the measured cells."""
    if workload.name not in PROBE_UNDERLAY:
        return
    from hugebench.workloads.tlbprobe.cache import read_summary
    from hugebench.workloads.tlbprobe.figure import underlay_bars

    underlay_bars(fig.axes[0], rows, read_summary())


def _probe_levels(workload: Workload, rows: pd.DataFrame) -> list:
    """:func:`_probe_underlay`'s levels, for a chart the page draws itself."""
    if workload.name not in PROBE_UNDERLAY:
        return []
    from hugebench.workloads.tlbprobe.cache import read_summary
    from hugebench.workloads.tlbprobe.figure import probe_levels

    return probe_levels(rows, read_summary())


def axis_column(rows: pd.DataFrame, axis: str) -> str | None:
    """The rows' column for an axis the registry names: the axis itself, else its knob shorthand (thp)."""
    names = [axis] + [c for c in rows.columns if canonical_knob(c) == canonical_knob(axis)]
    return next((c for c in names if c in rows.columns), None)


def part_title(name: str, keys) -> str:
    """ "quick, set_kind=flat" for the part of an experiment a figure shows (its file name says "quick-set_kindflat")."""
    return ", ".join([name] + [f"{k}={format_axis(v)}" for k, v in keys])
