"""Validation of what the user names: ``params:``, ``axes:`` (allocators, text pages, memory states, regimes,
kernel knobs, parameters) and ``system:``, each error with file:line:key."""

from __future__ import annotations

from hugebench import knob_catalogue as catalogue
from hugebench.columns import user_name_problem
from hugebench.experiment.collect import Collected
from hugebench.experiment.keys import _BAD, _BOOL_HINT, _mapping
from hugebench.experiment.model import (
    DEFAULT_ALLOCATOR,
    MEMORY_AXIS,
    REGIME_AXIS,
    TEXT_AXIS,
    THP_MODES,
    TOOL_AXES,
    canonical_knob,
    is_knob,
)
from hugebench.knob_catalogue import THP_ENABLED
from hugebench.machine.textpages import MODES as TEXT_MODES
from hugebench.system import aging, regime


def _param(workload, name, value, path, where):
    param = workload.params.get(name)
    if param is None and workload.open_params:
        if not isinstance(name, str) or not name.isidentifier():
            raise where.error(path, "a parameter name must be an identifier (it is used as {name})")
        if name in TOOL_AXES or is_knob(name):
            raise where.error(
                path[:2],
                f"{name} is an axis, not a parameter: axes: {{{name}: [...]}}"
                + (" (or, for a knob fixed for the sweep, system:)" if is_knob(name) else ""),
            )
        why = user_name_problem(name, (m[0] for m in workload.metrics), column=path[0] == "axes")
        if why:
            raise where.error(path[:2], why)
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise where.error(
                path, f"a parameter of your own must be a string or a number, got {value!r}"
            )
        return value
    if param is None:
        raise where.error(
            path,
            f"unknown parameter of workload {workload.name!r}; "
            f"allowed: {', '.join(workload.params)}",
        )
    try:
        return param.check(name, value)
    except ValueError as exc:
        raise where.error(path, str(exc)) from None


def _knob_value(name, value, path, where):
    if isinstance(value, bool):
        raise where.error(
            path, f"a kernel knob value must be a string or an integer, got {value!r}{_BOOL_HINT}"
        )
    if canonical_knob(name) == THP_ENABLED and value not in THP_MODES:
        raise where.error(path, f"THP mode must be one of {', '.join(THP_MODES)}; got {value!r}")
    if not isinstance(value, (str, int)):
        raise where.error(
            path, f"a kernel knob value must be a string or an integer, got {value!r}"
        )
    return value


def _system(data, axes, where) -> dict:
    system = {}
    for key, value in _mapping(data, "system", where).items():
        name = canonical_knob(key)
        if not is_knob(name):
            raise where.error(
                ("system", key),
                f"not a kernel knob; knob names start with {' or '.join(catalogue.USER_FAMILIES)}",
            )
        if name in system:
            raise where.error(
                ("system", key), f"knob {name!r} is given twice ({catalogue.alias_note()})"
            )
        if name in axes:
            raise where.error(
                ("system", key), f"knob {name!r} is also an axis, whose values would win; keep one"
            )
        system[name] = _knob_value(key, value, ("system", key), where)
    return system


def _axes(data, workload, table, where, found: Collected) -> dict:
    """name -> tuple of checked values (_BAD for an axis with an error, kept in ``found``); without any
    axis, one implicit allocator axis (see below)."""
    axes: dict = {}
    for name, values in found.take(_mapping, data, "axes", where, default={}).items():
        checked = found.take(_axis, name, values, workload, table, where, default=_BAD)
        key = canonical_knob(name) if isinstance(name, str) and is_knob(name) else name
        if key in axes:
            found.add(
                where.error(
                    ("axes", name), f"axis {key!r} is given twice ({catalogue.alias_note()})"
                )
            )
        axes[key] = checked
    # A file without axes measures one cell; naming it by its allocator gives the report a column to group
    # by (it groups by the axes), and the cell's content, hence its id, is the same as without the axis.
    return axes or {"allocator": (DEFAULT_ALLOCATOR,)}


def _axis(name, values, workload, table, where) -> tuple:
    """One axis's values, checked and coerced."""
    path = ("axes", name)
    if not isinstance(values, list) or not values:
        raise where.error(path, "must be a non-empty list of values")
    nested = next((i for i, v in enumerate(values) if isinstance(v, (list, dict))), None)
    if nested is not None:
        raise where.error(
            path + (nested,),
            "an axis value must be one value (a string or a number), not a "
            "list or a mapping: make what varies a parameter, used as {name}",
        )
    if name == "allocator":
        checked = tuple(_allocator(v, path + (i,), table, where) for i, v in enumerate(values))
    elif name == TEXT_AXIS:
        checked = tuple(_text_mode(v, path + (i,), where) for i, v in enumerate(values))
    elif name == MEMORY_AXIS:
        checked = tuple(_memory_state(v, path + (i,), where) for i, v in enumerate(values))
    elif name == REGIME_AXIS:
        checked = tuple(_regime(v, path + (i,), where) for i, v in enumerate(values))
    elif is_knob(name):
        name = canonical_knob(name)
        checked = tuple(_knob_value(name, v, path + (i,), where) for i, v in enumerate(values))
    else:
        checked = tuple(_param(workload, name, v, path + (i,), where) for i, v in enumerate(values))
    _no_repeats(values, checked, path, where)
    return checked


def _text_mode(value, path, where) -> str:
    if value not in TEXT_MODES:
        raise where.error(
            path,
            f"text_pages must be one of {', '.join(TEXT_MODES)}; got {value!r}"
            + (_BOOL_HINT if isinstance(value, bool) else ""),
        )
    return value


def _memory_state(value, path, where) -> str:
    try:
        return aging.canonical(value)
    except ValueError as exc:
        raise where.error(
            path, str(exc) + (_BOOL_HINT if isinstance(value, bool) else "")
        ) from None


def _regime(value, path, where) -> str:
    try:
        return regime.canonical(value)
    except ValueError as exc:
        raise where.error(path, str(exc)) from None


def _allocator(value, path, table, where) -> str:
    if not isinstance(value, str) or value not in table:
        raise where.error(
            path,
            f"unknown allocator {value!r}; allowed: {', '.join(table)} "
            "(or define it under 'allocators:')",
        )
    return value


def _no_repeats(values, checked, path, where) -> None:
    """Refuse an axis listing one value twice, compared after coercion (1000 and 1k are the same run)."""
    first: dict[object, int] = {}  # coerced value -> index of its first listing
    for i, value in enumerate(checked):
        if value in first:
            j = first[value]
            same = f" (both are {value!r})" if values[i] != values[j] else ""
            raise where.error(
                path + (i,), f"lists a value twice: {values[i]!r} repeats {values[j]!r}{same}"
            )
        first[value] = i
