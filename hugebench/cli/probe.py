"""``hugebench probe``: what a random access costs here per page size, and whether huge pages extend TLB reach."""

from __future__ import annotations

from pathlib import Path

import click

from hugebench.cli.host import host_options


def _size(ctx, param, value):
    from hugebench.workloads import parse_count

    try:
        return parse_count(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


@click.command()
@click.option(
    "--max",
    "largest",
    default="1GiB",
    show_default=True,
    callback=_size,
    help="largest working set (capped at a quarter of available memory)",
)
@click.option(
    "-o",
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="results directory (default: ~/.cache/hugebench/probe/<machine>); re-running resumes it",
)
@click.option("-r", "--repetitions", type=click.IntRange(min=1), default=3, show_default=True)
@click.option("-q", "--quiet", is_flag=True, help="no progress bar")
@host_options
@click.option("--journal", envvar="HUGEBENCH_JOURNAL", default=None, help="restore journal file")
def probe(largest, out, repetitions, quiet, host, journal):
    """Pointer chase per page size (4k, THP, hugetlb 2M/1G) over growing working sets, and the TLB-reach test."""
    from hugebench.workloads.tlbprobe.sweep import ProbeOptions, run_probe
    from hugebench.workloads.tlbprobe.text import describe

    outcome = run_probe(
        ProbeOptions(
            largest=largest,
            out=out,
            repetitions=repetitions,
            quiet=quiet,
            host=host,
            journal=journal,
        )
    )
    click.echo(describe(outcome.summary))
    for backing, why in outcome.skipped.items():
        click.echo(f"not measured: {backing}: {why}")
    click.echo(f"results in {outcome.out}; plot: {outcome.figure[0] if outcome.figure else 'none'}")
