"""``hugebench where -- PROGRAM ARGS...``: which regions of a program's memory pay for huge pages.

Runs the program as it is (its whole process tree, contained like a sweep's run), samples every region worth
a look every interval (``machine.regions``) and prints the per-region table, the hot set against this
machine's TLB reach (from ``hugebench probe``'s cache) and the ``--select`` rule that gives huge pages to the
regions that pay alone (``hugebench exec --select``).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import click

from hugebench.errors import SpecError, ToolMissingError


def machine_reach():
    """This machine's second-level TLB entries: from the probe's reach curve on 4 KiB pages (the largest
    working set before it got 25% slower) when the probe ran here, else an assumed 1536, said so."""
    from hugebench.machine.regions import PAGE, Reach
    from hugebench.machine.where_view import ASSUMED_ENTRIES
    from hugebench.workloads.tlbprobe.cache import read_summary
    from hugebench.workloads.tlbprobe.curves import REACH_RISE

    summary = read_summary()
    assumed = "assumed: no probe result here (`hugebench probe` measures it)"
    if summary is None:
        return Reach(ASSUMED_ENTRIES, assumed)
    for curve in summary.get("curves", []):
        if curve.get("pattern") == "reach" and curve.get("backing") == "4k":
            points = curve.get("points") or []
            if len(points) >= 2:
                base = points[0]["median"]
                within = [
                    p["working_set_bytes"] for p in points if p["median"] <= base * REACH_RISE
                ]
                if within and max(within) < points[-1]["working_set_bytes"]:
                    return Reach(
                        max(max(within) // PAGE, 1),
                        f"from the probe of {summary.get('measured_at', '?')} (4 KiB reach curve)",
                    )
    return Reach(
        ASSUMED_ENTRIES, assumed.replace("no probe result here", "the probe found no knee")
    )


@click.command(
    "where",
    context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
)
@click.option(
    "--interval",
    type=click.FloatRange(min=0.05),
    default=1.0,
    show_default=True,
    help="seconds between samples (each clears the accessed bits: the program pays per sample)",
)
@click.option(
    "--max-cost",
    type=click.FloatRange(min=0, max=1),
    default=0.02,
    show_default=True,
    help="stretch the interval so the sampler's own time stays within this share of one CPU (0: never)",
)
@click.option(
    "--no-sites",
    is_flag=True,
    help="do not preload libhbselect to record call sites (the program fully as-is)",
)
@click.option(
    "--bare",
    type=click.IntRange(min=0, max=20),
    default=0,
    show_default=True,
    help="then time N pairs of a bare run and a sampled one: the sampler's cost",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=1),
    default=None,
    help="seconds before the program is killed",
)
@click.option(
    "--json",
    "json_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="write every region and its samples to this file",
)
@click.option(
    "--plots",
    "plot_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="draw each hot region's touched memory over time into DIR/plots/where-hot.png and .svg",
)
@click.option(
    "--html",
    "html_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="write the answer as a page: the table, the lines printed, each hot region's touched memory over time",
)
@click.argument("argv", nargs=-1, type=click.UNPROCESSED)
def where(interval, max_cost, no_sites, bare, timeout, json_path, plot_dir, html_path, argv):
    """Which regions of PROGRAM's memory pay for huge pages (its output goes to stderr)."""
    from hugebench._util import write_json_atomic
    from hugebench.machine.where_view import as_json, text, watch

    if not argv:
        raise SpecError("give the program after --: hugebench where -- PROGRAM ARGS...")
    if shutil.which(argv[0]) is None:
        raise ToolMissingError(f"cannot run {argv[0]}: no such program (or not executable)")
    if html_path is not None or json_path is not None:  # refused before the program runs, not after
        from hugebench.cli.output import check_destinations

        json_file = {"--json": json_path} if json_path is not None else {}
        check_destinations({}, html=html_path, error=SpecError, files=json_file)
    view = watch(
        argv,
        dict(os.environ),
        machine_reach(),
        interval=interval,
        sites=not no_sites,
        bare=bare,
        timeout=timeout,
        max_cost=max_cost,
    )
    lines = text(view)
    for line in lines:
        click.echo(line)
    if json_path is not None:
        write_json_atomic(json_path, as_json(view), indent=1)
        click.echo(f"json: {json_path}")
    if plot_dir is not None:
        from hugebench.report.figures.where_plot import plot_hot

        files = plot_hot(as_json(view), plot_dir)
        click.echo(f"plots: {', '.join(map(str, files))}")
    if html_path is not None:
        from hugebench.machine.where_view import table
        from hugebench.report.html import write_html
        from hugebench.report.where_page import page

        rows = set(table(view.verdicts))
        write_html(page(as_json(view), [line for line in lines if line not in rows]), html_path)
        click.echo(f"html: {html_path}")
