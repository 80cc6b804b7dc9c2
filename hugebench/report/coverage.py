"""Per-size coverage and the coverage gap in reports: which folio sizes held each cell's anonymous memory,
and, for memory not on 2 MiB pages, why (``hugebench.measure.coverage_gap``'s buckets, largest first, with
the mappings behind them and each reason's fix).

What belongs here: summarizing a cell's rows (medians per size and per reason) for the report's section
(under the main table, i.e. under its coverage column and flags) and for ``try``'s verdict. What does not:
reading the kernel (``measure.folio_coverage``) or deciding the buckets (``measure.coverage_gap``).
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from hugebench.measure.coverage_gap import FIXES, REASONS
from hugebench.measure.coverage_gap import lines as gap_lines
from hugebench.report.model import Options, Section
from hugebench.report.rendering import display_frame
from hugebench.report.results import Experiment, Results
from hugebench.stats import ok_rows

SHARE = "folio_share."
SHARE_TW = "folio_share_tw."


def _size_kb(column: str) -> int:
    return int(column.rsplit(".", 1)[1][:-2])


def folio_shares(rows: pd.DataFrame) -> dict[str, float]:
    """Median share of the anonymous memory per folio size over ``rows`` (time-weighted where the rows
    have it: a program timed to its end; else at the window's end), sizes with memory only, smallest first."""
    prefix = SHARE_TW if any(c.startswith(SHARE_TW) for c in rows.columns) else SHARE
    out = {}
    for column in sorted((c for c in rows.columns if c.startswith(prefix)), key=_size_kb):
        value = pd.to_numeric(rows[column], errors="coerce").fillna(0.0).median()
        if value > 0.005:
            out[column.rsplit(".", 1)[1]] = float(value)
    return out


def gap_summary(rows: pd.DataFrame) -> dict:
    """The median gap of ``rows`` as one row's gap columns (the mappings of its last row), for
    :func:`hugebench.measure.coverage_gap.lines`; {} when no row has a gap reading."""
    if "gap.resident_bytes" not in rows.columns or rows["gap.resident_bytes"].isna().all():
        return {}
    out: dict = {}
    for column in [f"gap.{r}_bytes" for r in REASONS] + ["gap.resident_bytes"]:
        if column in rows.columns:
            out[column] = float(pd.to_numeric(rows[column], errors="coerce").median())
    vmas = rows["gap.vmas"].dropna() if "gap.vmas" in rows.columns else pd.Series(dtype=object)
    out["gap.vmas"] = str(vmas.iloc[-1]) if len(vmas) else None
    return out


def shares_text(shares: Mapping[str, float]) -> str:
    return ", ".join(f"{size} {share:.0%}" for size, share in shares.items()) or "n/a"


def _top_reasons(summary: dict, n: int = 2) -> str:
    resident = summary.get("gap.resident_bytes") or 0
    if not resident:
        return "none"
    ranked = sorted(((r, summary.get(f"gap.{r}_bytes") or 0) for r in REASONS), key=lambda x: -x[1])
    return (
        ", ".join(f"{r} {size / resident:.0%}" for r, size in ranked[:n] if size > resident / 200)
        or "none"
    )


def coverage_sections(experiment: Experiment, results: Results, options: Options) -> list[Section]:
    """One table: per cell, the median share of each folio size and the largest reasons memory was not
    on 2 MiB pages; notes with the fix of every reason the table names."""
    rows = ok_rows(experiment.rows)
    has = [c for c in rows.columns if c.startswith((SHARE, "gap.resident_bytes"))]
    axes = [a for a in (options.group_by or experiment.axes) if a in rows.columns]
    if not has or not axes:
        return []
    table, named = [], set()
    for key, cell in rows.groupby(axes, sort=False, dropna=False):
        values = key if isinstance(key, tuple) else (key,)
        summary = gap_summary(cell)
        top = _top_reasons(summary) if summary else "n/a"
        named |= {part.split()[0] for part in top.split(", ") if part in top and part != "n/a"}
        table.append([*map(str, values), shares_text(folio_shares(cell)), top])
    notes = [f"{r}: {FIXES[r]}" for r in REASONS if r in named]
    notes.insert(
        0,
        "folio sizes: share of resident anonymous memory per folio size (pagemap + kpageflags, as "
        "root); gap: of all resident memory, the largest reasons it was not on 2 MiB pages",
    )
    return [
        Section(
            f"{experiment.name}: per-size coverage and why memory was not on huge pages",
            display_frame([*axes, "folio sizes (median)", "gap (largest reasons)"], table),
            notes,
            experiment=experiment.name,
            kind="coverage",
        )
    ]


__all__ = ["coverage_sections", "folio_shares", "gap_lines", "gap_summary", "shares_text"]
