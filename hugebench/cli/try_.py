"""``hugebench try -- PROGRAM ARGS...``: parse the options, call hugebench.trial.run_try, print the verdict."""

from __future__ import annotations

import re
import time
from pathlib import Path

import click

from hugebench.cli.host import host_options
from hugebench.cli.output import (
    check_destinations,
    export_options,
    exports_of,
    say,
    write_exports,
)
from hugebench.errors import SpecError

_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600}


MAX_BUDGET_S = (
    7 * 24 * 3600
)  # a week: the longest a run may take (an experiment's timeout) is one too


def parse_budget(text: str) -> float:
    """'10m', '90s', '1h', '120' -> seconds (at most a week)."""
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([smh]?)\s*", text or "")
    if not m:
        raise SpecError(f"--budget {text!r}: give a duration like 90s, 10m or 1h")
    seconds = float(m.group(1)) * _UNITS[m.group(2)]
    if seconds > MAX_BUDGET_S:
        raise SpecError(
            f"--budget {text.strip()[:40]!r}: at most {MAX_BUDGET_S // 3600}h (a week), "
            f"the longest a try may take"
        )
    return seconds


def parse_level(text: str) -> int:
    """'--aged-level 25%' (or 25) -> 25: the share of free 2 MiB blocks the fragmented state pins."""
    m = re.fullmatch(r"\s*([0-9]+)\s*%?\s*", text or "")
    if not m or not 1 <= int(m.group(1)) <= 100:
        raise SpecError(
            f"--aged-level {text!r}: give a share of the free 2 MiB blocks from 1% to 100%"
        )
    return int(m.group(1))


def _names(only: str | None) -> tuple:
    """'--allocators A,B' -> ('A', 'B'); given with no name in it (',', '') it is refused, never read as
    the default set."""
    if only is None:
        return ()
    names = tuple(a.strip() for a in only.split(",") if a.strip())
    if not names:
        raise SpecError(
            f"--allocators {only!r}: names no allocator; give A,B (e.g. glibc,jemalloc) or leave it out"
        )
    return names


def _env(pairs) -> dict:
    out = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise SpecError(f"--env {pair!r}: give NAME=VALUE")
        out[name] = value
    return out


@click.command(name="try", context_settings={"ignore_unknown_options": False})
@click.argument("argv", nargs=-1, required=True, metavar="-- PROGRAM [ARGS]...")
@click.option(
    "--budget", default="10m", show_default=True, help="wall time for the whole try (90s, 10m, 1h)"
)
@click.option(
    "--metric",
    default="wall",
    show_default=True,
    help="wall (time of the run or of its marked window) | cpu (user + system CPU time of the program's "
    "process tree, for a shared machine; wall time still shown) | json:KEY | regex:'PATTERN ([0-9.]+)'",
)
@click.option(
    "--higher-is-better", is_flag=True, help="the metric is a rate (json:/regex: metrics)"
)
@click.option(
    "--driver",
    default=None,
    metavar="NAME[:TEST]",
    help="the load driver's known metrics (redis-benchmark:GET, pgbench, memtier_benchmark, memaslap, wrk, "
    "fio:read): its throughput judged, the others (p99 ...) guarded",
)
@click.option(
    "--guard",
    "guards",
    multiple=True,
    metavar="[higher:][NAME=]json:KEY|regex:RE",
    help="a metric recorded beside the judged one; a best resolved worse on it is not recommended "
    "(lower is better unless higher:)",
)
@click.option(
    "--warmup",
    type=click.IntRange(0, 20),
    default=0,
    show_default=True,
    help="uncounted runs of each configuration before any is timed (recorded as warm-ups)",
)
@click.option(
    "--window",
    type=click.Choice(["process", "markers"]),
    default="process",
    show_default=True,
    help="markers: time only the region the program marks",
)
@click.option(
    "--stdin",
    "stdin",
    type=click.Path(dir_okay=False),
    default=None,
    help="file the program reads on stdin",
)
@click.option(
    "--cwd", type=click.Path(file_okay=False), default=None, help="working directory of the program"
)
@click.option(
    "--env", "env", multiple=True, metavar="NAME=VALUE", help="added to the program's environment"
)
@click.option(
    "--server",
    default=None,
    metavar="CMD",
    help="a server measured under the load driver PROGRAM ({tmp}: the run's directory)",
)
@click.option(
    "--ready", default=None, metavar="path:F|port:N|log:RE", help="when the --server takes requests"
)
@click.option("--text-pages", is_flag=True, help="also try the program's text on huge pages")
@click.option(
    "--aged",
    is_flag=True,
    help="each configuration on a fresh and on a fragmented machine (memory_state; root): a verdict for each",
)
@click.option(
    "--aged-level",
    "aged_level",
    default=None,
    metavar="P%",
    help="with --aged: the share of free 2 MiB blocks the fragmented machine has pinned "
    "(default 100%; docs/aged.md)",
)
@click.option(
    "--regime",
    type=click.Choice(["back-to-back", "cold", "both", "warm"]),
    default=None,
    help="how the program runs: back-to-back (a job run again at once, a service), cold (a job after "
    "--idle seconds idle), both (a verdict for each; the default where the machine reports free pages, "
    "elsewhere as found), warm (back to back with free page reporting held off: a machine setting, "
    "named in every configuration with its sysfs line; root)",
)
@click.option(
    "--idle",
    type=click.FloatRange(0, 3600),
    default=None,
    help="the cold regime's seconds of idle before each run (default 4)",
)
@click.option(
    "--allocator",
    "allocators",
    multiple=True,
    type=click.Path(dir_okay=False),
    help="also try this malloc library (.so), preloaded",
)
@click.option(
    "--select",
    "select",
    default=None,
    metavar="RULE",
    help="also try huge pages for these regions alone (hugebench where suggests the rule; "
    "under THP madvise): anon>=SIZE, anon<SIZE, site=OBJECT+0xOFF, heap",
)
@click.option(
    "--allocators",
    "only",
    default=None,
    metavar="A,B",
    help="only these built-in allocator settings (default: glibc plus every huge-page-aware one installed)",
)
@click.option(
    "--thp",
    "thp",
    multiple=True,
    type=click.Choice(["never", "madvise", "always"]),
    help="only these THP modes (default: every mode this user may set)",
)
@click.option(
    "--mthp/--no-mthp",
    default=True,
    help="also try multi-size THP size sets (64kB only, 16kB+64kB, 64kB+2048kB) where the kernel "
    "offers them (root); --no-mthp leaves hugepages-<N>kB/enabled as found",
)
@click.option(
    "-o",
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="results directory (default results/try-PROGRAM); re-running resumes it",
)
@click.option("--json", "as_json", is_flag=True, help="print the verdict as one JSON object")
@click.option(
    "--details",
    is_flag=True,
    help="print every configuration, caveat and deploy line (default: the answer in at most 12 lines)",
)
@export_options
@host_options
def try_(
    argv,
    budget,
    metric,
    higher_is_better,
    driver,
    guards,
    warmup,
    window,
    stdin,
    cwd,
    env,
    server,
    ready,
    text_pages,
    aged,
    aged_level,
    regime,
    idle,
    allocators,
    select,
    only,
    thp,
    mthp,
    out,
    as_json,
    details,
    host,
    **exports,
):
    """Which allocator and THP setting make PROGRAM faster here? Runs it under each within --budget and
    answers with a verdict: the best configuration vs as-is (glibc, THP as found), how to deploy it, caveats."""
    from hugebench.trial import Request, run_try

    started = time.monotonic()
    exports = check_destinations(exports_of(exports), error=SpecError)
    for fmt, path in exports.items():  # refused before any run, not after the budget is spent
        if not path.parent.is_dir():
            raise SpecError(f"--export-{fmt} {path}: its directory {path.parent} does not exist")
    if idle is not None and regime not in ("cold", "both", None):
        raise SpecError(
            "--idle is the cold regime's idle gap: give it with --regime cold or both (or no --regime)"
        )
    request = Request(
        argv=tuple(argv),
        budget_s=parse_budget(budget),
        metric=metric,
        higher_is_better=higher_is_better,
        driver=driver,
        guards=tuple(guards),
        warmup=warmup,
        window=window,
        stdin=stdin,
        cwd=cwd,
        env=_env(env),
        server=server,
        ready=ready,
        text_pages=text_pages,
        aged=aged,
        aged_level=None if aged_level is None else parse_level(aged_level),
        regime=regime,
        idle_s=4.0 if idle is None else idle,
        allocator_paths=tuple(allocators),
        select=select,
        thp=tuple(thp),
        mthp=mthp,
        only=_names(only),
    )
    from hugebench.report import terminal
    from hugebench.trial.render import answer, fit

    width = terminal()[0]
    outcome = run_try(
        request,
        out,
        started,
        echo=lambda line: say("\n".join(fit([line], width)), err=True),
        host=host,
    )
    from hugebench.trial.export import export

    write_exports(outcome.verdict, exports, lambda v, fmt: export(v, fmt), err=as_json)
    if as_json:
        say(export(outcome.verdict, "json"), nl=False)
        return
    results = f"results: {outcome.out} (hugebench report {outcome.out})"
    if width and len(results) > width:  # a long path: once, the command is `hugebench report` on it
        results = f"results: {outcome.out}"
    shown = fit([results], width)
    say(answer(outcome.verdict, outcome.plan_lines, details, width, reserve=len(shown)))
    tail = [results]
    if details:
        tail.append(
            f"experiment: {outcome.experiment_file} (hugebench sweep {outcome.experiment_file} -o "
            f"{outcome.out} re-runs it)"
        )
    say("\n".join(fit(tail, width)))
