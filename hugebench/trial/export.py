"""``try --export-json/--export-csv/--export-markdown FILE``: the verdict as a file (hyperfine's options).

json: the verdict's ``to_dict()``, exactly what ``--json`` prints. csv: one row per configuration (as-is, the best, the
others) with its class, ratio to as-is and interval, runs, memory and coverage. markdown: the full verdict
(as ``--details`` prints it) and the same table. What belongs here: the verdict as one
:class:`hugebench.report.blocks.Record`; the formats draw it (``hugebench.report.exporters``, where a new
format is added). Nothing here measures or decides.
"""

from __future__ import annotations

import math

from hugebench.report.blocks import Record
from hugebench.report.exporters import export_record
from hugebench.report.exporters.json import clean
from hugebench.trial.verdict_types import Configuration, Verdict

COLUMNS = (
    "configuration",
    "role",
    "class",
    "runs",
    "failed",
    "ratio",
    "ci_lo",
    "ci_hi",
    "pairs_or_runs",
    "peak_rss_ratio",
    "hp_coverage",
    "dropped",
)


__all__ = ["COLUMNS", "clean", "export", "record", "rows"]


def export(verdict: Verdict, fmt: str) -> str:
    """The verdict in file format ``fmt`` (json, csv or markdown: the exporters' FILE_FORMATS)."""
    return export_record(record(verdict), fmt)


def record(verdict: Verdict) -> Record:
    """The verdict as every file format draws it: the answer (as ``--details`` prints it), one row per
    configuration, and ``to_dict()`` (exactly what ``--json`` prints)."""
    from hugebench.trial.render import answer

    session = verdict.session
    intro = [f"Program: `{' '.join(session.program)}`", ""] if session and session.program else []
    plan = list(session.plan if session else verdict.plan or [])
    return Record(
        "hugebench try", intro, answer(verdict, plan), COLUMNS, rows(verdict), verdict.to_dict()
    )


def rows(verdict: Verdict) -> list[list]:
    """One row per configuration: as-is first, then the best, then the others; with --aged or --regime,
    each condition's configurations in turn."""
    each = verdict.states() or {"": verdict}
    out = []
    for one in each.values():
        roles = [("as-is", one.baseline), ("best", one.best)]
        roles += [("other", c) for c in one.others]
        out += [_row(role, c) for role, c in roles if c]
    return out


def _row(role: str, config: Configuration) -> list:
    ratio, rss = config.ratio, config.peak_rss_ratio
    return [
        config.name,
        role,
        config.kind,
        config.runs,
        config.failed,
        _num(ratio and ratio.value),
        _num(ratio and ratio.ci_lo),
        _num(ratio and ratio.ci_hi),
        ratio.n if ratio else "",
        _num(rss and rss.value),
        _num(config.hp_coverage),
        config.dropped or "",
    ]


def _num(value) -> str:
    return "" if value is None or not math.isfinite(value) else f"{value:.4g}"
