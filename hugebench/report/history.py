"""``hugebench history DIR...``: each cell's metric over results stores ordered by time, what changed between
them, and where the metric stepped.

Each store is a point in time (the earliest ``started_at`` of its sweeps). A cell is matched across stores as
``compare`` matches it (experiment, axes, fixed parameters). Between consecutive stores the **fingerprint**
that changed is listed: the sweep's ``label`` (``hugebench sweep --label``), hugebench's version and commit,
the kernel, glibc, the machine, THP at start (``provenance.machine_facts``).

Step rule (in the spirit of asv's step detection, on medians rather than a fit): between two consecutive
stores a cell **stepped** when the ratio of its medians has a bootstrap CI excluding 1, it is at least
:data:`STEP_MIN` (5 %) away from 1, it rests on at least ``stats.min_runs_for`` runs a side, and neither
side is unstable by ``hugebench.stats.stability`` (a resolved ratio on an unstable cell is said, not called a step).
"""

from __future__ import annotations

import pandas as pd

from hugebench.errors import HugebenchError
from hugebench.report.cellstats import Cell
from hugebench.report.compare import _cell_text, _cells, _values, cell_keys
from hugebench.report.provenance import machine_facts
from hugebench.report.rendering import DASH, display_frame
from hugebench.report.results import Results, sweep_ids
from hugebench.report.sections import Flag, Report, Section
from hugebench.report.tables import check_metric
from hugebench.stats import Ratio, ratio_ci
from hugebench.stats.stability import SMALLEST_EFFECT, guard

STEP_MIN = SMALLEST_EFFECT  # the one smallest effect (hugebench.stats.stability)


def store_time(results: Results) -> str:
    times = [
        str(results.contexts.get(s, {}).get("started_at") or "") for s in sweep_ids(results.rows)
    ]
    return min((t for t in times if t), default="")


def fingerprint(results: Results) -> dict[str, str]:
    facts: dict[str, str] = {}
    for sweep_id in sweep_ids(results.rows):
        context = results.contexts.get(sweep_id, {})
        facts.update(machine_facts(context))
        if context.get("label"):
            facts["label"] = str(context["label"])
    return facts


def history_report(
    stores: list[Results], primary: str | None = None, level: float = 0.95, figures: bool = False
) -> Report:
    """The history of every experiment the stores share, oldest store first; ``figures``: each experiment's
    section gets its plot (:func:`hugebench.report.figures.history_figure.history_plot`)."""
    empty = [str(s.path) for s in stores if s.rows.empty]
    if empty:
        raise HugebenchError(
            f"{', '.join(empty)}: no runs recorded (not a results directory, or nothing run yet); "
            "history needs results directories of sweeps"
        )
    ordered = sorted(stores, key=store_time)
    names = [n for n in dict.fromkeys(e.name for s in ordered for e in s.experiments())]
    sections = [_experiment(name, ordered, primary, level) for name in names]
    if figures:
        from hugebench.report.figures.history_figure import history_plot

        paths, labels = [str(s.path) for s in ordered], [s.path.name for s in ordered]
        for section in sections:
            if section.data is None:  # every history section has its data
                continue
            section.figures = [
                (
                    f"history-{section.experiment}",
                    history_plot(
                        section.data, paths, labels, section.data.attrs["metric"], section.title
                    ),
                )
            ]
    return Report(
        "hugebench history: " + ", ".join(str(s.path) for s in ordered),
        sections + [_changes(ordered)],
    )


def _experiment(name: str, stores: list[Results], primary, level) -> Section:
    exps = [next((e for e in s.experiments() if e.name == name), None) for s in stores]
    present = [e for e in exps if e is not None]
    keys = cell_keys(present[0], present[-1]) if len(present) > 1 else list(present[0].axes)
    metric = primary or present[0].primary_metric
    if metric is None:
        raise HugebenchError(f"experiment {name!r}: no primary metric recorded; pass --primary")
    if primary:
        where = f"experiment {name!r} of {', '.join(str(s.path) for s in stores)}"
        check_metric(pd.concat([e.rows for e in present], ignore_index=True), primary, where)
    cells = [(_cells(e.rows, keys, metric) if e is not None else {}) for e in exps]
    all_keys = list(dict.fromkeys(k for c in cells for k in c))
    body, records, steps = [], [], []
    for key in all_keys:
        row, prev = [_cell_text(key, keys)], None
        for i, side in enumerate(cells):
            cell = side.get(key)
            summary = cell.describe(metric, level) if cell is not None else {}
            median = summary.get("median", float("nan"))
            mark = ""
            if cell is not None and prev is not None:
                mark = _step(prev, cell, metric, level)
                if mark.startswith("step"):
                    steps.append(f"{_cell_text(key, keys)}: {mark} at {stores[i].path}")
            row.append(
                DASH if median != median else f"{median:.4g}" + (f" ({mark})" if mark else "")
            )
            records.append(
                {
                    "cell": _cell_text(key, keys),
                    "store": str(stores[i].path),
                    "median": median,
                    "ci_lo": summary.get("ci_lo", float("nan")),
                    "ci_hi": summary.get("ci_hi", float("nan")),
                    "mark": mark,
                }
            )
            prev = cell if cell is not None else prev
        body.append(row)
    headers = ["cell"] + [f"{i + 1}: {s.path.name}" for i, s in enumerate(stores)]
    data = pd.DataFrame(records)
    data.attrs["metric"] = metric
    section = Section(
        f"{name}: {metric} over time",
        display_frame(headers, body),
        data=data,
        experiment=name,
        kind="history",
    )
    section.notes = [
        f"Median of {metric} per store, oldest first. step up/down: the ratio to the previous store's "
        f"median has a {level:.0%} CI excluding 1, is at least {STEP_MIN:.0%} from 1 and neither side "
        "is unstable (hugebench.stats.stability); unstable: a resolved ratio on an unstable cell."
    ]
    section.summary = [f"{len(steps)} step(s)" + (": " + "; ".join(steps) if steps else ".")]
    section.warnings = [Flag(s) for s in steps]
    return section


def _step(before: Cell, after: Cell, metric: str, level: float) -> str:
    a, b = _values(before, metric), _values(after, metric)
    if a.size == 0 or b.size == 0:
        return ""
    import numpy as np

    value = float(np.median(b) / np.median(a)) if np.median(a) else float("nan")
    lo, hi = ratio_ci(b, a, level=level)
    resolved, unstable = guard(
        Ratio(value, lo, hi, False, int(min(a.size, b.size)), level).resolved,
        before.stability(metric),
        after.stability(metric),
    )
    if unstable and not (lo <= 1.0 <= hi):
        return f"x{value:.3f}, unstable"
    if resolved and abs(value - 1.0) >= STEP_MIN:
        return f"step {'up' if value > 1 else 'down'} x{value:.3f}"
    return ""


def _changes(stores: list[Results]) -> Section:
    body = []
    prints = [fingerprint(s) for s in stores]
    for i in range(1, len(stores)):
        old, new = prints[i - 1], prints[i]
        for label in dict.fromkeys(list(old) + list(new)):
            if old.get(label) != new.get(label):
                body.append([f"{i} -> {i + 1}", label, old.get(label, DASH), new.get(label, DASH)])
    if not body:
        return Section(
            "What changed between stores",
            None,
            ["Nothing in the recorded fingerprint changed."],
            kind="context",
        )
    return Section(
        "What changed between stores",
        display_frame(["stores", "", "before", "after"], body),
        ["label: hugebench sweep --label; the rest from each store's machine context."],
        kind="context",
    )
