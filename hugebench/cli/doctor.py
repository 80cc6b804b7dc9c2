"""``hugebench doctor``: one screen saying what this machine can and cannot measure."""

from __future__ import annotations

import click


@click.command()
@click.option("--strict", is_flag=True, help="Exit with status 1 when any check fails.")
@click.option(
    "--quick",
    is_flag=True,
    help="Skip the one measurement that takes seconds (free page reporting's cost, ~10 s).",
)
def doctor(strict: bool, quick: bool) -> None:
    """Check perf, hardware counters, THP/hugetlb knobs, allocators and the C++ extension."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from hugebench.doctor import doctor_report

    checks = doctor_report(quick=quick)
    table = Table(title="hugebench doctor", show_lines=False)
    for column in ("check", "", "detail", "fix"):
        table.add_column(column, overflow="fold")
    for check in checks:
        mark = "[green]ok[/green]" if check.ok else "[red]no[/red]"
        table.add_row(
            escape(check.name), mark, escape(check.detail), escape(check.fix)
        )  # '[madvise]' is data
    Console().print(table)
    if strict and not all(check.ok for check in checks):
        raise SystemExit(1)
