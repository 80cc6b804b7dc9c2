"""Figures: medians with confidence-interval error bars, and the plots a results directory gets.

Each plot function takes a DataFrame (as ``hugebench.load`` returns it) and returns a ``matplotlib.figure.Figure``
built without pyplot, so nothing needs a display, no global figure state leaks between calls, and a
notebook user's backend is left alone. Rows that are warm-ups or failed runs never enter a statistic; a
cell with no successful run is left out of a line (a gap) and marked "failed" on a bar chart.
:func:`write_plots` draws what each workload's registry entry declares (``Workload.plots`` lines,
``Workload.bars`` grouped bars) with the same sweep context as the tables.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from hugebench.errors import HugebenchError
from hugebench.experiment import canonical_knob
from hugebench.knob_catalogue import THP_ENABLED
from hugebench.report.figures.bar_plots import PROBE_UNDERLAY  # noqa: F401
from hugebench.report.figures.bar_plots import axis_column as _column  # noqa: F401 (read by tests as figures._column)
from hugebench.report.figures.bar_plots import bar_plots as _bar_plots
from hugebench.report.figures.bar_plots import part_title as _part_title
from hugebench.report.figures.barchart import GREY as _GREY
from hugebench.report.figures.barchart import MAX_BARS, MAX_FIGURES, MAX_LEVELS
from hugebench.report.figures.barchart import axis_levels as _levels
from hugebench.report.figures.barchart import yerr_of as _yerr
from hugebench.report.rendering import AXIS_LABELS, format_axis, is_missing, verdict
from hugebench.report.results import Experiment, Results, as_results
from hugebench.report.tables import MetricSpec
from hugebench.safefs import SafeDir
from hugebench.stats import ok_rows, require_columns, summarize
from hugebench.store import PLOTS_DIR
from hugebench.workloads import Workload

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# matplotlib is imported where a figure is drawn: the HTML page's bar charts need none of it (issue 42)
__all__ = [
    "MAX_BARS",
    "MAX_FIGURES",
    "MAX_LEVELS",
    "line_plot",
    "ratio_plot",
]

LAZY = (
    "bar_plot",
    "bar_figure",
    "fit_lines",
    "fix_layout",
)  # bars': imported (with matplotlib) when asked


def __getattr__(name: str):
    if name in LAZY:
        from hugebench.report.figures import bars

        return getattr(bars, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def line_plot(
    df: pd.DataFrame,
    x: str,
    y: str,
    hue: str | None = None,
    col: str | None = None,
    *,
    xlabel: str | None = None,
    ylabel: str | None = None,
    title: str | None = None,
    logx: bool = False,
    logy: bool = False,
    level: float = 0.95,
    order: Mapping[str, Sequence] | None = None,
) -> Figure:
    """Median of ``y`` against ``x`` with CI error bars, one line per ``hue`` value, one panel per ``col``.

    E.g. time per malloc/free pair vs threads per allocator, or steady-phase time vs threads per backing.
    ``order`` (axis -> values, e.g. the YAML's) orders panels and lines; otherwise they are sorted.
    """
    from matplotlib.figure import Figure

    keys = list(dict.fromkeys([k for k in (col, hue) if k] + [x]))  # hue may repeat col
    require_columns(df, keys)
    summary = summarize(df, keys, y, level=level)
    panels = _levels(summary, col, order) if col else [None]
    fig = Figure(figsize=(1.0 + 4.2 * len(panels), 3.8), layout="constrained")
    axes = fig.subplots(1, len(panels), sharey=True, squeeze=False)[0]
    for ax, panel in zip(axes, panels):
        rows = summary if col is None else summary[summary[col] == panel]
        _draw_lines(ax, rows, x, hue, order)
        _decorate(
            ax,
            xlabel or x,
            ylabel or y,
            f"{col} = {format_axis(panel)}" if col else None,
            logx,
            logy,
        )
        _tick_at_values(ax, summary[x])
    if hue:
        axes[0].legend(title=hue, fontsize="small")
    for ax in axes[1:]:
        ax.set_ylabel("")
    if title:
        fig.suptitle(title)
    return fig


def ratio_plot(
    data: pd.DataFrame, labels: Sequence[str], *, title: str | None = None, ylabel: str = ""
) -> Figure:
    """One row per cell: the ratio (``ratio``, ``ratio.ci_lo``, ``ratio.ci_hi``) as a point with its CI, a line at 1.

    Used by ``hugebench compare`` for B / A; a ratio whose CI contains 1 is drawn grey.
    """
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7.0, 1.4 + 0.26 * len(labels)), layout="constrained")
    ax = fig.subplots()
    ys = np.arange(len(labels))[::-1]
    xerr = _yerr(data, "ratio", "ratio.ci_lo", "ratio.ci_hi")
    colours = ["C0" if verdict(resolved) == "yes" else _GREY for resolved in data["resolved"]]
    for y, x, lo, hi, colour in zip(ys, data["ratio"].to_numpy(float), xerr[0], xerr[1], colours):
        if not np.isnan(x):
            ax.errorbar([x], [y], xerr=[[lo], [hi]], fmt="o", color=colour, capsize=3, markersize=4)
    ax.axvline(1.0, color="0.3", lw=0.8, ls="--")
    ax.set_yticks(ys, labels, fontsize="small")
    ax.set_ylim(-0.7, len(labels) - 0.3)
    ax.set_xlabel("B / A (grey: the CI contains 1 or too few runs)")
    ax.set_ylabel(ylabel)
    ax.grid(True, axis="x", alpha=0.3)
    if title:
        ax.set_title(title, fontsize="medium")
    return fig


def save(fig: Figure, results_dir: str | os.PathLike, name: str) -> list[Path]:
    """Write ``fig`` as PNG and SVG under ``<results_dir>/plots/``; return the two paths."""
    directory = Path(results_dir) / PLOTS_DIR
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "figure"
    paths = [directory / f"{stem}.png", directory / f"{stem}.svg"]
    try:  # matplotlib is handed a file object: a planted plots/<name>.png link is replaced, not followed
        with (
            SafeDir.open(results_dir, create=True) as top,
            top.subdir(PLOTS_DIR, create=True) as plots,
        ):
            for path, form, dpi in ((paths[0], "png", 150), (paths[1], "svg", None)):
                options: dict[str, Any] = {"dpi": dpi} if dpi else {}
                with plots.replacing(path.name) as handle:
                    fig.savefig(handle, format=form, **options)
    except OSError as exc:
        raise HugebenchError(
            f"cannot write the plots into {directory}: {exc.strerror or exc}"
        ) from None
    return paths


def write_plots(
    results_dir: Results | str | os.PathLike, why: list[str] | None = None
) -> list[Path]:
    """Render every plot the results' workloads declare into ``<results_dir>/plots``; return the files.
    ``why``: a list that gets one line per experiment that has no figure, saying why."""
    results = as_results(results_dir)
    written: list[Path] = []
    for experiment in sorted(results.experiments(), key=lambda e: e.name):
        figures = experiment_figures(experiment)
        for name, fig in figures:
            written += save(fig, results.path, name)
        if not figures and why is not None:
            why.append(f"{experiment.name}: no plot, {no_figure_reason(experiment)}")
    return written


def experiment_figures(experiment: Experiment, charts: bool = False) -> list[tuple[str, Figure]]:
    """(file stem, figure) of every plot the experiment's workload declares (lines, grouped bars, per-run
    marks); an experiment none of whose declared lines or bars fits its axes (a command, fleet, a sweep over
    allocators only) gets the primary metric by allocator x THP mode with CIs (:func:`_primary_bars`).
    ``charts``: the declared bar plots as :class:`~.barchart.BarChart` values, not drawn (the HTML page
    writes them as SVG itself, :mod:`.svgbars`), but for those drawn over the probe's curves."""
    rows, workload = ok_rows(experiment.rows), experiment.workload
    if rows.empty or workload is None:
        return []
    summary = _line_plots(experiment, workload, rows) + _bar_plots(
        experiment, workload, rows, charts
    )
    return (summary or _primary_bars(experiment, workload, rows)) + _xy_plots(
        experiment, workload, rows
    )


def no_figure_reason(experiment: Experiment) -> str:
    """Why :func:`experiment_figures` drew nothing for ``experiment``."""
    if ok_rows(experiment.rows).empty:
        return "no run succeeded"
    if experiment.workload is None:
        return "its workload is unknown to this version of hugebench"
    metric = experiment.primary_metric
    if not metric or metric not in experiment.rows.columns:
        return f"the primary metric {metric or '(none named)'} was not recorded"
    return f"no successful run has a number for {metric}"


def _primary_bars(
    experiment: Experiment, workload: Workload, rows: pd.DataFrame
) -> list[tuple[str, Figure]]:
    """The primary metric's median per cell with its CI: one group per value of the axes other than THP, one
    bar per THP mode (or per allocator when THP is not swept)."""
    metric = experiment.primary_metric
    if (
        not metric
        or metric not in rows.columns
        or pd.to_numeric(rows[metric], errors="coerce").isna().all()
    ):
        return []
    axes = [a for a in experiment.axes if a in rows.columns and rows[a].nunique() > 1] or [
        a for a in ("allocator",) if a in rows.columns
    ]
    if not axes:
        return []
    thp = [a for a in axes if canonical_knob(a) == THP_ENABLED]
    groups = [a for a in axes if a not in thp][:2] + thp  # the colour axis last
    label = next(
        (m.title for m in _metric_specs(experiment, workload) if m.column == metric), metric
    )
    from hugebench.report.figures.bars import bar_plot

    fig = bar_plot(
        rows,
        groups,
        metric,
        experiment.baseline,
        ylabel=label,
        title=f"{experiment.name}: {label}",
        order=experiment.axis_order,
    )
    return [(f"{experiment.name}-{metric}-by-{'-'.join(groups)}", fig)]


def _metric_specs(experiment: Experiment, workload: Workload) -> list[MetricSpec]:
    from hugebench.report.tables import as_metric

    declared = experiment.context.get("metrics") or [
        dict(zip(("column", "label", "fmt"), m)) for m in workload.metrics
    ]
    return [as_metric(m) for m in declared]


def xy_plot(
    df: pd.DataFrame, plot, *, title: str | None = None, order: Mapping | None = None
) -> Figure:
    """Each run as a line (``plot.kind`` "series": list columns) or a point ("scatter"), coloured by ``plot.hue``."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 4.0), layout="constrained")
    ax = fig.subplots()
    colors = {v: f"C{i}" for i, v in enumerate(_levels(df, plot.hue, order))}
    label: str | None
    for value, color in colors.items():
        runs, label = df[df[plot.hue] == value], format_axis(value)
        for _, run in runs.iterrows():
            xs, ys = run[plot.x], run[plot.y]
            if (
                plot.kind == "series"
                and isinstance(xs, list)
                and isinstance(ys, list)
                and len(xs) == len(ys)
            ):
                ax.plot(
                    xs,
                    [np.nan if v is None else v for v in ys],
                    color=color,
                    alpha=0.8,
                    label=label,
                )
            elif plot.kind == "scatter" and pd.notna(xs) and pd.notna(ys):
                ax.scatter([xs], [ys], color=color, s=18, label=label)
            label = None  # one legend entry per hue value
    _decorate(ax, plot.xlabel, plot.ylabel, None, False, False)
    ax.legend(title=plot.hue, fontsize="small")
    if title:
        fig.suptitle(title)
    return fig


def _xy_plots(
    experiment: Experiment, workload: Workload, rows: pd.DataFrame
) -> list[tuple[str, Figure]]:
    drawn = []
    for plot in workload.xy_plots:
        if not {plot.x, plot.y, plot.hue} <= set(rows.columns) or not any(
            _drawable(plot, r) for _, r in rows.iterrows()
        ):
            continue  # e.g. a command sampled too briefly for a series: no empty figure
        for keys, part in _split(rows, [a for a in experiment.axes if a != plot.hue]):
            suffix = "".join(f"-{k}{format_axis(v)}" for k, v in keys)
            fig = xy_plot(
                part,
                plot,
                title=f"{_part_title(experiment.name, keys)}: {plot.title}",
                order=experiment.axis_order,
            )
            drawn.append((f"{experiment.name}-{plot.name}{suffix}", fig))
    return drawn


# -- helpers ---------------------------------------------------------------------------------------


def _drawable(plot, run) -> bool:
    xs, ys = run[plot.x], run[plot.y]
    if plot.kind == "series":
        return isinstance(xs, list) and isinstance(ys, list) and len(xs) == len(ys) > 0
    return not is_missing(xs) and not is_missing(ys)


def _draw_lines(
    ax, rows: pd.DataFrame, x: str, hue: str | None, order: Mapping | None = None
) -> None:
    for value in _levels(rows, hue, order) if hue else [None]:
        line = rows if hue is None else rows[rows[hue] == value]
        line = line[line["median"].notna()].sort_values(x)
        if line.empty:
            continue
        ax.errorbar(
            line[x].to_numpy(),
            line["median"].to_numpy(),
            yerr=_yerr(line, "median", "ci_lo", "ci_hi"),
            marker="o",
            markersize=4,
            capsize=3,
            label=None if value is None else format_axis(value),
        )


def _tick_at_values(ax, values: pd.Series) -> None:
    """Numeric x such as thread counts read best with a tick at each measured value, in plain numbers."""
    from matplotlib.ticker import NullLocator

    levels = values.dropna().unique()
    if not pd.api.types.is_numeric_dtype(values) or not 0 < len(levels) <= 12:
        return
    ax.set_xticks(sorted(levels), [format_axis(v) for v in sorted(levels)])
    ax.xaxis.set_minor_locator(NullLocator())


def _decorate(ax, xlabel, ylabel, title, logx, logy) -> None:
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title, fontsize="medium")
    if logx:
        ax.set_xscale("log", base=2)
    if logy:
        ax.set_yscale("log")
    ax.grid(True, axis="y", alpha=0.3)


def _line_plots(
    experiment: Experiment, workload: Workload, rows: pd.DataFrame
) -> list[tuple[str, Figure]]:
    drawn = []
    for x, y, hue, label in workload.plots:
        if x not in rows.columns or y not in rows.columns or rows[y].isna().all():
            continue
        col = _facet(experiment.axes, rows, {x, hue})
        fig = line_plot(
            rows,
            x,
            y,
            hue,
            col,
            xlabel=AXIS_LABELS.get(x, x),
            ylabel=label,
            title=f"{experiment.name}: {label}",
            order=experiment.axis_order,
        )
        drawn.append((f"{experiment.name}-{y}-vs-{x}", fig))
    return drawn


def _facet(axes: list[str], df: pd.DataFrame, used: set[str]) -> str | None:
    """A second axis to split panels by (THP mode first), if it has more than one value."""
    for axis in [THP_ENABLED] + axes:
        if axis in df.columns and axis not in used and df[axis].nunique() > 1:
            return axis
    return None


def _split(rows: pd.DataFrame, axes: list[str]):
    """(((axis, value), ...), rows) for each combination of the axes that vary; one part if none do."""
    varying = [a for a in axes if a in rows.columns and rows[a].nunique() > 1]
    if not varying:
        yield (), rows
        return
    for values, part in rows.groupby(varying):
        values = values if isinstance(values, tuple) else (values,)
        yield tuple(zip(varying, values)), part
