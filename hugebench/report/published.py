"""The published tables beside ours: an experiment's ``expected:`` claims laid out as their source printed them.

Driven by the claims alone, for any experiment: one line per configuration (a claim's cell; for a ratio, the
cell and what it is compared with) and, per published quantity (a claim's column, headed by its ``quantity``),
three columns: the published number, ours with its CI, and the verdict. Value claims make one table (the
source's table of absolute numbers), ratio, change and direction claims another. Lines keep the order the
claims are written in, which an experiment file keeps as the source's. The numbers and verdicts are those of
``verdicts.claim_verdicts``; nothing is computed here. Notes say which span each column measures (whole run or
timed phase), why a quantity is not measurable here, and the published numbers the workload cannot judge
(``expected.not_judged``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from hugebench.report.model import DASH, Section
from hugebench.report.rendering import AXIS_LABELS, display_frame, format_axis


def published_sections(
    table: pd.DataFrame, expected: Mapping, experiment: str | None, level: float, unmeasurable: str
) -> list[Section]:
    """The side-by-side tables of one experiment's claims (``table``: ``claim_verdicts`` of
    ``expected["claims"]``, one line per claim in the same order). ``unmeasurable``: the verdict whose reasons
    the notes give."""
    claims = list(expected.get("claims", ()))
    pairs = list(zip(claims, (row for _, row in table.iterrows())))
    out = []
    for kind, title in (
        ("value", "published values beside ours"),
        ("ratio", "published ratios beside ours"),
    ):
        chosen = [(c, r) for c, r in pairs if r["kind"] == kind]
        if chosen:
            out.append(
                _section(
                    chosen,
                    kind,
                    f"{experiment}: {title}" if experiment else title,
                    experiment,
                    level,
                    unmeasurable,
                )
            )
    if out:
        out[-1].notes += [
            f"Published, not judged here: {item['published']}: {item['why']}"
            for item in expected.get("not_judged", ())
        ]
    return out


def _section(
    pairs: list, kind: str, title: str, experiment: str | None, level: float, unmeasurable: str
) -> Section:
    quantities = list(dict.fromkeys(_quantity(row) for _, row in pairs))
    lines: dict[str, dict] = {}
    for claim, row in pairs:
        key = json.dumps([claim["cell"], claim.get("vs")], sort_keys=True, default=str)
        line = lines.setdefault(key, {"cell": claim["cell"], "vs": claim.get("vs"), "by": {}})
        line["by"][_quantity(row)] = row
    axes = _shown_axes([c for line in lines.values() for c in (line["cell"], line["vs"]) if c])
    headers = [AXIS_LABELS.get(axis, axis) for axis in axes] + (["vs"] if kind == "ratio" else [])
    for quantity in quantities:
        headers += [
            f"{quantity}: published",
            f"{quantity}: here [{level:.0%} CI]",
            f"{quantity}: verdict",
        ]
    body = []
    for line in lines.values():
        cells = [format_axis(line["cell"].get(axis)) for axis in axes]
        if kind == "ratio":
            cells.append(_vs_text(line["cell"], line["vs"]))
        for quantity in quantities:
            row = line["by"].get(quantity)
            cells += (
                [DASH] * 3 if row is None else [row["published"], row["measured"], row["verdict"]]
            )
        body.append(cells)
    rows = [row for _, row in pairs]
    return Section(
        title,
        display_frame(headers, body),
        _notes(rows, kind, unmeasurable),
        [],
        _summary(rows),
        data=pd.DataFrame(rows),
        experiment=experiment,
        kind="published",
    )


def _quantity(row) -> str:
    quantity = row.get("quantity")
    return quantity if isinstance(quantity, str) and quantity else str(row["metric"])


def _shown_axes(cells: Sequence[Mapping]) -> list[str]:
    """The axes whose values differ between the cells (all of them when they are all alike)."""
    axes = list(dict.fromkeys(axis for cell in cells for axis in cell))
    varying = [a for a in axes if len({json.dumps(c.get(a), default=str) for c in cells}) > 1]
    return varying or axes


def _vs_text(cell: Mapping, vs: Mapping | None) -> str:
    if not vs:
        return DASH
    differ = [format_axis(value) for axis, value in vs.items() if value != cell.get(axis)]
    return "vs " + " / ".join(differ) if differ else DASH


def _notes(rows: list, kind: str, unmeasurable: str) -> list[str]:
    spans: dict[str, tuple[Any, Any]] = {}  # quantity: (metric, scope)
    for row in rows:
        spans.setdefault(_quantity(row), (row["metric"], row.get("scope")))
    notes = [
        "Each quantity's column here and what it measures: "
        + "; ".join(
            f"{quantity} = {metric}" + (f" ({scope})" if isinstance(scope, str) else "")
            for quantity, (metric, scope) in spans.items()
        )
        + "."
    ]
    if kind == "ratio":
        notes.append(
            "A ratio is the line's cell / the cell it is compared with (vs), paired by repetition block; "
            "a change of -23% is the ratio 0.77; '< 1 (lower)' is a published direction without a number."
        )
    reasons = list(dict.fromkeys(row["why"] for row in rows if row["verdict"] == unmeasurable))
    notes += [f"{unmeasurable}: {why}" for why in reasons]
    return notes


def _summary(rows: list) -> list[str]:
    counts: dict[str, int] = {}
    for row in rows:
        counts[row["verdict"]] = counts.get(row["verdict"], 0) + 1
    return [
        f"{len(rows)} published number(s): "
        + ", ".join(f"{n} {verdict}" for verdict, n in counts.items())
    ]
