"""command: your own program (or a server under a load driver) as the measured process.

Its checks, preparation and columns are :mod:`hugebench.workloads.command.checks`; the worker runs
:func:`hugebench.run.supervisor.run`.
"""

from __future__ import annotations

from hugebench.workloads.base import Param, Workload, XYPlot, register

METRICS = (
    ("window_s", "Window s", ".3f"),
    ("utime_s", "User s", ".2f"),
    ("stime_s", "Sys s", ".2f"),
    ("peak_rss_bytes", "Peak RSS", "bytes"),
    ("minflt", "Minor faults", "si"),
)


def _check(params: dict) -> None:
    from hugebench.workloads.command import checks

    checks.check_params(params)
    checks.check_unused(params, [*WORKLOAD.params, *checks.OPTIONAL])


def _prepare(params: dict, base_dir) -> dict:
    from hugebench.workloads.command.checks import prepare

    return prepare(params, base_dir)


def _metrics(params: dict) -> tuple:
    from hugebench.workloads.command.checks import coverage_metrics, other_metrics

    return (
        METRICS[:1] + other_metrics(params) + METRICS[1:3] + coverage_metrics(params) + METRICS[3:]
    )


def _primary(params: dict) -> tuple:
    from hugebench.workloads.command.checks import primary

    return primary(params)


WORKLOAD = register(
    Workload(
        name="command",
        doc="Your own program (or a server under a load driver) as the measured process.",
        runner="hugebench.run.supervisor:run",
        params={
            "argv": Param(
                list, None, help="the program and its arguments, a list; {name} takes a parameter"
            ),
            "cwd": Param(str, ".", help="working directory, relative to the experiment file"),
            "env": Param(
                dict,
                None,
                help="added to the program's environment (not the allocator's variables)",
            ),
            "metric": Param(
                object,
                "wall",
                help="wall | {regex: ..., name: ..., better: higher} | {json: KEY} | "
                "{hdr: FILE, percentile: 99, name: ...} | {driver: redis-benchmark, test: GET} | "
                "a list of these (the first is judged)",
            ),
            "setup": Param(list, None, help="a command run before each measured run, not measured"),
            "server": Param(
                dict,
                None,
                help="{argv, ready: {path|port|log}}: the server is measured, argv "
                "is its load driver",
            ),
            "sample_interval": Param(
                float,
                1.0,
                minimum=0.05,
                maximum=3600.0,
                help="seconds between coverage samples (0.05 to 3600)",
            ),
            "stdin": Param(
                str,
                None,
                help="a file the program reads as its standard input (default: /dev/null); "
                "relative to cwd",
            ),
            "stdout": Param(
                str,
                None,
                help="a file its standard output goes to, or discard (default: a file in "
                "the run's directory, of which the row keeps a short text tail)",
            ),
            "window": Param(
                str,
                "process",
                choices=("process", "markers"),
                help="process: the whole run is timed; markers: the program marks its windows",
            ),
        },
        timed_phase="window",
        metrics=METRICS,  # and the coverage columns that fit the file's window (metrics_for)
        metrics_for=_metrics,
        open_params=True,
        check_params=_check,
        prepare_params=_prepare,
        primary_for=_primary,
        xy_plots=(
            XYPlot(
                "series",
                "series_t_s",
                "series_coverage",
                "allocator",
                "seconds since the first sample",
                "AnonHugePages / Rss",
                "huge-page coverage over the run",
                "coverage",
            ),
            XYPlot(
                "series",
                "series_t_s",
                "series_rss_mib",
                "allocator",
                "seconds since the first sample",
                "RSS of the process tree, MiB",
                "memory over the run",
                "memory",
            ),
            XYPlot(
                "series",
                "series_t_s",
                "series_psi_memory_some_pct",
                "allocator",
                "seconds since the first sample",
                "some task stalled on memory, % of each interval",
                "memory pressure (PSI) over the run",
                "memory-pressure",
            ),
        ),
    )
)
