"""Vendor advice, judged here: an advice pack's claims (``hugebench.advice``) with their verdicts, in the
vendor's words and by the pack's preset names.

The numbers and verdicts are ``verdicts.claim_verdicts``'s, on the claims the sweep stored in its context
(``expected:``); this module only says them as advice: "holds here" (the published direction, or number,
within the CI), "contradicted here", "not resolved", "not measurable here" (why). The pack (quotes,
presets) is read from the package by the experiment's name (``advice-<pack>``); an experiment of another
name, or of a pack no longer shipped, gets the generic "expected vs observed" section instead.
"""

from __future__ import annotations

import pandas as pd

from hugebench.advice.pack import NAME_PREFIX, Pack, claim_quotes, load_pack, pack_names
from hugebench.report.model import Flag, Section
from hugebench.report.rendering import display_frame
from hugebench.report.results import Experiment
from hugebench.report.verdicts import (
    CONTRADICTED,
    DIRECTION,
    MAGNITUDE,
    NOT_MEASURABLE,
    NOT_RESOLVED,
)

HOLDS, CONTRADICTED_HERE = "holds here", "contradicted here"
SAID = {
    MAGNITUDE: HOLDS,
    DIRECTION: HOLDS,
    CONTRADICTED: CONTRADICTED_HERE,
    NOT_RESOLVED: NOT_RESOLVED,
    NOT_MEASURABLE: NOT_MEASURABLE,
}
TITLE = "Vendor advice, judged here"
# "No difference" holds only when the CI lies within this share of 1 on both sides: a CI that contains 1
# because it is wide says nothing.
NO_DIFFERENCE = 0.10


def _narrow(row) -> bool:
    return 1 - NO_DIFFERENCE <= row["ci_lo"] and row["ci_hi"] <= 1 + NO_DIFFERENCE


def pack_of(experiment: Experiment) -> Pack | None:
    """The advice pack an experiment ran (None: not an advice experiment, or its pack is not shipped)."""
    name = experiment.name or ""
    if not name.startswith(NAME_PREFIX) or name[len(NAME_PREFIX) :] not in pack_names():
        return None
    return load_pack(name[len(NAME_PREFIX) :])


def advice_sections(experiment: Experiment, results, options) -> list[Section]:
    """The pack's claims, each with its quote, the presets compared, the measured figure and the verdict."""
    from hugebench.report.verdicts import verdict_table

    pack = pack_of(experiment)
    table = verdict_table(experiment, options.level) if pack else None
    if pack is None or table is None:
        return []
    quotes: list[str | None] = list(claim_quotes(pack))
    stored = list(experiment.context["spec"]["expected"]["claims"])
    if len(quotes) != len(stored):  # the pack changed since the sweep: its claims are not these
        quotes = [None] * len(stored)
    ids = list(dict.fromkeys(q for q in quotes if q))
    body, said = [], []
    for (_, row), claim, quote in zip(table.iterrows(), stored, quotes):
        verdict = SAID.get(row["verdict"], row["verdict"])
        if verdict == HOLDS and claim.get("ratio") == 1.0 and not _narrow(row):
            verdict = NOT_RESOLVED
            row = row.copy()
            row["why"] = (
                f"the CI [{row['ci_lo']:.3f}, {row['ci_hi']:.3f}] contains 1 but is wider than "
                f"{NO_DIFFERENCE:.0%} either side: too wide to call it no difference"
            )
        said.append(verdict)
        body.append(
            [
                f"[{ids.index(quote) + 1}]" if quote else "",
                row["claim"],
                _sides(pack, claim),
                row["metric"],
                row["published"],
                row["measured"],
                row["n"],
                verdict,
                row["why"] + (f" ({row['note']})" if isinstance(row["note"], str) else ""),
            ]
        )
    headers = ["Advice", "Claim", "Presets", "Metric", "Says", "Measured [95% CI]", "n"]
    counts = pd.Series(said).value_counts()
    return [
        Section(
            f"{TITLE}: {pack.title}",
            display_frame([*headers, "Verdict", "Why"], body),
            _notes(pack, ids),
            [
                Flag(f"advice claim {r[1]}: {r[7]} ({r[8]})", in_table=True)
                for r in body
                if r[7] == CONTRADICTED_HERE
            ],
            [
                f"{len(body)} claim(s) of {pack.vendor}: "
                + ", ".join(f"{counts[v]} {v}" for v in dict.fromkeys(said))
            ],
            data=table.assign(advice=said, quote=quotes),
            experiment=experiment.name,
            kind="advice",
        )
    ]


def _sides(pack: Pack, claim) -> str:
    cell = pack.preset_of(claim["cell"]) or "?"
    rest = {k: v for k, v in claim["cell"].items() if k not in _preset_keys(pack)}
    text = cell + "".join(f", {k}={v}" for k, v in rest.items())
    if claim.get("vs"):
        text += f" vs {pack.preset_of(claim['vs']) or '?'}"
    return text


def _preset_keys(pack: Pack) -> set:
    return {k for p in pack.presets.values() for k in p.settings()}


def _notes(pack: Pack, ids: list[str]) -> list[str]:
    notes = [
        f"[{i}] {pack.quotes[q]['says']} ({pack.quotes[q]['source']})" for i, q in enumerate(ids, 1)
    ]
    notes.append(f"What is judged: {pack.judges}")
    notes += [
        f"preset {p.name}: {p.doc} (" + ", ".join(f"{k}={v}" for k, v in p.settings().items()) + ")"
        for p in pack.presets.values()
    ]
    notes += [f"not judged: {n['published']} ({n['why']})" for n in pack.not_judged]
    if pack.lab:
        notes.append(f"A lab machine would add: {pack.lab}")
    notes.append(
        "Verdicts: holds here = the CI excludes 1 on the side the vendor states (or, for 'no difference', "
        f"lies within {NO_DIFFERENCE:.0%} of 1 on both sides); contradicted here = the other side; not resolved = too few runs, a CI containing 1, "
        "an unstable cell or a failed cell; not measurable here = the runs could not record the metric "
        f"(why given). Reproduce: hugebench advice {pack.name}"
    )
    return notes
