"""``expected:``: published numbers this experiment reproduces, each claim naming exactly one cell (and one to
compare with); and which metric columns a workload's rows are known to carry (a claim's or ``auto``'s metric).
"""

from __future__ import annotations

import math
import sys

from .cells import _partial_cell
from .model import cells, matches

_EXPECTED_KEYS = {"source": "where the numbers were published (citation text, required)",
                  "metric": "column the numbers are of (default: the workload's primary metric)",
                  "claims": "list of claims: {cell: {...}, value: N} or {cell: {...}, vs: {...}, ratio: R}"}
_CLAIM_KEYS = {"name": "label shown in the report", "cell": "the cell the claim is about (one cell)",
               "vs": "the cell it is compared with (a ratio claim)", "ratio": "published ratio cell / vs",
               "value": "published value of cell", "vs_value": "published value of vs (ratio = value / vs_value)",
               "metric": "column (default: expected.metric)", "source": "citation of this claim (default: "
               "expected.source)", "note": "free text shown with the claim"}


def workload_metrics(workload, params: dict) -> list[str]:
    """The metric columns a workload's rows are known to carry: report columns, plotted and ratio columns."""
    try:
        primary, metrics, _ = workload.report_metrics(params)
    except (ValueError, KeyError, TypeError):  # a command's metric is checked with its params, not here
        primary, metrics = workload.primary_metric, workload.metrics
    names = [primary, *(m[0] for m in metrics), *(p[1] for p in workload.plots), *(b.y for b in workload.bars),
             *(x.y for x in workload.xy_plots), *(c for t in workload.ratio_tables for c, _ in t.columns)]
    return list(dict.fromkeys(names))


def _metric(value, path, workload, params, where) -> str:
    known = workload_metrics(workload, params)
    if value is None:
        return known[0]
    if value not in known:
        raise where.error(path, f"workload {workload.name!r} has no metric {value!r}; known: {', '.join(known)}")
    return value


def _known_keys(mapping: dict, allowed: dict, path, where) -> None:
    for key in mapping:
        if key not in allowed:
            raise where.error(path + (key,), f"unknown key; allowed keys: {', '.join(allowed)}")


def _text(mapping, key, path, where, required=False):
    value = mapping.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise where.error(path + (key,), f"must be non-empty text, got {value!r}")
    return value.strip()


def _expected(data, spec, workload, where) -> dict:
    """``expected:``: published numbers, each claim naming exactly one cell (and one to compare with)."""
    raw = data.get("expected")
    if raw is None:
        return {}
    path = ("expected",)
    if not isinstance(raw, dict):
        raise where.error(path, "must be a mapping {source: TEXT, metric: COLUMN, claims: [...]}")
    _known_keys(raw, _EXPECTED_KEYS, path, where)
    source = _text(raw, "source", path, where, required=True)
    metric = _metric(raw.get("metric"), path + ("metric",), workload, spec.params, where)
    claims = raw.get("claims")
    if not isinstance(claims, list) or not claims:
        raise where.error(path + ("claims",), f"must be a non-empty list ({_EXPECTED_KEYS['claims']})")
    left = cells(spec)
    parsed = tuple(_claim(claim, path + ("claims", i), spec, workload, left, metric, where)
                   for i, claim in enumerate(claims))
    return {"source": source, "metric": metric, "claims": parsed}


def _claim(raw, path, spec, workload, left, metric, where) -> dict:
    if not isinstance(raw, dict):
        raise where.error(path, "must be a mapping, e.g. {cell: {...}, value: 81} or {cell: {...}, vs: {...}, ratio: 0.77}")
    _known_keys(raw, _CLAIM_KEYS, path, where)
    if "cell" not in raw:
        raise where.error(path, "missing 'cell' (the cell the published number is about)")
    cell = _one_cell(raw["cell"], path + ("cell",), spec, left, where)
    vs = _one_cell(raw["vs"], path + ("vs",), spec, left, where) if raw.get("vs") is not None else None
    if vs == cell:
        raise where.error(path + ("vs",), "is the same cell as 'cell'; a ratio needs two different cells")
    numbers = {key: _published(raw, key, path, where) for key in ("ratio", "value", "vs_value") if key in raw}
    if vs is None and set(numbers) != {"value"}:
        raise where.error(path, "without 'vs' a claim gives exactly 'value' (the published value of its cell)")
    if vs is not None and set(numbers) not in ({"ratio"}, {"value", "vs_value"}):
        raise where.error(path, "with 'vs' a claim gives either 'ratio' (cell / vs) or both 'value' and 'vs_value'")
    ratio = numbers.get("ratio") or (numbers["value"] / numbers["vs_value"] if vs is not None else None)
    if ratio is not None and not (sys.float_info.min <= ratio <= 1 / sys.float_info.min):
        key = "ratio" if "ratio" in numbers else "value"
        raise where.error(path + (key,), f"makes a ratio of {ratio!r}, which is no number a report can compare "
                                         "with (overflow, or below the smallest float); check the published values")
    return {"name": _text(raw, "name", path, where), "cell": cell, "vs": vs, "ratio": ratio,
            "value": numbers.get("value"), "vs_value": numbers.get("vs_value"),
            "metric": _metric(raw.get("metric", metric), path + ("metric",), workload, spec.params, where),
            "source": _text(raw, "source", path, where), "note": _text(raw, "note", path, where)}


def _one_cell(raw, path, spec, left, where) -> dict:
    partial = _partial_cell(raw, path, spec.axes, where)
    found = [cell for cell in left if matches(cell, partial)]
    if not found:
        raise where.error(path, "matches no cell of the sweep (every cell with these values is excluded)")
    if len(found) > 1:
        open_axes = [axis for axis in spec.axes if axis not in partial and len(spec.axes[axis]) > 1]
        raise where.error(path, f"matches {len(found)} cells; give a value for {', '.join(open_axes)} too")
    return found[0]


def _published(raw, key, path, where) -> float:
    value = raw[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise where.error(path + (key,), f"must be a positive number (as published), got {value!r}")
    return float(value)
