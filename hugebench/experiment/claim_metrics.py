"""Which columns a claim of ``expected:`` may name, and what each one measures (whole run or timed phase).

A published number is only comparable with a column that measures the same span: the hash-set article's
cycles and STLB misses are of its whole benchmark run, its latency is of the lookups alone. A claim names the
column (``metric:``); this module says whether hugebench records such a column for this experiment and what
span it covers, so the report can print "perf.cycles: whole run" beside the published "cycles".

Columns a claim may name:

* the workload's own metrics (``spec.claims.workload_metrics``);
* ``perf.<label>``: whole-process ``perf stat`` around the measured process, for every counter label perf can
  be asked for (``hugebench.measure.events``), unless the experiment says ``perf: off``;
* ``pmu.<label>``: the in-process counters around the timed phase, unless ``counters: off``;
* the per-operation metrics derived from the timed phase's counters (``cycles_per_op`` ...);
* the run's totals every worker records (``wall_s``, ``utime_s``, ``minflt``, ``peak_rss_bytes`` ...).

A counter the machine cannot count is a null value with ``<column>.reason`` in the rows; the report then says
"not measurable here" with that reason (``hugebench.report.verdicts``). Nothing here reads the machine.
"""

from __future__ import annotations

from hugebench.measure.events import HARDWARE_PROFILES, SOFTWARE_LABELS, override_pairs

WHOLE_RUN, TIMED_PHASE = "whole run", "timed phase"
_PERF_SCOPE = "whole run: perf stat around the measured process, start-up and setup included"
_RUN_TOTALS = {
    "wall_s": "whole run: wall time of the measured process, start-up included",
    "utime_s": "whole run: user CPU time of the measured process (rusage)",
    "stime_s": "whole run: system CPU time of the measured process (rusage)",
    "minflt": "whole run: minor page faults of the measured process (rusage)",
    "majflt": "whole run: major page faults of the measured process (rusage)",
    "peak_rss_bytes": "whole run: peak resident set of the measured process (VmHWM)",
}
# What a counter label is called in a published table's header (else its label with spaces).
_COUNTER_NAMES = {
    "task_clock": "CPU time",
    "stlb_misses": "STLB misses",
    "itlb_misses": "iTLB misses",
    "dtlb_load_misses": "dTLB load misses",
    "itlb_misses_4k": "iTLB walks to 4 KiB pages",
    "walk_cycles": "page-walk cycles",
}
# Derived in the worker from the timed phase's in-process counters (hugebench.measure.counters.derive).
_DERIVED = {
    "cycles_per_op": "timed phase: cycles per operation (in-process counters)",
    "stlb_misses_per_1k_ops": "timed phase: second-level TLB misses per 1000 operations (in-process counters)",
    "walk_cycles_share": "timed phase: share of cycles spent in page walks (in-process counters)",
    "faults_per_gib": "timed phase: page faults per GiB touched (in-process counters)",
}


def counter_labels(mode) -> set[str] | None:
    """The labels a ``perf:`` or ``counters:`` setting can record (None: ``off``, nothing is recorded)."""
    if mode == "off":
        return None
    software = set(SOFTWARE_LABELS)
    if isinstance(mode, (tuple, list, dict)):
        return software | {label for label, _ in override_pairs(mode)}
    return software | {label for profile in HARDWARE_PROFILES.values() for label in profile}


def measured_columns(spec) -> dict[str, str]:
    """Column -> what it measures, for every column beyond the workload's own metrics a claim may name."""
    out = dict(_RUN_TOTALS)
    out.update(_DERIVED)
    for prefix, mode, scope in (
        ("perf", spec.perf, _PERF_SCOPE),
        (
            "pmu",
            spec.counters,
            f"timed phase '{spec.workload_def.timed_phase}': in-process counters",
        ),
    ):
        for label in sorted(counter_labels(mode) or ()):
            out[f"{prefix}.{label}"] = scope
    return out


def off_reason(column: str, spec) -> str | None:
    """Why a counter column can never be in this experiment's rows (its ``perf:``/``counters:`` is off)."""
    for prefix, key in (("perf.", "perf"), ("pmu.", "counters")):
        if column.startswith(prefix) and getattr(spec, key) == "off":
            return f"this experiment sets {key}: off, so no run records {column}"
    return None


def metric_scope(column: str, spec, known: dict[str, str]) -> str:
    """What ``column`` measures, in words a reader can hold against the published number's span."""
    if column in known:
        return known[column]
    workload = spec.workload_def
    try:
        primary = workload.report_metrics(spec.params)[0]
    except (ValueError, KeyError, TypeError):  # a bad metric: the workload's checks name it, after
        primary = workload.primary_metric
    if column == primary:
        return f"timed phase '{workload.timed_phase}' alone, the workload's primary metric"
    return "as the workload reports it"


def quantity_label(column: str, workload_labels: dict[str, str], scope: str) -> str:
    """The header of a column in the side-by-side table: the workload's label, else the counter's name and
    its span ("cycles (whole run)")."""
    if column in workload_labels:
        return workload_labels[column]
    label = column.split(".", 1)[-1]
    name = _COUNTER_NAMES.get(label, label.replace("_", " "))
    span = (
        WHOLE_RUN
        if scope.startswith(WHOLE_RUN)
        else TIMED_PHASE
        if scope.startswith(TIMED_PHASE)
        else ""
    )
    return f"{name} ({span})" if span else name
