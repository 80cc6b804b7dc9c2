"""The aged-machine section: per configuration, how much of its fresh-machine gain survives aging.

Shown for an experiment with a ``memory_state`` axis holding ``fresh`` and a fragmented level
(``hugebench.system.aging``). For every cell but the baseline, paired by the other axes: the primary metric's
median and the huge-page coverage in each state, the gain over the baseline measured in the same state
(``glibc`` with THP ``never`` in the shipped experiments: small pages do not care about fragmentation), and
the share of the fresh gain that the fragmented machine keeps (gain fragmented / gain fresh). Without a
baseline the gain is not defined and only the medians and coverage are shown.

What does not belong here: how a state is made or verified (``system.aging``), the main table.
"""

from __future__ import annotations

import math

import pandas as pd

from hugebench.report.model import Section
from hugebench.report.rendering import cell_text, display_frame
from hugebench.stats import ok_rows

AXIS = "memory_state"
FRESH = "fresh"
COVERAGE = "hp_coverage"


def aging_sections(experiment, results, options) -> list[Section]:
    """The section, or nothing when the experiment does not compare fresh with fragmented."""
    rows = ok_rows(experiment.rows)
    if AXIS not in experiment.axes or AXIS not in rows.columns:
        return []
    states = list(dict.fromkeys(rows[AXIS].dropna()))
    aged = [s for s in states if s != FRESH]
    primary = options.primary or experiment.primary_metric
    if FRESH not in states or not aged or primary not in rows.columns:
        return []
    lower = experiment.context.get("primary_better", "lower") != "higher"
    keys = [a for a in experiment.axes if a != AXIS and a in rows.columns]
    table = _table(rows, keys, primary, aged, experiment.baseline or {}, lower)
    headers = [
        *keys,
        "fragmented as",
        f"{primary} fresh",
        "fragmented",
        "coverage fresh",
        "fragmented",
        "gain fresh",
        "gain fragmented",
        "gain kept",
    ]
    body = [
        [
            *(r[k] for k in keys),
            r["state"],
            cell_text(r["fresh"]),
            cell_text(r["aged"]),
            _pct(r["cov_fresh"]),
            _pct(r["cov_aged"]),
            _signed(r["gain_fresh"]),
            _signed(r["gain_aged"]),
            _pct(r["kept"]),
        ]
        for _, r in table.iterrows()
    ]
    notes = [
        f"gain: over the baseline {experiment.baseline} measured in the same memory state "
        f"({'lower' if lower else 'higher'} {primary} is better); gain kept = gain fragmented / gain fresh "
        "(shown when the fresh gain is positive). Coverage: share of RSS on huge pages (hp_coverage)."
    ]
    if not experiment.baseline:
        notes = [
            "no baseline in the experiment, so no gains: add baseline: {allocator: glibc, thp: never}"
        ]
    return [
        Section(
            "Aged machine: what survives fragmentation",
            display_frame(headers, body),
            notes,
            summary=_summary(table, keys),
            data=table,
            experiment=experiment.name,
            kind="aging",
        )
    ]


def _table(
    rows: pd.DataFrame, keys: list[str], primary: str, aged: list[str], baseline: dict, lower: bool
) -> pd.DataFrame:
    cov = rows[COVERAGE] if COVERAGE in rows.columns else pd.Series(math.nan, index=rows.index)
    frame = rows.assign(
        _cov=pd.to_numeric(cov, errors="coerce"), _m=pd.to_numeric(rows[primary], errors="coerce")
    )
    medians = frame.groupby([*keys, AXIS], dropna=False)[["_m", "_cov"]].median()
    out = []
    for cell in {tuple(idx[:-1]) for idx in medians.index}:
        named = dict(zip(keys, cell))
        if baseline and all(named.get(k) == v for k, v in baseline.items()):
            continue
        for state in aged:
            fresh = _at(medians, cell, FRESH)
            frag = _at(medians, cell, state)
            if fresh is None or frag is None:
                continue
            gains = [
                _gain(value["_m"], _baseline(medians, keys, named, baseline, which), lower)
                for value, which in ((fresh, FRESH), (frag, state))
            ]
            kept = (
                gains[1] / gains[0]
                if gains[0] and gains[0] > 0 and not math.isnan(gains[1])
                else math.nan
            )
            out.append(
                {
                    **named,
                    "state": state,
                    "fresh": fresh["_m"],
                    "aged": frag["_m"],
                    "cov_fresh": fresh["_cov"],
                    "cov_aged": frag["_cov"],
                    "gain_fresh": gains[0],
                    "gain_aged": gains[1],
                    "kept": kept,
                }
            )
    table = pd.DataFrame(
        out,
        columns=[
            *keys,
            "state",
            "fresh",
            "aged",
            "cov_fresh",
            "cov_aged",
            "gain_fresh",
            "gain_aged",
            "kept",
        ],
    )
    return table.sort_values([*keys, "state"], key=lambda s: s.astype(str)).reset_index(drop=True)


def _at(medians: pd.DataFrame, cell: tuple, state: str):
    try:
        key = (*cell, state)  # (mypy reads a starred tuple inside [] as 3.11's bare star syntax)
        return medians.loc[key]
    except KeyError:
        return None


def _baseline(
    medians: pd.DataFrame, keys: list[str], named: dict, baseline: dict, state: str
) -> float:
    """The baseline's median in ``state``: the baseline's own values, the cell's for every other axis (the
    defrag mode, the size), pooled over an axis the baseline has no cell of."""
    if not baseline:
        return math.nan
    frame = medians.reset_index()
    frame = frame[frame[AXIS] == state]
    for key in keys:
        wanted = baseline.get(key, named.get(key))
        if (frame[key] == wanted).any():
            frame = frame[frame[key] == wanted]
    return float(frame["_m"].median()) if len(frame) else math.nan


def _gain(value: float, base: float, lower: bool) -> float:
    if not value or not base or math.isnan(value) or math.isnan(base):
        return math.nan
    return base / value - 1 if lower else value / base - 1


def _pct(value) -> str:
    return (
        "—" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.0%}"
    )


def _signed(value) -> str:
    return "—" if value is None or math.isnan(value) else f"{value:+.1%}"


def _summary(table: pd.DataFrame, keys: list[str]) -> list[str]:
    lines = []
    for _, r in table.dropna(subset=["kept"]).iterrows():
        where = ", ".join(f"{k}={r[k]}" for k in keys)
        lines.append(
            f"{where}: keeps {r['kept']:.0%} of its fresh gain on a {r['state']} machine "
            f"({_signed(r['gain_fresh'])} -> {_signed(r['gain_aged'])}); coverage "
            f"{_pct(r['cov_fresh'])} -> {_pct(r['cov_aged'])}"
        )
    return lines
