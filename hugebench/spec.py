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
    expected: {source: a paper, claims: [{cell: {allocator: glibc, thp: never, keys: 10M}, value: 105}]}

``repetitions: {auto: {min: 6, max: 12, target: 0.05}}`` makes the number of blocks adaptive
(``hugebench.adaptive``); ``expected:`` holds published numbers the report gives a verdict on.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import math
import re
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any


from . import allocators as alloc_mod
from . import workloads
from .columns import user_name_problem
from .errors import SpecError, ToolMissingError
from .cluster.config import ADAPTIVE_ON_EACH, parse_block as parse_cluster
from .text import MODES as TEXT_MODES
from .yamlsafe import MAX_DEPTH, MAX_FILE_BYTES, MAX_NODES, Where, read_text, read_yaml  # noqa: F401 (limits re-exported)

THP_MODES = ("always", "madvise", "never")
DEFAULT_ALLOCATOR = "glibc"  # when the file has no allocator axis
# Where the measured program's text lives (hugebench.text); like the allocator, set in its environment.
TEXT_AXIS = "text_pages"
KNOB_PREFIXES = ("thp", "hugetlb")
PERF_MODES = ("auto", "off")

# Limits on what an experiment file may ask for: far above any real experiment, low enough that a hostile or
# mistaken file is refused in bounded time and memory before anything is planned.
MAX_REPETITIONS = 10_000
MAX_WARMUP = 1_000
MAX_RUNS = 1_000_000  # planned runs: cells x (repetitions + warm-up)
MAX_TIMEOUT = 7 * 24 * 3600
MAX_SEED = 2**63 - 1

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
    "expected": "published numbers this experiment reproduces: {source: TEXT, metric: COLUMN, claims: [...]}",
    "cluster": "run on several machines: {scheduler: tcp://HOST:8786 or ssh: [h1, h2], machines: each|spread}",
}
_AUTO_KEYS = {"min": "blocks always run (int >= 3; default 6, the fewest for a 95% verdict)",
              "max": "most blocks, i.e. most runs of any cell (int >= min)",
              "target": "stop a cell once its CI is narrower than this share of its median (0 < x < 1, e.g. 0.03)",
              "metric": "column whose median's CI is judged (default: the workload's primary metric)"}
_EXPECTED_KEYS = {"source": "where the numbers were published (citation text, required)",
                  "metric": "column the numbers are of (default: the workload's primary metric)",
                  "claims": "list of claims: {cell: {...}, value: N} or {cell: {...}, vs: {...}, ratio: R}"}
_CLAIM_KEYS = {"name": "label shown in the report", "cell": "the cell the claim is about (one cell)",
               "vs": "the cell it is compared with (a ratio claim)", "ratio": "published ratio cell / vs",
               "value": "published value of cell", "vs_value": "published value of vs (ratio = value / vs_value)",
               "metric": "column (default: expected.metric)", "source": "citation of this claim (default: "
               "expected.source)", "note": "free text shown with the claim"}
# Public: every key a file may have, one line each; validated above, and the manual's reference (hugebench.docgen).
TOP_KEYS, AUTO_KEYS, EXPECTED_KEYS, CLAIM_KEYS = _TOP_KEYS, _AUTO_KEYS, _EXPECTED_KEYS, _CLAIM_KEYS


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
    # repetitions: {auto: ...}: blocks keep being added up to adaptive["max"] while some cell's CI is wider than
    # adaptive["target"] (hugebench.adaptive); ``repetitions`` is then the blocks always run (adaptive["min"]).
    adaptive: dict = field(default_factory=dict)
    expected: dict = field(default_factory=dict)  # {source, metric, claims: ({name, cell, vs, ratio, value, ...},)}
    cluster: dict = field(default_factory=dict)  # where it runs, not what: outside the fingerprint

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


def load_spec(path: str | Path, local: bool = True) -> ExperimentSpec:
    """Read and validate a YAML experiment file (at most MAX_FILE_BYTES of UTF-8 text)."""
    return parse_spec(read_text(path), str(path), local)


def parse_spec(text: str, source: str = "<string>", local: bool = True) -> ExperimentSpec:
    """Validate YAML text; ``source`` is the name used in error messages. ``local=False`` (a sweep on other
    machines, as does a ``cluster:`` block) leaves the allocator paths to the machines that run them."""
    if len(text) > MAX_FILE_BYTES:
        raise SpecError(f"{source}: larger than {MAX_FILE_BYTES // 1024} KiB, the limit for an experiment file")
    data, lines = read_yaml(text, source)
    where = Where(source, lines)
    if not isinstance(data, dict):
        raise where.error((), "the file must be a mapping of keys (name, workload, axes, ...)")
    return _validate(data, where, local)


def _validate(data: dict, where: Where, local: bool = True) -> ExperimentSpec:
    for key in data:
        if key not in _TOP_KEYS:
            allowed = ", ".join(_TOP_KEYS)
            raise where.error((key,), f"unknown key; allowed keys: {allowed}")
    for required in ("name", "workload"):
        if required not in data:
            raise where.error((), f"missing required key '{required}' ({_TOP_KEYS[required]})")
    wl_name = data["workload"]
    if not isinstance(wl_name, str) or wl_name not in workloads.WORKLOADS:
        raise where.error(("workload",), f"unknown workload {wl_name!r}; allowed: {', '.join(workloads.WORKLOADS)}")
    workload = workloads.WORKLOADS[wl_name]
    user_allocs = _user_allocators(data, where)
    table = alloc_mod.registry(user_allocs)
    params = {name: _param(workload, name, value, ("params", name), where)
              for name, value in _mapping(data, "params", where).items()}
    axes = _axes(data, workload, table, where)
    cluster = parse_cluster(data.get("cluster"), where)
    if local and not cluster:
        _check_user_paths(user_allocs, table, axes, where)
    machines = cluster.get("machines") if cluster else None
    if machines == "each" and isinstance(data.get("repetitions"), dict):
        raise where.error(("cluster", "machines") if "machines" in data["cluster"] else ("cluster",),
                          ADAPTIVE_ON_EACH)
    overlap = set(params) & set(axes)
    if overlap:
        raise where.error(("params", sorted(overlap)[0]), "is both a fixed param and an axis; keep one")
    adaptive = _adaptive(data, workload, params, where)
    spec = ExperimentSpec(
        name=_name(data, where),
        workload=wl_name,
        source=where.source,
        description=_description(data, where),
        repetitions=adaptive["min"] if adaptive else _int(data, "repetitions", 1, 1, MAX_REPETITIONS, where),
        adaptive=adaptive,
        warmup=_int(data, "warmup", 0, 0, MAX_WARMUP, where),
        seed=_int(data, "seed", 0, 0, MAX_SEED, where),
        timeout=_timeout(data, where),
        params=params,
        axes=axes,
        exclude=_cells(data, "exclude", axes, where, many=True),
        baseline=_cells(data, "baseline", axes, where, many=False),
        allocators=user_allocs,
        system=_system(data, axes, where),
        perf=_perf(data, "perf", where),
        counters=_perf(data, "counters", where),
        order=_choice(data, "order", ("interleaved", "grouped"), "interleaved", where),
        condition_memory=_conditioning(data, where),
        cluster=cluster,
    )
    _check_cells(spec, workload, where)
    spec = dataclasses.replace(spec, expected=_expected(data, spec, workload, where))
    return _workload_checks(spec, workload, where)


def _workload_checks(spec: ExperimentSpec, workload, where) -> ExperimentSpec:
    """The workload's own checks of its parameters (e.g. a command's argv), once per distinct cell."""
    if workload.check_params is None and workload.prepare_params is None:
        return spec
    base_dir = Path(spec.source).resolve().parent
    defaults = {name: p.default for name, p in workload.params.items()}
    prepared = spec.params
    for cell in cells(spec)[:1000]:
        params = {**defaults, **spec.params, **{k: v for k, v in cell.items() if k in spec.axes and
                                                not is_knob(k) and k not in ("allocator", TEXT_AXIS)}}
        try:
            if workload.check_params:
                workload.check_params(params)
            if workload.prepare_params:
                done = workload.prepare_params(params, base_dir)
                prepared = {**prepared, **{k: v for k, v in done.items() if k in spec.params or
                                           (k not in spec.axes and v != defaults.get(k))}}
        except ValueError as exc:
            name = str(exc).split(":", 1)[0].split(".")[0]
            key = ("axes", name) if name in spec.axes else ("params", name) if name in spec.params else ("params",)
            raise where.error(key, str(exc)) from None
    return dataclasses.replace(spec, params=prepared)


_BOOL_HINT = " (YAML reads unquoted yes/no/on/off/true/false as a boolean: quote the word)"
_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def _mapping(data: dict, key: str, where: Where) -> dict:
    value = data.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise where.error((key,), f"must be a mapping ({_TOP_KEYS[key]}), got {type(value).__name__}")
    return value


def _name(data, where) -> str:
    value = data["name"]
    if not isinstance(value, str) or not _SAFE_NAME.fullmatch(value):
        hint = _BOOL_HINT if isinstance(value, bool) else ""
        raise where.error(("name",), f"must be 1 to 100 letters, digits, '.', '_' or '-', starting with a letter "
                                     f"or digit (it names the results directory); got {value!r}{hint}")
    return value


def _description(data, where) -> str:
    value = data.get("description", "")
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise where.error(("description",), f"must be text, got {value!r}{_BOOL_HINT if isinstance(value, bool) else ''}")
    return str(value)


def _int(data, key, default, minimum, maximum, where) -> int:
    value = data.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
        raise where.error((key,), f"must be an integer from {minimum} to {maximum}, got {value!r}")
    return value


def _timeout(data, where) -> float:
    value = data.get("timeout", 1800)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= MAX_TIMEOUT:
        raise where.error(("timeout",), f"must be a number of seconds > 0 and <= {MAX_TIMEOUT} (a week), "
                                        f"got {value!r}")
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
    for key, flag in value.items():
        if not isinstance(flag, bool):
            raise where.error(("condition_memory", key), f"must be true or false, got {flag!r}")
    return dict(value)



AUTO_MIN_DEFAULT = 6  # stats.min_runs_for(0.95): fewer values cannot give a 95% interval of a median


def _adaptive(data, workload, params, where) -> dict:
    """``repetitions: {auto: {min, max, target, metric}}`` checked; {} for a fixed number of repetitions."""
    value = data.get("repetitions")
    if value == "auto":
        raise where.error(("repetitions",), "auto needs its bounds: {auto: {max: 12, target: 0.03}} "
                                            f"(min defaults to {AUTO_MIN_DEFAULT})")
    if not isinstance(value, dict):
        return {}
    if list(value) != ["auto"] or not isinstance(value["auto"], dict):
        raise where.error(("repetitions",), "must be an integer, or {auto: {min: N, max: N, target: F}}")
    auto, path = value["auto"], ("repetitions", "auto")
    _known_keys(auto, _AUTO_KEYS, path, where)
    for required in ("max", "target"):
        if required not in auto:
            raise where.error(path, f"missing '{required}' ({_AUTO_KEYS[required]})")
    low = auto.get("min", AUTO_MIN_DEFAULT)
    if isinstance(low, bool) or not isinstance(low, int) or not 3 <= low <= MAX_REPETITIONS:
        raise where.error(path + ("min",), f"must be an integer from 3 to {MAX_REPETITIONS} (with fewer runs the "
                                           f"CI of a median is a short range that misses it often), got {low!r}")
    high = auto["max"]
    if isinstance(high, bool) or not isinstance(high, int) or not low <= high <= MAX_REPETITIONS:
        raise where.error(path + ("max",), f"must be an integer from min ({low}) to {MAX_REPETITIONS}, got {high!r}")
    target = auto["target"]
    if isinstance(target, bool) or not isinstance(target, (int, float)) or not 0 < target < 1:
        raise where.error(path + ("target",), f"must be a share of the median between 0 and 1 (0.03 = 3%), "
                                              f"got {target!r}")
    metric = _metric(auto.get("metric"), path + ("metric",), workload, params, where)
    return {"min": low, "max": high, "target": float(target), "metric": metric}


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


def _param(workload, name, value, path, where):
    param = workload.params.get(name)
    if param is None and workload.open_params:
        if not isinstance(name, str) or not name.isidentifier():
            raise where.error(path, "a parameter name must be an identifier (it is used as {name})")
        if name in ("allocator", TEXT_AXIS) or is_knob(name):
            raise where.error(path[:2], f"{name} is an axis, not a parameter: axes: {{{name}: [...]}}"
                                        + (" (or, for a knob fixed for the sweep, system:)" if is_knob(name) else ""))
        why = user_name_problem(name, (m[0] for m in workload.metrics), column=path[0] == "axes")
        if why:
            raise where.error(path[:2], why)
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise where.error(path, f"a parameter of your own must be a string or a number, got {value!r}")
        return value
    if param is None:
        raise where.error(path, f"unknown parameter of workload {workload.name!r}; "
                                f"allowed: {', '.join(workload.params)}")
    try:
        return param.check(name, value)
    except ValueError as exc:
        raise where.error(path, str(exc)) from None


def _knob_value(name, value, path, where):
    if isinstance(value, bool):
        raise where.error(path, f"a kernel knob value must be a string or an integer, got {value!r}{_BOOL_HINT}")
    if canonical_knob(name) == "thp.enabled" and value not in THP_MODES:
        raise where.error(path, f"THP mode must be one of {', '.join(THP_MODES)}; got {value!r}")
    if not isinstance(value, (str, int)):
        raise where.error(path, f"a kernel knob value must be a string or an integer, got {value!r}")
    return value


def _system(data, axes, where) -> dict:
    system = {}
    for key, value in _mapping(data, "system", where).items():
        name = canonical_knob(key)
        if not is_knob(name):
            raise where.error(("system", key), "not a kernel knob; knob names start with thp or hugetlb")
        if name in system:
            raise where.error(("system", key), f"knob {name!r} is given twice (thp is thp.enabled)")
        if name in axes:
            raise where.error(("system", key), f"knob {name!r} is also an axis, whose values would win; keep one")
        system[name] = _knob_value(key, value, ("system", key), where)
    return system


def _user_allocators(data, where) -> dict:
    """The ``allocators:`` section, each entry checked."""
    user = _mapping(data, "allocators", where)
    for name, entry in user.items():
        try:
            alloc_mod.user_allocator(name, entry)
        except SpecError as exc:
            raise where.error(("allocators", name), str(exc)) from None
    return user


def _check_user_paths(user: dict, table: dict, axes: dict, where) -> None:
    """A library path given under ``allocators:`` must exist when the allocator axis uses it.

    Only user paths are checked here: a built-in's library (an apt package) may be missing on the machine
    that plans; the sweep's preflight refuses it with the package to install.
    """
    for name in axes.get("allocator", ()):
        if "path" in user.get(name, {}):
            try:
                table[name].resolve()
            except ToolMissingError as exc:
                raise where.error(("allocators", name, "path"), str(exc), cls=ToolMissingError) from None


def _axes(data, workload, table, where) -> dict:
    """name -> tuple of checked values; without any axis, one implicit allocator axis (see below)."""
    axes = {}
    for name, values in _mapping(data, "axes", where).items():
        path = ("axes", name)
        if not isinstance(values, list) or not values:
            raise where.error(path, "must be a non-empty list of values")
        nested = next((i for i, v in enumerate(values) if isinstance(v, (list, dict))), None)
        if nested is not None:
            raise where.error(path + (nested,), "an axis value must be one value (a string or a number), not a "
                                                "list or a mapping: make what varies a parameter, used as {name}")
        if name == "allocator":
            checked = tuple(_allocator(v, path + (i,), table, where) for i, v in enumerate(values))
        elif name == TEXT_AXIS:
            checked = tuple(_text_mode(v, path + (i,), where) for i, v in enumerate(values))
        elif is_knob(name):
            name = canonical_knob(name)
            checked = tuple(_knob_value(name, v, path + (i,), where) for i, v in enumerate(values))
        else:
            checked = tuple(_param(workload, name, v, path + (i,), where) for i, v in enumerate(values))
        _no_repeats(values, checked, path, where)
        if name in axes:
            raise where.error(path, f"axis {name!r} is given twice (thp is thp.enabled)")
        axes[name] = checked
    # A file without axes measures one cell; naming it by its allocator gives the report a column to group
    # by (it groups by the axes), and the cell's content, hence its id, is the same as without the axis.
    return axes or {"allocator": (DEFAULT_ALLOCATOR,)}


def _text_mode(value, path, where) -> str:
    if value not in TEXT_MODES:
        raise where.error(path, f"text_pages must be one of {', '.join(TEXT_MODES)}; got {value!r}"
                                + (_BOOL_HINT if isinstance(value, bool) else ""))
    return value


def _allocator(value, path, table, where) -> str:
    if not isinstance(value, str) or value not in table:
        raise where.error(path, f"unknown allocator {value!r}; allowed: {', '.join(table)} "
                                "(or define it under 'allocators:')")
    return value


def _no_repeats(values, checked, path, where) -> None:
    """Refuse an axis listing one value twice, compared after coercion (1000 and 1k are the same run)."""
    first = {}
    for i, value in enumerate(checked):
        if value in first:
            j = first[value]
            same = f" (both are {value!r})" if values[i] != values[j] else ""
            raise where.error(path + (i,), f"lists a value twice: {values[i]!r} repeats {values[j]!r}{same}")
        first[value] = i


def _cells(data, key, axes, where, many):
    raw = data.get(key)
    if raw is None:
        return () if many else {}
    items = raw if many else [raw]
    if many and not isinstance(raw, list):
        raise where.error((key,), "must be a list of partial cells, e.g. [{allocator: glibc, thp: always}]")
    parsed = [_partial_cell(cell, (key, i) if many else (key,), axes, where) for i, cell in enumerate(items)]
    return tuple(parsed) if many else parsed[0]


def _partial_cell(cell, path, axes, where) -> dict:
    """A mapping axis -> value with every value on its axis (coerced: '10M' -> 10000000; thp -> thp.enabled)."""
    if not isinstance(cell, dict) or not cell:
        raise where.error(path, "must be a mapping axis -> value, e.g. {allocator: glibc, thp: never}")
    norm = {}
    for name, value in cell.items():
        axis = canonical_knob(name) if isinstance(name, str) and is_knob(name) else name
        if axis not in axes:
            raise where.error(path + (name,), f"is not an axis; axes: {', '.join(axes)}")
        if axis in norm:
            raise where.error(path + (name,), f"axis {axis!r} is given twice (thp is thp.enabled)")
        allowed = axes[axis]
        coerced = _coerce_like(value, allowed)
        if coerced not in allowed:
            raise where.error(path + (name,), f"value {value!r} is not on the axis; "
                                              f"allowed: {', '.join(map(str, allowed))}")
        norm[axis] = coerced
    return norm


def _coerce_like(value, allowed):
    if isinstance(value, str) and allowed and isinstance(allowed[0], int) and not isinstance(allowed[0], bool):
        try:
            return workloads.parse_count(value)
        except ValueError:
            return value
    return value


def matches(cell: dict, partial: dict) -> bool:
    """True when ``cell`` has every value of the partial cell ``partial`` (an exclude entry, the baseline)."""
    return all(k in cell and cell[k] == v for k, v in partial.items())


def cells(spec: ExperimentSpec) -> list[dict]:
    """All cells (axis name -> value) of the cartesian product, minus excluded ones, in YAML order."""
    names = list(spec.axes)
    product = (dict(zip(names, values)) for values in itertools.product(*(spec.axes[n] for n in names)))
    return [cell for cell in product if not any(matches(cell, ex) for ex in spec.exclude)]


def _check_cells(spec: ExperimentSpec, workload, where) -> None:
    """What only the whole product shows: its size, a plan with no cell, an excluded baseline, min > max."""
    size = math.prod(len(values) for values in spec.axes.values())
    if size > MAX_RUNS:
        raise where.error(("axes",), f"the axes make {size} cells; at most {MAX_RUNS} are allowed")
    left = cells(spec)
    if not left:
        raise where.error(("exclude",), "excludes every cell of the axes; nothing would run")
    blocks = spec.adaptive.get("max", spec.repetitions)
    runs = len(left) * (blocks + spec.warmup)
    if runs > MAX_RUNS:
        raise where.error(("repetitions",), f"{blocks} repetitions (+{spec.warmup} warm-up) of "
                                            f"{len(left)} cells make {runs} runs; at most {MAX_RUNS} are allowed")
    if spec.baseline and not any(matches(cell, spec.baseline) for cell in left):
        raise where.error(("baseline",), "every cell with the baseline's values is excluded by 'exclude:'; "
                                         "ratios would have nothing to compare with")
    for low, high in _ordered_params(workload):
        _check_order(spec, workload, left, low, high, where)
    _check_min_duration(spec, workload, left, where)
    _check_text_thp(spec, left, where)
    _check_void(spec, workload, where)


def _check_text_thp(spec: ExperimentSpec, left, where) -> None:
    """text_pages thp puts the text on THP, which THP 'never' rules out: such a cell could only be skipped."""
    for cell in left:
        mode = cell.get("thp.enabled", spec.system.get("thp.enabled"))
        if cell.get(TEXT_AXIS) == "thp" and mode == "never":
            on_axis = "thp.enabled" in spec.axes
            fix = "leave it out: exclude: [{text_pages: thp, thp: never}]" if on_axis else "set THP madvise"
            raise where.error(("axes", TEXT_AXIS) if on_axis else ("system", "thp"),
                              f"text_pages thp needs THP 'madvise' or 'always', but a cell has THP 'never'; {fix}")


def void_problem(workload, allocator) -> str | None:
    """Why the allocator ``void`` (no malloc at all) cannot run this workload, or None."""
    if allocator.mode == "void" and "allocator_mode" not in workload.params:
        return (f"allocator {allocator.name!r} only applies to workloads with an allocator_mode parameter "
                f"(alloctest); {workload.name} always uses malloc")
    return None


def _check_void(spec: ExperimentSpec, workload, where) -> None:
    table = alloc_mod.registry(spec.allocators)
    for i, name in enumerate(spec.axes.get("allocator", ())):
        why = void_problem(workload, table[name])
        if why:
            raise where.error(("axes", "allocator", i), why)


def _check_min_duration(spec: ExperimentSpec, workload, left, where) -> None:
    """A duration-bounded workload must run at least as long as each allocator needs (jemalloc's HPA delay)."""
    if "duration_s" not in workload.params:
        return
    table = alloc_mod.registry(spec.allocators)
    default = spec.params.get("duration_s", workload.params["duration_s"].default)
    for cell in left:
        allocator = table[cell.get("allocator", DEFAULT_ALLOCATOR)]
        duration, need = cell.get("duration_s", default), allocator.min_duration_s()
        if duration < need:
            key = ("axes", "duration_s") if "duration_s" in spec.axes else ("params", "duration_s")
            raise where.error(key, f"{duration} s is too short for allocator {allocator.name!r}: it hugifies only "
                                   f"after hpa_hugify_delay_ms, so runs need duration_s >= {need:g} s")


def _ordered_params(workload) -> list[tuple[str, str]]:
    """Parameter pairs that must not cross: key_min <= key_max, min_size <= max_size."""
    pairs = []
    for name in workload.params:
        for low, high in ((("_min", "_max"), ("min_", "max_"))):
            if name.endswith(low) and name[: -len(low)] + high in workload.params:
                pairs.append((name, name[: -len(low)] + high))
            elif name.startswith(low) and high + name[len(low):] in workload.params:
                pairs.append((name, high + name[len(low):]))
    return pairs


def _check_order(spec, workload, left, low, high, where) -> None:
    on_axes = low in spec.axes or high in spec.axes
    for cell in left if on_axes else left[:1]:
        lo, hi = (cell.get(n, spec.params.get(n, workload.params[n].default)) for n in (low, high))
        if lo > hi:
            key = (("axes", low) if low in spec.axes else ("axes", high) if high in spec.axes
                   else ("params", low if low in spec.params else high))
            raise where.error(key, f"{low} ({lo}) is larger than {high} ({hi})"
                                   + (f" in the cell {cell}" if on_axes else "") + f"; {low} must be <= {high}")
