"""JSON for programs (hyperfine's ``--export-json``): the report's title and every section with its kind,
experiment, notes, warnings, summary, the displayed table and the numbers behind it (records)."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd

from hugebench.report.blocks import Record, cell_text

NAME = "json"
SUFFIX = ".json"


def _plain(value):
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return None if math.isnan(value) or math.isinf(value) else float(value)
    if isinstance(value, (np.bool_,)):
        return bool(value)
    if isinstance(value, (pd.Timestamp,)):
        return value.isoformat()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if value is None or isinstance(value, (str, int, bool)):
        return value
    return str(value)


def _records(frame: pd.DataFrame | None):
    if frame is None:
        return None
    return [{str(k): _plain(v) for k, v in row.items()} for row in frame.to_dict("records")]


def section_dict(section) -> dict:
    table = section.table
    return {
        "title": section.title,
        "kind": section.kind,
        "experiment": section.experiment,
        "notes": list(section.notes),
        "warnings": [w.text for w in section.warnings],
        "summary": list(section.summary),
        "table": None
        if table is None
        else {
            "headers": [str(c) for c in table.columns],
            "rows": [[cell_text(v) for v in row] for row in table.itertuples(index=False)],
        },
        "data": _records(section.data),
    }


def export(report, width: int | None = None, color: bool = False) -> str:
    document = {
        "title": report.title,
        "sections": [section_dict(s) for s in report.sections],
        "provenance": [section_dict(s) for s in report.provenance],
    }
    return json.dumps(document, indent=1, allow_nan=False) + "\n"


def clean(obj):
    """NaN and infinity as null: the JSON stays parseable by every reader."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [clean(v) for v in obj]
    return obj


def record_text(record: Record) -> str:
    """A record's whole data (``try``: exactly what ``--json`` prints)."""
    return json.dumps(clean(record.data), default=str) + "\n"
