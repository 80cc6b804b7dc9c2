"""Validation of an experiment file's keys: YAML text -> ``ExperimentSpec``, every error with file:line:key
and what is allowed. Partial cells and whole-product checks are in ``cells``, ``expected:`` in ``claims``.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from hugebench import workloads
from hugebench.errors import SpecError
from hugebench.experiment.cells import _cells, _check_cells, _workload_checks
from hugebench.experiment.check_axes import _axes, _param, _system
from hugebench.experiment.check_parts import (
    _adaptive,
    _check_user_paths,
    _conditioning,
    _user_allocators,
)
from hugebench.experiment.claims import _expected
from hugebench.experiment.cluster import ADAPTIVE_ON_EACH
from hugebench.experiment.cluster import parse_block as parse_cluster
from hugebench.experiment.collect import Collected
from hugebench.experiment.keys import _BAD, _BOOL_HINT, _TOP_KEYS, _mapping
from hugebench.experiment.limits import memory_limit
from hugebench.experiment.model import (
    MAX_REPETITIONS,
    MAX_SEED,
    MAX_TIMEOUT,
    MAX_WARMUP,
    PERF_MODES,
    ExperimentSpec,
)
from hugebench.machine import allocators as alloc_mod
from hugebench.yamlsafe import MAX_FILE_BYTES, Where, read_text, read_yaml


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
    return validate_data(data, where, local)


def validate_data(data: dict, where: Where, local: bool = True) -> ExperimentSpec:
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
    cluster = found.take(parse_cluster, data.get("cluster"), where, default=None)
    found.raise_any()
    if local and not cluster:
        _check_user_paths(user_allocs, table, axes, where)
    machines = cluster.machines if cluster else None
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
        "condition_memory": take(_conditioning, data, where),
        "adaptive": None,
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
        fields["adaptive"] = take(_adaptive, data, workload, params, where)
    fields["repetitions"] = (
        fields["adaptive"].min
        if fields["adaptive"]
        else take(_int, data, "repetitions", 1, 1, MAX_REPETITIONS, where)
    )
    if workload is not None and _BAD not in axes.values():
        fields["exclude"] = take(_cells, data, "exclude", axes, where, True, default=())
        fields["baseline"] = take(_cells, data, "baseline", axes, where, False, default={})
        fields["system"] = take(_system, data, axes, where, default={})
    return fields


_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


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
