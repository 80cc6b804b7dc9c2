"""Reports: tables, their text and figures, rebuilt from a results store alone.

What belongs here: turning stored rows and sweep contexts into numbers per cell (``tables``), a report as a
list of sections (``sections``: title, table, notes, warnings, summary, figures; ``provenance``: machine and
sweep context), rendered as text (``rendering``: rich, markdown, CSV) or one self-contained HTML page
(``html``), matplotlib figures (``figures``), and two stores side by side (``compare``), all read through ONE loader
(``results``): :func:`load_results` reads a results directory once, and :func:`sweep_context` alone
decides which sweep context (axes, baseline, metrics, axis order) a group of rows is reported with, so a
table and a plot of the same rows always agree. What a workload plots is data in its registry entry
(``Workload.plots``, ``Workload.bars``, ``Workload.tables`` in ``hugebench/workloads/``): no workload is special-cased here.

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

from hugebench.report.exporters import FILE_FORMATS, export
from hugebench.report.rendering import (
    AXIS_LABELS,
    DASH,
    FORMATS,
    format_axis,
    format_bytes,
    format_si,
    render,
    render_section,
    render_sections,
    render_void,
    with_verdicts,
)
from hugebench.report.results import Experiment, Results, as_results, load_results, sweep_context
from hugebench.report.sections import (
    EXPERIMENT_SECTIONS,
    Flag,
    Options,
    Report,
    Section,
    adaptive_lines,
    build_report,
)
from hugebench.report.tables import (
    KNOWN_METRICS,
    VOID,
    MetricSpec,
    as_metric,
    build_table,
    default_metrics,
    in_spec_order,
    overhead_lines,
    void_compensation,
)
from hugebench.report.terminal import terminal, wrap_lines
from hugebench.report.verdicts import VERDICTS, claim_verdicts, render_verdicts, verdict_table


def report(
    results_dir: Results | str | os.PathLike,
    fmt: str = "rich",
    metrics: Sequence | None = None,
    group_by: Sequence[str] | None = None,
    baseline: Mapping | None = None,
    primary: str | None = None,
    level: float = 0.95,
    width: int | None = None,
    color: bool = False,
) -> str:
    """Rebuild the report of a results directory from the store alone: per experiment its table, the
    workload's extra tables and alloc-test's void compensation.

    ``group_by``, ``baseline``, ``metrics`` and ``primary`` default to the sweep context's ``axes``,
    ``baseline``, ``metrics`` and ``primary_metric``; without ``metrics`` in the context, to the columns the
    workload registry names, else the primary metric and the :data:`KNOWN_METRICS` present in the rows.
    An argument given here wins. ``fmt`` "csv" gives the main tables' numbers, one row per cell. ``width`` and
    ``color`` fit a terminal (:func:`.terminal.terminal`); without them a rich table takes its natural width.
    """
    built = build_report(
        as_results(results_dir), Options(metrics, group_by, baseline, primary, level)
    )
    return export(built, fmt, width, color)


__all__ = [
    "AXIS_LABELS",
    "DASH",
    "EXPERIMENT_SECTIONS",
    "Experiment",
    "FILE_FORMATS",
    "FORMATS",
    "export",
    "with_verdicts",
    "Flag",
    "KNOWN_METRICS",
    "MetricSpec",
    "Options",
    "Report",
    "Results",
    "Section",
    "VERDICTS",
    "VOID",
    "adaptive_lines",
    "as_metric",
    "as_results",
    "build_report",
    "build_table",
    "claim_verdicts",
    "default_metrics",
    "format_axis",
    "format_bytes",
    "format_si",
    "in_spec_order",
    "load_results",
    "overhead_lines",
    "render",
    "render_section",
    "render_sections",
    "render_verdicts",
    "render_void",
    "report",
    "sweep_context",
    "terminal",
    "wrap_lines",
    "verdict_table",
    "void_compensation",
]
