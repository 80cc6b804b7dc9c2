"""Tables from a results store: per cell the median of each metric, a CI, and a ratio to a baseline cell.

Everything is rebuilt from the store alone: the run rows give the numbers and the sweep context gives
the axes to group by, the baseline cell and the metrics to show. A column that could not be measured on
this machine (e.g. hardware counters in a VM without a PMU) shows "n/a" with the recorded reason in a
footnote rather than silently disappearing; a cell whose runs all failed shows its status.
"""

from __future__ import annotations

import io
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from .errors import HugebenchError
from .stats import as_list, compare, describe_cell, min_runs_for, ok_rows, require_columns
from .store import load, load_contexts

FORMATS = ("rich", "markdown", "csv")
DASH = "—"


@dataclass(frozen=True)
class MetricSpec:
    """A metric column and how to show it. ``fmt`` is a format spec (".1f", ".0%") or "bytes" / "si"."""

    column: str
    label: str = ""
    fmt: str = ".3g"
    scale: float = 1.0

    @property
    def title(self) -> str:
        return self.label or self.column

    def format(self, value) -> str:
        """The value scaled and formatted; "n/a" for a missing one."""
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return "n/a"
        value = value * self.scale
        if self.fmt == "bytes":
            return format_bytes(value)
        if self.fmt == "si":
            return format_si(value)
        return format(value, self.fmt)

    def to_dict(self) -> dict:
        return asdict(self)


# Column headers of the usual axes (the article's table says "Allocator | THP | ...").
AXIS_LABELS = {"allocator": "Allocator", "thp": "THP", "thp.enabled": "THP", "thp.defrag": "THP defrag", "keys": "Keys",
               "set_kind": "Set", "threads": "Threads", "backing": "Backing", "order": "Order"}

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
        return MetricSpec(**{k: v for k, v in metric.items() if k in MetricSpec.__dataclass_fields__})
    known = {spec.column: spec for spec in KNOWN_METRICS}
    return known.get(metric, MetricSpec(metric))


def default_metrics(df: pd.DataFrame, primary: str | None = None) -> list[MetricSpec]:
    """The primary metric first, then the known metrics that ``df`` has a value or a reason for."""
    chosen = [as_metric(primary)] if primary else []
    return chosen + [m for m in KNOWN_METRICS if m.column != primary and _recorded(df, m.column)]


def _recorded(df: pd.DataFrame, column: str) -> bool:
    return any(c in df.columns and df[c].notna().any() for c in (column, f"{column}.reason"))


def build_table(df: pd.DataFrame, group_by: str | Sequence[str], metrics: Sequence,
                baseline: Mapping | None = None, primary: str | None = None, level: float = 0.95,
                n_boot: int = 2000, seed: int = 0) -> pd.DataFrame:
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
    cells = list(df.groupby(keys, dropna=False, sort=True))
    records = []
    for key, cell in cells:
        record = dict(zip(keys, key))
        record.update(_cell_metrics(cell, specs, primary, level, n_boot, seed))
        if base:
            record.update(_cell_ratio(record, cell, cells, keys, base, primary, level, n_boot, seed))
        records.append(record)
    table = pd.DataFrame.from_records(records)
    table.attrs.update(group_by=keys, metrics=specs, primary=primary, baseline=base, level=level,
                       na_reasons=_na_reasons(df, table, specs))
    return table


def render(table: pd.DataFrame, fmt: str = "rich", width: int | None = None) -> str:
    """The table as text: a rich table, GitHub markdown, or CSV (numbers unformatted, for machines).

    A rich table takes its natural width unless ``width`` (e.g. the terminal's) makes it wrap.
    """
    if fmt == "csv":
        return table.to_csv(index=False)
    if fmt not in FORMATS:
        raise HugebenchError(f"unknown report format {fmt!r}; choose one of {', '.join(FORMATS)}")
    headers, rows = _display(table)
    notes = _footer(table)
    if fmt == "markdown":
        return _markdown(table.attrs.get("title"), headers, rows, notes)
    return _rich(table.attrs.get("title"), headers, rows, notes, width)


def report(results_dir: str | os.PathLike, fmt: str = "rich", metrics: Sequence | None = None,
           group_by: Sequence[str] | None = None, baseline: Mapping | None = None, primary: str | None = None,
           level: float = 0.95) -> str:
    """Rebuild the report of a results directory from the store alone, one table per experiment.

    ``group_by``, ``baseline``, ``metrics`` and ``primary`` default to the sweep context's ``axes``,
    ``baseline``, ``metrics`` and ``primary_metric``; without ``metrics`` in the context, to the columns the
    workload registry names, else the primary metric and the :data:`KNOWN_METRICS` present in the rows.
    An argument given here wins.
    """
    df = load(results_dir)
    if df.empty:
        raise HugebenchError(f"{results_dir}: no runs recorded yet")
    contexts = load_contexts(results_dir)
    tables = []
    for experiment, rows in _by_experiment(df):
        context = _latest_context(rows, contexts)
        axes = group_by or context.get("axes")
        if not axes:
            raise HugebenchError(f"{results_dir}: no sweep context names the axes of {experiment!r}; pass group_by")
        main_metric = primary or context.get("primary_metric")
        chosen = metrics or context.get("metrics") or _workload_metrics(rows) or default_metrics(rows, main_metric)
        table = build_table(rows, axes, chosen, baseline if baseline is not None else context.get("baseline"),
                            main_metric, level)
        table = _in_spec_order(table, axes, context.get("spec", {}).get("axes", {}))
        table.attrs["title"] = f"{experiment} ({_workloads(rows)})"
        table.attrs["overhead"] = overhead_lines(rows, contexts)
        tables.append((experiment, table))
    if fmt == "csv":
        return pd.concat([t.assign(experiment=e) for e, t in tables], ignore_index=True).to_csv(index=False)
    return "\n\n".join(render(table, fmt) for _, table in tables)


def _workload_metrics(rows: pd.DataFrame) -> list[dict]:
    """The report columns this version of hugebench defines for the rows' workload (none if unknown)."""
    from .workloads import WORKLOADS

    names = rows["workload"].dropna().unique() if "workload" in rows.columns else []
    if len(names) != 1 or names[0] not in WORKLOADS:
        return []
    return [dict(zip(("column", "label", "fmt"), m)) for m in WORKLOADS[names[0]].metrics]


def _in_spec_order(table: pd.DataFrame, keys: Sequence[str], spec_axes: Mapping) -> pd.DataFrame:
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
    for sweep_id in _sweep_ids(rows):
        context = contexts.get(sweep_id, {})
        sweep_wall, worker_wall = context.get("sweep_wall_s"), context.get("worker_wall_s_sum")
        if sweep_wall is None or not worker_wall:
            summed = rows.loc[rows["sweep_id"] == sweep_id, "wall_s"].sum() if "wall_s" in rows else float("nan")
            lines.append(f"Sweep {sweep_id}: no end recorded (interrupted or running); workers ran {summed:.1f} s.")
            continue
        lines.append(f"Orchestration overhead of sweep {sweep_id}: {sweep_wall:.1f} s sweep wall / "
                     f"{worker_wall:.1f} s in workers = {sweep_wall / worker_wall:.2f}x.")
    return lines


def format_bytes(value: float) -> str:
    """Bytes in binary units: 1536 -> "1.5 KiB", 3 * 2**30 -> "3.0 GiB"."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    units = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")
    magnitude, unit = float(value), 0
    while abs(magnitude) >= 1024 and unit < len(units) - 1:
        magnitude, unit = magnitude / 1024, unit + 1
    return f"{magnitude:.0f} B" if unit == 0 else f"{magnitude:.1f} {units[unit]}"


def format_si(value: float, unit: str = "", digits: int = 3) -> str:
    """A number with an SI prefix and ``digits`` significant digits: 1234567 -> "1.23M", 0.00012 -> "120u"."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if value == 0:
        return f"0{unit}"
    prefixes = {-4: "p", -3: "n", -2: "u", -1: "m", 0: "", 1: "k", 2: "M", 3: "G", 4: "T", 5: "P"}
    exponent = min(max(int(math.floor(math.log10(abs(value)) / 3)), -4), 5)
    scaled = value / 1000.0**exponent
    if round(abs(scaled), max(digits - 1 - int(math.floor(math.log10(abs(scaled)))), 0)) >= 1000 and exponent < 5:
        exponent, scaled = exponent + 1, scaled / 1000.0
    return f"{scaled:.{digits}g}{prefixes[exponent]}{unit}"


def format_axis(value) -> str:
    """Axis values as written in a spec: 10000000 -> "10M", but never a rounded value."""
    if _missing(value):
        return DASH
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        value = int(value)
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        for exponent, prefix in ((3, "G"), (2, "M"), (1, "k")):
            base = 1000**exponent
            if abs(value) >= max(base, 10_000) and (int(value) * 100) % base == 0:
                return f"{int(value) / base:g}{prefix}"
    return str(value)


# -- building --------------------------------------------------------------------------------------


def _cell_metrics(cell, specs, primary, level, n_boot, seed) -> dict:
    summary = describe_cell(cell, primary, level, n_boot, seed)
    record = {"status": summary["status"], "n": summary["n"], "n_failed": summary["n_failed"]}
    if summary["status"] == "ok" and summary["n"] == 0:
        record["n"] = int(len(ok_rows(cell)))  # primary not measured: still say how many runs succeeded
    ok = ok_rows(cell)
    for spec in specs:
        values = pd.to_numeric(ok[spec.column], errors="coerce") if spec.column in ok else pd.Series(dtype=float)
        record[spec.column] = float(values.median()) if values.notna().any() else float("nan")
    record[f"{primary}.ci_lo"], record[f"{primary}.ci_hi"] = summary["ci_lo"], summary["ci_hi"]
    return record


def _cell_ratio(record, cell, cells, keys, base, primary, level, n_boot, seed) -> dict:
    wanted = tuple(base.get(axis, record[axis]) for axis in keys)
    is_baseline = _same_key(tuple(record[axis] for axis in keys), wanted)
    baseline_cell = next((rows for key, rows in cells if _same_key(key, wanted)), None)
    if baseline_cell is None:
        return {"is_baseline": False, "ratio": np.nan, "ratio.ci_lo": np.nan, "ratio.ci_hi": np.nan,
                "ratio.paired": False, "ratio.n": 0, "resolved": None}
    ratio = compare(cell, baseline_cell, primary, level, n_boot, seed)
    return {"is_baseline": is_baseline, "ratio": ratio.value, "ratio.ci_lo": ratio.lo, "ratio.ci_hi": ratio.hi,
            "ratio.paired": ratio.paired, "ratio.n": ratio.n, "resolved": None if is_baseline else ratio.resolved}


def _same_key(a: tuple, b: tuple) -> bool:
    return len(a) == len(b) and all(_same_value(x, y) for x, y in zip(a, b))


def _same_value(a, b) -> bool:
    """Axis values from JSON and from pandas differ in type (1000 vs 1000.0, None vs NaN)."""
    if _missing(a) or _missing(b):
        return _missing(a) and _missing(b)
    if isinstance(a, (int, float, np.number)) and isinstance(b, (int, float, np.number)):
        return float(a) == float(b)
    return str(a) == str(b)


def _missing(value) -> bool:
    try:
        return value is None or bool(pd.isna(value))
    except (TypeError, ValueError):  # a list or other container is a value, not a missing one
        return False


def _na_reasons(df: pd.DataFrame, table: pd.DataFrame, specs: Sequence[MetricSpec]) -> dict[str, str]:
    reasons = {}
    for spec in specs:
        if table[spec.column].notna().any():
            continue
        if spec.column not in df.columns:
            reasons[spec.column] = "not recorded in these runs"
            continue
        reason_column = f"{spec.column}.reason"
        found = df[reason_column].dropna().astype(str) if reason_column in df.columns else pd.Series(dtype=str)
        reasons[spec.column] = found.mode().iloc[0] if not found.empty else "no value recorded"
    return reasons


def _by_experiment(df: pd.DataFrame):
    if "experiment" not in df.columns:
        return [("results", df)]
    return [(str(name), rows) for name, rows in df.groupby(df["experiment"].fillna("?"), sort=False)]


def _sweep_ids(rows: pd.DataFrame) -> list[str]:
    return [str(s) for s in rows["sweep_id"].dropna().unique()] if "sweep_id" in rows.columns else []


def _latest_context(rows: pd.DataFrame, contexts: Mapping[str, dict]) -> dict:
    known = [contexts[s] for s in _sweep_ids(rows) if s in contexts]
    return known[-1] if known else {}


def _workloads(rows: pd.DataFrame) -> str:
    return ", ".join(map(str, rows["workload"].dropna().unique())) if "workload" in rows.columns else "?"


# -- rendering -------------------------------------------------------------------------------------


def _display(table: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    attrs = table.attrs
    keys, specs, primary = attrs["group_by"], attrs["metrics"], attrs["primary"]
    notes = {column: i + 1 for i, column in enumerate(attrs.get("na_reasons", {}))}
    show_status = (table["status"] != "ok").any() or (table["n_failed"] > 0).any()
    has_ratio = "ratio" in table.columns
    headers = [AXIS_LABELS.get(k, k) for k in keys] + ["n"] + (["status"] if show_status else [])
    headers += [spec.title + (f" [{notes[spec.column]}]" if spec.column in notes else "") for spec in specs]
    headers += ["vs baseline", "resolved"] if has_ratio else []
    rows = []
    for _, row in table.iterrows():
        failed = row["status"] != "ok"
        cells = [format_axis(row[k]) for k in keys] + [_format_n(row)]
        cells += [row["status"]] if show_status else []
        cells += [DASH if failed else _format_metric(spec, row, primary) for spec in specs]
        cells += _format_ratio(row, failed, attrs.get("level", 0.95)) if has_ratio else []
        rows.append(cells)
    return headers, rows


def _format_metric(spec: MetricSpec, row: pd.Series, primary: str) -> str:
    text = spec.format(row[spec.column])
    lo, hi = row.get(f"{primary}.ci_lo"), row.get(f"{primary}.ci_hi")
    if spec.column == primary and text != "n/a" and not pd.isna(lo):
        text += f" [{spec.format(lo)}, {spec.format(hi)}]"
    return text


def _format_ratio(row: pd.Series, failed: bool, level: float) -> list[str]:
    if row["is_baseline"]:
        return ["baseline", ""]
    if failed or pd.isna(row["ratio"]):
        return [DASH, ""]
    text = f"{row['ratio']:.3f}"
    if pd.isna(row["ratio.ci_lo"]):
        return [text, ""]
    text += f" [{row['ratio.ci_lo']:.3f}, {row['ratio.ci_hi']:.3f}]"
    verdict = {True: "yes", False: "no"}.get(row["resolved"], f"n<{min_runs_for(level)}")
    return [text, verdict]


def _format_n(row: pd.Series) -> str:
    return f"{row['n']} (+{row['n_failed']} failed)" if row["n_failed"] else str(row["n"])


def _footer(table: pd.DataFrame) -> list[str]:
    attrs = table.attrs
    specs = {spec.column: spec.title for spec in attrs["metrics"]}
    primary_label = specs.get(attrs["primary"], attrs["primary"])
    percent = f"{attrs.get('level', 0.95):.0%}"
    lines = [f"Medians over n successful runs; [lo, hi] = {percent} bootstrap CI of the median."]
    if "ratio" in table.columns:
        where = ", ".join(f"{axis}={value}" for axis, value in attrs["baseline"].items())
        lines.append(f"vs baseline: median ratio of {primary_label} to the cell with {where} (other axes equal), "
                     f"paired by repetition where possible. resolved: no = the CI contains 1, no resolved "
                     f"difference; n<{min_runs_for(attrs.get('level', 0.95))} = too few runs for a {percent} verdict.")
    for number, (column, reason) in enumerate(attrs.get("na_reasons", {}).items(), start=1):
        lines.append(f"[{number}] {specs.get(column, column)} ({column}): n/a, {reason}.")
    return lines + list(attrs.get("overhead", []))


def _markdown(title, headers, rows, notes) -> str:
    def line(cells):
        return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"

    out = [f"### {title}", ""] if title else []
    out += [line(headers), "|" + "|".join("---" for _ in headers) + "|"] + [line(r) for r in rows]
    return "\n".join(out + [""] + notes) + "\n"


def _rich(title, headers, rows, notes, width) -> str:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for header in headers:
        table.add_column(header, overflow="fold", no_wrap=width is None)
    for row in rows:
        table.add_row(*map(str, row))
    buffer = io.StringIO()
    console = Console(file=buffer, width=width or 10_000, color_system=None, force_terminal=False)
    console.print(table)
    for note in notes:
        console.print(note, markup=False, highlight=False)
    return "\n".join(line.rstrip() for line in buffer.getvalue().splitlines()) + "\n"
