"""What a results directory adds beyond the main table: its plots, and the void-allocator compensation.

Each workload names its plots in the registry: line plots (e.g. time per malloc/free pair vs threads, one
line per allocator) and grouped bars (e.g. hash lookup latency per allocator and THP mode). The void table
answers alloc-test's question: allocator time minus harness time per malloc/free pair, with the uncertainty
of the difference (a bootstrap of the two medians).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from . import workloads
from .spec import canonical_knob
from .report import AXIS_LABELS, _in_spec_order, _markdown, _rich, format_axis
from .stats import difference_ci, ok_rows
from .store import load, load_contexts

VOID = "void"


def _facet(axes: list[str], df: pd.DataFrame, used: set[str]) -> str | None:
    """A second axis to split panels by (THP mode first), if it has more than one value."""
    for axis in ["thp.enabled"] + axes:
        if axis in df.columns and axis not in used and df[axis].nunique() > 1:
            return axis
    return None


def write_plots(results_dir: str | os.PathLike) -> list[Path]:
    """Render every plot the results' workloads define into ``results_dir/plots``; return the files."""
    from .plots import bar_plot, line_plot, save

    df = ok_rows(load(results_dir))
    contexts = load_contexts(results_dir)
    written: list[Path] = []
    for experiment, rows in df.groupby("experiment"):
        context = next((c for c in contexts.values() if c.get("experiment") == experiment), {})
        axes = context.get("axes") or []
        order = context.get("spec", {}).get("axes", {})
        workload = workloads.get(rows["workload"].iloc[0])
        for x, y, hue, label in workload.plots:
            if x not in rows.columns or y not in rows.columns or rows[y].isna().all():
                continue
            col = _facet(axes, rows, {x, hue})
            fig = line_plot(rows, x, y, hue, col, xlabel=AXIS_LABELS.get(x, x), ylabel=label,
                            title=f"{experiment}: {label}", order=order)
            written += save(fig, results_dir, f"{experiment}-{y}-vs-{x}")
        for bars in workload.bars:
            groups = [_column(rows, axis) for axis in bars.groups]
            if None in groups:
                continue
            for keys, part in _split(rows, [a for a in axes if a not in groups]):
                suffix = "".join(f"-{k}{format_axis(v)}" for k, v in keys)
                fig = bar_plot(part, groups, bars.y, context.get("baseline"), ylabel=bars.label,
                               title=f"{experiment}{suffix}: {bars.title}", order=order)
                written += save(fig, results_dir, f"{experiment}-{bars.name}{suffix}")
    return written


def _column(rows: pd.DataFrame, axis: str) -> str | None:
    """The rows' column for an axis the registry names: the axis itself, else its knob shorthand (thp)."""
    names = [axis] + [c for c in rows.columns if canonical_knob(c) == canonical_knob(axis)]
    return next((c for c in names if c in rows.columns), None)


def _split(rows: pd.DataFrame, axes: list[str]):
    """(((axis, value), ...), rows) for each combination of the axes that vary; one part if none do."""
    varying = [a for a in axes if a in rows.columns and rows[a].nunique() > 1]
    if not varying:
        yield (), rows
        return
    for values, part in rows.groupby(varying):
        values = values if isinstance(values, tuple) else (values,)
        yield tuple(zip(varying, values)), part


def void_compensation(df: pd.DataFrame, axes: list[str], metric: str = "ns_per_pair",
                      level: float = 0.95) -> pd.DataFrame:
    """Per allocator cell: its median, the void cell's median (same other axes) and the difference with a CI."""
    rows = ok_rows(df)
    rows = rows[~rows.get("warmup", pd.Series(False, index=rows.index)).fillna(False).astype(bool)]
    others = [a for a in axes if a != "allocator" and a in rows.columns]
    void = rows[rows["allocator"] == VOID]
    records = []
    for key, cell in rows[rows["allocator"] != VOID].groupby(["allocator"] + others, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        match = void
        for axis, value in zip(others, key[1:]):
            match = match[match[axis] == value]
        a, b = cell[metric].to_numpy(float), match[metric].to_numpy(float)
        lo, hi = difference_ci(a, b, level=level)
        records.append({**dict(zip(["allocator"] + others, key)), "n": len(a), "n_void": len(b),
                        "allocator_median": np.median(a) if len(a) else np.nan,
                        "void_median": np.median(b) if len(b) else np.nan,
                        "difference": (np.median(a) - np.median(b)) if len(a) and len(b) else np.nan,
                        "ci_lo": lo, "ci_hi": hi})
    return pd.DataFrame.from_records(records)


def render_void(table: pd.DataFrame, fmt: str = "rich", unit: str = "ns/pair") -> str:
    """The compensation table as text (rich or markdown); CSV gives the numbers."""
    if table.empty:
        return ""
    if fmt == "csv":
        return table.to_csv(index=False)
    axes = [c for c in table.columns if c not in ("n", "n_void", "allocator_median", "void_median",
                                                  "difference", "ci_lo", "ci_hi")]
    headers = [AXIS_LABELS.get(a, a) for a in axes] + ["n", f"allocator {unit}", f"void {unit}",
                                                       f"allocator - void {unit} [95% CI]"]
    body = []
    for _, r in table.iterrows():
        ci = "" if np.isnan(r["ci_lo"]) else f" [{r['ci_lo']:.1f}, {r['ci_hi']:.1f}]"
        body.append([format_axis(r[a]) for a in axes] + [f"{r['n']}/{r['n_void']}", f"{r['allocator_median']:.1f}",
                                                         f"{r['void_median']:.1f}", f"{r['difference']:.1f}{ci}"])
    notes = ["Void allocator: the same loop (slot choice, sizes, memset and read-back) against a pre-touched "
             "buffer; the difference is the allocator's own cost per malloc/free pair."]
    title = "Allocator cost net of the harness"
    return _markdown(title, headers, body, notes) if fmt == "markdown" else _rich(title, headers, body, notes, None)


def void_report(results_dir: str | os.PathLike, fmt: str = "rich") -> str:
    """The compensation table of every alloc-test experiment in a results directory that has void runs."""
    df = load(results_dir)
    contexts = load_contexts(results_dir)
    out = []
    for experiment, rows in df.groupby("experiment"):
        if "allocator" not in rows.columns or not (rows["allocator"] == VOID).any():
            continue
        context = next((c for c in contexts.values() if c.get("experiment") == experiment), {})
        metric = context.get("primary_metric") or "ns_per_pair"
        axes = context.get("axes") or ["allocator"]
        table = void_compensation(rows, axes, metric)
        if not table.empty:
            keys = [a for a in axes if a in table.columns]
            table = _in_spec_order(table, keys, context.get("spec", {}).get("axes", {}))
        out.append(render_void(table, fmt))
    return "\n".join(t for t in out if t)
