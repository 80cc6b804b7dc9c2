"""Two results directories side by side: matching cells, each side's median and CI, and the B/A ratio.

Two stores are two machines, two versions of an allocator, or before and after a kernel upgrade. A cell of
A matches a cell of B when the experiment name, every axis value and every fixed workload parameter
(``param.*``) are equal. The runs of the two sides were not interleaved, so the ratio's CI resamples each
side on its own (no pairing by repetition block). What one side has and the other lacks is listed, and so is
every fact of the machine context that differs. The result is a :class:`.sections.Report`, rendered like
any other report (terminal, markdown, HTML).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from hugebench.errors import HugebenchError
from hugebench.report import shift
from hugebench.report.blocks import rows_of
from hugebench.report.cellstats import Cell, cells_by_key, described
from hugebench.report.provenance import machine_facts, provenance_sections
from hugebench.report.rendering import DASH, display_frame, format_axis
from hugebench.report.results import Experiment, Results, sweep_ids
from hugebench.report.sections import (
    Flag,
    Report,
    Section,
    failure_flags,
    listing,
    varying_axes,
    verdict,
)
from hugebench.report.tables import as_metric, axis_key, cell_columns, check_metric, in_spec_order
from hugebench.stats import Ratio, min_runs_for, ratio_cis
from hugebench.stats.stability import guard

NO_MATCH = "No cell matches between A and B."


def compare_report(
    a: Results, b: Results, primary: str | None = None, level: float = 0.95, figures: bool = False
) -> Report:
    """The comparison of ``b`` against ``a``: one section per experiment both have, the unmatched cells,
    and the machine facts that differ."""
    if a.rows.empty or b.rows.empty:
        raise HugebenchError(f"{a.path if a.rows.empty else b.path}: no runs recorded yet")
    if primary is not None:
        for side in (a, b):
            check_metric(side.rows, primary, str(side.path))
    a_exps = {e.name: e for e in a.experiments()}
    b_exps = {e.name: e for e in b.experiments()}
    sections, unmatched = [], []
    for name in [n for n in a_exps if n in b_exps]:
        section, lonely = _experiment_section(a_exps[name], b_exps[name], primary, level, figures)
        sections.append(section)
        unmatched += lonely
    for label, mine, other in (("A", a_exps, b_exps), ("B", b_exps, a_exps)):
        unmatched += [[label, name, "(the whole experiment)"] for name in mine if name not in other]
    sections.append(
        _summary_section(sections)
    )  # after the tables it sums up, before what did not match
    sections.append(_unmatched_section(unmatched))
    sections.append(_context_section(a, b))
    provenance = [_labelled(s, "A") for s in provenance_sections(a)] + [
        _labelled(s, "B") for s in provenance_sections(b)
    ]
    return Report(f"hugebench compare: A = {a.path}, B = {b.path}", sections, provenance)


def cell_keys(a: Experiment, b: Experiment) -> list[str]:
    """The columns that identify a cell on both sides: the axes, then the fixed parameters both recorded."""
    axes = list(dict.fromkeys(a.axes + b.axes))
    axes = [k for k in axes if k in a.rows.columns and k in b.rows.columns]
    params = sorted(
        c
        for c in set(a.rows.columns) & set(b.rows.columns)
        if c.startswith("param.")
        and c.removeprefix("param.") not in axes
        and not _has_containers(a.rows[c])
        and not _has_containers(b.rows[c])
    )
    return axes + params


def _has_containers(values: pd.Series) -> bool:
    """A parameter holding lists or mappings (a command's argv) cannot key a cell; the fingerprint of
    what changed between the stores still shows it."""
    return any(isinstance(v, (list, dict)) for v in values)


def _experiment_section(
    a: Experiment, b: Experiment, primary, level, figures
) -> tuple[Section, list]:
    keys = cell_keys(a, b)
    if not keys:
        raise HugebenchError(f"experiment {a.name!r}: no axis names its cells on both sides")
    metric = primary or a.primary_metric or b.primary_metric
    if metric is None:
        raise HugebenchError(f"experiment {a.name!r}: no primary metric recorded; pass --primary")
    a_cells, b_cells = _cells(a.rows, keys, metric), _cells(b.rows, keys, metric)
    bases = (_baseline_finder(a, keys, a_cells), _baseline_finder(b, keys, b_cells))
    matched = [key for key in a_cells if key in b_cells]
    records = _records(matched, a_cells, b_cells, keys, metric, level, bases)
    lonely = [
        [side, a.name, _cell_text(key, keys)]
        for side, mine, other in (("A", a_cells, b_cells), ("B", b_cells, a_cells))
        for key in mine
        if key not in other
    ]
    data = in_spec_order(
        pd.DataFrame.from_records(records, columns=_columns(keys)), keys, a.axis_order
    )
    spec = as_metric(
        next((m for m in a.context.get("metrics") or [] if m.get("column") == metric), metric)
    )
    better = a.context.get("primary_better", "lower") if not primary else None
    fixed = [k for k in keys if k.startswith("param.") and k not in varying_axes(data, keys)]
    shown = [k for k in keys if k not in fixed]
    section = Section(
        f"{a.name}: {spec.title}, B / A",
        _display(data, shown, spec, level),
        data=data,
        experiment=a.name,
        kind="compare",
    )
    section.notes = [
        f"A and B: median [{level:.0%} bootstrap CI] of {spec.title} ({metric}) over n successful runs. "
        "B / A: ratio of the medians; its CI resamples each side independently (the two sides' runs "
        "were not interleaved). resolved: no = the CI contains 1; "
        f"n<{min_runs_for(level)} = too few runs on a side for a verdict; unstable = a side's runs "
        "spread beyond the stability rule (hugebench.stats.stability), so no verdict. within: each cell's ratio "
        "to its own sweep's baseline, B's over A's (cancels a shift of the whole machine). runs: how "
        "many of a side's runs were measured on a disturbed machine (noise.disturbed)."
    ]
    if fixed and not data.empty:
        section.notes.append(
            "Fixed parameters, the same for every cell on both sides: "
            + ", ".join(f"{k.removeprefix('param.')}={format_axis(data[k].iloc[0])}" for k in fixed)
            + "."
        )
    if better:
        section.notes.append(
            f"{spec.title}: {better} is better, so B / A {'< 1' if better == 'lower' else '> 1'} "
            "means B is better."
        )
    section.summary = _summary(data, varying_axes(data, shown), better, level)
    section.warnings = _flags(data, keys, a, b, level)
    if figures and not data.empty:
        from hugebench.report.figures import ratio_plot

        named = varying_axes(data, shown)
        labels = [" / ".join(map(format_axis, k)) for k in data[named].itertuples(index=False)]
        section.figures = [
            (
                f"compare-{a.name}",
                ratio_plot(
                    data, labels, title=f"{a.name}: {spec.title}, B / A", ylabel=" / ".join(named)
                ),
            )
        ]
    return section, lonely


def _columns(keys: Sequence[str]) -> list[str]:
    return [
        *keys,
        "a.n",
        "a.median",
        "a.ci_lo",
        "a.ci_hi",
        "b.n",
        "b.median",
        "b.ci_lo",
        "b.ci_hi",
        "ratio",
        "ratio.ci_lo",
        "ratio.ci_hi",
        "resolved",
        "a.failures",
        "b.failures",
        "a.spread",
        "b.spread",
        "a.disturbed",
        "b.disturbed",
        "unstable",
        "within",
        "within.ci_lo",
        "within.ci_hi",
    ]


def _baseline_finder(exp: Experiment, keys, cells: dict):
    """key -> the rows of that cell's baseline in its own sweep (None without a baseline or its cell)."""
    base = {k: axis_key(v) for k, v in (exp.baseline or {}).items() if k in keys}
    if not base:
        return lambda key: None
    return lambda key: cells.get(tuple(base.get(k, v) for k, v in zip(keys, key)))


def _cells(rows: pd.DataFrame, keys: Sequence[str], metric: str) -> dict[tuple, Cell]:
    """Cell key (normalised values) -> the cell (its measured rows, failed ones included, for n_failed),
    over the columns the statistics of ``metric`` read (:func:`~hugebench.report.tables.cell_columns`)."""
    narrow = rows[cell_columns(rows, keys, [metric])]
    return cells_by_key(narrow, keys, lambda key: tuple(axis_key(v) for v in key))


def _records(matched, a_cells, b_cells, keys, metric, level, bases) -> list[dict]:
    """The rows of the matched cells: each side's cells described together, every cell's B / A interval
    and within-sweep ratio computed together (the same numbers as cell by cell)."""
    a_side = described([a_cells[key] for key in matched], metric, level)
    b_side = described([b_cells[key] for key in matched], metric, level)
    values = [(a_cells[key].values(metric), b_cells[key].values(metric)) for key in matched]
    cis = ratio_cis([(b, a) for a, b in values], level)  # every cell's B / A interval
    based = [
        (i, a_base, b_base)
        for i, key in enumerate(matched)
        if (a_base := bases[0](key)) is not None and (b_base := bases[1](key)) is not None
    ]
    quads = [
        (values[i][0], a_base.values(metric), values[i][1], b_base.values(metric))
        for i, a_base, b_base in based
    ]
    within = dict.fromkeys(range(len(matched)), (float("nan"),) * 3)
    within.update(zip((i for i, _, _ in based), shift.within_ratios(quads, level)))
    return [
        _record(key, a_cells[key], b_cells[key], keys, level, sides, ci, within[i])
        for i, (key, sides, ci) in enumerate(zip(matched, zip(a_side, b_side, values), cis))
    ]


def _record(key, a_cell: Cell, b_cell: Cell, keys, level, sides, ci, within) -> dict:
    """One matched cell's row. ``sides``: A's (summary, stability), B's, and the two sides' values;
    ``ci``: its B / A interval (``stats.ratio_ci`` of B's values and A's); ``within``: its within-sweep
    ratio and interval (``shift.within_ratio``)."""
    (a_sum, a_stab), (b_sum, b_stab), (a_vals, b_vals) = sides
    value = b_sum["median"] / a_sum["median"] if a_sum["median"] else float("nan")
    lo, hi = ci
    resolved, unstable = guard(
        Ratio(value, lo, hi, False, int(min(a_vals.size, b_vals.size)), level).resolved,
        a_stab,
        b_stab,
    )
    if unstable:
        unstable = f"{'A' if a_stab.unstable else 'B'} {unstable}"
    return {
        **dict(zip(keys, key)),
        "a.n": a_sum["n"],
        "a.median": a_sum["median"],
        "a.ci_lo": a_sum["ci_lo"],
        "a.ci_hi": a_sum["ci_hi"],
        "b.n": b_sum["n"],
        "b.median": b_sum["median"],
        "b.ci_lo": b_sum["ci_lo"],
        "b.ci_hi": b_sum["ci_hi"],
        "ratio": value,
        "ratio.ci_lo": lo,
        "ratio.ci_hi": hi,
        "resolved": resolved,
        "a.failures": a_cell.failures_text(),
        "b.failures": b_cell.failures_text(),
        "a.spread": a_stab.spread,
        "b.spread": b_stab.spread,
        "a.disturbed": a_stab.disturbed,
        "b.disturbed": b_stab.disturbed,
        "unstable": unstable,
        "within": within[0],
        "within.ci_lo": within[1],
        "within.ci_hi": within[2],
    }


def _values(cell: Cell, metric: str) -> np.ndarray:
    return cell.values(metric)


def _display(data: pd.DataFrame, keys, spec, level) -> pd.DataFrame:
    from hugebench.report.rendering import AXIS_LABELS

    def side(row, s):
        if row[f"{s}.n"] == 0:
            return DASH
        text = spec.format(row[f"{s}.median"])
        return (
            text
            if np.isnan(row[f"{s}.ci_lo"])
            else f"{text} [{spec.format(row[f'{s}.ci_lo'])}, {spec.format(row[f'{s}.ci_hi'])}]"
        )

    body = []
    for row in rows_of(data):
        ratio = DASH if np.isnan(row["ratio"]) else f"{row['ratio']:.3f}"
        if not np.isnan(row["ratio.ci_lo"]):
            ratio += f" [{row['ratio.ci_lo']:.3f}, {row['ratio.ci_hi']:.3f}]"
        said = (
            "unstable"
            if isinstance(row["unstable"], str)
            else verdict(row["resolved"]) or f"n<{min_runs_for(level)}"
        )
        within = (
            DASH
            if np.isnan(row["within"])
            else f"{row['within']:.3f}"
            + (
                ""
                if np.isnan(row["within.ci_lo"])
                else f" [{row['within.ci_lo']:.3f}, {row['within.ci_hi']:.3f}]"
            )
        )
        runs = ", ".join(
            f"{s.upper()}: {row[f'{s}.disturbed']} disturbed" for s in "ab" if row[f"{s}.disturbed"]
        )
        body.append(
            [format_axis(row[k]) for k in keys]
            + [
                row["a.n"],
                side(row, "a"),
                row["b.n"],
                side(row, "b"),
                ratio,
                said if ratio != DASH else "",
                within,
                runs,
            ]
        )
    headers = [AXIS_LABELS.get(k, k) for k in keys] + [
        "n A",
        "A",
        "n B",
        "B",
        "B / A",
        "resolved",
        "within",
        "runs",
    ]
    return display_frame(headers, body)


def _cell_text(key, keys) -> str:
    return ", ".join(f"{k}={format_axis(v)}" for k, v in zip(keys, key))


def _summary(data: pd.DataFrame, named, better, level) -> list[str]:
    if data.empty:
        return [NO_MATCH]
    lines = shift.summary_lines(
        data, lambda row: _cell_text([row[k] for k in named], named), better, level
    )
    kind, factor = shift.common_shift(data["ratio"])
    said = shift.shift_sentence(kind, factor, int(data["ratio"].notna().sum()))
    if said:
        lines.insert(0, said)
    if data["within"].notna().any():
        gm, lo, hi = shift.geometric_mean_ci(data["within"], level)
        lines.append(
            f"Within-sweep ratios (each cell to its own sweep's baseline, B's over A's): geometric mean "
            f"{gm:.3f}" + ("" if np.isnan(lo) else f" [{lo:.3f}, {hi:.3f}]") + "."
        )
    return lines


def _flags(data: pd.DataFrame, keys, a: Experiment, b: Experiment, level) -> list[Flag]:
    flags = []
    for side, exp in (("A", a), ("B", b)):  # why runs failed: the table shows only n
        flags += failure_flags(exp.rows, [k for k in keys if k in exp.rows.columns], f"{side}: ")
    few = data[
        data["resolved"].isna()
        & data["ratio"].notna()
        & ~data["unstable"].map(lambda v: isinstance(v, str))
    ]
    if len(few):
        flags.append(
            Flag(
                f"{len(few)} cell(s) with too few runs for a verdict (n<{min_runs_for(level)})",
                True,
            )
        )
    unstable = data[data["unstable"].map(lambda v: isinstance(v, str))]
    named = varying_axes(data, [k for k in keys if not k.startswith("param.")] or keys)
    if len(unstable):
        flags.append(
            Flag(
                f"{len(unstable)} cell(s) unstable, no verdict: "
                + listing(
                    [
                        f"{_cell_text([r[k] for k in named], named)} ({r['unstable']})"
                        for r in rows_of(unstable)
                    ],
                    6,
                )
            )
        )
    for side in "ab":
        hit = data[data[f"{side}.disturbed"] > 0]
        if len(hit):
            flags.append(
                Flag(
                    f"{side.upper()}: runs measured on a disturbed machine in "
                    + listing(
                        [
                            f"{_cell_text([r[k] for k in named], named)} ({r[f'{side}.disturbed']} of {r[f'{side}.n']})"
                            for r in rows_of(hit)
                        ],
                        6,
                    )
                )
            )
    for side, exp in (("A", a), ("B", b)):
        if exp.context.get("synthetic"):
            flags.append(Flag(f"{side} is synthetic test data, not a measurement"))
    a_params, b_params = (
        (a.context.get("spec") or {}).get("params"),
        (b.context.get("spec") or {}).get("params"),
    )
    if a_params is not None and b_params is not None and a_params != b_params:
        flags.append(Flag(f"fixed parameters differ: A {a_params}, B {b_params}"))
    return flags


def _summary_section(sections: list[Section]) -> Section:
    """Every experiment's summary and unstable/disturbed warnings in one section, so the terminal shows them too."""
    notes = []
    for section in sections:
        prefix = f"{section.experiment}: " if len(sections) > 1 else ""
        notes += [prefix + line for line in section.summary if line != NO_MATCH]
    return Section(
        "Summary",
        None,
        notes or ["No cell has a match on both sides (listed below)."],
        kind="summary",
    )


def _unmatched_section(unmatched: list) -> Section:
    table = display_frame(["only in", "experiment", "cell"], unmatched) if unmatched else None
    notes = [] if unmatched else ["Every cell of A has a match in B and the other way round."]
    return Section(
        "Cells without a match",
        table,
        notes,
        kind="unmatched",
        data=pd.DataFrame(unmatched, columns=["side", "experiment", "cell"]),
    )


def _context_section(a: Results, b: Results) -> Section:
    fa, fb = _facts(a), _facts(b)
    labels = list(dict.fromkeys(list(fa) + list(fb)))
    differ = [
        [label, fa.get(label, DASH), fb.get(label, DASH)]
        for label in labels
        if fa.get(label) != fb.get(label)
    ]
    same = len(labels) - len(differ)
    notes = [f"{same} other fact(s) of the machine context are the same on both sides."]
    if not differ:
        return Section(
            "Machine context",
            None,
            ["The machine context is the same on both sides."],
            kind="context",
        )
    return Section(
        "Machine context that differs", display_frame(["", "A", "B"], differ), notes, kind="context"
    )


def _facts(results: Results) -> dict[str, str]:
    """The machine facts of a store: each fact as its latest sweep recorded it."""
    facts: dict[str, str] = {}
    for sweep_id in sweep_ids(results.rows):
        facts.update(machine_facts(results.contexts.get(sweep_id, {})))
    return facts


def _labelled(section: Section, side: str) -> Section:
    section.title = f"{side}: {section.title}"
    return section
