"""``hugebench history DIR...``: each cell's metric over results stores ordered by time, with steps."""

from __future__ import annotations

from pathlib import Path

import click


@click.command()
@click.argument("stores", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["rich", "markdown"]), default="rich")
@click.option("--primary", default=None, metavar="COLUMN", help="metric to follow (default: each sweep's primary)")
@click.option("--html", "html", default=None, metavar="FILE", help="write one self-contained HTML page to FILE")
def history(stores, fmt, primary, html):
    """Each cell's metric over STORES (results directories), oldest first; what changed; where it stepped."""
    from .report import load_results, render_sections
    from .report.history import history_report

    built = history_report([load_results(s) for s in stores], primary=primary)
    if html:
        from .report.html import write_html

        click.echo(f"history: {write_html(built, Path(html))}")
    else:
        click.echo(render_sections(built.sections, fmt))
