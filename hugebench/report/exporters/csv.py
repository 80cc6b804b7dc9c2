"""CSV for machines: the numbers behind each experiment's main table (with its verdict column), a
comparison's or a history's, one row per cell, unformatted, with an ``experiment`` column.

THE writer of CSV text (:func:`csv_text`; ``try``'s export and the tables' ``render(fmt="csv")`` use it too):
a text value that a spreadsheet would take for a formula (it starts with ``=``, ``+``, ``-``, ``@``, a tab or
a carriage return, OWASP's list) gets a leading ``'`` (the usual rule: the cell shows the text, nothing is
evaluated); numbers, and text that is a plain number (``-1.5``), stay as they are.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Sequence

import pandas as pd

from hugebench.report.blocks import Record, rows_of
from hugebench.report.model import verdict_text

NAME = "csv"
SUFFIX = ".csv"
DATA_KINDS = ("main", "compare", "history")  # the sections whose numbers are the report's result


def with_verdicts(table: pd.DataFrame) -> pd.DataFrame:
    """A main table's numbers with a ``verdict`` column as the text table shows it ("baseline", "yes", "no",
    "unstable", "n<6"; empty where there is no ratio), so a CSV keeps the "too few runs" marker too."""
    if "ratio" not in table.columns:
        return table
    level = table.attrs.get("level", 0.95)
    verdicts = [
        "baseline"
        if r["is_baseline"]
        else ""
        if r["status"] != "ok" or pd.isna(r["ratio"]) or pd.isna(r["ratio.ci_lo"])
        else verdict_text(r, level)
        for r in rows_of(table)
    ]
    return table.assign(verdict=verdicts)


def frame(report) -> pd.DataFrame | None:
    """The report's result sections' numbers as one frame (None when it has none)."""
    frames = [
        (with_verdicts(s.data) if s.kind == "main" else s.data).assign(experiment=s.experiment)
        for s in report.sections
        if s.kind in DATA_KINDS and s.data is not None
    ]
    return pd.concat(frames, ignore_index=True) if frames else None


def export(report, width: int | None = None, color: bool = False) -> str:
    data = frame(report)
    return "" if data is None else csv_text(data)


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|[+-]?(inf|nan)", re.I)


def neutralised(value):
    """``value`` as a CSV cell may hold it: a text a spreadsheet would run as a formula behind a ``'``."""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        if not _PLAIN_NUMBER.fullmatch(value):
            return "'" + value
    return value


def csv_text(table: pd.DataFrame) -> str:
    """``table`` as CSV (no index), every text value and header :func:`neutralised`."""
    safe = table.copy()
    safe.columns = [neutralised(c) for c in table.columns]
    for i, kind in enumerate(safe.dtypes):
        if pd.api.types.is_object_dtype(kind) or pd.api.types.is_string_dtype(kind):
            safe.isetitem(i, safe.iloc[:, i].map(neutralised))
    return safe.to_csv(index=False)


def csv_rows(header: Sequence, rows: Iterable[Sequence]) -> str:
    """A header and rows as CSV, every text value :func:`neutralised` (a table that is not a frame)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for row in [header, *rows]:
        writer.writerow([neutralised(v) for v in row])
    return out.getvalue()


def frame_text(data: pd.DataFrame) -> str:
    """One table as CSV: its numbers, unformatted (for machines), every text :func:`neutralised`."""
    return csv_text(data)


def record_text(record: Record) -> str:
    """A record's table (``try``: one row per configuration)."""
    return csv_rows(record.columns, record.rows)
