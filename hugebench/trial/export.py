"""``try --export-json/--export-csv/--export-markdown FILE``: the verdict as a file (hyperfine's options).

json: the verdict dict, exactly what ``--json`` prints. csv: one row per configuration (as-is, the best, the
others) with its class, ratio to as-is and interval, runs, memory and coverage. markdown: the full verdict
(as ``--details`` prints it) and the same table. Nothing here measures or decides.
"""

from __future__ import annotations

import csv
import io
import json
import math

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


def export(verdict: dict, fmt: str) -> str:
    """The verdict in ``fmt`` (json, csv or markdown)."""
    if fmt == "json":
        return json.dumps(clean(verdict), default=str) + "\n"
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(COLUMNS)
        writer.writerows(rows(verdict))
        return out.getvalue()
    if fmt == "markdown":
        return markdown(verdict)
    raise ValueError(f"unknown try export format {fmt!r}")


def rows(verdict: dict) -> list[list]:
    """One row per configuration: as-is first, then the best, then the others; with --aged or --regime,
    each condition's configurations in turn."""
    each = verdict.get("by_memory_state") or verdict.get("by_regime") or {"": verdict}
    out = []
    for one in each.values():
        roles = [("as-is", one.get("baseline")), ("best", one.get("best"))]
        roles += [("other", c) for c in one.get("others") or []]
        out += [_row(role, c) for role, c in roles if c]
    return out


def _row(role: str, config: dict) -> list:
    ratio = config.get("ratio") or {}
    rss = config.get("peak_rss_ratio") or {}
    return [
        config.get("name", ""),
        role,
        config.get("class", ""),
        config.get("runs", ""),
        config.get("failed", ""),
        _num(ratio.get("value")),
        _num(ratio.get("ci_lo")),
        _num(ratio.get("ci_hi")),
        ratio.get("n", ""),
        _num(rss.get("value")),
        _num(config.get("hp_coverage")),
        config.get("dropped") or "",
    ]


def _num(value) -> str:
    return "" if value is None or not math.isfinite(value) else f"{value:.4g}"


def markdown(verdict: dict) -> str:
    """The full verdict as a code block, then the configurations as a table."""
    from .render import answer

    lines = ["# hugebench try", ""]
    if verdict.get("program"):
        lines += [f"Program: `{' '.join(verdict['program'])}`", ""]
    lines += ["```", answer(verdict, verdict.get("plan") or []), "```", ""]
    lines.append("| " + " | ".join(COLUMNS) + " |")
    lines.append("|" + "---|" * len(COLUMNS))
    for row in rows(verdict):
        lines.append("| " + " | ".join(str(v).replace("|", "\\|") for v in row) + " |")
    return "\n".join(lines) + "\n"
