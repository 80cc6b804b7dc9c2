"""The row columns hugebench owns, and the one rule that keeps a user's names off them.

A run row (``hugebench.store``) holds the run's identity and status, the cell's axis values under their axis
names, ``param.<name>`` for every parameter, and what the run measured. Some of those names are chosen by
the user: a ``command`` experiment's own parameters (an axis of one is a column under its plain name, and
every one is a ``{name}`` field of the command line) and its metric's ``name`` (the column that holds the
metric). Were such a name ``status`` or ``run_id``, the user's value would replace hugebench's: a measured
row refused by the store, run identity rewritten (every resume re-runs and duplicates rows), successful
runs stored as failed.

They are refused when the experiment file is loaded (``user_name_problem``), with the list below, rather
than put in a namespace of their own (``metric.<name>``): the names users give are the columns they read
in ``load()``, in ``expected: {metric: rps}`` and in every report, and in the stores already written. As a
second line, the row is built so that a user's value can never replace its identity (``add_user_columns``).

Nothing above ``store`` is imported here: spec, plan, the orchestrator and the command runner use this.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from hugebench import knob_catalogue

# The version of a row's and a context file's layout (``schema_version`` in each); the one definition.
SCHEMA_VERSION = 1

# Who the run is; fixed when it is planned, never replaced by anything a run or a user writes.
IDENTITY = (
    "schema_version",
    "run_id",
    "cell_id",
    "sweep_id",
    "experiment",
    "workload",
    "repetition",
    "order_index",
    "warmup",
    "lead_in",
    "started_at",
)
# How the run ended: written by hugebench alone (a worker's reply or a user's value must not set them).
STATUS = ("status", "error", "stderr_tail", "stdout_tail", "exit_code", "wall_s")
# The other plain (undotted) columns hugebench writes into some row, or adds when it loads rows.
OWNED = (
    "allocator",
    "text_pages",
    "memory_state",
    "regime",
    "thp",
    "host",
    "source",
    "knobs_applied",
    "thp_prctl_disabled",
    "launcher",  # where a run's supervisor ran: a worker process, or the sweep's (run.inprocess)
    # what a measured program's run records (hugebench.run.supervisor, command.probe, .sampler)
    "window_s",
    "windows",
    "utime_s",
    "stime_s",
    "minflt",
    "majflt",
    "peak_rss_bytes",
    "process_wall_s",
    "hp_coverage",
    "hp_coverage_tw",
    "server_stop_s",
    "server_warmup_runs",
    "server_warmup_s",
    "allocator_malloc_from",
    "allocator_served",
    "allocator_processes",
    "allocator_tree_processes",
    "allocator_tree_mapped",
    "allocator_tree_unmapped",
    "allocator_mapped",
    "rss_before_workload_bytes",
    "anon_huge_before_workload_bytes",
    "workload_wall_s",
    "program_path",
    "program_exes",
    "hp_coverage_basis",
    "hp_coverage_exit",
    "allocator_linked",
    "allocator_note",
    "tree_peak_rss_bytes",
    "tree_processes",
    # how the run was contained and ended (hugebench.system.containment, run.rows.oom_verdict)
    "containment",
    "oom_kills",
    "memory_limit_bytes",  # memory_limit: (system.memlimit)
    "soak_s",  # server.soak: (command.soak)
    "signal",
    # what perf could count for the user who ran the sweep (hugebench.measure.perf)
    "perf_scope",
    "pmu_scope",
    "series_t_s",
    "series_coverage",  # huge-page coverage over the run (sampler; fleet's from the core)
    "series_rss_mib",  # the tree's RSS and AnonHugePages over the run (sampler: memory over time)
    "series_anon_huge_mib",
    "series_psi_cpu_some_pct",  # the run's pressure stalls per sampling interval (command.psi)
    "series_psi_memory_some_pct",
    "series_psi_io_some_pct",
)
# Prefixes of the dotted columns hugebench writes (``perf.cycles``, ``knob.thp.enabled`` ...).
OWNED_PREFIXES = (
    "param.",
    "mem.",
    "events.",
    "knob.",
    "perf.",
    "pmu.",
    "smaps.",
    "vmstat.",
    "worker.",
    "supervisor.",
    "allocator.",
    "text.",
    "buddy.",
    "phase.",
    "sampler.",
    "sampled.",
    "folio.",  # per-size coverage (measure.folio_coverage)
    "folio_share.",
    "folio_share_tw.",
    "folio_bytes.",
    "gap.",  # the coverage-gap explainer (measure.coverage_gap)
    "set.",
    *knob_catalogue.COLUMN_PREFIXES,  # the kernel knobs a run was under
    "system.",  # the conditions between runs (free page reporting, idle before a run)
    "containment.",
    "cgroup.",
    "memory_limit.",
    "psi.",
    "soak.",
    "result.",
    "noise.",
    "memory.",
)
# A measurement that could not be taken is null with ``<column>.reason`` beside it.
REASON_SUFFIX = ".reason"
# ``{tmp}`` and ``{python}`` of a command line are hugebench's (hugebench.workloads.command.template).
TEMPLATE_FIELDS = ("tmp", "python")

RESERVED = frozenset(IDENTITY + STATUS + OWNED + TEMPLATE_FIELDS)


def user_name_problem(name: str, also: Iterable[str] = (), column: bool = True) -> str | None:
    """Why ``name`` cannot be a name a user chooses (a command's own axis or parameter, a metric's name),
    or None. ``also``: more names hugebench owns in this context (the workload's metric columns).
    ``column=False``: a fixed parameter, which is a row column only as ``param.<name>``, so only the
    ``{field}`` names are hugebench's."""
    groups = (
        (IDENTITY + STATUS, "the run's identity or status"),
        (TEMPLATE_FIELDS, "a {field} of hugebench's"),
        (OWNED + tuple(also), "a column hugebench writes"),
    )
    for group, what in groups if column else groups[1:2]:
        if name in group:
            return (
                f"{name!r} is {what}; choose another name. Reserved: {', '.join(dict.fromkeys(group))} "
                "(hugebench/columns.py)"
            )
    if not column:
        return None
    if name.startswith(OWNED_PREFIXES):
        return (
            f"{name!r} starts with {name.split('.')[0]}., a prefix of hugebench's own columns; choose another "
            f"name (reserved prefixes: {', '.join(OWNED_PREFIXES)})"
        )
    if name.endswith(REASON_SUFFIX):
        return f"{name!r} ends with {REASON_SUFFIX}, which names why a measurement is missing; choose another name"
    return None


def add_user_columns(row: dict, values: Mapping, what: str) -> dict:
    """Add a cell's axis values (or any other user-named columns) to ``row`` without ever replacing a column
    hugebench owns: such a name is refused when the file is loaded, so reaching here is a bug, said as one."""
    clash = [key for key in values if key in IDENTITY or key in STATUS]
    if clash:
        raise ValueError(
            f"{what} {clash[0]!r} would replace the row's own column; such names are refused when "
            "the experiment file is loaded"
        )
    row.update(values)
    return row


def clashes(measured: Mapping) -> list[str]:
    """The keys of a worker's measured row that would replace the run's identity or its status (the status
    of a run is decided from how it ended, never taken from a column it wrote)."""
    return [key for key in measured if key in IDENTITY or key in ("status", "error")]
