"""``hugebench compare A B``: two results directories side by side (machines, allocator versions, kernels)."""

from __future__ import annotations

from pathlib import Path

import click

from hugebench.cli.output import (
    check_destinations,
    count,
    emit,
    export_options,
    exports_of,
    format_option,
    say,
)

_directory = click.Path(exists=True, file_okay=False, path_type=Path)


@click.command()
@click.argument("a", type=_directory)
@click.argument("b", type=_directory)
@format_option
@export_options
@click.option(
    "--primary",
    default=None,
    metavar="COLUMN",
    help="metric to compare (default: each sweep's primary)",
)
@click.option(
    "--html",
    "html",
    is_flag=False,
    flag_value="",
    default=None,
    metavar="[FILE]",
    help="write one self-contained HTML page to FILE (default B/compare.html) instead of printing",
)
def compare(a, b, fmt, primary, html, **exports):
    """Matching cells of results directories A and B: each side's median and CI, and B / A with its CI."""
    from hugebench.report import load_results
    from hugebench.report.compare import compare_report

    page = None if html is None else Path(html) if html else b / "compare.html"
    files = check_destinations(exports_of(exports), page)
    built = compare_report(
        load_results(a), load_results(b), primary=primary, figures=html is not None
    )
    if html is not None:
        from hugebench.report.html import write_html

        path = write_html(built, page)
        say(
            f"compare: {path} ({count(len(built.sections), 'section')}, {count(len(built.warnings), 'warning')})"
        )
    else:
        emit(built, fmt, files)
