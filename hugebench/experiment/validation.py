"""Validation of an experiment file's keys: YAML text -> ``ExperimentSpec``, every error with file:line:key
and what is allowed. Partial cells and whole-product checks are in ``cells``, ``expected:`` in ``claims``.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from .. import allocators as alloc_mod
from .. import knob_catalogue as catalogue
from .. import workloads
from ..columns import user_name_problem
from ..command.elf import why_not_allocator
from ..errors import SpecError, ToolMissingError
from ..system import aging, regime
from ..textpages import MODES as TEXT_MODES
from ..yamlsafe import MAX_FILE_BYTES, Where, read_text, read_yaml
from .cells import _cells, _check_cells, _workload_checks
from .claims import _expected, _known_keys, _metric
from .cluster import ADAPTIVE_ON_EACH
from .cluster import parse_block as parse_cluster
from .collect import Collected
from .limits import memory_limit
from .model import (
    DEFAULT_ALLOCATOR,
    MAX_REPETITIONS,
    MAX_SEED,
    MAX_TIMEOUT,
    MAX_WARMUP,
    MEMORY_AXIS,
    PERF_MODES,
    REGIME_AXIS,
    TEXT_AXIS,
    THP_MODES,
    ExperimentSpec,
    canonical_knob,
    is_knob,
)

_TOP_KEYS = {
    "name": "experiment name (used in results and reports)",
    "workload": f"one of {', '.join(workloads.WORKLOADS)}",
    "description": "free text",
    "repetitions": "runs per cell (int >= 1)",
    "warmup": "uncounted warm-up runs per cell before the first block (int >= 0)",
    "seed": "seed of the interleaved order (int)",
    "timeout": "seconds a worker may run before it is killed (number > 0)",
    "memory_limit": "the most memory a run may use (256M, 1.5G): over it, the run is OOM-killed (status oom)",
    "params": "fixed workload parameters",
    "axes": "name -> list of values; the cartesian product is the set of cells",
    "exclude": "list of partial cells to leave out",
    "baseline": "partial cell that ratios are computed against",
    "allocators": "user-defined allocators: name -> {path: /abs/lib.so, env: {...}} or {base: NAME, env: {...}}",
    "system": "kernel knobs fixed for the whole sweep (thp.defrag: madvise, hugetlb.2MB: 1024, ...)",
    "perf": "whole-process perf stat: auto | off | list of event names",
    "counters": "in-process counters around the timed phase: auto | off | list of labels",
    "order": "interleaved (default: blocks of one run per cell, shuffled) | grouped (fewest knob flips)",
    "condition_memory": "before each run: {compact: bool, drop_caches: bool} or false",
    "expected": "published numbers this experiment reproduces: {source: TEXT, metric: COLUMN, claims: [...]}",
    "cluster": "run on several machines: {scheduler: tls://HOST:8786 or ssh: [h1, h2], certs: DIR, machines: each|spread}",
}
_AUTO_KEYS = {
    "min": "blocks always run (int >= 3; default 6, the fewest for a 95% verdict)",
    "max": "most blocks, i.e. most runs of any cell (int >= min)",
    "target": "stop a cell once its CI is narrower than this share of its median (0 < x < 1, e.g. 0.03)",
    "metric": "column whose median's CI is judged (default: the workload's primary metric)",
}


def load_spec(
    path: str | Path,
    local: bool = True,
    repetitions: int | None = None,
    warmup: int | None = None,
) -> ExperimentSpec:
    """Read and validate a YAML experiment file (at most MAX_FILE_BYTES of UTF-8 text); ``repetitions``
    and ``warmup`` (the command line's ``-r``, ``--warmup``) replace the file's values before validation,
    so they are checked as the file's would be."""
    return parse_spec(read_text(path), str(path), local, repetitions, warmup)


def parse_spec(
    text: str,
    source: str = "<string>",
    local: bool = True,
    repetitions: int | None = None,
    warmup: int | None = None,
) -> ExperimentSpec:
    """Validate YAML text; ``source`` is the name used in error messages. ``local=False`` (a sweep on other
    machines, as does a ``cluster:`` block) leaves the allocator paths to the machines that run them.
    ``repetitions`` overrides the file's (an int: ``repetitions: {auto: ...}`` is then replaced too)."""
    if len(text) > MAX_FILE_BYTES:
        raise SpecError(
            f"{source}: larger than {MAX_FILE_BYTES // 1024} KiB, the limit for an experiment file"
        )
    data, lines = read_yaml(text, source)
    given = {"repetitions": f"-r {repetitions}"} if repetitions else {}
    if warmup is not None:
        given["warmup"] = f"--warmup {warmup}"
    where = Where(source, lines, given or None)
    if not isinstance(data, dict):
        raise where.error((), "the file must be a mapping of keys (name, workload, axes, ...)")
    if repetitions is not None:
        data = {**data, "repetitions": repetitions}
    if warmup is not None:
        data = {**data, "warmup": warmup}
    return _validate(data, where, local)


def _validate(data: dict, where: Where, local: bool = True) -> ExperimentSpec:
    """Every independent check of the file runs and all their errors are reported together
    (:class:`~.collect.Collected`); checks of the whole product need a complete spec and run after."""
    found = Collected(where.source)
    workload = _top_keys(data, where, found)
    user_allocs, bad_allocs = _user_allocators(data, where, found)
    table = alloc_mod.registry(user_allocs)
    params: dict = {}
    axes: dict = {}
    if workload is not None:
        params = {
            name: found.take(_param, workload, name, value, ("params", name), where, default=_BAD)
            for name, value in found.take(_mapping, data, "params", where, default={}).items()
        }
        axes = _axes(data, workload, {**table, **bad_allocs}, where, found)
    fields = _fields(data, where, found, workload, params, axes)
    cluster = found.take(parse_cluster, data.get("cluster"), where, default={})
    found.raise_any()
    if local and not cluster:
        _check_user_paths(user_allocs, table, axes, where)
    machines = cluster.get("machines") if cluster else None
    if machines == "each" and isinstance(data.get("repetitions"), dict):
        raise where.error(
            ("cluster", "machines") if "machines" in data["cluster"] else ("cluster",),
            ADAPTIVE_ON_EACH,
        )
    spec = ExperimentSpec(
        workload=data["workload"],
        workload_def=workload,
        allocator_table=table,
        source=where.source,
        params=params,
        axes=axes,
        allocators=user_allocs,
        cluster=cluster,
        **fields,
    )
    _check_cells(spec, workload, where)
    spec = dataclasses.replace(spec, expected=_expected(data, spec, workload, where))
    return _workload_checks(spec, workload, where)


def _top_keys(data: dict, where: Where, found: Collected):
    """Unknown and missing top-level keys (each one found); the workload's definition, None if unknown."""
    for key in data:
        if key not in _TOP_KEYS:
            found.add(where.error((key,), f"unknown key; allowed keys: {', '.join(_TOP_KEYS)}"))
    for required in ("name", "workload"):
        if required not in data:
            found.add(where.error((), f"missing required key '{required}' ({_TOP_KEYS[required]})"))
    name = data.get("workload")
    if "workload" in data and (not isinstance(name, str) or name not in workloads.WORKLOADS):
        found.add(
            where.error(
                ("workload",),
                f"unknown workload {name!r}; allowed: {', '.join(workloads.WORKLOADS)}",
            )
        )
        return None
    return workloads.get(name) if name else None


def _fields(data, where, found: Collected, workload, params, axes) -> dict:
    """The spec's scalar and section fields, each checked on its own; a field that depends on the
    workload, the params or the axes is checked only when those were valid."""
    take = found.take
    fields = {
        "name": take(_name, data, where) if "name" in data else None,
        "description": take(_description, data, where, default=""),
        "warmup": take(_int, data, "warmup", 0, 0, MAX_WARMUP, where),
        "seed": take(_int, data, "seed", 0, 0, MAX_SEED, where),
        "timeout": take(_timeout, data, where),
        "memory_limit": take(memory_limit, data, where),
        "perf": take(_perf, data, "perf", where),
        "counters": take(_perf, data, "counters", where),
        "order": take(_choice, data, "order", ("interleaved", "grouped"), "interleaved", where),
        "condition_memory": take(_conditioning, data, where, default={}),
        "adaptive": {},
        "repetitions": 1,
    }
    if workload is not None and _BAD not in params.values() and _BAD not in axes.values():
        overlap = set(params) & set(axes)
        if overlap:
            found.add(
                where.error(
                    ("params", sorted(overlap)[0]), "is both a fixed param and an axis; keep one"
                )
            )
        fields["adaptive"] = take(_adaptive, data, workload, params, where, default={})
    fields["repetitions"] = (
        fields["adaptive"]["min"]
        if fields["adaptive"]
        else take(_int, data, "repetitions", 1, 1, MAX_REPETITIONS, where)
    )
    if workload is not None and _BAD not in axes.values():
        fields["exclude"] = take(_cells, data, "exclude", axes, where, True, default=())
        fields["baseline"] = take(_cells, data, "baseline", axes, where, False, default={})
        fields["system"] = take(_system, data, axes, where, default={})
    return fields


_BAD = object()  # the value of a param or an axis whose check failed (its error is collected)
_BOOL_HINT = " (YAML reads unquoted yes/no/on/off/true/false as a boolean: quote the word)"
_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def _mapping(data: dict, key: str, where: Where) -> dict:
    value = data.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise where.error(
            (key,), f"must be a mapping ({_TOP_KEYS[key]}), got {type(value).__name__}"
        )
    return value


def _name(data, where) -> str:
    value = data["name"]
    if not isinstance(value, str) or not _SAFE_NAME.fullmatch(value):
        hint = _BOOL_HINT if isinstance(value, bool) else ""
        raise where.error(
            ("name",),
            f"must be 1 to 100 letters, digits, '.', '_' or '-', starting with a letter "
            f"or digit (it names the results directory); got {value!r}{hint}",
        )
    return value


def _description(data, where) -> str:
    value = data.get("description", "")
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise where.error(
            ("description",),
            f"must be text, got {value!r}{_BOOL_HINT if isinstance(value, bool) else ''}",
        )
    return str(value)


def _int(data, key, default, minimum, maximum, where) -> int:
    value = data.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
        raise where.error((key,), f"must be an integer from {minimum} to {maximum}, got {value!r}")
    return value


def _timeout(data, where) -> float:
    value = data.get("timeout", 1800)
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not 0 < value <= MAX_TIMEOUT
    ):
        raise where.error(
            ("timeout",),
            f"must be a number of seconds > 0 and <= {MAX_TIMEOUT} (a week), got {value!r}",
        )
    return float(value)


def _choice(data, key, allowed, default, where) -> str:
    value = data.get(key, default)
    if value not in allowed:
        raise where.error((key,), f"must be one of {', '.join(allowed)}; got {value!r}")
    return value


def _perf(data, key, where):
    value = data.get(key, "auto")
    if value is False:
        return "off"
    if value in PERF_MODES:
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    if isinstance(value, dict) and all(isinstance(v, str) for v in value.values()):
        return dict(value)
    raise where.error(
        (key,),
        f"must be auto, off, a list of event names or a mapping label -> event; got {value!r}",
    )


def _conditioning(data, where) -> dict:
    value = data.get("condition_memory", False)
    if value is False or value is None:
        return {}
    if value is True:
        return {"compact": True, "drop_caches": True}
    if not isinstance(value, dict) or set(value) - {"compact", "drop_caches"}:
        raise where.error(
            ("condition_memory",), "must be false, true or {compact: bool, drop_caches: bool}"
        )
    for key, flag in value.items():
        if not isinstance(flag, bool):
            raise where.error(("condition_memory", key), f"must be true or false, got {flag!r}")
    return dict(value)


AUTO_MIN_DEFAULT = (
    6  # stats.min_runs_for(0.95): fewer values cannot give a 95% interval of a median
)


def _adaptive(data, workload, params, where) -> dict:
    """``repetitions: {auto: {min, max, target, metric}}`` checked; {} for a fixed number of repetitions."""
    value = data.get("repetitions")
    if value == "auto":
        raise where.error(
            ("repetitions",),
            "auto needs its bounds: {auto: {max: 12, target: 0.03}} "
            f"(min defaults to {AUTO_MIN_DEFAULT})",
        )
    if not isinstance(value, dict):
        return {}
    if list(value) != ["auto"] or not isinstance(value["auto"], dict):
        raise where.error(
            ("repetitions",), "must be an integer, or {auto: {min: N, max: N, target: F}}"
        )
    auto, path = value["auto"], ("repetitions", "auto")
    _known_keys(auto, _AUTO_KEYS, path, where)
    for required in ("max", "target"):
        if required not in auto:
            raise where.error(path, f"missing '{required}' ({_AUTO_KEYS[required]})")
    low = auto.get("min", AUTO_MIN_DEFAULT)
    if isinstance(low, bool) or not isinstance(low, int) or not 3 <= low <= MAX_REPETITIONS:
        raise where.error(
            path + ("min",),
            f"must be an integer from 3 to {MAX_REPETITIONS} (with fewer runs the "
            f"CI of a median is a short range that misses it often), got {low!r}",
        )
    high = auto["max"]
    if isinstance(high, bool) or not isinstance(high, int) or not low <= high <= MAX_REPETITIONS:
        raise where.error(
            path + ("max",),
            f"must be an integer from min ({low}) to {MAX_REPETITIONS}, got {high!r}",
        )
    target = auto["target"]
    if isinstance(target, bool) or not isinstance(target, (int, float)) or not 0 < target < 1:
        raise where.error(
            path + ("target",),
            f"must be a share of the median between 0 and 1 (0.03 = 3%), got {target!r}",
        )
    metric = _metric(auto.get("metric"), path + ("metric",), workload, params, where)
    return {"min": low, "max": high, "target": float(target), "metric": metric}


def _param(workload, name, value, path, where):
    param = workload.params.get(name)
    if param is None and workload.open_params:
        if not isinstance(name, str) or not name.isidentifier():
            raise where.error(path, "a parameter name must be an identifier (it is used as {name})")
        if name in ("allocator", TEXT_AXIS, MEMORY_AXIS, REGIME_AXIS) or is_knob(name):
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
    if canonical_knob(name) == "thp.enabled" and value not in THP_MODES:
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


def _user_allocators(data, where, found: Collected) -> tuple[dict, dict]:
    """The ``allocators:`` section, each entry checked: the valid entries, and the names of the others
    (an axis naming one of those is not refused again for it)."""
    user = found.take(_mapping, data, "allocators", where, default={})
    good: dict = {}
    bad: dict = {}
    for name, entry in user.items():
        try:
            alloc_mod.user_allocator(name, entry)
            good[name] = entry
        except SpecError as exc:
            found.add(where.error(("allocators", name), str(exc)))
            bad[name] = None
    return good, bad


def _check_user_paths(user: dict, table: dict, axes: dict, where) -> None:
    """A library path given under ``allocators:`` must exist when the allocator axis uses it, and be a
    shared object that defines malloc and free (:func:`..command.elf.why_not_allocator`).

    Only user paths are checked here: a built-in's library (an apt package) may be missing on the machine
    that plans; the sweep's preflight refuses it with the package to install.
    """
    for name in axes.get("allocator", ()):
        if "path" in user.get(name, {}):
            try:
                path = table[name].resolve()
            except ToolMissingError as exc:
                raise where.error(
                    ("allocators", name, "path"), str(exc), cls=ToolMissingError
                ) from None
            why = why_not_allocator(str(path))
            if why:
                raise where.error(("allocators", name, "path"), f"allocator {name!r}: {why}")


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
