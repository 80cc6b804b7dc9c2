"""Counter results as row columns, and the per-operation metrics derived from them.

Two sources share one shape: ``perf.<label>`` columns from the whole-process ``perf stat`` wrapper and
``pmu.<label>`` columns from the in-process counters ``_core`` enables around the timed phase only.
Each label gives a value (NaN when unmeasured), a reason (None when measured) and the running percentage;
``<prefix>_scope`` says whether the kernel's share was counted (not when perf_event_paranoid forbids it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

NOT_COUNTED_REASON = (
    "not counted: the counter never ran (more events than PMU counters in a group, "
    "or a hybrid core type the task never ran on)"
)


@dataclass(frozen=True)
class Counter:
    """One counter's result. ``value`` is None when unmeasured, with ``reason`` saying why.

    ``running_pct`` < 100 means perf multiplexed the counter and ``value`` is perf's scaled estimate
    (raw count x enabled / running). Times perf prints in msec are converted to ns. ``user_only``: counted in
    user space only (perf's ``:u``; the kernel's perf_event_paranoid forbids more to this user).
    """

    value: float | None
    unit: str = ""
    running_pct: float | None = None
    multiplexed: bool = False
    reason: str | None = None
    variance_pct: float | None = None
    rows: int = 1
    user_only: bool = False


def counter_from_inprocess(result: dict) -> Counter:
    """Convert one ``_core`` counter result {value, raw_value, time_enabled_ns, time_running_ns, error}."""
    error = result.get("error")
    enabled, running = result.get("time_enabled_ns") or 0, result.get("time_running_ns") or 0
    pct = 100.0 * running / enabled if enabled else None
    if error:
        return Counter(None, running_pct=pct, reason=str(error))
    if enabled and not running:
        return Counter(None, running_pct=0.0, reason=NOT_COUNTED_REASON)
    value = result.get("value")
    return Counter(
        None if value is None else float(value),
        running_pct=pct,
        multiplexed=pct is not None and pct < 100.0,
        reason=None if value is not None else "no value returned",
        user_only=bool(result.get("user_only")),
    )


def row_columns(prefix: str, counters: dict) -> dict:
    """Flatten {label: Counter or _core result dict} into ``<prefix>.<label>`` (value or NaN),
    ``<prefix>.<label>.reason`` (None when measured) and ``<prefix>.<label>.running_pct`` columns.
    Use prefix "perf" for whole-process ``perf stat`` counts and "pmu" for in-process timed-phase counts."""
    prefix = prefix.rstrip(".")
    row: dict = {}
    for label, counter in counters.items():
        if not isinstance(counter, Counter):
            counter = counter_from_inprocess(counter)
        key = f"{prefix}.{label}"
        row[key] = math.nan if counter.value is None else counter.value
        row[key + ".reason"] = counter.reason
        row[key + ".running_pct"] = math.nan if counter.running_pct is None else counter.running_pct
    row[f"{prefix}_scope"] = counting_scope(counters.values())
    return row


def counting_scope(counters) -> str | None:
    """What the measured counters counted: "user" (user space only: perf_event_paranoid forbids this user
    the kernel's share; page faults still count, CPU time and events in the kernel do not), "user+kernel",
    or None when nothing was counted. Goes in the row as ``<prefix>_scope`` (``perf_scope``, ``pmu_scope``)."""
    measured = [c if isinstance(c, Counter) else counter_from_inprocess(c) for c in counters]
    measured = [c for c in measured if c.value is not None]
    if not measured:
        return None
    return "user" if any(c.user_only for c in measured) else "user+kernel"


def pmu_columns(resolved, results: dict | None, prefix: str = "pmu") -> dict:
    """``pmu.*`` columns for every label, including those ``resolve_counters`` could not encode.

    ``resolved``: the ``CounterSpec`` list from ``encoding.resolve_counters``; ``results``: the ``counters``
    dict a ``_core`` workload returned. A label left out of the counters still gets a NaN and its reason.
    """
    results = results or {}
    merged: dict = {}
    for spec in resolved:
        if spec.reason is not None:
            merged[spec.label] = Counter(None, reason=spec.reason)
        elif spec.label in results:
            merged[spec.label] = results[spec.label]
        else:
            merged[spec.label] = Counter(
                None, reason="the workload returned no result for this counter"
            )
    return row_columns(prefix, merged)


def _num(row: dict, key: str) -> float:
    raw = row.get(key)
    if raw is None:
        return math.nan
    try:
        value = float(raw)
    except (TypeError, ValueError):
        return math.nan
    return value if math.isfinite(value) else math.nan


def _ratio(numerator: float, denominator: float, scale: float = 1.0) -> float:
    if math.isnan(numerator) or math.isnan(denominator) or denominator <= 0:
        return math.nan
    return scale * numerator / denominator


def derive(
    row: dict,
    ops: float,
    bytes_touched: float,
    *,
    elapsed_ns: float | None = None,
    source: str = "pmu",
) -> dict[str, float]:
    """Per-operation metrics from one row's counters (NaN where an input is missing).

    ``source`` picks the counter columns: "pmu" (in-process, timed phase only: the right denominator for
    ``ops``) or "perf" (whole process, setup included: only meaningful when ``ops`` covers the whole run).
    ``elapsed_ns`` defaults to the row's ``elapsed_ns`` column. Faults per GiB use the source's page_faults.
    """
    src = source.rstrip(".")
    cycles = _num(row, f"{src}.cycles")
    elapsed = _num({"e": elapsed_ns}, "e") if elapsed_ns is not None else _num(row, "elapsed_ns")
    faults = _num(row, f"{src}.page_faults")
    if math.isnan(faults):
        faults = _num(row, f"{src}.minor_faults") + _num(row, f"{src}.major_faults")
    return {
        "ns_per_op": _ratio(elapsed, ops),
        "cycles_per_op": _ratio(cycles, ops),
        "stlb_misses_per_1k_ops": _ratio(_num(row, f"{src}.stlb_misses"), ops, 1000.0),
        "walk_cycles_share": _ratio(_num(row, f"{src}.walk_cycles"), cycles),
        "faults_per_gib": _ratio(faults, bytes_touched, float(1 << 30)),
    }
