"""Reports: tables, their text and figures, rebuilt from a results store alone.

What belongs here: turning stored rows and sweep contexts into numbers per cell (``tables``), text
(``rendering``: rich, markdown, CSV) and matplotlib figures (``figures``), all read through ONE loader
(``results``): :func:`load_results` reads a results directory once, and :func:`sweep_context` alone
decides which sweep context (axes, baseline, metrics, axis order) a group of rows is reported with, so a
table and a plot of the same rows always agree. What a workload plots is data in its registry entry
(``Workload.plots``, ``Workload.bars`` in ``hugebench/workloads.py``): no workload is special-cased here.

What does not belong here: writing to the store, running or planning sweeps, reading the machine
(``/proc``, ``/sys``), statistics that are not about presenting them (``hugebench.stats``), and click
options (``hugebench.cli`` calls the functions below). ``figures`` imports matplotlib, so it is not
imported by this package's ``__init__``: ``from hugebench.report.figures import write_plots``.

Every public function that reads a results directory also accepts a loaded :class:`Results`, so a caller
that needs several outputs (``hugebench report --plots``) loads the store once.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

import pandas as pd

from ..adaptive import describe as describe_adaptive, values_by_cell
from ..errors import HugebenchError
from .rendering import AXIS_LABELS, DASH, FORMATS, format_axis, format_bytes, format_si, render, render_void
from .results import Experiment, Results, as_results, load_results, sweep_context
from .verdicts import VERDICTS, claim_verdicts, render_verdicts, verdict_table
from .tables import (KNOWN_METRICS, VOID, MetricSpec, as_metric, build_table, default_metrics, in_spec_order,
                     overhead_lines, ratio_table, render_ratio_table, void_compensation)


def report(results_dir: Results | str | os.PathLike, fmt: str = "rich", metrics: Sequence | None = None,
           group_by: Sequence[str] | None = None, baseline: Mapping | None = None, primary: str | None = None,
           level: float = 0.95) -> str:
    """Rebuild the report of a results directory from the store alone, one table per experiment.

    ``group_by``, ``baseline``, ``metrics`` and ``primary`` default to the sweep context's ``axes``,
    ``baseline``, ``metrics`` and ``primary_metric``; without ``metrics`` in the context, to the columns the
    workload registry names, else the primary metric and the :data:`KNOWN_METRICS` present in the rows.
    An argument given here wins.
    """
    results = as_results(results_dir)
    if results.rows.empty:
        raise HugebenchError(f"{results.path}: no runs recorded yet")
    tables, extras = [], []
    for experiment in results.experiments():
        axes = group_by or experiment.axes
        if not axes:
            raise HugebenchError(f"{results.path}: no sweep context names the axes of {experiment.name!r}; "
                                 f"pass group_by")
        main_metric = primary or experiment.primary_metric
        chosen = (metrics or experiment.context.get("metrics") or _workload_metrics(experiment)
                  or default_metrics(experiment.rows, main_metric))
        table = build_table(experiment.rows, axes, chosen, baseline if baseline is not None else experiment.baseline,
                            main_metric, level)
        table = in_spec_order(table, axes, experiment.axis_order)
        table.attrs["title"] = f"{experiment.name} ({_workloads(experiment.rows)})"
        table.attrs["better"] = experiment.context.get("primary_better", "lower") if not primary else None
        table.attrs["overhead"] = overhead_lines(experiment.rows, results.contexts)
        tables.append((experiment.name, table))
        extras += [render_ratio_table(ratio_table(experiment.rows, axes, experiment.baseline, spec, level), axes, spec)
                   for spec in (experiment.workload.ratio_tables if experiment.workload else ())]
        table.attrs["overhead"] += adaptive_lines(experiment)
        verdicts = verdict_table(experiment, level)
        if verdicts is not None and fmt != "csv":
            extras.append(render_verdicts(verdicts, fmt))
    if fmt == "csv":
        return pd.concat([t.assign(experiment=e) for e, t in tables], ignore_index=True).to_csv(index=False)
    return "\n\n".join([render(table, fmt) for _, table in tables] + extras)


WHOLE_RUN = "ms_per_mop"  # alloc-test's own figure: the whole run in ms per million operations


def void_report(results_dir: Results | str | os.PathLike, fmt: str = "rich") -> str:
    """The compensation table of every alloc-test experiment in a results directory that has void runs."""
    out = []
    for experiment in sorted(as_results(results_dir).experiments(), key=lambda e: e.name):
        rows = experiment.rows
        if "allocator" not in rows.columns or not (rows["allocator"] == VOID).any():
            continue
        axes = experiment.axes or ["allocator"]
        # The main-loop cost (the primary metric) and, where recorded, the original alloc-test's unit.
        for metric, unit in ((experiment.primary_metric or "ns_per_pair", "ns/pair"), (WHOLE_RUN, "ms/Mop")):
            if metric not in rows.columns or (metric == WHOLE_RUN and not rows[metric].notna().any()):
                continue
            table = void_compensation(rows, axes, metric)
            if not table.empty:
                table = in_spec_order(table, [a for a in axes if a in table.columns], experiment.axis_order)
            out.append(render_void(table, fmt, unit))
    return "\n".join(t for t in out if t)


def adaptive_lines(experiment: Experiment) -> list[str]:
    """With ``repetitions: auto``: how many runs each cell took and how many reached the precision target."""
    rule = (experiment.context.get("spec") or {}).get("adaptive")
    if not rule or "cell_id" not in experiment.rows.columns:
        return []
    records = experiment.rows.to_dict("records")
    cells = list(dict.fromkeys(experiment.rows["cell_id"].dropna()))
    line = describe_adaptive(values_by_cell(records, cells, rule["metric"], rule["max"]), rule)
    return [line] if line else []


def _workload_metrics(experiment: Experiment) -> list[dict]:
    """The report columns this version of hugebench defines for the rows' workload (none if unknown)."""
    workload = experiment.workload
    return [dict(zip(("column", "label", "fmt"), m)) for m in workload.metrics] if workload else []


def _workloads(rows: pd.DataFrame) -> str:
    return ", ".join(map(str, rows["workload"].dropna().unique())) if "workload" in rows.columns else "?"


__all__ = ["AXIS_LABELS", "DASH", "FORMATS", "KNOWN_METRICS", "VERDICTS", "VOID", "Experiment", "MetricSpec",
           "Results", "adaptive_lines", "as_metric", "as_results", "build_table", "claim_verdicts", "default_metrics",
           "format_axis", "format_bytes", "format_si", "in_spec_order", "load_results", "overhead_lines", "render",
           "render_verdicts", "render_void", "report", "sweep_context", "verdict_table", "void_compensation",
           "void_report"]
