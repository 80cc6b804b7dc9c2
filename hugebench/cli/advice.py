"""``hugebench advice [NAME]``: list the packs of vendor advice, or run one (``hugebench.advice.session``)
and print its report, "Vendor advice, judged here" among its sections."""

from __future__ import annotations

from pathlib import Path

import click

from hugebench.cli.host import host_options
from hugebench.cli.output import (
    check_destinations,
    emit,
    export_options,
    exports_of,
    format_option,
    say,
)
from hugebench.cli.try_ import parse_budget


@click.command()
@click.argument("name", required=False)
@click.option(
    "--budget",
    default="10m",
    show_default=True,
    help="wall time for the pack's runs (90s, 10m, 1h)",
)
@click.option(
    "-o",
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="results directory (default: results/advice-<name>); re-running adds blocks to it",
)
@click.option("-q", "--quiet", is_flag=True, help="no progress bar (CI)")
@format_option
@export_options
@host_options
@click.option("--journal", envvar="HUGEBENCH_JOURNAL", default=None, help="restore journal file")
def advice(name, budget, out, quiet, fmt, host, journal, **exports):
    """Vendor advice on huge pages, judged on this machine: without NAME, list the packs; with NAME
    (e.g. redis), run that pack within --budget and print its verdicts."""
    from hugebench.advice.session import listing, run_pack

    if name is None:
        _print_listing(listing())
        return
    files = check_destinations(exports_of(exports))  # refused before any run, not after the budget
    budget_s = parse_budget(budget)
    pack, result = run_pack(name, budget_s, out, quiet, host=host, journal=journal)
    from hugebench.report import Options, build_report, load_results

    emit(build_report(load_results(result.out), Options()), fmt, files)
    statuses = ", ".join(f"{n} {s}" for s, n in sorted(result.statuses.items()))
    say(
        f"advice {pack.name}: {result.rows_written} runs this time ({statuses or 'none'}) in "
        f"{result.wall_s:.0f}s of a {budget_s:.0f}s budget; results in {result.out} "
        f"(`hugebench report {result.out}` shows them again)"
    )
    if result.failed:
        _print_failures(result)


def _print_failures(result) -> None:
    """Why this run's failed runs failed, grouped by reason (the commonest first)."""
    from hugebench.report.tables import failure_counts
    from hugebench.store import load

    rows = load(result.out, hosts=False)
    if "sweep_id" in rows.columns:
        for reason, n in failure_counts(rows[rows["sweep_id"].astype(str) == result.sweep_id]):
            say(f"  failed: {n} run(s): {reason}")


def _print_listing(packs) -> None:
    for pack in packs:
        here = (
            f"about {pack.verdict_s / 60:.0f} min for a 95% verdict here"
            if not pack.missing
            else f"not runnable here: needs {', '.join(pack.missing)}"
        )
        click.echo(f"{pack.name}: {pack.title}")
        click.echo(f"    presets: {', '.join(pack.presets)}; {pack.claims} claim(s); {here}")
    click.echo("Run one: hugebench advice NAME [--budget 10m]")
