"""YAML experiment file -> frozen, validated ``ExperimentSpec``.

Every error names the file, the line and the key, and says what is allowed. Example file::

    name: tlb
    workload: hashlookup
    repetitions: 3
    params: {set_kind: flat}                 # fixed workload parameters
    axes:                                    # the cartesian product of these is the set of cells
      allocator: [glibc, jemalloc-thp]
      thp: [never, always]                   # THP 'enabled'; any kernel knob name works (thp.defrag, ...)
      keys: [10M, 30M]
    exclude: [{allocator: glibc, thp: always}]
    baseline: {allocator: glibc, thp: never}
    allocators: {tcmalloc-google: {path: /opt/tcmalloc/libtcmalloc.so}}
    system: {thp.defrag: madvise}            # kernel knobs fixed for the whole sweep
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from . import allocators as alloc_mod
from . import workloads
from .errors import SpecError

THP_MODES = ("always", "madvise", "never")
DEFAULT_ALLOCATOR = "glibc"  # when the file has no allocator axis
KNOB_PREFIXES = ("thp", "hugetlb")
PERF_MODES = ("auto", "off")

_TOP_KEYS = {
    "name": "experiment name (used in results and reports)",
    "workload": f"one of {', '.join(workloads.WORKLOADS)}",
    "description": "free text",
    "repetitions": "runs per cell (int >= 1)",
    "warmup": "uncounted warm-up runs per cell before the first block (int >= 0)",
    "seed": "seed of the interleaved order (int)",
    "timeout": "seconds a worker may run before it is killed (number > 0)",
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
}


@dataclass(frozen=True)
class ExperimentSpec:
    """A validated experiment. Axis values are already coerced (e.g. '10M' -> 10000000)."""

    name: str
    workload: str
    source: str
    description: str = ""
    repetitions: int = 1
    warmup: int = 0
    seed: int = 0
    timeout: float = 1800.0
    params: dict = field(default_factory=dict)
    axes: dict = field(default_factory=dict)  # name -> tuple of values, insertion ordered
    exclude: tuple = ()
    baseline: dict = field(default_factory=dict)
    allocators: dict = field(default_factory=dict)
    system: dict = field(default_factory=dict)
    perf: Any = "auto"
    counters: Any = "auto"
    order: str = "interleaved"
    condition_memory: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)

    def fingerprint(self) -> str:
        """Hash of what must not change between sweeps written into one results directory.

        Axis values and repetitions may grow (extending a sweep); fixed parameters, measurement
        settings, allocator definitions and fixed kernel knobs may not.
        """
        fixed = {k: v for k, v in self.to_dict().items()
                 if k in ("workload", "params", "allocators", "system", "perf", "counters", "condition_memory")}
        fixed["axis_names"] = list(self.axes)
        return hashlib.sha1(json.dumps(fixed, sort_keys=True, default=str).encode()).hexdigest()[:12]


def is_knob(name: str) -> bool:
    """True when an axis/system name is a kernel knob (thp, thp.*, hugetlb.*)."""
    return name == "thp" or name.split(".")[0] in KNOB_PREFIXES


def canonical_knob(name: str) -> str:
    """`thp` is shorthand for `thp.enabled`."""
    return "thp.enabled" if name == "thp" else name


class _LineLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate keys (a silent override would lose a setting)."""


def _construct_mapping(loader, node, deep=False):
    seen = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise SpecError(f"duplicate key {key!r} at line {key_node.start_mark.line + 1} "
                            f"(first at line {seen[key]})")
        seen[key] = key_node.start_mark.line + 1
    return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _key_lines(node, prefix=()) -> dict[tuple, int]:
    """Map each key path (tuple) in a composed YAML node tree to its 1-based line."""
    lines = {}
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            path = prefix + (key_node.value,)
            lines[path] = key_node.start_mark.line + 1
            lines.update(_key_lines(value_node, path))
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            path = prefix + (i,)
            lines[path] = item.start_mark.line + 1
            lines.update(_key_lines(item, path))
    return lines


class _Where:
    """Builds SpecErrors that name file, line and key."""

    def __init__(self, source: str, lines: dict[tuple, int]):
        self.source, self.lines = source, lines

    def error(self, path: tuple, message: str) -> SpecError:
        line = None
        for n in range(len(path), 0, -1):
            line = self.lines.get(tuple(path[:n]))
            if line:
                break
        key = ".".join(str(p) for p in path) or "(top level)"
        at = f"{self.source}:{line}" if line else self.source
        return SpecError(f"{at}: key '{key}': {message}")


def load_spec(path: str | Path) -> ExperimentSpec:
    """Read and validate a YAML experiment file."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise SpecError(f"cannot read experiment file {path}: {exc.strerror}") from None
    return parse_spec(text, str(path))


def parse_spec(text: str, source: str = "<string>") -> ExperimentSpec:
    """Validate YAML text; ``source`` is the name used in error messages."""
    try:
        node = yaml.compose(text, Loader=_LineLoader)
        data = yaml.load(text, Loader=_LineLoader)
    except SpecError as exc:
        raise SpecError(f"{source}: {exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f"{source}:{mark.line + 1}" if mark else source
        raise SpecError(f"{at}: not valid YAML: {getattr(exc, 'problem', exc)}") from None
    where = _Where(source, _key_lines(node) if node else {})
    if not isinstance(data, dict):
        raise where.error((), "the file must be a mapping of keys (name, workload, axes, ...)")
    return _validate(data, where)


def _validate(data: dict, where: _Where) -> ExperimentSpec:
    for key in data:
        if key not in _TOP_KEYS:
            allowed = ", ".join(_TOP_KEYS)
            raise where.error((key,), f"unknown key; allowed keys: {allowed}")
    for required in ("name", "workload"):
        if required not in data:
            raise where.error((), f"missing required key '{required}' ({_TOP_KEYS[required]})")
    wl_name = data["workload"]
    if wl_name not in workloads.WORKLOADS:
        raise where.error(("workload",), f"unknown workload {wl_name!r}; allowed: {', '.join(workloads.WORKLOADS)}")
    workload = workloads.WORKLOADS[wl_name]
    user_allocs = _mapping(data, "allocators", where)
    try:
        table = alloc_mod.registry(user_allocs)
    except SpecError as exc:
        raise where.error(("allocators",), str(exc)) from None
    params = {name: _param(workload, name, value, ("params", name), where)
              for name, value in _mapping(data, "params", where).items()}
    axes = _axes(data, workload, table, where)
    overlap = set(params) & set(axes)
    if overlap:
        raise where.error(("params", sorted(overlap)[0]), "is both a fixed param and an axis; keep one")
    system = {canonical_knob(k): _knob_value(k, v, ("system", k), where)
              for k, v in _mapping(data, "system", where).items()}
    for name in system:
        if not is_knob(name):
            raise where.error(("system", name), "not a kernel knob; knob names start with thp or hugetlb")
    spec = ExperimentSpec(
        name=_typed(data, "name", str, where),
        workload=wl_name,
        source=where.source,
        description=str(data.get("description", "")),
        repetitions=_int(data, "repetitions", 1, 1, where),
        warmup=_int(data, "warmup", 0, 0, where),
        seed=_int(data, "seed", 0, 0, where),
        timeout=_timeout(data, where),
        params=params,
        axes=axes,
        exclude=_cells(data, "exclude", axes, where, many=True),
        baseline=_cells(data, "baseline", axes, where, many=False),
        allocators=user_allocs,
        system=system,
        perf=_perf(data, "perf", where),
        counters=_perf(data, "counters", where),
        order=_choice(data, "order", ("interleaved", "grouped"), "interleaved", where),
        condition_memory=_conditioning(data, where),
    )
    return spec


def _mapping(data: dict, key: str, where: _Where) -> dict:
    value = data.get(key) or {}
    if not isinstance(value, dict):
        raise where.error((key,), f"must be a mapping ({_TOP_KEYS[key]}), got {type(value).__name__}")
    return value


def _typed(data, key, typ, where):
    value = data[key]
    if not isinstance(value, typ):
        raise where.error((key,), f"must be {typ.__name__}, got {value!r}")
    return value


def _int(data, key, default, minimum, where) -> int:
    value = data.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise where.error((key,), f"must be an integer >= {minimum}, got {value!r}")
    return value


def _timeout(data, where) -> float:
    value = data.get("timeout", 1800)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise where.error(("timeout",), f"must be a number of seconds > 0, got {value!r}")
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
    raise where.error((key,), f"must be auto, off, a list of event names or a mapping label -> event; got {value!r}")


def _conditioning(data, where) -> dict:
    value = data.get("condition_memory", False)
    if value is False or value is None:
        return {}
    if value is True:
        return {"compact": True, "drop_caches": True}
    if not isinstance(value, dict) or set(value) - {"compact", "drop_caches"}:
        raise where.error(("condition_memory",), "must be false, true or {compact: bool, drop_caches: bool}")
    return {k: bool(v) for k, v in value.items()}


def _param(workload, name, value, path, where):
    param = workload.params.get(name)
    if param is None:
        raise where.error(path, f"unknown parameter of workload {workload.name!r}; "
                                f"allowed: {', '.join(workload.params)}")
    try:
        return param.check(name, value)
    except ValueError as exc:
        raise where.error(path, str(exc)) from None


def _knob_value(name, value, path, where):
    if canonical_knob(name) == "thp.enabled" and value not in THP_MODES:
        raise where.error(path, f"THP mode must be one of {', '.join(THP_MODES)}; got {value!r}")
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise where.error(path, f"a kernel knob value must be a string or an integer, got {value!r}")
    return value


def _axes(data, workload, table, where) -> dict:
    axes = {}
    for name, values in _mapping(data, "axes", where).items():
        path = ("axes", name)
        if not isinstance(values, list) or not values:
            raise where.error(path, "must be a non-empty list of values")
        if len(set(map(str, values))) != len(values):
            raise where.error(path, "lists a value twice")
        if name == "allocator":
            for i, v in enumerate(values):
                if v not in table:
                    raise where.error(path + (i,), f"unknown allocator {v!r}; allowed: {', '.join(table)} "
                                                   "(or define it under 'allocators:')")
            checked = tuple(values)
        elif is_knob(name):
            name = canonical_knob(name)
            checked = tuple(_knob_value(name, v, path + (i,), where) for i, v in enumerate(values))
        else:
            checked = tuple(_param(workload, name, v, path + (i,), where) for i, v in enumerate(values))
        if name in axes:
            raise where.error(path, f"axis {name!r} is given twice (thp is thp.enabled)")
        axes[name] = checked
    return axes


def _cells(data, key, axes, where, many):
    raw = data.get(key)
    if raw is None:
        return () if many else {}
    items = raw if many else [raw]
    if many and not isinstance(raw, list):
        raise where.error((key,), "must be a list of partial cells, e.g. [{allocator: glibc, thp: always}]")
    cells = []
    for i, cell in enumerate(items):
        path = (key, i) if many else (key,)
        if not isinstance(cell, dict) or not cell:
            raise where.error(path, "must be a mapping axis -> value, e.g. {allocator: glibc, thp: never}")
        norm = {}
        for name, value in cell.items():
            axis = canonical_knob(name) if is_knob(name) else name
            if axis not in axes:
                raise where.error(path + (name,), f"is not an axis; axes: {', '.join(axes)}")
            allowed = axes[axis]
            coerced = _coerce_like(value, allowed)
            if coerced not in allowed:
                raise where.error(path + (name,), f"value {value!r} is not on the axis; "
                                                  f"allowed: {', '.join(map(str, allowed))}")
            norm[axis] = coerced
        cells.append(norm)
    return tuple(cells) if many else cells[0]


def _coerce_like(value, allowed):
    if isinstance(value, str) and allowed and isinstance(allowed[0], int) and not isinstance(allowed[0], bool):
        try:
            return workloads.parse_count(value)
        except ValueError:
            return value
    return value
