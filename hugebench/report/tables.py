"""Tables from run rows: per cell the median of each metric, a CI, and a ratio to a baseline cell.

A column that could not be measured on this machine (e.g. hardware counters in a VM without a PMU) keeps
the recorded reason in ``table.attrs["na_reasons"]`` rather than silently disappearing; a cell whose runs
all failed keeps its status. The void table answers alloc-test's question: allocator time minus harness
time per malloc/free pair, with the uncertainty of the difference (a bootstrap of the two medians).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from hugebench.errors import HugebenchError
from hugebench.report.blocks import rows_of
from hugebench.report.cellstats import MAX_REASON, CellFrame, failure_reason  # noqa: F401 (re-exported)
from hugebench.report.model import MetricSpec
from hugebench.report.rendering import display_frame, is_missing
from hugebench.report.results import sweep_ids
from hugebench.stats import (
    PAIR_KEYS,
    as_list,
    difference_ci,
    failed_rows,
    ok_rows,
    require_columns,
    status_ok,
)
from hugebench.stats.stability import DISTURBED, WHY, Stability, cell_stability, guard

VOID = "void"


# Metrics a report shows when neither the caller nor the sweep context names any (those present).
KNOWN_METRICS = (
    MetricSpec("ns_per_lookup", "Latency ns", ".1f"),
    MetricSpec("pmu.cycles", "Cycles", "si"),
    MetricSpec("pmu.stlb_misses", "STLB misses", "si"),
    MetricSpec("perf.cycles", "Cycles", "si"),
    MetricSpec("hp_coverage", "Huge-page coverage", ".0%"),
    MetricSpec("peak_rss_bytes", "Peak RSS", "bytes"),
    MetricSpec("minflt", "Minor faults", "si"),
)


def as_metric(metric: MetricSpec | Mapping | str) -> MetricSpec:
    """A MetricSpec from a spec, a context descriptor dict, or a column name (known label if any)."""
    if isinstance(metric, MetricSpec):
        return metric
    if isinstance(metric, Mapping):
        return MetricSpec(
            **{k: v for k, v in metric.items() if k in MetricSpec.__dataclass_fields__}
        )
    known = {spec.column: spec for spec in KNOWN_METRICS}
    return known.get(metric, MetricSpec(metric))


def default_metrics(df: pd.DataFrame, primary: str | None = None) -> list[MetricSpec]:
    """The primary metric first, then the known metrics that ``df`` has a value or a reason for."""
    chosen = [as_metric(primary)] if primary else []
    return chosen + [m for m in KNOWN_METRICS if m.column != primary and _recorded(df, m.column)]


# Numeric columns that are bookkeeping, not measurements: never offered as a primary metric.
_NOT_METRICS = ("schema_version", "repetition", "order_index")


def metric_columns(df: pd.DataFrame) -> list[str]:
    """The columns a report can take as a metric: those with at least one finite number among their values."""
    usable = []
    for column in df.columns:
        if column in _NOT_METRICS or df[column].dtype == bool:
            continue
        values = pd.to_numeric(
            df[column].map(
                lambda v: v if isinstance(v, (int, float)) and not isinstance(v, bool) else None
            ),
            errors="coerce",
        )
        if values.notna().any() and np.isfinite(values.to_numpy(float)).any():
            usable.append(str(column))
    return usable


def check_metric(df: pd.DataFrame, column: str, where: str, flag: str = "--primary") -> None:
    """A HugebenchError unless ``column`` holds numbers in ``df``; it lists the columns that do."""
    usable = metric_columns(df)
    if column in usable:
        return
    listed = ", ".join(usable[:60]) + (f" and {len(usable) - 60} more" if len(usable) > 60 else "")
    if column not in df.columns:
        problem = "no such column"
    else:
        sample = next((v for v in df[column] if not is_missing(v)), None)
        problem = f"not a numeric column (its values are like {str(sample)[:40]!r})"
    raise HugebenchError(
        f"{flag} {column!r}: {problem} in {where}; numeric columns: {listed or 'none'}"
    )


def _recorded(df: pd.DataFrame, column: str) -> bool:
    return any(c in df.columns and df[c].notna().any() for c in (column, f"{column}.reason"))


def build_table(
    df: pd.DataFrame,
    group_by: str | Sequence[str],
    metrics: Sequence,
    baseline: Mapping | None = None,
    primary: str | None = None,
    level: float = 0.95,
    n_boot: int = 2000,
    seed: int = 0,
) -> pd.DataFrame:
    """One row per cell: status, n, n_failed, the median of each metric, a CI for ``primary``, and ratios.

    Columns: the ``group_by`` axes, ``status``, ``n``, ``n_failed``, each metric column (median),
    ``<primary>.ci_lo``/``.ci_hi``; with a baseline also ``is_baseline``, ``ratio``, ``ratio.ci_lo``,
    ``ratio.ci_hi``, ``ratio.paired``, ``ratio.n`` and ``resolved`` (False where the ratio's CI contains 1;
    None where there is no CI or too few runs for a verdict, see ``stats.Ratio.resolved``). The baseline
    cell of a cell is the one with the baseline's values on the baseline axes and the cell's own values
    on the other axes; baseline axes not in ``group_by`` are ignored. ``primary`` defaults to the first
    metric and is shown first if ``metrics`` lacks it. ``table.attrs`` keeps the metrics, primary,
    baseline, level and ``na_reasons`` (metric column -> reason, for columns with no value at all).
    """
    keys = as_list(group_by)
    require_columns(df, keys)
    specs = [as_metric(m) for m in metrics]
    if not specs and not primary:
        raise HugebenchError("build_table needs at least one metric")
    if df.empty:
        raise HugebenchError("no runs to tabulate")
    primary = primary or specs[0].column
    if primary not in [spec.column for spec in specs]:
        specs.insert(0, as_metric(primary))
    base = {axis: value for axis, value in (baseline or {}).items() if axis in keys}
    narrow = df[cell_columns(df, keys, [spec.column for spec in specs])]
    cells = _Cells(narrow, keys, specs, primary)
    codes = range(
        len(cells.keys_of)
    )  # every cell described together (bit for bit the per-cell numbers)
    summaries = cells.describe_many(codes, primary, level, n_boot, seed)
    records = []
    for code, key, summary in zip(codes, cells.keys_of, summaries):
        record = dict(zip(keys, key))
        record.update(_cell_metrics(cells, code, specs, primary, summary))
        records.append(record)
    if base:
        _add_ratios(records, cells, keys, base, level, n_boot, seed)
    table = pd.DataFrame.from_records(records)
    table.attrs.update(
        group_by=keys,
        metrics=specs,
        primary=primary,
        baseline=base,
        level=level,
        na_reasons=_na_reasons(df, table, specs),
    )
    return table


# The columns that say whether and why a run failed (what failed_rows and failure_reason read).
FAILURE_COLUMNS = ("status", "error", "warmup", "run_id")


def failure_counts(rows: pd.DataFrame) -> list[tuple[str, int]]:
    """(reason, runs) of the failed measured runs (a run retried successfully is not one), commonest first."""
    if "status" not in rows.columns or status_ok(rows["status"]).all():
        return []
    failed = failed_rows(rows[[c for c in FAILURE_COLUMNS if c in rows.columns]])
    errors = failed["error"] if "error" in failed.columns else pd.Series(None, index=failed.index)
    counts: dict[str, int] = {}
    for status, error in zip(failed["status"], errors):
        reason = failure_reason({"status": status, "error": error})
        counts[reason] = counts.get(reason, 0) + 1
    return sorted(counts.items(), key=lambda item: -item[1])


def failures_text(rows: pd.DataFrame) -> str:
    """The failure reasons of a cell's runs in one line ("" if none failed): "reason (x3); other (x1)"."""
    return "; ".join(f"{reason} (x{n})" if n > 1 else reason for reason, n in failure_counts(rows))


def in_spec_order(table: pd.DataFrame, keys: Sequence[str], spec_axes: Mapping) -> pd.DataFrame:
    """Rows in the order the YAML lists each axis's values (never/madvise/always), not alphabetical."""

    def rank(column: pd.Series) -> pd.Series:
        order = {str(v): i for i, v in enumerate(spec_axes.get(column.name) or [])}
        return column.map(lambda v: order.get(str(v), len(order)))

    ordered = table.sort_values(list(keys), key=rank, kind="stable").reset_index(drop=True)
    ordered.attrs = table.attrs
    return ordered


def overhead_lines(rows: pd.DataFrame, contexts: Mapping[str, dict]) -> list[str]:
    """One line per sweep: sweep wall time over the sum of worker wall times (the orchestration cost)."""
    lines = []
    for sweep_id in sweep_ids(rows):
        context = contexts.get(sweep_id, {})
        sweep_wall, worker_wall = context.get("sweep_wall_s"), context.get("worker_wall_s_sum")
        if sweep_wall is None or not worker_wall:
            summed = (
                rows.loc[rows["sweep_id"] == sweep_id, "wall_s"].sum()
                if "wall_s" in rows
                else float("nan")
            )
            lines.append(
                f"Sweep {sweep_id}: no end recorded (interrupted or running); workers ran {summed:.1f} s."
            )
            continue
        lines.append(
            f"Orchestration overhead of sweep {sweep_id}: {sweep_wall:.1f} s sweep wall / "
            f"{worker_wall:.1f} s in workers = {sweep_wall / worker_wall:.2f}x."
        )
    return lines


def void_compensation(
    df: pd.DataFrame, axes: list[str], metric: str = "ns_per_pair", level: float = 0.95
) -> pd.DataFrame:
    """Per allocator cell: its median, the void cell's median (same other axes) and the difference with a CI."""
    rows = ok_rows(df)
    rows = rows[~rows.get("warmup", pd.Series(False, index=rows.index)).fillna(False).astype(bool)]
    others = [a for a in axes if a != "allocator" and a in rows.columns]
    void = rows[rows["allocator"] == VOID]
    records = []
    for key, cell in rows[rows["allocator"] != VOID].groupby(["allocator"] + others, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        match = void
        for axis, value in zip(others, key[1:]):
            match = match[match[axis] == value]
        a, b = cell[metric].to_numpy(float), match[metric].to_numpy(float)
        lo, hi = difference_ci(a, b, level=level)
        records.append(
            {
                **dict(zip(["allocator"] + others, key)),
                "n": len(a),
                "n_void": len(b),
                "allocator_median": np.median(a) if len(a) else np.nan,
                "void_median": np.median(b) if len(b) else np.nan,
                "difference": (np.median(a) - np.median(b)) if len(a) and len(b) else np.nan,
                "ci_lo": lo,
                "ci_hi": hi,
            }
        )
    return pd.DataFrame.from_records(records)


# -- building --------------------------------------------------------------------------------------


class _Cells(CellFrame):
    """The cells of a narrow frame (:class:`~hugebench.report.cellstats.CellFrame`, sorted by key), each
    metric's median per cell computed in one pass, each cell's stability of the primary metric computed
    once (a cell is read as itself and as other cells' baseline), and the cell of each key (by
    :func:`axis_key`, for baseline look-ups)."""

    def __init__(self, narrow: pd.DataFrame, keys: list[str], specs: Sequence[MetricSpec], primary):
        super().__init__(narrow, keys, sort=True)
        self.primary = primary
        self._stable: dict[int, Stability] = {}
        codes = np.repeat(np.arange(len(self.rows)), [len(r) for r in self.rows])
        positions = np.concatenate(self.rows) if self.rows else np.zeros(0, dtype=int)
        ok = self.ok[positions]
        columns = list(dict.fromkeys(s.column for s in specs if s.column in narrow.columns))
        numbers = pd.DataFrame({c: self.numbers(c)[positions[ok]] for c in columns})
        medians = numbers.groupby(codes[ok], sort=True).median()
        self.medians = {c: np.full(len(self.rows), np.nan) for c in columns}
        for column in columns:
            self.medians[column][medians.index.to_numpy()] = medians[column].to_numpy(float)
        self.by_key: dict[tuple, int] = {}
        for code, key in enumerate(self.keys_of):
            self.by_key.setdefault(tuple(axis_key(v) for v in key), code)

    def median(self, code: int, column: str) -> float:
        found = self.medians.get(column)
        return float("nan") if found is None else float(found[code])

    def stable(self, code: int):
        if not self._stable:  # every cell's, assessed together on first use
            codes = range(len(self.rows))
            self._stable = dict(zip(codes, self.stability_many(codes, self.primary)))
        return self._stable[code]


def _cell_metrics(cells: _Cells, code, specs, primary, summary: dict) -> dict:
    record = {"status": summary["status"], "n": summary["n"], "n_failed": summary["n_failed"]}
    if summary["status"] == "ok" and summary["n"] == 0:
        record["n"] = int(len(cells.ok_rows(code)))  # primary not measured: say how many succeeded
    for spec in specs:
        record[spec.column] = cells.median(code, spec.column)
    record[f"{primary}.ci_lo"], record[f"{primary}.ci_hi"] = summary["ci_lo"], summary["ci_hi"]
    record["failures"] = cells.failures_text(code)
    record.update(stability_columns(None, primary, cells.stable(code)))
    record["thp_overridden"] = cells.thp_overridden(code)
    return record


def thp_overridden(ok: pd.DataFrame) -> int:
    """How many of a cell's successful runs had the asked THP mode overridden by the program itself
    (``thp.overridden``: it disabled THP by prctl, hugebench.machine.thpstate)."""
    if "thp.overridden" not in ok.columns:
        return 0
    return int(ok["thp.overridden"].map(lambda v: v is True or v == 1).sum())


def cell_columns(df: pd.DataFrame, keys: Sequence[str], metrics: Sequence[str]) -> list[str]:
    """The columns per-cell statistics read: the cell's axes, the metrics, what says whether and why a run
    failed, the repetition block (pairing) and the disturbance flags (stability). Selecting them before
    grouping keeps each cell's frame narrow: a store's rows have hundreds of columns."""
    wanted = [*keys, *metrics, *FAILURE_COLUMNS, *PAIR_KEYS, DISTURBED, WHY, "thp.overridden"]
    return [c for c in dict.fromkeys(wanted) if c in df.columns]


_NO_RATIO = {
    "is_baseline": False,
    "ratio": np.nan,
    "ratio.ci_lo": np.nan,
    "ratio.ci_hi": np.nan,
    "ratio.paired": False,
    "ratio.n": 0,
    "resolved": None,
}


def _add_ratios(records, cells: _Cells, keys, base, level, n_boot, seed) -> None:
    """Each record's ratio to its baseline cell (the intervals computed together)."""
    found = []
    for code, record in enumerate(records):
        wanted = tuple(base.get(axis, record[axis]) for axis in keys)
        baseline = cells.by_key.get(tuple(axis_key(v) for v in wanted))
        if baseline is None:
            record.update(_NO_RATIO)
            continue
        found.append((code, baseline, _same_key(tuple(record[axis] for axis in keys), wanted)))
    pairs = [(code, baseline) for code, baseline, _ in found]
    ratios = cells.compare_many(pairs, cells.primary, level, n_boot, seed)
    for (code, baseline, is_baseline), ratio in zip(found, ratios):
        resolved, unstable = (
            (None, None)
            if is_baseline
            else guard(ratio.resolved, cells.stable(code), cells.stable(baseline))
        )
        records[code].update(
            {
                "is_baseline": is_baseline,
                "ratio": ratio.value,
                "ratio.ci_lo": ratio.lo,
                "ratio.ci_hi": ratio.hi,
                "ratio.paired": ratio.paired,
                "ratio.n": ratio.n,
                "resolved": resolved,
                "unstable": unstable,
            }
        )


def stability_columns(cell: pd.DataFrame, metric: str, stab=None) -> dict:
    """A cell's stability by the one rule (hugebench.stats.stability): robust spread, outliers, disturbed runs
    (``stab``: the cell's ``cell_stability`` when already computed)."""
    stab = stab if stab is not None else cell_stability(cell, metric)
    return {
        "spread": stab.spread,
        "outliers": stab.outliers,
        "disturbed": stab.disturbed,
        "stability": stab.label,
        "stability.why": stab.why,
    }


def _same_key(a: tuple, b: tuple) -> bool:
    return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))


def axis_key(value):
    """An axis value as it compares: values from JSON and from pandas differ in type (1000 vs 1000.0, None vs
    NaN, numpy bools), lists compare as text."""
    if is_missing(value):
        return None
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, float, np.number)):
        return float(value)
    return str(value)


def same_value(a, b) -> bool:
    return axis_key(a) == axis_key(b)


def _na_reasons(
    df: pd.DataFrame, table: pd.DataFrame, specs: Sequence[MetricSpec]
) -> dict[str, str]:
    reasons = {}
    for spec in specs:
        if table[spec.column].notna().any():
            continue
        if spec.column not in df.columns:
            reasons[spec.column] = (
                "not recorded in these runs"
                if not ok_rows(df).empty
                else "no run succeeded (the failure reasons are listed below the table)"
            )
            continue
        reason_column = f"{spec.column}.reason"
        found = (
            df[reason_column].dropna().astype(str)
            if reason_column in df.columns
            else pd.Series(dtype=str)
        )
        reasons[spec.column] = found.mode().iloc[0] if not found.empty else "no value recorded"
    return reasons


# -- ratio tables (declared in a workload's registry entry) ----------------------------------------


def ratio_table(
    df: pd.DataFrame,
    axes: Sequence[str],
    baseline: Mapping | None,
    spec,
    level: float = 0.95,
    n_boot: int = 2000,
    seed: int = 0,
) -> pd.DataFrame:
    """One row per cell: each of ``spec.columns`` as a ratio to the baseline cell (``<col>``, ``.ci_lo``,
    ``.ci_hi``, ``.resolved``) and ``flag``: True where both ``spec.flag`` ratios are above 1 (their CIs are in
    the ``.resolved`` columns)."""
    keys = as_list(axes)
    base = {axis: value for axis, value in (baseline or {}).items() if axis in keys}
    columns = [column for column, _ in spec.columns]
    narrow = df[
        [c for c in dict.fromkeys([*keys, *columns, *FAILURE_COLUMNS, *PAIR_KEYS]) if c in df]
    ]
    cells = CellFrame(ok_rows(narrow), keys, sort=True)
    by_key: dict[tuple, int] = {}
    for code, key in enumerate(cells.keys_of):
        by_key.setdefault(tuple(axis_key(v) for v in key), code)
    present = {c: cells.frame[c].notna().to_numpy() for c in columns if c in cells.frame.columns}
    records = [dict(zip(keys, key)) for key in cells.keys_of]
    bases = [by_key.get(tuple(axis_key(base.get(a, r[a])) for a in keys)) for r in records]
    for column in columns:
        which = [
            code
            for code, found in enumerate(bases)
            if found is not None and column in present and present[column][cells.rows[code]].any()
        ]
        pairs = [(code, bases[code]) for code in which]
        ratios = dict(zip(which, cells.compare_many(pairs, column, level, n_boot, seed)))
        for code, record in enumerate(records):
            ratio = ratios.get(code)
            record[column] = ratio.value if ratio else np.nan
            record[f"{column}.ci_lo"], record[f"{column}.ci_hi"] = (
                (ratio.lo, ratio.hi) if ratio else (np.nan, np.nan)
            )
            record[f"{column}.resolved"] = ratio.resolved if ratio else None
    cost, gain = spec.flag or ("", "")
    for record in records:
        record["flag"] = bool(
            cost and record.get(cost, np.nan) > 1 and record.get(gain, np.nan) > 1
        )
    return pd.DataFrame.from_records(records)


def ratio_display(table: pd.DataFrame, axes: Sequence[str], spec) -> pd.DataFrame:
    """The ratio table as display text: the axes, then "ratio [lo, hi]" per column, then the flag."""
    head = [*axes, *(label for _, label in spec.columns), spec.flag_label]
    body = []
    for row in rows_of(table):
        cells = [str(row[a]) for a in axes]
        for column, _ in spec.columns:
            value, lo, hi = row[column], row[f"{column}.ci_lo"], row[f"{column}.ci_hi"]
            text = "n/a" if is_missing(value) else f"{value:.2f}"
            cells.append(text if is_missing(lo) else f"{text} [{lo:.2f}, {hi:.2f}]")
        cells.append("yes" if row["flag"] else "")
        body.append(cells)
    return display_frame(head, body)


def render_ratio_table(table: pd.DataFrame, axes: Sequence[str], spec) -> str:
    """Markdown: the axes, then "ratio [lo, hi]" per column, then the flag."""
    shown = ratio_display(table, axes, spec)
    lines = [
        f"{spec.title}",
        "",
        "| " + " | ".join(map(str, shown.columns)) + " |",
        "|" + "---|" * len(shown.columns),
    ]
    lines += [
        "| " + " | ".join([*row[:-1], "**yes**" if row[-1] else ""]) + " |"
        for row in shown.itertuples(index=False)
    ]
    return "\n".join(lines)
