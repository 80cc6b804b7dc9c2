"""``expected:``: published numbers this experiment reproduces, each claim naming exactly one cell (and one to
compare with); and which metric columns a workload's rows are known to carry (a claim's or ``auto``'s metric).

A claim is one published number of one cell (``value``), of a cell against another (``vs`` with ``ratio``,
``value``/``vs_value``, ``change`` in percent, or a bare ``direction``), or a row of a published table
(``values: {column: N}``: one claim per column, so a table of three columns is three claims of one cell).
Its column may be any the rows carry (``claim_metrics``: the workload's metrics, whole-run ``perf.*``,
timed-phase ``pmu.*``, the run's totals), and each parsed claim says what that column measures (``scope``) and
how the side-by-side table heads it (``quantity``). ``not_judged`` lists the published numbers the workload
cannot judge, each with the reason, so the report shows them too.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass

from hugebench.experiment.cells import _partial_cell
from hugebench.experiment.claim_metrics import (
    measured_columns,
    metric_scope,
    off_reason,
    quantity_label,
)
from hugebench.experiment.model import ExperimentSpec, cells, matches
from hugebench.experiment.parts import Expected
from hugebench.store.rows import STATUSES
from hugebench.workloads import Workload, parse_count
from hugebench.yamlsafe import Where

_EXPECTED_KEYS = {
    "source": "where the numbers were published (citation text, required)",
    "metric": "column the numbers are of (default: the workload's primary metric)",
    "claims": "list of claims: {cell: {...}, value: N} or {cell: {...}, vs: {...}, ratio: R}",
    "not_judged": "published numbers this workload cannot judge: [{published: TEXT, why: TEXT}]",
}
_CLAIM_KEYS = {
    "name": "label shown in the report",
    "cell": "the cell the claim is about (one cell)",
    "vs": "the cell it is compared with (a ratio claim)",
    "ratio": "published ratio cell / vs",
    "value": "published value of cell",
    "vs_value": "published value of vs (ratio = value / vs_value)",
    "change": "published change of cell against vs in percent (-23: 23% lower; ratio 1 + change/100)",
    "direction": "lower | higher: cell's metric is below (above) vs's, no number published",
    "status": "how the cell's runs end (oom, ...): they end so and vs's runs do not; no metric",
    "values": "a row of a published table: {column: N, ...}, one claim per column",
    "metric": "column (default: expected.metric): a workload metric, perf.<label> (whole run), "
    "pmu.<label> (timed phase) or a run total (wall_s, utime_s, minflt, ...)",
    "source": "citation of this claim (default: expected.source)",
    "note": "free text shown with the claim",
}
_NOT_JUDGED_KEYS = {
    "published": "the published number, as published",
    "why": "why this workload cannot judge it",
}
_DIRECTIONS = ("lower", "higher")
_ONE_SIDED = ("ratio", "value", "vs_value", "change", "direction", "metric")


@dataclass(frozen=True)
class _Claims:
    """What every claim of one file is checked against."""

    spec: ExperimentSpec
    workload: Workload
    left: list  # the cells of the sweep
    metric: str  # expected.metric
    measured: dict  # claim_metrics.measured_columns
    labels: dict  # workload metric column -> its report label
    where: Where


def workload_metrics(workload, params: dict) -> list[str]:
    """The metric columns a workload's rows are known to carry: report columns, plotted and ratio columns."""
    try:
        primary, metrics, _ = workload.report_metrics(params)
    except (
        ValueError,
        KeyError,
        TypeError,
    ):  # a command's metric is checked with its params, not here
        primary, metrics = workload.primary_metric, workload.metrics
    names = [
        primary,
        *(m[0] for m in metrics),
        *(p[1] for p in workload.plots),
        *(b.y for b in workload.bars),
        *(x.y for x in workload.xy_plots),
        *(c for t in workload.ratio_tables for c, _ in t.columns),
    ]
    return list(dict.fromkeys(names))


def _metric(value, path, workload, params, where) -> str:
    known = workload_metrics(workload, params)
    if value is None:
        return known[0]
    if value not in known:
        raise where.error(
            path, f"workload {workload.name!r} has no metric {value!r}; known: {', '.join(known)}"
        )
    return value


def _claim_metric(value, path, spec, workload, measured, where) -> str:
    """A claim's column: one of the workload's metrics or a column every run of it records (``measured``)."""
    if value is None:
        return _metric(value, path, workload, spec.params, where)
    if not isinstance(value, str):
        raise where.error(path, f"must be a column name, got {value!r}")
    if value in measured:
        return value
    off = off_reason(value, spec)
    if off:
        raise where.error(path, off)
    known = workload_metrics(workload, spec.params)
    if value not in known:
        counters = sorted({c.split(".", 1)[1] for c in measured if c.startswith(("perf.", "pmu."))})
        totals = [c for c in measured if "." not in c]
        raise where.error(
            path,
            f"workload {workload.name!r} has no metric {value!r}; known: {', '.join(known)}; "
            f"or perf.<label> (whole run) / pmu.<label> (timed phase) with a label of "
            f"{', '.join(counters)}; or {', '.join(totals)}",
        )
    return value


def known_keys(mapping: dict, allowed: dict, path, where) -> None:
    for key in mapping:
        if key not in allowed:
            raise where.error(path + (key,), f"unknown key; allowed keys: {', '.join(allowed)}")


def text_field(mapping, key, path, where, required=False):
    value = mapping.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise where.error(path + (key,), f"must be non-empty text, got {value!r}")
    return value.strip()


def _expected(data, spec, workload, where) -> Expected | None:
    """``expected:``: published numbers, each claim naming exactly one cell (and one to compare with)."""
    raw = data.get("expected")
    if raw is None:
        return None
    path = ("expected",)
    if not isinstance(raw, dict):
        raise where.error(path, "must be a mapping {source: TEXT, metric: COLUMN, claims: [...]}")
    known_keys(raw, _EXPECTED_KEYS, path, where)
    source = text_field(raw, "source", path, where, required=True)
    measured = measured_columns(spec)
    metric = _claim_metric(raw.get("metric"), path + ("metric",), spec, workload, measured, where)
    claims = raw.get("claims")
    if not isinstance(claims, list) or not claims:
        raise where.error(
            path + ("claims",), f"must be a non-empty list ({_EXPECTED_KEYS['claims']})"
        )
    ctx = _Claims(
        spec, workload, cells(spec), metric, measured, _labels(workload, spec.params), where
    )
    parsed = tuple(
        c for i, claim in enumerate(claims) for c in _claims_of(claim, path + ("claims", i), ctx)
    )
    return Expected(
        source=source,
        metric=metric,
        claims=parsed,
        not_judged=_not_judged(raw.get("not_judged"), path + ("not_judged",), where),
    )


def _labels(workload, params) -> dict[str, str]:
    try:
        metrics = workload.report_metrics(params)[1]
    except (ValueError, KeyError, TypeError):
        metrics = workload.metrics
    return {m[0]: m[1] for m in metrics}


def _claims_of(raw, path, ctx: _Claims) -> list[dict]:
    """One claim, or one per column of a ``values:`` row."""
    where = ctx.where
    if not isinstance(raw, dict):
        raise where.error(
            path,
            "must be a mapping, e.g. {cell: {...}, value: 81} or {cell: {...}, vs: {...}, ratio: 0.77}",
        )
    known_keys(raw, _CLAIM_KEYS, path, where)
    if "cell" not in raw:
        raise where.error(path, "missing 'cell' (the cell the published number is about)")
    cell = _one_cell(raw["cell"], path + ("cell",), ctx.spec, ctx.left, where)
    if "values" in raw:
        return _table_row(raw, cell, path, ctx)
    vs = (
        _one_cell(raw["vs"], path + ("vs",), ctx.spec, ctx.left, where)
        if raw.get("vs") is not None
        else None
    )
    if vs == cell:
        raise where.error(
            path + ("vs",), "is the same cell as 'cell'; a ratio needs two different cells"
        )
    if "status" in raw:
        return [_status_claim(raw, path, ctx, cell, vs)]
    published = _published_numbers(raw, vs, path, where)
    metric = _claim_metric(
        raw.get("metric", ctx.metric),
        path + ("metric",),
        ctx.spec,
        ctx.workload,
        ctx.measured,
        where,
    )
    return [_record(raw, path, ctx, cell, vs, metric, published)]


def _table_row(raw, cell, path, ctx: _Claims) -> list[dict]:
    where = ctx.where
    clash = [key for key in ("vs",) + _ONE_SIDED if key in raw]
    if clash:
        raise where.error(
            path + (clash[0],),
            "a claim with 'values' gives no 'vs', 'ratio', 'value', 'vs_value', "
            "'change', 'direction' or 'metric': each key of 'values' is a column",
        )
    values = raw["values"]
    if not isinstance(values, dict) or not values:
        raise where.error(
            path + ("values",),
            "must be a non-empty mapping column -> published value, e.g. "
            "{ns_per_lookup: 105, perf.cycles: 55.5e9}",
        )
    out = []
    for column in values:
        here = path + ("values", column)
        metric = _claim_metric(column, here, ctx.spec, ctx.workload, ctx.measured, where)
        published = {"value": _published(values, column, path + ("values",), where)}
        out.append(_record(raw, path, ctx, cell, None, metric, published))
    return out


def _status_claim(raw, path, ctx: _Claims, cell, vs) -> dict:
    """A claim about how runs end (``status: oom``: the cell's runs are OOM-killed, vs's are not)."""
    where = ctx.where
    clash = [key for key in _ONE_SIDED if key in raw]
    if clash:
        raise where.error(
            path + (clash[0],),
            "a claim with 'status' states how runs end, not a number: no 'ratio', 'value', "
            "'vs_value', 'change', 'direction' or 'metric'",
        )
    status = raw["status"]
    ends = [s for s in STATUSES if s not in ("ok", "skipped", "disturbed")]  # how a run can end
    if status not in ends:
        raise where.error(path + ("status",), f"must be one of {', '.join(ends)}, got {status!r}")
    return {**_record(raw, path, ctx, cell, vs, "status", {}), "status": status}


def _record(raw, path, ctx: _Claims, cell, vs, metric, published) -> dict:
    where = ctx.where
    scope = (
        "how each run ended" if metric == "status" else metric_scope(metric, ctx.spec, ctx.measured)
    )
    return {
        "name": text_field(raw, "name", path, where),
        "cell": cell,
        "vs": vs,
        "ratio": published.get("ratio"),
        "value": published.get("value"),
        "vs_value": published.get("vs_value"),
        "change": published.get("change"),
        "direction": published.get("direction"),
        "metric": metric,
        "scope": scope,
        "quantity": quantity_label(metric, ctx.labels, scope),
        "source": text_field(raw, "source", path, where),
        "note": text_field(raw, "note", path, where),
    }


def _published_numbers(raw, vs, path, where) -> dict:
    """The published side of a claim: value; or ratio, value/vs_value, change or direction against vs."""
    given = {key for key in ("ratio", "value", "vs_value", "change", "direction") if key in raw}
    if vs is None and given != {"value"}:
        raise where.error(
            path, "without 'vs' a claim gives exactly 'value' (the published value of its cell)"
        )
    if vs is not None and given not in (
        {"ratio"},
        {"value", "vs_value"},
        {"change"},
        {"direction"},
    ):
        raise where.error(
            path,
            "with 'vs' a claim gives either 'ratio' (cell / vs), both 'value' and 'vs_value', "
            "'change' (percent) or 'direction' (lower | higher)",
        )
    if "direction" in given:
        if raw["direction"] not in _DIRECTIONS:
            raise where.error(
                path + ("direction",), f"must be lower or higher, got {raw['direction']!r}"
            )
        return {"direction": raw["direction"]}
    if "change" in given:
        return _change(raw, path, where)
    numbers = {key: _published(raw, key, path, where) for key in given}
    ratio = numbers.get("ratio") or (
        numbers["value"] / numbers["vs_value"] if vs is not None else None
    )
    if ratio is not None and not (sys.float_info.min <= ratio <= 1 / sys.float_info.min):
        key = "ratio" if "ratio" in numbers else "value"
        raise where.error(
            path + (key,),
            f"makes a ratio of {ratio!r}, which is no number a report can compare "
            "with (overflow, or below the smallest float); check the published values",
        )
    return {**numbers, "ratio": ratio}


def _change(raw, path, where) -> dict:
    change = _float(raw["change"])
    if change is None or not -100 < change < 1e6:
        raise where.error(
            path + ("change",),
            "must be a percentage above -100 and below 1e6 (as published: -23 for 23% lower), "
            f"got {_shown(raw['change'])}",
        )
    return {"change": change, "ratio": 1.0 + change / 100.0}


def _not_judged(raw, path, where) -> tuple:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise where.error(path, "must be a list of {published: TEXT, why: TEXT}")
    out = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict):
            raise where.error(path + (i,), "must be a mapping {published: TEXT, why: TEXT}")
        known_keys(item, _NOT_JUDGED_KEYS, path + (i,), where)
        out.append(
            {
                key: text_field(item, key, path + (i,), where, required=True)
                for key in _NOT_JUDGED_KEYS
            }
        )
    return tuple(out)


def _one_cell(raw, path, spec, left, where) -> dict:
    partial = _partial_cell(raw, path, spec.axes, where)
    found = [cell for cell in left if matches(cell, partial)]
    if not found:
        raise where.error(
            path, "matches no cell of the sweep (every cell with these values is excluded)"
        )
    if len(found) > 1:
        open_axes = [axis for axis in spec.axes if axis not in partial and len(spec.axes[axis]) > 1]
        raise where.error(
            path, f"matches {len(found)} cells; give a value for {', '.join(open_axes)} too"
        )
    return found[0]


def _published(raw, key, path, where) -> float:
    """A published number: a YAML number, or text as tables print it ('55.5G', '5.59k', '2.7e9')."""
    value = raw[key]
    if isinstance(value, str):
        value = _number_text(value)
    number = _float(value)
    if number is None or not math.isfinite(number) or number <= 0:
        raise where.error(
            path + (key,),
            f"must be a positive number below {sys.float_info.max:.3g} (as published: 105, 2.7e+9, "
            f"'55.5G', '5.59k'), got {_shown(raw[key])}",
        )
    return number


def _float(value) -> float | None:
    """A YAML number as a float, or None: not a number, or an integer too large for one (400 digits)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        return float(value)
    except OverflowError:
        return None


def _shown(value) -> str:
    """A value as an error message shows it: a 400-digit number by its size, not its digits."""
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:20]}... ({len(text)} characters)"


def _number_text(text: str):
    try:
        return float(text) if "e" in text.lower() else parse_count(text)
    except ValueError:
        return text
