"""``try --export-json/--export-csv/--export-markdown FILE``: the verdict as a file (hyperfine's options).

json: the verdict's ``to_dict()``, exactly what ``--json`` prints. csv: one row per configuration (as-is, the best, the
others) with its class, ratio to as-is and interval, runs, memory and coverage. markdown: the full verdict
(as ``--details`` prints it) and the same table. Nothing here measures or decides.
"""

from __future__ import annotations

import json
import math

from hugebench.report.exporters.csv import csv_rows
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


def clean(obj):
    """NaN and infinity as null: the JSON stays parseable by every reader."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [clean(v) for v in obj]
    return obj


def export(verdict: Verdict, fmt: str) -> str:
    """The verdict in ``fmt`` (json, csv or markdown)."""
    if fmt == "json":
        return json.dumps(clean(verdict.to_dict()), default=str) + "\n"
    if fmt == "csv":
        return csv_rows(COLUMNS, rows(verdict))
    if fmt == "markdown":
        return markdown(verdict)
    raise ValueError(f"unknown try export format {fmt!r}")


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


def markdown(verdict: Verdict) -> str:
    """The full verdict as a code block, then the configurations as a table."""
    from hugebench.trial.render import answer

    lines = ["# hugebench try", ""]
    session = verdict.session
    if session and session.program:
        lines += [f"Program: `{' '.join(session.program)}`", ""]
    plan = list(session.plan if session else verdict.plan or [])
    lines += ["```", answer(verdict, plan), "```", ""]
    lines.append("| " + " | ".join(COLUMNS) + " |")
    lines.append("|" + "---|" * len(COLUMNS))
    for row in rows(verdict):
        lines.append("| " + " | ".join(str(v).replace("|", "\\|") for v in row) + " |")
    return "\n".join(lines) + "\n"
