"""CSV for machines: the numbers behind each experiment's main table (with its verdict column), a
comparison's or a history's, one row per cell, unformatted, with an ``experiment`` column."""

from __future__ import annotations

import csv
import io

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
    return "" if data is None else data.to_csv(index=False)


def frame_text(data: pd.DataFrame) -> str:
    """One table as CSV: its numbers, unformatted (for machines)."""
    return data.to_csv(index=False)


def record_text(record: Record) -> str:
    """A record's table (``try``: one row per configuration)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(record.columns)
    writer.writerows(record.rows)
    return out.getvalue()
