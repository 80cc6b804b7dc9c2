"""``hugebench stats RESULTS CELL``: one cell's runs and a text histogram of its primary metric."""

from __future__ import annotations

from pathlib import Path

import click

from hugebench.cli.output import say


@click.command(name="stats")
@click.argument("results", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("cell")
@click.option(
    "--metric", default=None, help="the column to show (default: the experiment's primary)"
)
def stats(results, cell, metric):
    """Show one cell's runs and their distribution. CELL: a cell id (or a prefix of one) or
    axis=value,axis=value naming one cell, e.g. allocator=glibc,thp=always."""
    from hugebench.report import load_results
    from hugebench.report.cell_runs import describe, find_cell

    name, rows, primary = find_cell(load_results(results), cell)
    say("\n".join(describe(name, rows, metric or primary)))
