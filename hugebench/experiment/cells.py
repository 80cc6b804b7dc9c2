"""Cells of the file: partial cells (``exclude:``, ``baseline:``, a claim's ``cell:``) checked against the axes,
and what only the whole product shows (its size, excluded baselines, crossed min/max parameters, allocators
a workload cannot run, durations too short); then the workload's own checks of each cell's parameters.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

from hugebench import workloads
from hugebench.experiment.model import (
    DEFAULT_ALLOCATOR,
    MAX_RUNS,
    TEXT_AXIS,
    TOOL_AXES,
    ExperimentSpec,
    canonical_knob,
    cells,
    is_knob,
    matches,
)
from hugebench.knob_catalogue import THP_ENABLED, alias_note


def _cells(data, key, axes, where, many):
    raw = data.get(key)
    if raw is None:
        return () if many else {}
    items = raw if many else [raw]
    if many and not isinstance(raw, list):
        raise where.error(
            (key,), "must be a list of partial cells, e.g. [{allocator: glibc, thp: always}]"
        )
    parsed = [
        _partial_cell(cell, (key, i) if many else (key,), axes, where)
        for i, cell in enumerate(items)
    ]
    return tuple(parsed) if many else parsed[0]


def _partial_cell(cell, path, axes, where) -> dict:
    """A mapping axis -> value with every value on its axis (coerced: '10M' -> 10000000; thp -> thp.enabled)."""
    if not isinstance(cell, dict) or not cell:
        raise where.error(
            path, "must be a mapping axis -> value, e.g. {allocator: glibc, thp: never}"
        )
    norm = {}
    for name, value in cell.items():
        axis = canonical_knob(name) if isinstance(name, str) and is_knob(name) else name
        if axis not in axes:
            raise where.error(path + (name,), f"is not an axis; axes: {', '.join(axes)}")
        if axis in norm:
            raise where.error(path + (name,), f"axis {axis!r} is given twice ({alias_note()})")
        allowed = axes[axis]
        coerced = _coerce_like(value, allowed)
        if coerced not in allowed:
            raise where.error(
                path + (name,),
                f"value {value!r} is not on the axis; allowed: {', '.join(map(str, allowed))}",
            )
        norm[axis] = coerced
    return norm


def _coerce_like(value, allowed):
    if (
        isinstance(value, str)
        and allowed
        and isinstance(allowed[0], int)
        and not isinstance(allowed[0], bool)
    ):
        try:
            return workloads.parse_count(value)
        except ValueError:
            return value
    return value


def _check_cells(spec: ExperimentSpec, workload, where) -> None:
    """What only the whole product shows: its size, a plan with no cell, an excluded baseline, min > max."""
    size = math.prod(len(values) for values in spec.axes.values())
    if size > MAX_RUNS:
        raise where.error(("axes",), f"the axes make {size} cells; at most {MAX_RUNS} are allowed")
    left = cells(spec)
    if not left:
        raise where.error(("exclude",), "excludes every cell of the axes; nothing would run")
    blocks = spec.adaptive.max if spec.adaptive else spec.repetitions
    runs = len(left) * (blocks + spec.warmup)
    if runs > MAX_RUNS:
        raise where.error(
            ("repetitions",),
            f"{blocks} repetitions (+{spec.warmup} warm-up) of "
            f"{len(left)} cells make {runs} runs; at most {MAX_RUNS} are allowed",
        )
    if spec.baseline and not any(matches(cell, spec.baseline) for cell in left):
        raise where.error(
            ("baseline",),
            "every cell with the baseline's values is excluded by 'exclude:'; "
            "ratios would have nothing to compare with",
        )
    for low, high in _ordered_params(workload):
        _check_order(spec, workload, left, low, high, where)
    _check_min_duration(spec, workload, left, where)
    _check_text_thp(spec, left, where)
    _check_void(spec, workload, where)


def _check_text_thp(spec: ExperimentSpec, left, where) -> None:
    """text_pages thp puts the text on THP, which THP 'never' rules out: such a cell could only be skipped."""
    for cell in left:
        mode = cell.get(THP_ENABLED, spec.system.get(THP_ENABLED))
        if cell.get(TEXT_AXIS) == "thp" and mode == "never":
            on_axis = THP_ENABLED in spec.axes
            fix = (
                "leave it out: exclude: [{text_pages: thp, thp: never}]"
                if on_axis
                else "set THP madvise"
            )
            raise where.error(
                ("axes", TEXT_AXIS) if on_axis else ("system", "thp"),
                f"text_pages thp needs THP 'madvise' or 'always', but a cell has THP 'never'; {fix}",
            )


def void_problem(workload, allocator) -> str | None:
    """Why the allocator ``void`` (no malloc at all) cannot run this workload, or None."""
    if allocator.mode == "void" and "allocator_mode" not in workload.params:
        return (
            f"allocator {allocator.name!r} only applies to workloads with an allocator_mode parameter "
            f"(alloctest); {workload.name} always uses malloc"
        )
    return None


def _check_void(spec: ExperimentSpec, workload, where) -> None:
    table = spec.allocator_table
    assert table is not None  # resolved by ExperimentSpec.__post_init__
    for i, name in enumerate(spec.axes.get("allocator", ())):
        why = void_problem(workload, table[name])
        if why:
            raise where.error(("axes", "allocator", i), why)


def _check_min_duration(spec: ExperimentSpec, workload, left, where) -> None:
    """A duration-bounded workload must run at least as long as each allocator needs (jemalloc's HPA delay)."""
    if "duration_s" not in workload.params:
        return
    table = spec.allocator_table
    assert table is not None  # resolved by ExperimentSpec.__post_init__
    default = spec.params.get("duration_s", workload.params["duration_s"].default)
    for cell in left:
        allocator = table[cell.get("allocator", DEFAULT_ALLOCATOR)]
        duration, need = cell.get("duration_s", default), allocator.min_duration_s()
        if duration < need:
            key = ("axes", "duration_s") if "duration_s" in spec.axes else ("params", "duration_s")
            raise where.error(
                key,
                f"{duration} s is too short for allocator {allocator.name!r}: it hugifies only "
                f"after hpa_hugify_delay_ms, so runs need duration_s >= {need:g} s",
            )


def _ordered_params(workload) -> list[tuple[str, str]]:
    """Parameter pairs that must not cross: key_min <= key_max, min_size <= max_size."""
    pairs = []
    for name in workload.params:
        for low, high in (("_min", "_max"), ("min_", "max_")):
            if name.endswith(low) and name[: -len(low)] + high in workload.params:
                pairs.append((name, name[: -len(low)] + high))
            elif name.startswith(low) and high + name[len(low) :] in workload.params:
                pairs.append((name, high + name[len(low) :]))
    return pairs


def _check_order(spec, workload, left, low, high, where) -> None:
    on_axes = low in spec.axes or high in spec.axes
    for cell in left if on_axes else left[:1]:
        lo, hi = (cell.get(n, spec.params.get(n, workload.params[n].default)) for n in (low, high))
        if lo > hi:
            key = (
                ("axes", low)
                if low in spec.axes
                else ("axes", high)
                if high in spec.axes
                else ("params", low if low in spec.params else high)
            )
            raise where.error(
                key,
                f"{low} ({lo}) is larger than {high} ({hi})"
                + (f" in the cell {cell}" if on_axes else "")
                + f"; {low} must be <= {high}",
            )


def _workload_checks(spec: ExperimentSpec, workload, where) -> ExperimentSpec:
    """The workload's own checks of its parameters (e.g. a command's argv), once per distinct cell."""
    if workload.check_params is None and workload.prepare_params is None:
        return spec
    base_dir = Path(spec.source).resolve().parent
    defaults = {name: p.default for name, p in workload.params.items()}
    prepared = spec.params
    for cell in cells(spec)[:1000]:
        params = {
            **defaults,
            **spec.params,
            **{
                k: v
                for k, v in cell.items()
                if k in spec.axes and not is_knob(k) and k not in TOOL_AXES
            },
        }
        try:
            if workload.check_params:
                workload.check_params(params)
            if workload.prepare_params:
                done = workload.prepare_params(params, base_dir)
                prepared = {
                    **prepared,
                    **{
                        k: v
                        for k, v in done.items()
                        if k in spec.params or (k not in spec.axes and v != defaults.get(k))
                    },
                }
        except ValueError as exc:
            name = str(exc).split(":", 1)[0].split(".")[0]
            key = (
                ("axes", name)
                if name in spec.axes
                else ("params", name)
                if name in spec.params
                else ("params",)
            )
            raise where.error(key, str(exc)) from None
    return dataclasses.replace(spec, params=prepared)
