"""``hugebench history DIR...``: each cell's metric over results stores ordered by time, with steps."""

from __future__ import annotations

from pathlib import Path

import click

from hugebench.cli.output import (
    check_destinations,
    emit,
    export_options,
    exports_of,
    format_option,
    say,
)


@click.command()
@click.argument(
    "stores", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False, path_type=Path)
)
@format_option
@export_options
@click.option(
    "--primary",
    default=None,
    metavar="COLUMN",
    help="metric to follow (default: each sweep's primary)",
)
@click.option(
    "--html",
    "html",
    default=None,
    metavar="FILE",
    help="write one self-contained HTML page to FILE (with the plot)",
)
@click.option(
    "--plots",
    is_flag=True,
    help="write each experiment's plot (median over time per cell, steps marked) "
    "as PNG and SVG into the newest store's plots/ directory",
)
def history(stores, fmt, primary, html, plots, **exports):
    """Each cell's metric over STORES (results directories), oldest first; what changed; where it stepped."""
    from hugebench.report import load_results
    from hugebench.report.history import history_report, store_time

    if html is not None and not html.strip():
        raise click.BadParameter("an empty file name; name the page to write", param_hint="--html")
    files = check_destinations(exports_of(exports), None if html is None else Path(html))
    results = [load_results(s) for s in stores]
    built = history_report(results, primary=primary, figures=bool(html or plots))
    if plots:
        from hugebench.report.figures import save

        newest = max(results, key=store_time).path
        for section in built.sections:
            for name, fig in section.figures:
                say(f"plot: {save(fig, newest, name)[0]}")
    if html:
        from hugebench.report.html import write_html

        say(f"history: {write_html(built, Path(html))}")
    else:
        emit(built, fmt, files)
