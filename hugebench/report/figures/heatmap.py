"""The HTML page's first screen: each experiment's cells as a heat map of the ratio to the baseline, with the
huge-page coverage beside it (issue 43). Layout only: the numbers are the main section's ``data`` (what
report.tables computed); nothing here computes a statistic.

A map's rows are the first axis (the allocator where there is one), its columns the THP axis (else the
second axis); every other varying axis (a size, threads) gives one map per value. A cell is coloured only
where its difference from the baseline is resolved and rests on no unstable cell; otherwise it is grey, its
ratio still printed.
"""

from __future__ import annotations

import math

import pandas as pd

from hugebench.knob_catalogue import THP_ENABLED
from hugebench.report.model import Section

MAX_MAPS = 8  # more maps than this (a third axis with many values): the first ones, the rest named
ROW_AXES = ("allocator",)
COLUMN_AXES = ("thp", THP_ENABLED)


def heat_maps(section: Section) -> dict | None:
    """The maps of one main section as plain values for the template, or None (no ratio to show)."""
    data = section.data
    if data is None or "ratio" not in data.columns or data["ratio"].notna().sum() == 0:
        return None
    axes = [a for a in data.attrs.get("group_by", []) if a in data.columns]
    varying = [a for a in axes if data[a].astype(str).nunique() > 1]
    if not varying:
        return None
    row_axis = next((a for a in ROW_AXES if a in varying), varying[0])
    col_axis = next((a for a in COLUMN_AXES if a in varying and a != row_axis), None)
    if col_axis is None:
        col_axis = next((a for a in varying if a != row_axis), None)
    rest = [a for a in varying if a not in (row_axis, col_axis)]
    better = data.attrs.get("better") or "lower"
    groups = list(data.groupby(rest, sort=False, dropna=False)) if rest else [((), data)]
    maps = [
        _one(frame, row_axis, col_axis, better, _title(rest, key))
        for key, frame in groups[:MAX_MAPS]
    ]
    return {
        "title": section.title,
        "anchor_title": section.title,
        "rows": row_axis,
        "columns": col_axis or "",
        "maps": maps,
        "left_out": max(0, len(groups) - MAX_MAPS),
        "better": better,
    }


def _title(rest: list[str], key) -> str:
    key = key if isinstance(key, tuple) else (key,)
    return ", ".join(f"{a}={_label(v)}" for a, v in zip(rest, key))


def _label(value) -> str:
    """An axis value as the experiment file gives it: 4, not 4.0 (a column pandas read as float)."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _one(frame: pd.DataFrame, row_axis: str, col_axis: str | None, better: str, title: str) -> dict:
    rows = list(dict.fromkeys(map(_label, frame[row_axis])))
    cols = list(dict.fromkeys(map(_label, frame[col_axis]))) if col_axis else [""]
    cells = {}
    for rec in frame.to_dict("records"):
        cells[(_label(rec[row_axis]), _label(rec[col_axis]) if col_axis else "")] = _cell(
            rec, better
        )
    grid = [[cells.get((r, c)) for c in cols] for r in rows]
    return {"title": title, "row_labels": rows, "col_labels": cols, "grid": grid}


def _cell(rec: dict, better: str) -> dict:
    """One cell: its text, colour and why it is grey."""
    ratio, cov = _num(rec.get("ratio")), _num(rec.get("hp_coverage"))
    coverage = "" if cov is None else f"{cov:.0%}"
    cov_style = "" if cov is None else f"background: rgba(40, 100, 200, {0.12 + 0.6 * cov:.2f})"
    if rec.get("is_baseline"):
        return _out("baseline", "base", "the baseline", coverage, cov_style)
    if rec.get("status") != "ok" or ratio is None:
        return _out("—", "none", f"no ratio ({rec.get('status')})", coverage, cov_style)
    unstable = isinstance(rec.get("unstable"), str)
    resolved = rec.get("resolved") is True and not unstable
    why = (
        "resolved"
        if resolved
        else "unstable"
        if unstable
        else "not resolved"
        if rec.get("resolved") is False
        else "too few runs"
    )
    text = f"{ratio:.2f}x"
    if not resolved:
        return _out(text, "grey", why, coverage, cov_style)
    gain = (1 - ratio) if better != "higher" else (ratio - 1)  # > 0: better than the baseline
    strength = min(1.0, abs(gain) / 0.5)  # a 50 % change is the deepest colour
    hue = "60, 150, 75" if gain > 0 else "200, 60, 50"
    style = f"background: rgba({hue}, {0.18 + 0.72 * strength:.2f})"
    return {
        **_out(text, "better" if gain > 0 else "worse", why, coverage, cov_style),
        "style": style,
    }


def _out(text: str, kind: str, why: str, coverage: str, cov_style: str) -> dict:
    return {
        "text": text,
        "kind": kind,
        "why": why,
        "coverage": coverage,
        "cov_style": cov_style,
        "style": "",
    }


def _num(value) -> float | None:
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None
