"""Text from tables: a rich table, GitHub markdown or CSV, with value formats and footnotes.

Tables come from :mod:`.tables` with their metrics, primary metric, baseline and n/a reasons in
``table.attrs``; nothing here computes a statistic or reads the store.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from hugebench.report.blocks import Block, cell_text, is_missing, rows_of, section_block
from hugebench.report.exporters import FORMATS, text_exporter
from hugebench.report.exporters.csv import csv_text, with_verdicts
from hugebench.report.exporters.markdown import markdown_text
from hugebench.report.model import DASH, MetricSpec, format_bytes, format_si, verdict_text
from hugebench.stats import min_runs_for

# re-exported: the names callers import from here
__all__ = [
    "DASH",
    "FORMATS",
    "AXIS_LABELS",
    "MetricSpec",
    "cell_text",
    "display_frame",
    "format_axis",
    "format_bytes",
    "format_si",
    "is_missing",
    "markdown_text",
    "render",
    "render_section",
    "render_sections",
    "render_void",
    "table_text",
    "verdict",
    "void_text",
    "with_verdicts",
]

# Column headers of the usual axes (the article's table says "Allocator | THP | ...").
AXIS_LABELS = {
    "allocator": "Allocator",
    "thp": "THP",
    "thp.enabled": "THP",
    "thp.defrag": "THP defrag",
    "keys": "Keys",
    "set_kind": "Set",
    "threads": "Threads",
    "backing": "Backing",
    "order": "Order",
}


def format_axis(value) -> str:
    """Axis values as written in a spec: 10000000 -> "10M", but never a rounded value."""
    if is_missing(value):
        return DASH
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        value = int(value)
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        for exponent, prefix in ((3, "G"), (2, "M"), (1, "k")):
            base = 1000**exponent
            if abs(value) >= max(base, 10_000) and (int(value) * 100) % base == 0:
                return _exact(int(value), base) + prefix
    return str(value)


def _exact(value: int, base: int) -> str:
    """``value / base`` written exactly (``value * 100`` is a multiple of ``base``): 12345670 / 1000 is
    "12345.67", never a 6-digit float rounding ("12345.7") that another value shares."""
    whole, hundredths = divmod(abs(value) * 100 // base, 100)
    text = f"{whole}.{hundredths:02d}".rstrip("0").rstrip(".")
    return f"-{text}" if value < 0 else text


def verdict(resolved) -> str | None:
    """ "yes", "no" or None (no verdict) of a ``resolved`` value as tables hold it (bool, numpy bool, None, NaN)."""
    return {True: "yes", False: "no"}.get(resolved) if not is_missing(resolved) else None


def render(table: pd.DataFrame, fmt: str = "rich", width: int | None = None) -> str:
    """The table as text: a rich table, GitHub markdown, or CSV (numbers unformatted, for machines).

    A rich table takes its natural width unless ``width`` (e.g. the terminal's) makes it wrap.
    """
    if fmt == "csv":
        return csv_text(table)
    headers, rows, notes = table_text(table)
    return text_exporter(fmt).block_text(
        Block(table.attrs.get("title"), headers, rows, notes), width
    )


def table_text(table: pd.DataFrame) -> tuple[list[str], list[list[str]], list[str]]:
    """(headers, rows of cell text, footnotes) of a table from :func:`.tables.build_table`."""
    headers, rows = _display(table)
    return headers, rows, _footer(table)


def render_void(table: pd.DataFrame, fmt: str = "rich", unit: str = "ns/pair") -> str:
    """The compensation table as text (rich or markdown); CSV gives the numbers."""
    if table.empty:
        return ""
    if fmt == "csv":
        return csv_text(table)
    return text_exporter(fmt).block_text(Block(*void_text(table, unit)))


def void_text(
    table: pd.DataFrame, unit: str = "ns/pair"
) -> tuple[str, list[str], list[list[str]], list[str]]:
    """(title, headers, rows, notes) of a compensation table from :func:`.tables.void_compensation`."""
    axes = [
        c
        for c in table.columns
        if c
        not in ("n", "n_void", "allocator_median", "void_median", "difference", "ci_lo", "ci_hi")
    ]
    headers = [AXIS_LABELS.get(a, a) for a in axes] + [
        "n",
        f"allocator {unit}",
        f"void {unit}",
        f"allocator - void {unit} [95% CI]",
    ]
    body = []
    for r in rows_of(table):
        ci = "" if np.isnan(r["ci_lo"]) else f" [{r['ci_lo']:.1f}, {r['ci_hi']:.1f}]"
        body.append(
            [format_axis(r[a]) for a in axes]
            + [
                f"{r['n']}/{r['n_void']}",
                f"{r['allocator_median']:.1f}",
                f"{r['void_median']:.1f}",
                f"{r['difference']:.1f}{ci}",
            ]
        )
    whole = unit == "ms/Mop"
    notes = [
        "Void allocator: the same loop (slot choice, sizes, memset and read-back) against a pre-touched "
        "buffer; the difference is the allocator's own cost per malloc/free pair."
        if not whole
        else "The original alloc-test's figure: the whole run (thread start, fill, loop, free-all, join) in ms per "
        "million operations, minus the same for the void allocator (here a separate process)."
    ]
    title = "Allocator cost net of the harness" + (
        " (whole run, alloc-test's unit)" if whole else ""
    )
    return title, headers, body, notes


def render_section(
    section, fmt: str = "rich", width: int | None = None, color: bool = False
) -> str:
    """One :class:`.sections.Section` as rich or markdown text: title, table, notes, the warnings the table
    does not already show, and under an experiment's main table the summary in words (the HTML page's)."""
    return text_exporter(fmt).block_text(section_block(section), width, color)


def render_sections(
    sections, fmt: str = "rich", width: int | None = None, color: bool = False
) -> str:
    """Sections one after the other, a blank line between them. ``width``: fit a terminal that wide (see
    :func:`terminal`); ``color``: rich text with ANSI colours (click strips them when output is piped)."""
    return "\n\n".join(render_section(s, fmt, width, color) for s in sections)


def display_frame(headers, rows) -> pd.DataFrame:
    """A table of display text (headers may repeat, e.g. two counters both called "Cycles")."""
    frame = pd.DataFrame(
        [list(map(str, r)) for r in rows], columns=range(len(headers)), dtype=object
    )
    frame.columns = list(headers)
    return frame


# -- helpers -------------------------------------------------------------------------------------


def _display(table: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    attrs = table.attrs
    keys, specs, primary = attrs["group_by"], attrs["metrics"], attrs["primary"]
    notes = {column: i + 1 for i, column in enumerate(attrs.get("na_reasons", {}))}
    show_status = (table["status"] != "ok").any() or (table["n_failed"] > 0).any()
    has_ratio = "ratio" in table.columns
    headers = [AXIS_LABELS.get(k, k) for k in keys] + ["n"] + (["status"] if show_status else [])
    headers += [
        spec.title + (f" [{notes[spec.column]}]" if spec.column in notes else "") for spec in specs
    ]
    headers += ["vs baseline", "resolved"] if has_ratio else []
    rows = []
    for row in rows_of(table):
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
    return [text, verdict_text(row, level)]


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
        lines.append(
            f"vs baseline: median ratio of {primary_label} to the cell with {where} (other axes equal), "
            f"paired by repetition where possible. resolved: no = the CI contains 1, no resolved "
            f"difference; n<{min_runs_for(attrs.get('level', 0.95))} = too few runs for a {percent} verdict."
        )
        if attrs.get("better"):
            gain = "< 1" if attrs["better"] == "lower" else "> 1"
            lines.append(
                f"{primary_label}: {attrs['better']} is better, so a ratio {gain} is an improvement."
            )
    for number, (column, reason) in enumerate(attrs.get("na_reasons", {}).items(), start=1):
        lines.append(f"[{number}] {specs.get(column, column)} ({column}): n/a, {reason}.")
    return lines + list(attrs.get("overhead", []))
