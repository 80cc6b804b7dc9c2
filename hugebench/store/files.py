"""Bounded reading of a results directory's files: the layer below :mod:`hugebench.store`'s readers.

Whatever a results directory holds (a broken disk, a hand edit, a hostile copy), reading it takes bounded time
and memory and ends in a value or a clean error: :func:`open_store_file` refuses what is not a regular file (a
FIFO would block forever, a link to ``/dev/zero`` never ends, a directory cannot be read) with a HugebenchError
naming it; :func:`parse_json` refuses nesting deeper than :data:`MAX_JSON_DEPTH` and integers of more than
:data:`MAX_INT_DIGITS` digits; :func:`bounded_lines` never holds more than :data:`MAX_LINE_BYTES` of a line;
:func:`row_problem` and :func:`context_problem` say why a parsed row or context cannot be used (a field readers
rely on has the wrong type). :func:`read_context` puts them together for one context file. ``hugebench.store``
re-exports all of it; its :func:`~hugebench.store.read_rows` is the one reader of a runs file.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from hugebench._util import open_regular
from hugebench.errors import HugebenchError

# Bounds of what a reader accepts: far above anything hugebench writes, low enough to keep a hostile file cheap.
MAX_LINE_BYTES = 4 << 20  # one row of runs.jsonl
MAX_CONTEXT_BYTES = 16 << 20  # one sweeps/<id>.json
MAX_JSON_DEPTH = (
    32  # nesting of lists and objects in a row or context (rows are flat: depth 1 or 2)
)
MAX_INT_DIGITS = (
    20  # an integer beyond 64 bits is no measurement (and 4000 digits take quadratic time)
)
# Fields hugebench owns in a row, and the types a reader may rely on (None is allowed too).
ROW_TYPES: dict[str, type | tuple[type, ...]] = {
    "run_id": str,
    "cell_id": str,
    "sweep_id": str,
    "experiment": str,
    "workload": str,
    "status": str,
    "repetition": int,
    "order_index": int,
    "warmup": bool,
    "lead_in": bool,
    "error": str,
    "host": str,
    "started_at": str,
    "wall_s": (int, float),
}


class StoreWarning(UserWarning):
    """A results file had a line or file that could not be read; it was skipped."""


def open_store_file(path: str | os.PathLike, what: str = "results file"):
    """``path`` opened for binary reading, or a HugebenchError naming it and what is wrong (missing,
    unreadable, a FIFO, a device such as ``/dev/zero``, a directory): nothing but a regular file is read.
    Reached as the store's writers reach it (:func:`hugebench.safefs.open_reading`): a symbolic link another
    user planted on the way (``runs.jsonl`` -> a file only root may read) is an UnsafePathError, never
    followed, so a report never copies what such a file holds into its tables, exports or plots."""
    try:
        return open_regular(path, what, safe=True)
    except OSError as exc:
        raise HugebenchError(f"{path} cannot be read: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise HugebenchError(f"{path} cannot be read: {exc}") from None


def parse_json(data: bytes | str) -> Any:
    """One JSON document, or ValueError saying why not: longer than MAX_LINE_BYTES... (the caller's bound),
    nested deeper than :data:`MAX_JSON_DEPTH`, an integer of more than :data:`MAX_INT_DIGITS` digits, or not
    JSON. NaN and infinities (which hugebench never writes) read as null, like every missing measurement."""
    raw = data.encode() if isinstance(data, str) else bytes(data)
    depth = _json_depth(raw)
    if depth > MAX_JSON_DEPTH:
        raise ValueError(f"nested {depth} levels deep (at most {MAX_JSON_DEPTH})")
    try:
        with contextlib.suppress(ValueError):  # (then the checked parse below says why)
            fast = json.loads(raw)  # json's C parser alone: ~3x faster than with a hook per number
            if _plain_numbers(fast):
                return fast
        return json.loads(
            raw, parse_int=_bounded_int, parse_constant=lambda _: None, parse_float=_finite_float
        )
    except (
        RecursionError
    ):  # not reachable after the depth check; kept so that no reader ever sees one
        raise ValueError("nested too deep") from None


_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.S)


def _json_depth(raw: bytes) -> int:
    """The deepest nesting of [ and { outside strings, without parsing (numpy over the bytes: linear, no stack)."""
    if raw.count(b"[") + raw.count(b"{") <= MAX_JSON_DEPTH:
        return 0
    skeleton = np.frombuffer(_JSON_STRING.sub(b'""', raw), dtype=np.uint8)
    steps = np.isin(skeleton, (ord("["), ord("{"))).astype(np.int64) - np.isin(
        skeleton, (ord("]"), ord("}"))
    ).astype(np.int64)
    return int(np.cumsum(steps).max(initial=0))


_INT_LIMIT = 10**MAX_INT_DIGITS


def _plain_numbers(value: Any) -> bool:
    """True when no number in ``value`` is one the checked parse would treat otherwise: an integer of more
    than MAX_INT_DIGITS digits, a float that is not finite (NaN, Infinity or an overflow). Only what
    ``json.loads`` makes is met here (exact types; bool is not int); nesting was bounded before parsing."""
    pending = [value]
    while pending:
        item = pending.pop()
        kind = type(item)
        for v in item.values() if kind is dict else item if kind is list else (item,):
            kind = type(v)
            if kind is float:
                if v - v != 0.0:  # NaN or an infinity
                    return False
            elif kind is int:
                if not -_INT_LIMIT < v < _INT_LIMIT:
                    return False
            elif kind is dict or kind is list:
                pending.append(v)
    return True


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise ValueError(f"an integer of {len(text.lstrip('-'))} digits (at most {MAX_INT_DIGITS})")
    return int(text)


def _finite_float(text: str) -> float | None:
    value = float(text)
    return value if math.isfinite(value) else None


def bounded_lines(handle) -> Iterator[tuple[bytes, bool]]:
    """(line, too_long) for each line; a line over MAX_LINE_BYTES is consumed in bounded pieces, not kept."""
    while True:
        line = handle.readline(MAX_LINE_BYTES + 1)
        if not line:
            return
        too_long = len(line) > MAX_LINE_BYTES
        while too_long and line and not line.endswith(b"\n"):
            line = handle.readline(MAX_LINE_BYTES)
        yield (b"", True) if too_long else (line, False)


def parse_row(line: bytes, too_long: bool) -> tuple[dict | None, str | None]:
    """(row, None) or (None, why the line is not a row)."""
    if too_long:
        return None, f"longer than {MAX_LINE_BYTES // (1 << 20)} MiB"
    try:
        row = parse_json(line)
    except ValueError as exc:
        return None, str(exc)[:120]
    if not isinstance(row, dict):
        return None, f"a JSON {type(row).__name__}, not an object"
    problem = row_problem(row)
    return (None, problem) if problem else (row, None)


def row_identity(row: Mapping):
    """What makes two rows the same run (None: a row without a run id is never a repeat): an ``ok`` row by
    its run id alone, any other by run id, sweep, start time and status (a failed run retried is history)."""
    run_id = row.get("run_id")
    if run_id is None:
        return None
    if row.get("status") == "ok":
        return ("ok", run_id)
    return (run_id, row.get("sweep_id"), str(row.get("started_at")), row.get("status"))


def row_problem(row: Mapping) -> str | None:
    """Why ``row`` cannot be read as a run row (a field of :data:`ROW_TYPES` has the wrong type), or None."""
    for key, kind in ROW_TYPES.items():
        value = row.get(key)
        if value is None or kind is bool and (isinstance(value, bool) or value in (0, 1)):
            continue
        if isinstance(value, kind) and not isinstance(value, bool):
            continue
        return f"{key!r} is a {type(value).__name__}, not {_names(kind if isinstance(kind, tuple) else (kind,))}"
    knob = next(
        (k for k, v in row.items() if isinstance(v, (list, dict)) and k.startswith("knob.")), None
    )
    return (
        f"{knob!r} (a kernel knob read back) is a {type(row[knob]).__name__}, not a value"
        if knob
        else None
    )


def read_context(path: str | os.PathLike) -> dict:
    """A sweep context file as a dict, or a HugebenchError naming it and what is wrong (unreadable, not a
    regular file, over MAX_CONTEXT_BYTES, not JSON, not an object, a field readers use of the wrong type)."""
    with open_store_file(path, "sweep context") as handle:
        raw = handle.read(MAX_CONTEXT_BYTES + 1)
    if len(raw) > MAX_CONTEXT_BYTES:
        raise HugebenchError(f"{path} cannot be read: larger than {MAX_CONTEXT_BYTES >> 20} MiB")
    try:
        document = parse_json(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise HugebenchError(f"{path} cannot be read: {str(exc)[:200]}") from None
    problem = context_problem(document)
    if problem:
        raise HugebenchError(f"{path} cannot be read: {problem}")
    return document


# The fields of a sweep context that readers use, and what each must be. A schema is a type (or tuple of
# types), NUMBER, [schema] (a list of it), ("one of", ...) or {key: schema} (an object; "*" for every value; a
# key ending in "!" must be there unless the object is empty and marked EMPTY_OK). Missing keys and null values are allowed unless marked "!"; keys not listed
# are not checked (a newer hugebench may add some).
NUMBER = "number"
EMPTY_OK = "(an empty object means none)"  # in an object schema: {} passes even with required keys
SCALAR = (str, int, float, bool)
_CLAIM = {
    "cell!": {"*": SCALAR},
    "vs": {"*": SCALAR},
    "metric": str,
    "name": str,
    "note": str,
    "source": str,
    "ratio": NUMBER,
    "value": NUMBER,
    "vs_value": NUMBER,
    "status": str,
}
CONTEXT_SCHEMA = {
    "sweep_id": str,
    "experiment": str,
    "workload": str,
    "spec_fingerprint": str,
    "primary_metric": str,
    "primary_better": ("one of", "lower", "higher"),
    "started_at": str,
    "ended_at": str,
    "hugebench_version": str,
    "synthetic": bool,
    "axes": [str],
    "baseline": {"*": SCALAR},
    "metrics": [{"column!": str, "label": str, "fmt": str, "scale": NUMBER}],
    "sweep_wall_s": NUMBER,
    "worker_wall_s_sum": NUMBER,
    "rows_written": NUMBER,
    "allocators": {"*": {"env": {"*": SCALAR}, "path": str, "version": str}},
    "machine": {
        "hostname": str,
        "glibc": str,
        "python": {"version": str},
        "kernel": {"release": str},
        "cpu": {
            "model_name": str,
            "microarch": str,
            "cores": NUMBER,
            "logical_cpus": NUMBER,
            "hypervisor": str,
        },
        "memory": {"total_bytes": NUMBER, "thp": dict, "hugetlb_pools": dict},
        "perf": {
            "perf_version": str,
            "missing_reason": str,
            "pmu_reason": str,
            "pmu_available": bool,
        },
        "hugebench": {"version": str, "git_sha": str, "git_dirty": bool, "core_build": dict},
        "tlb": {"entries": [str]},
        "caches": [dict],
    },
    "spec": {
        "axes": {"*": [SCALAR]},
        "params": dict,
        "system": dict,
        "adaptive": {EMPTY_OK: True, "metric!": str, "min!": int, "max!": int, "target!": NUMBER},
        "expected": {"source": str, "metric": str, "claims": [_CLAIM]},
    },
}


def context_problem(document: Any) -> str | None:
    """Why ``document`` cannot be a sweep context (the first field, by its path, that breaks
    :data:`CONTEXT_SCHEMA`), or None."""
    if not isinstance(document, dict):
        return f"a JSON {type(document).__name__}, not an object"
    return schema_problem(document, CONTEXT_SCHEMA, "")


def schema_problem(value: Any, schema: Any, path: str) -> str | None:
    """Why ``value`` (at ``path``) breaks ``schema``, or None; see :data:`CONTEXT_SCHEMA`."""
    if isinstance(schema, dict):
        if not isinstance(value, dict):
            return _wrong(path, value, "an object")
        if not value and schema.get(EMPTY_OK):
            return None
        for key, inner in schema.items():
            if key == EMPTY_OK:
                continue
            name, required = key.rstrip("!"), key.endswith("!")
            targets = value.items() if name == "*" else [(name, value.get(name))]
            for child_key, child in targets:
                where = f"{path}.{child_key}" if path else str(child_key)
                if child is None:
                    if required:
                        return f"{where!r} is missing"
                    continue
                problem = schema_problem(child, inner, where)
                if problem:
                    return problem
        return None
    if isinstance(schema, list):
        if not isinstance(value, list):
            return _wrong(path, value, "a list")
        return next(
            (p for i, v in enumerate(value) if (p := schema_problem(v, schema[0], f"{path}[{i}]"))),
            None,
        )
    if isinstance(schema, tuple) and schema and schema[0] == "one of":
        return None if value in schema[1:] else _wrong(path, value, " or ".join(schema[1:]))
    if schema == NUMBER:
        return None if _is_number(value) else _wrong(path, value, "a number")
    kinds = schema if isinstance(schema, tuple) else (schema,)
    if isinstance(value, bool) and bool not in kinds:
        return _wrong(path, value, _names(kinds))
    return None if isinstance(value, kinds) else _wrong(path, value, _names(kinds))


def _wrong(path: str, value: Any, wanted: str) -> str:
    return f"{path!r} must be {wanted}, not {type(value).__name__} {str(value)[:40]!r}"


def _names(kinds: tuple) -> str:
    words = {
        str: "a string",
        int: "an integer",
        float: "a number",
        bool: "true or false",
        dict: "an object",
        list: "a list",
    }
    return " or ".join(dict.fromkeys(words.get(k, k.__name__) for k in kinds))


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
