"""The report as data: a list of sections that every output format renders the same way.

A :class:`Section` is a title, a table as a reader sees it (a DataFrame of display text, headers included),
footnotes, warnings, a generated summary and figures. :func:`build_report` turns a results store into a
:class:`Report`; ``rendering`` prints its sections as rich or markdown text, ``html`` as one self-contained
page. A new kind of table (e.g. expected-vs-observed verdicts) is a function ``(experiment, options) ->
[Section]`` appended to :data:`EXPERIMENT_SECTIONS`: it then appears in the terminal, markdown and HTML
reports alike.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from hugebench.errors import HugebenchError
from hugebench.knob_catalogue import THP_ENABLED
from hugebench.measure.phases import (
    COVERAGE_EXPECTED,  # the one level: a THP `always` cell below it is flagged
)
from hugebench.report.aging import aging_sections
from hugebench.report.blocks import rows_of
from hugebench.report.cellstats import CellFrame
from hugebench.report.coverage import coverage_sections
from hugebench.report.model import Flag, Options, Report, Section
from hugebench.report.rendering import display_frame, table_text, verdict, void_text
from hugebench.report.results import Experiment, Results
from hugebench.report.tables import (
    FAILURE_COLUMNS,
    VOID,
    build_table,
    check_metric,
    default_metrics,
    in_spec_order,
    overhead_lines,
    ratio_display,
    ratio_table,
    void_compensation,
)
from hugebench.report.workload_tables import declared_tables
from hugebench.stats import min_runs_for, ok_mask, ok_rows
from hugebench.stats.adaptive import describe as describe_adaptive
from hugebench.stats.adaptive import values_by_cell


def key_value_section(title: str, facts: Mapping[str, object], **kwargs) -> Section:
    """A two-column table of facts (machine context, provenance)."""
    return Section(
        title, display_frame(["", "value"], [[k, v] for k, v in facts.items()]), **kwargs
    )


# -- the report of a results store -----------------------------------------------------------------


def build_report(results: Results, options: Options | None = None) -> Report:
    """Every experiment's sections (main table, extra tables, void compensation, ...) and the provenance."""
    options = options if options is not None else Options()
    if results.rows.empty:
        raise HugebenchError(f"{results.path}: no runs recorded yet")
    if options.primary is not None:
        check_metric(results.rows, options.primary, str(results.path))
    sections = []
    for experiment in results.experiments():
        for build in EXPERIMENT_SECTIONS:
            sections += build(experiment, results, options)
    from hugebench.report.provenance import provenance_sections

    return Report(f"hugebench report: {results.path}", sections, provenance_sections(results))


def main_table_section(experiment: Experiment, results: Results, options: Options) -> list[Section]:
    """The article-style table: medians, the primary metric's CI, the ratio to the baseline."""
    axes = list(options.group_by or experiment.axes)
    if not axes:
        raise HugebenchError(
            f"{results.path}: no readable sweep context names the axes of {experiment.name!r}, so "
            "its cells cannot be told apart (a context file that could not be read is named in a "
            "warning; from Python, pass group_by)"
        )
    primary = options.primary or experiment.primary_metric
    chosen = (
        options.metrics
        or experiment.context.get("metrics")
        or _workload_metrics(experiment)
        or default_metrics(experiment.rows, primary)
    )
    baseline = options.baseline if options.baseline is not None else experiment.baseline
    table = build_table(experiment.rows, axes, chosen, baseline, primary, options.level)
    table = in_spec_order(table, axes, experiment.axis_order)
    table.attrs["title"] = f"{experiment.name} ({_workloads(experiment.rows)})"
    table.attrs["better"] = (
        experiment.context.get("primary_better", "lower") if not options.primary else None
    )
    table.attrs["overhead"] = overhead_lines(experiment.rows, results.contexts) + adaptive_lines(
        experiment
    )
    headers, rows, notes = table_text(table)
    from hugebench.report.provenance import (
        command_lines,  # a command's text reports name what was measured, too
    )

    notes = notes + command_lines(experiment)
    section = Section(
        table.attrs["title"],
        display_frame(headers, rows),
        notes,
        data=table,
        experiment=experiment.name,
        summary=summary_lines(table, experiment),
        kind="main",
    )
    section.warnings = (
        table_flags(table) + failure_flags(experiment.rows, axes) + coverage_flags(experiment, axes)
    )
    if options.figures:
        from hugebench.report.figures import experiment_figures

        section.figures = experiment_figures(experiment, options.charts)
    return [section]


def ratio_table_sections(
    experiment: Experiment, results: Results, options: Options
) -> list[Section]:
    """The workload's extra ratio tables (e.g. fleet's Temeraire trade-off)."""
    workload, axes = experiment.workload, list(options.group_by or experiment.axes)
    out = []
    for spec in workload.ratio_tables if workload else ():
        table = ratio_table(experiment.rows, axes, experiment.baseline, spec, options.level)
        out.append(
            Section(
                spec.title,
                ratio_display(table, axes, spec),
                data=table,
                experiment=experiment.name,
                kind="ratio",
            )
        )
    return out


def workload_sections(experiment: Experiment, results: Results, options: Options) -> list[Section]:
    """A workload's own tables (hashsets: every set kind of each run side by side)."""
    workload = experiment.workload
    if not workload or not workload.tables:
        return []
    axes = list(options.group_by or experiment.axes)
    return [
        Section(title, table, data=data, experiment=experiment.name, kind="workload")
        for title, table, data in declared_tables(workload, experiment.rows, axes, options.level)
    ]


def void_sections(experiment: Experiment, results: Results, options: Options) -> list[Section]:
    """alloc-test's allocator cost net of the harness (the void allocator), in both of its units."""
    rows = experiment.rows
    if "allocator" not in rows.columns or not (rows["allocator"] == VOID).any():
        return []
    axes = experiment.axes or ["allocator"]
    out = []
    for metric, unit in (
        (experiment.primary_metric or "ns_per_pair", "ns/pair"),
        (WHOLE_RUN, "ms/Mop"),
    ):
        if metric not in rows.columns or (metric == WHOLE_RUN and not rows[metric].notna().any()):
            continue
        table = void_compensation(rows, axes, metric)
        if table.empty:
            continue
        table = in_spec_order(table, [a for a in axes if a in table.columns], experiment.axis_order)
        title, headers, body, notes = void_text(table, unit)
        out.append(
            Section(
                title,
                display_frame(headers, body),
                notes,
                data=table,
                experiment=experiment.name,
                kind="void",
            )
        )
    return out


WHOLE_RUN = "ms_per_mop"  # alloc-test's own figure: the whole run in ms per million operations


def expected_sections(experiment: Experiment, results: Results, options: Options) -> list[Section]:
    """The experiment's ``expected:`` claims, each with its verdict (``verdicts``, which builds on this module)."""
    from hugebench.report.advice import pack_of
    from hugebench.report.verdicts import verdict_sections

    if pack_of(experiment) is not None:  # an advice pack's claims: its own section (report.advice)
        return []
    return verdict_sections(experiment, results, options)


def advice_sections(experiment: Experiment, results: Results, options: Options) -> list[Section]:
    """An advice pack's claims as "Vendor advice, judged here" (``report.advice``)."""
    from hugebench.report.advice import advice_sections as sections

    return sections(experiment, results, options)


def adaptive_lines(experiment: Experiment) -> list[str]:
    """With ``repetitions: auto``: how many runs each cell took and how many reached the precision target."""
    rule = (experiment.context.get("spec") or {}).get("adaptive")
    if not rule or "cell_id" not in experiment.rows.columns:
        return []
    records = experiment.rows.to_dict("records")
    cells = list(dict.fromkeys(experiment.rows["cell_id"].dropna()))
    line = describe_adaptive(values_by_cell(records, cells, rule["metric"], rule["max"]), rule)
    return [line] if line else []


# Per experiment, in reading order. Append a builder here and its sections appear in every format.
EXPERIMENT_SECTIONS: list[Callable[[Experiment, Results, Options], list[Section]]] = [
    main_table_section,
    coverage_sections,  # under the main table's coverage: per folio size, and why not on huge pages
    advice_sections,
    expected_sections,
    ratio_table_sections,
    workload_sections,
    void_sections,
    aging_sections,
]


# -- warnings and summaries (from the numbers, never from prose) ------------------------------------


def cell_label(row: pd.Series, axes: Sequence[str]) -> str:
    from hugebench.report.rendering import format_axis

    return ", ".join(f"{axis}={format_axis(row[axis])}" for axis in axes)


def varying_axes(table: pd.DataFrame, axes: Sequence[str]) -> list[str]:
    """The axes whose value differs between the table's rows (all of them if none does): enough to name a cell."""
    varying = [a for a in axes if a in table.columns and table[a].astype(str).nunique() > 1]
    return varying or list(axes)


def listing(items: Sequence[str], limit: int = 8) -> str:
    """Items joined by "; ", the first ``limit`` of them and how many more."""
    shown = "; ".join(items[:limit])
    return shown + (f"; and {len(items) - limit} more" if len(items) > limit else "")


def table_flags(table: pd.DataFrame) -> list[Flag]:
    """What the table shows as status, "no", "n<6" and footnotes, said in words."""
    attrs, axes = table.attrs, varying_axes(table, table.attrs["group_by"])
    flags = []
    failed = table[table["status"] != "ok"]
    if len(failed):
        flags.append(
            Flag(
                f"{len(failed)} cell(s) without a successful run: "
                + listing([f"{cell_label(r, axes)} ({r['status']})" for r in rows_of(failed)]),
                True,
            )
        )
    partly = table[(table["status"] == "ok") & (table["n_failed"] > 0)]
    if len(partly):
        flags.append(
            Flag(
                "runs failed in "
                + listing(
                    [
                        f"{cell_label(r, axes)} ({r['n_failed']} of {r['n'] + r['n_failed']})"
                        for r in rows_of(partly)
                    ]
                ),
                True,
            )
        )
    if "ratio" in table.columns:
        compared = table[~table["is_baseline"].astype(bool) & table["ratio"].notna()]
        few = compared[compared["resolved"].isna() & ~_is_unstable(compared)]
        if len(few):
            flags.append(
                Flag(
                    f"{len(few)} ratio(s) rest on fewer than {min_runs_for(attrs.get('level', 0.95))} "
                    f"runs, too few for a verdict (n<{min_runs_for(attrs.get('level', 0.95))}): "
                    + listing([cell_label(r, axes) for r in rows_of(few)]),
                    True,
                )
            )
        unresolved = compared[compared["resolved"].map(verdict) == "no"]
        if len(unresolved):
            flags.append(
                Flag(
                    f"{len(unresolved)} ratio(s) not resolved (the CI contains 1): "
                    + listing([cell_label(r, axes) for r in rows_of(unresolved)]),
                    True,
                )
            )
    flags += stability_flags(table, axes)
    if "thp_overridden" in table.columns:
        hit = table[pd.to_numeric(table["thp_overridden"], errors="coerce").fillna(0) > 0]
        if len(hit):
            flags.append(
                Flag(
                    "THP overridden by the program (it set its own THP by prctl, so these cells did not "
                    "measure the THP mode they name; thp.overridden.why in the rows): "
                    + listing(
                        [
                            f"{cell_label(r, axes)} ({int(r['thp_overridden'])} of {r['n']} runs)"
                            for r in rows_of(hit)
                        ]
                    ),
                    True,
                )
            )
    titles = {spec.column: spec.title for spec in attrs["metrics"]}
    by_reason: dict[str, list[str]] = {}
    for column, reason in attrs.get("na_reasons", {}).items():
        by_reason.setdefault(reason, []).append(f"{titles.get(column, column)} ({column})")
    flags += [
        Flag(f"n/a, {reason}: {', '.join(columns)}", True) for reason, columns in by_reason.items()
    ]
    return flags


def stability_flags(table: pd.DataFrame, axes: Sequence[str], prefix: str = "") -> list[Flag]:
    """The cells the stability rule (hugebench.stats.stability) calls unstable, with the likely cause, and the cells
    holding runs flagged disturbed (hugebench.measure.disturbance): kept in the numbers, named here."""
    flags = []
    if "stability" in table.columns:
        unstable = table[table["stability"] == "unstable"]
        if len(unstable):
            flags.append(
                Flag(
                    f"{prefix}{len(unstable)} unstable cell(s); a verdict resting on one is not shown as "
                    "resolved: "
                    + listing(
                        [
                            f"{cell_label(r, axes)} ({r['stability.why']})"
                            for r in rows_of(unstable)
                        ],
                        6,
                    )
                )
            )
    if "disturbed" in table.columns:
        hit = table[pd.to_numeric(table["disturbed"], errors="coerce").fillna(0) > 0]
        if len(hit):
            flags.append(
                Flag(
                    f"{prefix}runs measured on a disturbed machine (kept, flagged in noise.disturbed) in "
                    + listing(
                        [
                            f"{cell_label(r, axes)} ({int(r['disturbed'])} of {r['n']})"
                            for r in rows_of(hit)
                        ],
                        6,
                    )
                )
            )
    return flags


def _is_unstable(table: pd.DataFrame) -> pd.Series:
    if "unstable" not in table.columns:
        return pd.Series(False, index=table.index)
    return table["unstable"].map(lambda v: isinstance(v, str))


MAX_REASONS = 8  # distinct failure reasons listed per table; the rest are counted


def failure_flags(rows: pd.DataFrame, axes: Sequence[str], prefix: str = "") -> list[Flag]:
    """Why runs failed, one flag per reason (the commonest first) with its runs and cells: every report
    format shows these, since a table can only say "failed"."""
    keys = [a for a in axes if a in rows.columns]
    by_reason: dict[str, list] = {}
    narrow = rows[list(dict.fromkeys(keys + [c for c in FAILURE_COLUMNS if c in rows.columns]))]
    named = varying_axes(rows, keys) if keys else []
    if not keys:
        narrow = narrow.assign(**{"(every cell)": 0})
    cells = CellFrame(narrow, keys or ["(every cell)"], sort=False)
    for code in cells.failing_cells():
        counts = cells.failure_counts(code)
        if not counts:
            continue
        key = cells.keys_of[code]
        label = cell_label(pd.Series(dict(zip(keys, key))), named) if keys else "every cell"
        for reason, n in counts:
            by_reason.setdefault(reason, []).append((label, n))
    ordered = sorted(by_reason.items(), key=lambda item: -sum(n for _, n in item[1]))
    flags = []
    for reason, where in ordered[:MAX_REASONS]:
        runs = sum(n for _, n in where)
        flags.append(
            Flag(
                f"{prefix}{runs} run(s) failed in {len(where)} cell(s): {reason} — "
                + listing([label for label, _ in where], 6)
            )
        )
    if len(ordered) > MAX_REASONS:
        rest = ordered[MAX_REASONS:]
        flags.append(
            Flag(
                f"{prefix}{sum(n for _, c in rest for _, n in c)} more failed run(s) with "
                f"{len(rest)} other reason(s); every reason is in the rows' error column (runs.jsonl)"
            )
        )
    return flags


def coverage_flags(experiment: Experiment, axes: Sequence[str]) -> list[Flag]:
    """Cells run with THP `always` whose median huge-page coverage stayed below :data:`COVERAGE_EXPECTED`:
    ``hp_coverage``, the coverage of the measured phase (``hp_coverage_basis`` says which, when a row has it:
    a command timed to its end is judged time-weighted, not at exit)."""
    mode = next(
        (c for c in ("knob.thp.enabled", THP_ENABLED, "thp") if c in experiment.rows.columns),
        None,
    )
    keys = [a for a in axes if a in experiment.rows.columns]
    if mode is None or "hp_coverage" not in experiment.rows.columns or not keys:
        return []
    wanted = [*keys, mode, "hp_coverage", "hp_coverage_basis"]  # the rows are ~360 columns wide
    columns = [c for c in dict.fromkeys(wanted) if c in experiment.rows.columns]
    rows = experiment.rows.loc[ok_mask(experiment.rows), columns]
    named = varying_axes(rows, keys)
    always = rows[rows[mode].astype(str) == "always"]
    coverage = pd.to_numeric(always["hp_coverage"], errors="coerce")
    medians = coverage.groupby([always[k] for k in keys], sort=False, dropna=False).median()
    short = []
    for key, median in zip(medians.index, medians.tolist()):
        if median < COVERAGE_EXPECTED:  # NaN: the cell has no coverage number
            label = cell_label(dict(zip(keys, key if isinstance(key, tuple) else (key,))), named)
            short.append((median, f"{label} ({median:.0%})"))
    if not short:
        return []
    texts = [
        text for _, text in sorted(short, key=lambda item: item[0])
    ]  # the largest shortfall first
    bases = (
        always["hp_coverage_basis"].dropna().unique()
        if "hp_coverage_basis" in always.columns
        else []
    )
    basis = (
        f" ({', '.join(map(str, bases))})" if len(bases) else ""
    )  # which coverage: time-weighted, window end
    return [
        Flag(
            f"huge-page coverage{basis} under THP always below {COVERAGE_EXPECTED:.0%} (part of the memory "
            f"stayed on 4 KiB pages) in {len(texts)} cell(s): " + listing(texts)
        )
    ]


def summary_lines(table: pd.DataFrame, experiment: Experiment) -> list[str]:
    """A few sentences of what the table found: size, best and worst cell against the baseline, verdicts."""
    attrs, axes = table.attrs, varying_axes(table, table.attrs["group_by"])
    spec = next(s for s in attrs["metrics"] if s.column == attrs["primary"])
    measured = ok_rows(experiment.rows)
    failed = int((table["n_failed"]).sum())
    lines = [
        f"{len(table)} cells, {len(measured)} successful runs"
        + (f", {failed} failed" if failed else "")
        + f"; primary metric {spec.title} ({attrs['primary']}"
        + (f", {attrs['better']} is better)." if attrs.get("better") else ").")
    ]
    if "ratio" not in table.columns:
        return lines + _extremes_without_baseline(table, spec, axes)
    compared = table[
        ~table["is_baseline"].astype(bool) & table["ratio"].notna() & (table["status"] == "ok")
    ]
    if compared.empty:
        return lines + ["No cell could be compared with the baseline."]
    higher = attrs.get("better", "lower") == "higher"
    order = compared.sort_values("ratio", ascending=not higher)
    best, worst = order.iloc[0], order.iloc[-1]
    ahead = best["ratio"] > 1 if higher else best["ratio"] < 1
    lines.append(
        (
            "Best against the baseline: "
            if ahead
            else "No cell is ahead of the baseline; the closest: "
        )
        + f"{cell_label(best, axes)}, {_ratio_phrase(best, spec, attrs['primary'])}."
    )
    if len(order) > 1:
        lines.append(
            f"Worst: {cell_label(worst, axes)}, {_ratio_phrase(worst, spec, attrs['primary'])}."
        )
    verdicts = (
        compared["resolved"]
        .map(lambda v: verdict(v) or "few")
        .where(~_is_unstable(compared), "unstable")
    )
    unstable = (verdicts == "unstable").sum()
    lines.append(
        f"{(verdicts == 'yes').sum()} of {len(compared)} differences from the baseline are resolved at "
        f"{attrs.get('level', 0.95):.0%} ({(verdicts == 'no').sum()} not resolved, "
        f"{(verdicts == 'few').sum()} with too few runs or no CI"
        + (f", {unstable} resting on an unstable cell)." if unstable else ").")
    )
    return lines


def _ratio_phrase(row: pd.Series, spec, primary: str) -> str:
    text = f"{spec.format(row[primary])}, {row['ratio']:.3f}x the baseline"
    if not np.isnan(row["ratio.ci_lo"]):
        text += f" [{row['ratio.ci_lo']:.3f}, {row['ratio.ci_hi']:.3f}]"
    if isinstance(row.get("unstable"), str):  # as the table's consistency column says it
        return text + ", unstable (no verdict rests on it)"
    return text + {True: ", resolved", False: ", not resolved (the CI contains 1)"}.get(
        row["resolved"], ", too few runs for a verdict"
    )


def _extremes_without_baseline(table: pd.DataFrame, spec, axes) -> list[str]:
    ok = table[(table["status"] == "ok") & table[spec.column].notna()].sort_values(spec.column)
    if ok.empty:
        return ["No cell has a value of the primary metric."]
    low, high = ok.iloc[0], ok.iloc[-1]
    return [
        f"Lowest {spec.title}: {cell_label(low, axes)} ({spec.format(low[spec.column])}); highest: "
        f"{cell_label(high, axes)} ({spec.format(high[spec.column])}). No baseline, so no ratios."
    ]


def _workload_metrics(experiment: Experiment) -> list[dict]:
    """The report columns this version of hugebench defines for the rows' workload (none if unknown)."""
    workload = experiment.workload
    return [dict(zip(("column", "label", "fmt"), m)) for m in workload.metrics] if workload else []


def _workloads(rows: pd.DataFrame) -> str:
    return (
        ", ".join(map(str, rows["workload"].dropna().unique()))
        if "workload" in rows.columns
        else "?"
    )
