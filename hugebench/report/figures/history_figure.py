"""The figure of ``hugebench history``: each cell's median over the stores, oldest first, with its CI, and the
steps the step rule found marked where they happened.

Takes the history section's data (one record per cell and store: ``cell``, ``store``, ``median``, ``ci_lo``,
``ci_hi``, ``mark``) and returns a ``matplotlib.figure.Figure`` built without pyplot (as every figure of the
report: no display, no global state).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

_STEP = {"up": ("^", "C3"), "down": ("v", "C2")}


def history_plot(
    records: pd.DataFrame, stores: list[str], labels: list[str], metric: str, title: str
) -> Figure:
    """One line per cell over the stores (x: the store's order, labelled by its name), CI error bars; a step
    up is a red triangle up, a step down a green triangle down, labelled with its ratio; an unstable change
    is an open grey circle."""
    fig = Figure(figsize=(max(5.5, 1.6 + 1.3 * len(stores)), 4.2), layout="constrained")
    ax = fig.subplots()
    xs = np.arange(len(stores))
    for i, (cell, rows) in enumerate(records.groupby("cell", sort=False)):
        rows = rows.set_index("store").reindex(stores)
        y = rows["median"].to_numpy(float)
        if not np.isfinite(y).any():  # no store has a median of it: nothing to draw or to name
            continue
        err = np.array([y - rows["ci_lo"].to_numpy(float), rows["ci_hi"].to_numpy(float) - y])
        colour = (
            f"C{i % 10}" if i % 10 not in (2, 3) else f"C{(i + 5) % 10}"
        )  # C2 and C3 mark the steps
        ax.errorbar(
            xs,
            y,
            yerr=np.where(np.isfinite(err), np.abs(err), 0),
            fmt="o-",
            color=colour,
            capsize=3,
            markersize=4,
            lw=1.2,
            label=cell,
        )
        for x, value, mark in zip(xs, y, rows["mark"].fillna("")):
            _mark(ax, x, value, str(mark))
    ax.set_xticks(
        xs,
        [f"{i + 1}: {name}" for i, name in enumerate(labels)],
        fontsize="small",
        rotation=20,
        ha="right",
    )
    ax.set_ylabel(f"{metric} (median, 95% CI)")
    ax.set_title(title, fontsize="medium")
    ax.grid(True, axis="y", alpha=0.3)
    handles, names = ax.get_legend_handles_labels()
    marks = _mark_keys(records["mark"].fillna("").astype(str))
    ax.legend(  # beside the axes, never over the data; the step marks explained under the cells
        handles + [h for h, _ in marks],
        names + [n for _, n in marks],
        fontsize="small",
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        borderaxespad=0.0,
    )
    return fig


def _mark_keys(marks: pd.Series) -> list[tuple]:
    """(handle, text) for each kind of mark the plot shows: step up, step down, unstable."""
    from matplotlib.lines import Line2D

    keys = []
    for kind, text in (("step up", "step up (ratio)"), ("step down", "step down (ratio)")):
        if marks.str.startswith(kind).any():
            shape, colour = _STEP[kind.split()[1]]
            keys.append((Line2D([], [], ls="", marker=shape, color=colour, ms=9), text))
    if marks.str.endswith("unstable").any():
        keys.append(
            (Line2D([], [], ls="", marker="o", mfc="none", color="0.45", ms=9), "unstable change")
        )
    return keys


def _mark(ax, x: float | np.integer, value: float, mark: str) -> None:
    if mark.startswith("step"):
        shape, colour = _STEP["up" if mark.startswith("step up") else "down"]
        ax.plot([x], [value], shape, color=colour, markersize=12, zorder=5)
        ax.annotate(
            mark.removeprefix("step ").split(" ", 1)[-1],
            (x, value),
            textcoords="offset points",
            xytext=(8, 6),
            fontsize="small",
            color=colour,
        )
    elif mark.endswith("unstable"):
        ax.plot([x], [value], "o", mfc="none", color="0.45", markersize=11, zorder=5)
