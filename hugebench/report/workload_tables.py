"""A workload's own tables, rendered from what it declares (``workloads.base.TableSection``): the workload
computes the numbers, this module shows them; no workload imports the report."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import pandas as pd

from hugebench.report.rendering import display_frame, format_axis


def declared_tables(workload, rows: pd.DataFrame, axes: Sequence[str], level: float) -> list[tuple]:
    """(title, display DataFrame of text, the numbers) of each table ``workload`` declares that has lines."""
    out = []
    for spec in getattr(workload, "tables", ()):
        table = spec.compute(rows, axes, level)
        if not table.empty:
            out.append((spec.title, declared_display(table, axes, spec, level), table))
    return out


def declared_display(table: pd.DataFrame, axes: Sequence[str], spec, level: float) -> pd.DataFrame:
    """The axes the table has (as an experiment file writes their values), then the declared columns."""
    shown = [a for a in axes if a in table.columns]
    headers = [a.replace("_", " ").capitalize() for a in shown]
    for column in spec.columns:
        headers.append(column.label.format(level=level))
        if getattr(column, "verdict", ""):
            headers.append(column.verdict_label)
    body = []
    for row in table.to_dict("records"):
        cells = [format_axis(row[a]) for a in shown]
        for column in spec.columns:
            cells.extend(
                _ratio_cells(row, column)
                if hasattr(column, "verdict")
                else [_text(row[column.column], column.fmt)]
            )
        body.append(cells)
    return display_frame(headers, body)


def _text(value, fmt: str):
    return format(value, fmt) if fmt else value


def _ratio_cells(row: Mapping, column) -> list:
    """The ratio with its CI ("base" on the base line, no CI where there is none) and the verdict beside it."""
    value, lo, hi = row[column.column], row[f"{column.column}.ci_lo"], row[f"{column.column}.ci_hi"]
    if column.base and row[column.base[0]] == row[column.base[1]]:
        ratio, verdict = "base", ""
    elif math.isnan(lo):
        ratio, verdict = format(value, column.fmt), ""
    else:
        ratio = f"{format(value, column.fmt)} [{format(lo, column.fmt)}, {format(hi, column.fmt)}]"
        verdict = (
            {True: "yes", False: "no", None: column.undecided}[row[column.verdict]]
            if column.verdict
            else ""
        )
    return [ratio, verdict] if column.verdict else [ratio]
