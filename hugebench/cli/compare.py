"""``hugebench compare A B``: two results directories side by side (machines, allocator versions, kernels)."""

from __future__ import annotations

from pathlib import Path

import click

_directory = click.Path(exists=True, file_okay=False, path_type=Path)


@click.command()
@click.argument("a", type=_directory)
@click.argument("b", type=_directory)
@click.option("--format", "fmt", type=click.Choice(["rich", "markdown", "csv"]), default="rich")
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
def compare(a, b, fmt, primary, html):
    """Matching cells of results directories A and B: each side's median and CI, and B / A with its CI."""
    from ..report import load_results, render_sections
    from ..report.compare import compare_report

    built = compare_report(
        load_results(a), load_results(b), primary=primary, figures=html is not None
    )
    if html is not None:
        from ..report.html import write_html

        path = write_html(built, Path(html) if html else b / "compare.html")
        click.echo(
            f"compare: {path} ({len(built.sections)} sections, {len(built.warnings)} warnings)"
        )
    elif fmt == "csv":
        import pandas as pd

        frames = [
            s.data.assign(experiment=s.experiment) for s in built.sections if s.kind == "compare"
        ]
        click.echo(
            pd.concat(frames, ignore_index=True).to_csv(index=False) if frames else "", nl=False
        )
    else:
        click.echo(render_sections(built.sections, fmt))
