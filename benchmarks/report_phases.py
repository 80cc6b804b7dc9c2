"""Where `report --html` spends its CPU time: each phase timed in one process, without a profiler.

    PYTHONPATH=TREE python benchmarks/report_phases.py STORE [STORE ...]

Per store (one experiment, e.g. ``report_cost.py``'s replicated quick stores): importing hugebench's report,
loading, the sections without figures, the page without figures, importing what the figures need, and the
figures as the page draws them (``experiment_figures(charts=True)``: bar charts as values, then written as
SVG by ``svgbars``; other plots by matplotlib). CPU seconds of this process (``time.process_time``); the
first store's line also pays the imports.
"""

from __future__ import annotations

import sys
import time

clock = time.process_time


def phases(store: str) -> str:
    started = clock()
    from hugebench.report.model import Options
    from hugebench.report.results import load_results
    from hugebench.report.sections import build_report

    imports, started = clock() - started, clock()
    results = load_results(store)
    load, started = clock() - started, clock()
    report = build_report(results, Options(figures=False))
    tables, started = clock() - started, clock()
    from hugebench.report.html import render_html, svg_markup

    render_html(report)
    page, started = clock() - started, clock()
    import matplotlib.ticker  # noqa: F401 (the y ticks' locator and formatter)

    from hugebench.report import figures
    from hugebench.report.figures import svgbars  # noqa: F401

    imported, started = clock() - started, clock()
    drawn = []
    for experiment in results.experiments():
        drawn += figures.experiment_figures(experiment, charts=True)
    built, started = clock() - started, clock()
    size = sum(len(svg_markup(fig, name)) for name, fig in drawn)
    svg = clock() - started
    return (
        f"{store}: imports {imports:.2f}, load {load:.2f}, sections without figures {tables:.2f}, "
        f"page without figures {page:.2f}, figure imports {imported:.2f}, {len(drawn)} figures: "
        f"built {built:.2f}, SVG {svg:.2f} ({size / 1e6:.2f} MB); process total {clock():.2f} s"
    )


if __name__ == "__main__":
    for path in sys.argv[1:]:
        print(phases(path), flush=True)
