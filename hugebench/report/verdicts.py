"""Expected vs observed: the published numbers of an experiment's ``expected:`` beside what was measured here.

Each claim gets one verdict, computed from the report's own statistics (``stats.compare`` for ratios, paired
by repetition block where possible; ``stats.describe_cell`` for a cell's median), at the report's level:

* **magnitude within the CI** — the measured interval excludes 1 on the published side (a ratio) and holds the
  published number; for a published value: the CI of the measured median holds it. Implies the direction holds.
* **direction holds** — a ratio whose interval excludes 1 on the published side but not the published number.
* **contradicted** — a ratio whose interval lies on the other side of 1; a value outside the measured CI.
* **not resolved** — a cell is missing or all its runs failed, there is no interval, fewer runs than
  ``stats.min_runs_for(level)`` (6 for 95%: no interval of a median from fewer is honest), a ratio's
  interval contains 1, or a cell is unstable by ``hugebench.stats.stability``'s rule (the why names the rule, the
  likely cause and the verdict it would otherwise have been).
* **not measurable here** — the cell's runs succeeded but none recorded the claim's column: a hardware
  counter this machine cannot count (no PMU), said with the ``<column>.reason`` the runs stored. Never a guess.

A ``direction`` claim (no published number, only lower or higher) is at best "direction holds". A ``change``
claim (percent) is the ratio 1 + change/100.

A published ratio of exactly 1 ("no difference") is within the CI when the interval contains 1 and
contradicted when it excludes it. Absolute values rarely carry over between machines; read their verdict as
"this machine matches the published figure", and the ratio's as "the published effect holds here".
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd

from hugebench.report.exporters.csv import csv_text
from hugebench.report.model import Flag, Section
from hugebench.report.outcomes import status_record
from hugebench.report.published import published_sections
from hugebench.report.rendering import display_frame, format_axis, format_si, render_section
from hugebench.report.results import Experiment
from hugebench.report.tables import same_value
from hugebench.stats import Ratio, compare, describe_cell, min_runs_for, ok_rows
from hugebench.stats.stability import cell_stability, guard

MAGNITUDE, DIRECTION, CONTRADICTED, NOT_RESOLVED, NOT_MEASURABLE = (
    "magnitude within the CI",
    "direction holds",
    "contradicted",
    "not resolved",
    "not measurable here",
)
VERDICTS = (MAGNITUDE, DIRECTION, CONTRADICTED, NOT_RESOLVED, NOT_MEASURABLE)
COLUMNS = [
    "claim",
    "kind",
    "metric",
    "published",
    "measured",
    "ci_lo",
    "ci_hi",
    "n",
    "verdict",
    "why",
    "source",
    "note",
    "published_from",
    "published_to",
    "quantity",
    "scope",
]


def ratio_verdict(published: float, ratio: Ratio) -> tuple[str, str]:
    """The verdict on a published ratio, and why, from a measured :class:`stats.Ratio`."""
    needed = min_runs_for(ratio.level)
    if math.isnan(ratio.value) or math.isnan(ratio.lo) or math.isnan(ratio.hi):
        return NOT_RESOLVED, "no interval (fewer than 2 successful runs on a side)"
    if ratio.n < needed:
        return (
            NOT_RESOLVED,
            f"n={ratio.n}: fewer than {needed} runs for a {ratio.level:.0%} verdict",
        )
    contains_one = ratio.lo <= 1.0 <= ratio.hi
    if published == 1.0:
        return (
            (MAGNITUDE, "no difference, as published")
            if contains_one
            else (CONTRADICTED, "a difference where none was published")
        )
    if contains_one:
        return NOT_RESOLVED, "the CI contains 1"
    if (ratio.lo > 1.0) != (published > 1.0):
        return CONTRADICTED, "the CI lies on the other side of 1"
    if ratio.lo <= published <= ratio.hi:
        return MAGNITUDE, "the published ratio is inside the CI"
    side = "smaller" if published < ratio.lo else "larger"
    return DIRECTION, f"same direction; the published effect is {side} than the CI"


def direction_verdict(direction: str, ratio: Ratio) -> tuple[str, str]:
    """The verdict on a published direction ("lower": cell below vs, "higher": above) from a measured ratio."""
    judged = ratio_verdict(0.5 if direction == "lower" else 2.0, ratio)
    if judged[0] in (MAGNITUDE, DIRECTION):
        return (
            DIRECTION,
            f"the CI lies {'below' if direction == 'lower' else 'above'} 1, as published",
        )
    return judged


def value_verdict(
    published: float, n: int, median: float, lo: float, hi: float, level: float = 0.95
) -> tuple[str, str]:
    """The verdict on a published value of one cell from its measured median's CI over ``n`` runs."""
    needed = min_runs_for(level)
    if n == 0:
        return NOT_RESOLVED, "no successful run"
    if math.isnan(lo) or math.isnan(hi):
        return NOT_RESOLVED, "one run: no interval"
    if n < needed:
        return NOT_RESOLVED, f"n={n}: fewer than {needed} runs for a {level:.0%} verdict"
    if lo <= published <= hi:
        return MAGNITUDE, "the published value is inside the CI"
    return CONTRADICTED, f"measured {median / published:.2f}x the published value"


def stable_verdict(judged: tuple[str, str], *stabilities) -> tuple[str, str]:
    """A verdict after the stability rule (hugebench.stats.stability.guard): one that would say something (within
    the CI, direction, contradicted) but rests on an unstable cell is "not resolved", saying why."""
    verdict, why = judged
    if verdict == NOT_RESOLVED:
        return judged
    _, unstable = guard(True, *stabilities)
    return (NOT_RESOLVED, f"{unstable} (would be: {verdict})") if unstable else judged


def claim_verdicts(
    rows: pd.DataFrame, expected: Mapping, level: float = 0.95, n_boot: int = 2000, seed: int = 0
) -> pd.DataFrame:
    """One row per claim of ``expected`` (the spec's section): published and measured numbers and the verdict.

    Pure: ``rows`` are run rows (any status; warm-ups are ignored) with the axis columns of the claims' cells.
    """
    records = []
    for claim in expected.get("claims", ()):
        metric = claim.get("metric") or expected.get("metric")
        cell_rows = _select(rows, claim["cell"])
        record = {
            "claim": claim.get("name") or _label(claim),
            "metric": metric,
            "source": claim.get("source") or expected.get("source"),
            "note": claim.get("note"),
            "quantity": claim.get("quantity") or metric,
            "scope": claim.get("scope"),
        }
        if claim.get("status"):
            vs_rows = _select(rows, claim["vs"]) if claim.get("vs") else rows.iloc[0:0]
            named = (DIRECTION, CONTRADICTED, NOT_RESOLVED)
            record.update(status_record(claim, cell_rows, vs_rows, level, named))
        elif claim.get("vs"):
            record.update(
                _ratio_record(
                    claim, cell_rows, _select(rows, claim["vs"]), metric, level, n_boot, seed
                )
            )
        else:
            record.update(_value_record(claim, cell_rows, metric, level, n_boot, seed))
        records.append(record)
    return pd.DataFrame.from_records(records, columns=COLUMNS)


def verdict_table(experiment: Experiment, level: float = 0.95) -> pd.DataFrame | None:
    """The claims of an experiment's ``expected:`` (from its sweep context) with verdicts; None without any."""
    expected = (experiment.context.get("spec") or {}).get("expected")
    if not expected or not expected.get("claims"):
        return None
    table = claim_verdicts(experiment.rows, expected, level)
    table.attrs.update(
        title=f"{experiment.name}: expected vs observed", level=level, source=expected.get("source")
    )
    return table


def verdict_sections(experiment: Experiment, results, options) -> list[Section]:
    """The claims as the source's tables beside ours (``published``), then every claim with its verdict and
    why: report sections every format renders; none without claims."""
    table = verdict_table(experiment, options.level)
    if table is None:
        return []
    expected = experiment.context["spec"]["expected"]
    return [
        *published_sections(table, expected, experiment.name, options.level, NOT_MEASURABLE),
        verdict_section(table, experiment.name),
    ]


def verdict_section(table: pd.DataFrame, experiment: str | None = None) -> Section:
    """A computed verdict table (:func:`claim_verdicts`) as a section: display text, notes, the claims not
    upheld as warnings."""
    sources = list(dict.fromkeys(s for s in table["source"] if isinstance(s, str)))
    headers = [
        "Claim",
        "Metric",
        "Published",
        f"Measured [{table.attrs.get('level', 0.95):.0%} CI]",
        "n",
        "Verdict",
        "Why",
    ]
    body = []
    for _, row in table.iterrows():
        mark = f" [{sources.index(row['source']) + 1}]" if row["source"] in sources else ""
        body.append(
            [
                f"{row['claim']}{mark}",
                row["metric"],
                row["published"],
                row["measured"],
                row["n"],
                row["verdict"],
                row["why"] + (f" ({row['note']})" if isinstance(row["note"], str) else ""),
            ]
        )
    notes = [
        "Verdicts: magnitude within the CI = the published number is inside the measured CI (for a ratio, "
        "a CI that excludes 1 on the published side); direction holds = the CI excludes 1 on the published "
        "side; contradicted = the CI lies on the other side of 1, or a value outside it; not resolved = a "
        "missing or failed cell, no CI, too few runs, or a ratio's CI containing 1; not measurable here = "
        "the runs succeeded but none recorded the claim's column (the why gives the reason they stored). "
        "Ratios are cell / vs, paired by repetition block."
    ]
    notes += [f"[{i}] {source}" for i, source in enumerate(sources, start=1)]
    counts = table["verdict"].value_counts()
    summary = [
        f"{len(table)} published claim(s): "
        + ", ".join(f"{counts[v]} {v}" for v in VERDICTS if v in counts)
    ]
    warnings = [
        Flag(f"claim {row['claim']}: {row['verdict']} ({row['why']})", in_table=True)
        for _, row in table.iterrows()
        if row["verdict"] in (CONTRADICTED, NOT_RESOLVED)
    ]
    return Section(
        table.attrs.get("title") or "expected vs observed",
        display_frame(headers, body),
        notes,
        warnings,
        summary,
        data=table,
        experiment=experiment,
        kind="verdicts",
    )


def render_verdicts(table: pd.DataFrame, fmt: str = "rich") -> str:
    """The verdict table of :func:`claim_verdicts` as text (rich or markdown); CSV gives the numbers."""
    if fmt == "csv":
        return csv_text(table)
    return render_section(verdict_section(table), fmt)


# -- helpers ---------------------------------------------------------------------------------------


def published_ratio_text(claim: Mapping) -> str:
    """A ratio claim's published side as published: '0.771 (105 -> 81)', '-23% (0.77)', '< 1 (lower)'."""
    if claim.get("direction"):
        return "< 1 (lower)" if claim["direction"] == "lower" else "> 1 (higher)"
    if claim.get("change") is not None:
        return f"{claim['change']:+g}% ({claim['ratio']:.3g})".replace("-", "−")
    text = f"{claim['ratio']:.3g}"
    if claim.get("value") and claim.get("vs_value"):
        text += f" ({claim['vs_value']:g} -> {claim['value']:g})"
    return text


def _ratio_record(claim, cell_rows, vs_rows, metric, level, n_boot, seed) -> dict:
    published = claim.get("ratio")
    missing = _missing(cell_rows, "claimed") or _missing(vs_rows, "compared-to")
    record = {
        "kind": "ratio",
        "published": published_ratio_text(claim),
        "published_from": claim.get("vs_value"),
        "published_to": claim.get("value"),
    }
    if missing:
        return {
            **record,
            "measured": "n/a",
            "ci_lo": np.nan,
            "ci_hi": np.nan,
            "n": 0,
            "verdict": NOT_RESOLVED,
            "why": missing,
        }
    unmeasured = unmeasured_reason(cell_rows, metric) or unmeasured_reason(vs_rows, metric)
    if unmeasured:
        return {
            **record,
            "measured": "n/a",
            "ci_lo": np.nan,
            "ci_hi": np.nan,
            "n": 0,
            "verdict": NOT_MEASURABLE,
            "why": unmeasured,
        }
    ratio = compare(cell_rows, vs_rows, metric, level, n_boot, seed)
    verdict, why = (
        direction_verdict(claim["direction"], ratio)
        if claim.get("direction")
        else ratio_verdict(published, ratio)
    )
    if (
        not ratio.lo <= 1.0 <= ratio.hi
    ):  # a verdict that a difference is resolved: only on stable cells
        verdict, why = stable_verdict(
            (verdict, why), cell_stability(cell_rows, metric), cell_stability(vs_rows, metric)
        )
    measured = (
        "n/a"
        if math.isnan(ratio.value)
        else f"{ratio.value:.3f}"
        + ("" if math.isnan(ratio.lo) else f" [{ratio.lo:.3f}, {ratio.hi:.3f}]")
    )
    return {
        **record,
        "measured": measured,
        "ci_lo": ratio.lo,
        "ci_hi": ratio.hi,
        "n": ratio.n,
        "verdict": verdict,
        "why": why,
    }


def _value_record(claim, cell_rows, metric, level, n_boot, seed) -> dict:
    published = claim["value"]
    record = {
        "kind": "value",
        "published": format_si(published) if published >= 1e5 else f"{published:g}",
        "published_from": None,
        "published_to": published,
    }
    missing = _missing(cell_rows, "claimed")
    if missing:
        return {
            **record,
            "measured": "n/a",
            "ci_lo": np.nan,
            "ci_hi": np.nan,
            "n": 0,
            "verdict": NOT_RESOLVED,
            "why": missing,
        }
    unmeasured = unmeasured_reason(cell_rows, metric)
    if unmeasured:
        return {
            **record,
            "measured": "n/a",
            "ci_lo": np.nan,
            "ci_hi": np.nan,
            "n": 0,
            "verdict": NOT_MEASURABLE,
            "why": unmeasured,
        }
    summary = describe_cell(cell_rows, metric, level, n_boot, seed)
    verdict, why = stable_verdict(
        value_verdict(
            published, summary["n"], summary["median"], summary["ci_lo"], summary["ci_hi"], level
        ),
        cell_stability(cell_rows, metric),
    )
    measured = (
        "n/a"
        if summary["n"] == 0
        else _number(summary["median"])
        + (
            ""
            if math.isnan(summary["ci_lo"])
            else f" [{_number(summary['ci_lo'])}, {_number(summary['ci_hi'])}]"
        )
    )
    return {
        **record,
        "measured": measured,
        "ci_lo": summary["ci_lo"],
        "ci_hi": summary["ci_hi"],
        "n": summary["n"],
        "verdict": verdict,
        "why": why,
    }


def _missing(cell_rows: pd.DataFrame, side: str) -> str | None:
    """Why a claim's cell cannot be judged at all (None when it has runs)."""
    if cell_rows.empty:
        return f"no runs of the {side} cell"
    if ok_rows(cell_rows).empty:
        return f"no successful run of the {side} cell"
    return None


def unmeasured_reason(cell_rows: pd.DataFrame, metric: str) -> str | None:
    """Why no successful run of a cell has a value of ``metric`` (None when one has): the reason the runs
    stored beside the column (``<metric>.reason``), else that the column is absent."""
    ok = ok_rows(cell_rows)
    if metric in ok.columns and pd.to_numeric(ok[metric], errors="coerce").notna().any():
        return None
    reasons = (
        ok[metric + ".reason"].dropna()
        if metric + ".reason" in ok.columns
        else pd.Series(dtype=object)
    )
    if len(reasons):
        return f"{metric}: {reasons.astype(str).mode().iloc[0]}"
    return f"no successful run recorded {metric}"


def _select(rows: pd.DataFrame, cell: Mapping) -> pd.DataFrame:
    mask = pd.Series(True, index=rows.index)
    for axis, value in cell.items():
        if axis not in rows.columns:
            return rows.iloc[0:0]
        mask &= rows[axis].map(lambda v, want=value: same_value(v, want))
    return rows[mask]


def _label(claim: Mapping) -> str:
    cell, vs = claim["cell"], claim.get("vs") or {}
    text = " ".join(f"{axis}={format_axis(value)}" for axis, value in cell.items())
    if vs:
        text += " vs " + " ".join(
            f"{axis}={format_axis(value)}"
            for axis, value in vs.items()
            if not same_value(value, cell.get(axis))
        )
    return text


def _number(value: float) -> str:
    if abs(value) >= 1e5:  # counts of a whole run: 55.5G cycles, 244M misses
        return format_si(value)
    return f"{value:.3g}" if abs(value) < 100 else f"{value:.1f}"
