"""The ``hugebench`` command. Thin commands: parse options, call one core function, print its result.

Every HugebenchError becomes a clean one-paragraph message and its exit code here, in one place; errors,
warnings and every line a command prints are escaped on the way (:func:`.output.say`: a message quoting a
program's name or a store's value never sends a terminal a control sequence).
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import click

from hugebench._util import printable
from hugebench.cli.host import host_options
from hugebench.cli.output import (
    check_destinations,
    count,
    emit,
    export_options,
    exports_of,
    format_option,
    say,
)
from hugebench.errors import HugebenchError, SpecError
from hugebench.system import Terminated


class _Group(click.Group):
    def invoke(self, ctx):
        with warnings.catch_warnings(record=True) as caught:
            try:
                return super().invoke(ctx)
            except HugebenchError as exc:
                say(_fitted(f"hugebench: error: {exc}"), err=True)
                sys.exit(exc.exit_code)
            except Terminated as exc:  # SIGTERM/SIGHUP: knobs were restored on the way out
                click.echo(
                    f"hugebench: stopped by signal {exc.signum}; kernel knobs restored", err=True
                )
                sys.exit(exc.exit_code)
            except (
                KeyboardInterrupt
            ):  # Ctrl-C: knobs were restored on the way out; 128 + SIGINT, as shells do
                click.echo(
                    "hugebench: interrupted; kernel knobs restored, finished runs kept", err=True
                )
                sys.exit(130)
            finally:
                _print_warnings(caught)


def _print_warnings(caught) -> None:
    """Each distinct warning once, as a line of ours (a torn store is read several times per command)."""
    for message in dict.fromkeys(str(w.message) for w in caught):
        say(_fitted(f"hugebench: warning: {message}"), err=True)


def _refusals(spec, runs, experiment, host) -> list[str]:
    """What `sweep` would refuse this user for (privileges): plan says it before anyone waits for a sweep."""
    from hugebench.sweep.orchestrator import SweepOptions
    from hugebench.sweep.preflight import refusals

    return refusals(
        spec,
        runs,
        SweepOptions(out=Path("."), host=host, spec_source=str(experiment)),
    )


def _fitted(text: str) -> str:
    """A message wrapped at words to the terminal's width ($COLUMNS, else stderr's terminal); piped, whole."""
    from hugebench.report.terminal import terminal, wrap_lines

    return "\n".join(wrap_lines(text.splitlines(), terminal(sys.stderr)[0]))


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="hugebench")
def main():
    """How much would huge pages and a better malloc buy my workload, on this machine?

    \b
    Changing kernel knobs needs root. sudo does not search a virtualenv, so
    `sudo hugebench` finds nothing: name the venv's script instead, e.g.
    `sudo .venv/bin/hugebench sweep experiments/quick.yaml`.
    """


def _default_out(spec) -> Path:
    return Path("results") / spec.name


def _load(experiment: str, repetitions: int | None, local: bool = True, warmup: int | None = None):
    """The spec of EXPERIMENT, with --repetitions and --warmup beating the file's values (validated as
    the file's)."""
    from hugebench import experiment as spec_mod

    return spec_mod.load_spec(experiment, local, repetitions or None, warmup)


def _cluster_options(command):
    """--cluster, --certs, --machines, --workers: where a sweep runs (and what ``plan`` shows per
    machine)."""
    command = click.option(
        "--insecure-accept-any-client",
        is_flag=True,
        help="cluster: use a tcp:// scheduler (or ssh without --certs), which authenticates nobody: "
        "anyone who reaches it runs code as root on the workers",
    )(command)
    command = click.option(
        "--certs",
        envvar="HUGEBENCH_CERTS",
        default=None,
        metavar="DIR",
        help="cluster: the lab's certificates (`hugebench cluster certs DIR`) for a tls:// scheduler",
    )(command)
    command = click.option(
        "--workers", type=click.IntRange(min=1), default=None, help="cluster: machines to wait for"
    )(command)
    command = click.option(
        "--machines",
        type=click.Choice(["each", "spread"]),
        default=None,
        help="cluster: every cell on every machine (each), or blocks over identical machines "
        "(spread)",
    )(command)
    return click.option(
        "--cluster",
        default=None,
        metavar="ADDRESS",
        help="run on Dask workers: tls://HOST:8786 (a running scheduler) or ssh://h1,h2 (beats "
        "cluster:)",
    )(command)


_repetitions = click.option(
    "-r",
    "--repetitions",
    type=click.IntRange(min=1),
    default=None,
    help="runs per cell (overrides the file; more later resumes the same sweep)",
)


_warmup = click.option(
    "--warmup",
    type=int,
    default=None,
    metavar="N",
    help="uncounted warm-up runs per cell before the first block (overrides the file's warmup:)",
)


@main.command()
@click.argument("experiment", type=click.Path(dir_okay=False))
@click.option(
    "-o",
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="results directory (default: results/<experiment name>); re-running resumes it",
)
@click.option("-q", "--quiet", is_flag=True, help="no progress bar (CI)")
@click.option(
    "--perf",
    "perf_mode",
    type=click.Choice(["auto", "off"]),
    default=None,
    help="whole-process perf stat (default: the YAML's 'perf', auto)",
)
@format_option
@export_options
@host_options
@click.option("--journal", envvar="HUGEBENCH_JOURNAL", default=None, help="restore journal file")
@_cluster_options
@click.option(
    "--label",
    default=None,
    metavar="TEXT",
    help="a label of this sweep kept in its context (e.g. jemalloc 5.3); `history` shows where it changed",
)
@click.option(
    "--quiet-machine",
    type=click.FloatRange(min=0),
    default=None,
    metavar="SECONDS",
    help="before each block wait up to SECONDS for a quiet machine (load, steal); the wait is recorded",
)
@_repetitions
@_warmup
def sweep(
    experiment,
    out,
    quiet,
    perf_mode,
    fmt,
    host,
    journal,
    cluster,
    certs,
    insecure_accept_any_client,
    machines,
    workers,
    label,
    quiet_machine,
    repetitions,
    warmup,
    **exports,
):
    """Run every cell of EXPERIMENT (a YAML file) and print the report table."""
    from hugebench.experiment.cluster import resolve
    from hugebench.sweep import plan as plan_mod
    from hugebench.sweep.orchestrator import SweepOptions, run_sweep

    files = check_destinations(exports_of(exports))  # refused before any run, not after the sweep
    spec = _load(experiment, repetitions, local=cluster is None, warmup=warmup)
    config = resolve(
        spec.cluster, cluster, machines, workers, experiment, certs, insecure_accept_any_client
    )
    if config is not None and quiet_machine is not None:
        raise click.UsageError(
            "--quiet-machine waits for this machine to be quiet, but a cluster sweep runs on "
            "its workers' machines, which it cannot wait for yet; leave it out (every run "
            "still records its noise.* columns and is flagged when disturbed)"
        )
    out = out or _default_out(spec)
    if (
        config is not None
    ):  # the same runs through the same run_one, on Dask workers; the store stays here
        from hugebench.cluster import run_cluster_sweep

        run_sweep = run_cluster_sweep
    result = run_sweep(
        spec,
        plan_mod.plan(spec),
        SweepOptions(
            out=out,
            quiet=quiet,
            perf=perf_mode,
            spec_source=experiment,
            host=host,
            journal=journal,
            cluster=config,
            quiet_machine=quiet_machine,
            label=label,
        ),
    )
    _print_report(out, fmt, plots=True, exports=files)
    statuses = ", ".join(f"{n} {s}" for s, n in sorted(result.statuses.items()))
    say(
        f"{result.rows_written} runs this time ({statuses or 'none'}), "
        f"{result.skipped_done} already done; results in {out}"
    )
    if result.failed:
        _print_failures(out, result.sweep_id)


def _print_failures(out: Path, sweep_id: str) -> None:
    """Why this sweep's runs failed, grouped by reason (the commonest first)."""
    from hugebench.report.tables import failure_counts
    from hugebench.store import load

    rows = load(out, hosts=False)
    ids = rows["sweep_id"].astype(str) if "sweep_id" in rows.columns else None
    if ids is None:
        return
    mine = rows[
        (ids == sweep_id) | ids.str.startswith(sweep_id + ".")
    ]  # a cluster sweep: one id per machine
    for reason, n in failure_counts(mine):
        say(f"  failed: {n} run(s): {reason}")


@main.command()
@click.argument("experiment", type=click.Path(dir_okay=False))
@click.option("--runs", "show_runs", is_flag=True, help="list every run in order")
@click.option(
    "-o",
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="results directory whose stored runs refine the time estimate (default: results/<name>)",
)
@host_options
@_cluster_options
@_repetitions
@_warmup
def plan(
    experiment,
    show_runs,
    out,
    repetitions,
    warmup,
    host,
    cluster,
    certs,
    insecure_accept_any_client,
    machines,
    workers,
):
    """Print the runs a sweep of EXPERIMENT would do, without running anything."""
    from hugebench.experiment.cluster import resolve
    from hugebench.report import format_bytes, terminal, wrap_lines
    from hugebench.sweep import machine_checks
    from hugebench.sweep import plan as plan_mod
    from hugebench.sweep.estimate import estimate, format_duration, read_history

    width = terminal()[0]

    def say(text: str) -> None:  # plan's own, wrapped to the terminal
        click.echo(printable("\n".join(wrap_lines([text], width)), None, lines=True))

    spec = _load(experiment, repetitions, local=cluster is None, warmup=warmup)
    runs = plan_mod.plan(spec)
    config = resolve(
        spec.cluster, cluster, machines, workers, experiment, certs, insecure_accept_any_client
    )
    if (
        config is None
    ):  # what a sweep would refuse on this machine (a cluster's machines check themselves)
        machine_checks.check(spec, runs, host)
    elif (
        config.certs
    ):  # the client's certificates, checked as a sweep checks them (a bad value: exit 2)
        from hugebench.cluster.certs import CA, cert_name, read_role, valid_and_ours

        try:
            ca, cert, _ = read_role(config.certs, "client")
            valid_and_ours(config.certs, "client", {CA: ca, cert_name("client"): cert})
        except HugebenchError as exc:
            raise SpecError(f"{experiment}: cluster certs: {exc}") from None
    history = read_history(out or _default_out(spec))
    s = plan_mod.summary(runs)
    mem = (
        f"largest run needs ~{format_bytes(s['max_memory_bytes'])}"
        if s["max_memory_bytes"]
        else "memory per run unknown (the workload has no memory model)"
    )
    knobs = (
        f"sets kernel knobs {', '.join(s['knobs'])} ({s['knob_changes']} changes between runs)"
        if s["knobs"]
        else "no kernel knob changes"
    )
    reps = f"{spec.repetitions} repetitions"
    if (
        spec.adaptive
    ):  # repetitions: auto: the plan above is its least; the most is every block up to max
        most = estimate(plan_mod.plan(spec, spec.adaptive.max), history)
        reps = (
            f"{spec.repetitions}..{spec.adaptive.max} repetitions (auto; at most {most.left + most.done} runs"
            + (f", {format_duration(most.seconds)}" if most.seconds is not None else "")
            + ")"
        )
    say(
        f"{spec.name}: {s['runs']} runs = {s['cells']} cells x {reps} "
        f"(+{s['warmup_runs']} warm-up), {knobs}, {mem}"
    )
    say(f"time: {estimate(runs, history).text()}")
    if s["memory_state_knobs"]:
        say(
            "memory_state compacts memory before each run (vm.compact_memory) and sets, each "
            "journaled and set back as found:"
        )
        for knob, how in s["memory_state_knobs"].items():
            say(f"  {knob} = {how}")
    if s["regime_knobs"]:
        say("regime sets, journaled and set back as found:")
        for knob, how in s["regime_knobs"].items():
            say(f"  {knob} = {how}")
    if config is not None:
        from hugebench.cluster.placement import host_lines

        say("\n".join(host_lines(runs, config, history)))
    skips = {} if config else machine_checks.memory_skips(runs, host)
    if skips:
        say(
            f"cannot run here: {len(skips)} of {s['cells']} cells would be skipped by a sweep on this "
            f"machine, e.g. one {next(iter(skips.values()))}"
        )
    refused = [] if config else _refusals(spec, runs, experiment, host)
    for why in refused:
        say(f"a sweep by this user would be refused: {why}")
    if show_runs:
        for r in runs:
            cell = " ".join(f"{k}={v}" for k, v in r.cell.items())
            tag = "warmup" if r.warmup else f"rep {r.repetition}"
            click.echo(printable(f"{r.order_index:5d} {r.run_id} {tag:7s} {cell}", None))


@main.command()
@click.argument("results", type=click.Path(exists=True, file_okay=False, path_type=Path))
@format_option
@export_options
@click.option("--plots", is_flag=True, help="also (re)write the PNG/SVG plots into RESULTS/plots")
@click.option(
    "--primary",
    default=None,
    metavar="COLUMN",
    help="metric that gets the CI and the ratio to the baseline (e.g. chunk_ns_p10)",
)
@click.option(
    "--html",
    "html",
    is_flag=False,
    flag_value="",
    default=None,
    metavar="[FILE]",
    help="write one self-contained HTML page (tables, plots, warnings, provenance) to FILE "
    "(default RESULTS/report.html) instead of printing the tables",
)
def report(results, fmt, plots, primary, html, **exports):
    """Reprint the report of a results directory without re-running anything."""
    page = None if html is None else Path(html) if html else results / "report.html"
    files = check_destinations(exports_of(exports), page)
    _print_report(results, fmt, plots, primary, html, files)


def _print_report(
    results: Path,
    fmt: str,
    plots: bool,
    primary: str | None = None,
    html: str | None = None,
    exports: dict | None = None,
) -> None:
    from hugebench.report import Options, build_report, load_results

    loaded = load_results(
        results
    )  # once: the tables, the page and the plots share rows and contexts
    if html is not None:
        from hugebench.report.html import write_html

        page = build_report(loaded, Options(primary=primary, figures=True, charts=True))
        path = write_html(page, Path(html) if html else results / "report.html")
        say(
            f"report: {path} ({count(len(page.sections), 'section')}, {count(len(page.warnings), 'warning')})"
        )
    else:
        emit(build_report(loaded, Options(primary=primary)), fmt, exports)
    if plots:
        from hugebench.report.figures import write_plots

        why: list[str] = []
        files = [p for p in write_plots(loaded, why) if p.suffix == ".png"]
        # stdout is the report (report --format markdown > r.md): where the plots went is said on stderr
        if files:
            say(f"plots: {', '.join(str(p) for p in files)}", err=True)
        for line in why:
            say(f"plots: {line}", err=True)


def _add_optional_commands():
    from hugebench.cli.advice import advice
    from hugebench.cli.compare import compare
    from hugebench.cli.doctor import doctor
    from hugebench.cli.exec_ import exec_
    from hugebench.cli.history import history
    from hugebench.cli.probe import probe
    from hugebench.cli.stats import stats
    from hugebench.cli.system import system, thp
    from hugebench.cli.try_ import try_
    from hugebench.cli.where import where
    from hugebench.cluster.certs import cluster
    from hugebench.cluster.serve import worker

    main.add_command(compare)
    main.add_command(history)
    main.add_command(system)
    main.add_command(thp)
    main.add_command(doctor)
    main.add_command(probe)
    main.add_command(worker)
    main.add_command(cluster)
    main.add_command(try_)
    main.add_command(exec_)
    main.add_command(where)
    main.add_command(stats)
    main.add_command(advice)


_add_optional_commands()
