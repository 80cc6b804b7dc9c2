"""`hugebench system show|set|restore` (`hugebench thp ...` is a hidden alias kept for old scripts). Thin: each command calls one
function of hugebench.system; a HugebenchError propagates to the main CLI, which turns it into an exit code.
"""

from __future__ import annotations

import json
import os
import shlex
from dataclasses import dataclass

import click
from rich import box
from rich.console import Console
from rich.table import Table

from hugebench import knob_catalogue as catalogue
from hugebench.cli.host import host_at
from hugebench.errors import SpecError
from hugebench.kernel.host import Host
from hugebench.system import SystemState, check_privileges, restore_from_journal, show
from hugebench.system.containment import end_leftovers, record_dir
from hugebench.system.journal import default_journal_path


@dataclass(frozen=True)
class SystemRoots:
    host: Host  # the machine the command acts on, built once from --sys-root/--proc-root
    journal: str | None  # `restore` acts only on a journal written for this host's roots


@click.group("system")
@click.option(
    "--sys-root", envvar="HUGEBENCH_SYS_ROOT", default=None, help="Where sysfs is (default /sys)."
)
@click.option(
    "--proc-root",
    envvar="HUGEBENCH_PROC_ROOT",
    default=None,
    help="Where procfs is (default /proc).",
)
@click.option("--journal", envvar="HUGEBENCH_JOURNAL", default=None, help="Restore journal file.")
@click.pass_context
def system(
    ctx: click.Context, sys_root: str | None, proc_root: str | None, journal: str | None
) -> None:
    """Show, set and restore the huge-page kernel knobs (THP modes, khugepaged, mTHP, hugetlb pools)."""
    ctx.obj = SystemRoots(host_at(sys_root, proc_root), journal)


@system.command("show")
@click.option("--json", "as_json", is_flag=True, help="Print the raw dict as JSON.")
@click.pass_obj
def show_cmd(roots: SystemRoots, as_json: bool) -> None:
    """Every knob with its value and choices, the thp_* counters and the hugetlb pools."""
    state = show(roots.host)
    if as_json:
        click.echo(json.dumps(state, indent=1))
        return
    console = Console()
    console.print(_knob_table(state["knobs"]))
    console.print(_pool_table(state["hugetlb"]))
    counters = "  ".join(
        f"{k.removeprefix('thp_')}={v}" for k, v in state["thp_vmstat"].items() if v
    )
    console.print(f"thp_* counters (non-zero): {counters or 'all zero'}")


def _knob_table(knobs: dict) -> Table:
    table = Table(
        "knob", "value", "allowed", box=box.SIMPLE_HEAD, title="huge-page knobs (paths: --json)"
    )
    table.columns[0].no_wrap = True
    grouped = ("mthp", "mthp_shmem", "hugetlb")
    for name, knob in knobs.items():
        if catalogue.family(name) not in grouped:
            table.add_row(name, knob["value"], knob["allowed"])
    # eight near-identical rows per family would push the rest off the screen: group sizes by value
    for family in ("mthp", "mthp_shmem"):
        sizes = {n: k for n, k in knobs.items() if catalogue.family(n) == family}
        if not sizes:
            continue
        by_value: dict[str, list[str]] = {}
        for name, knob in sizes.items():
            by_value.setdefault(knob["value"], []).append(name.rsplit(".", 1)[1])
        summary = "; ".join(f"{value}: {' '.join(s)}" for value, s in by_value.items())
        table.add_row(f"thp.{family}.<size>", summary, next(iter(sizes.values()))["allowed"])
    for name, knob in knobs.items():
        if catalogue.family(name) == "hugetlb":
            table.add_row(name, knob["value"], knob["allowed"])
    return table


def _pool_table(pools: dict) -> Table:
    table = Table("hugetlb pool", "nr", "free", "surplus", "resv", box=box.SIMPLE_HEAD)
    for size, fields in pools.items():
        table.add_row(size, *(str(fields.get(k, "?")) for k in ("nr", "free", "surplus", "resv")))
    return table


def _parse_assignments(assignments: tuple[str, ...]) -> dict[str, str]:
    settings = {}
    for item in assignments:
        name, sep, value = item.partition("=")
        if not sep or not name or not value:
            raise SpecError(
                f"expected NAME=VALUE, got {item!r} (e.g. `hugebench system set thp=always`)"
            )
        settings[name] = value
    return settings


@system.command("set")
@click.argument("assignments", nargs=-1, required=True)
@click.pass_obj
def set_cmd(roots: SystemRoots, assignments: tuple[str, ...]) -> None:
    """Set knobs (NAME=VALUE ...), journaled; they stay until `hugebench system restore`."""
    settings = _parse_assignments(assignments)
    from hugebench.system import sudo_hugebench

    rerun = f"{sudo_hugebench()} system set " + " ".join(shlex.quote(a) for a in assignments)
    check_privileges([settings], roots.host, os.geteuid(), rerun=rerun)
    with SystemState(roots.host, roots.journal, purpose="set", restore_on_exit=False) as state:
        readback = state.apply(settings)
    for name, value in readback.items():
        click.echo(f"{name} = {value}")
    journal = roots.journal or default_journal_path()
    click.echo(f"originals saved in {journal}; put them back with `hugebench system restore`")


@system.command("restore")
@click.option(
    "--force", is_flag=True, help="Restore even though the sweep that changed the knobs still runs."
)
@click.pass_obj
def restore_cmd(roots: SystemRoots, force: bool) -> None:
    """End the processes a sweep that died left running, and put back the knob values saved in the journal by
    that sweep, or by `system set`."""
    for ended in end_leftovers(record_dir(roots.journal)):
        click.echo(
            f"ended {ended['killed']} process(es) of run {ended['run']} (its sweep, pid {ended['owner_pid']}, "
            "is gone)"
        )
    report = restore_from_journal(roots.journal, roots.host, force=force)
    if not report["found"]:
        click.echo(f"nothing to restore: no journal at {report['journal']}")
        return
    click.echo(f"journal {report['journal']} ({report['purpose']}, {report['owner']}):")
    for name, change in report["restored"].items():
        click.echo(f"  restored {name}: {change['from']} -> {change['to']}")
    for name in report["unchanged"]:
        click.echo(f"  {name} was already at its saved value")
    if not report["restored"]:
        click.echo("  nothing needed restoring")


# `hugebench thp show|set|restore`: the old name of `system`, hidden from --help (one command, one help text).
thp = click.Group(
    name="thp",
    commands=system.commands,
    params=system.params,
    callback=system.callback,
    help=system.help,
    hidden=True,
)
