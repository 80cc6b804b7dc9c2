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

import json
import math
import os
import re
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from ._util import open_regular
from .errors import HugebenchError

# Bounds of what a reader accepts: far above anything hugebench writes, low enough to keep a hostile file cheap.
MAX_LINE_BYTES = 4 << 20  # one row of runs.jsonl
MAX_CONTEXT_BYTES = 16 << 20  # one sweeps/<id>.json
MAX_JSON_DEPTH = 32  # nesting of lists and objects in a row or context (rows are flat: depth 1 or 2)
MAX_INT_DIGITS = 20  # an integer beyond 64 bits is no measurement (and 4000 digits take quadratic time)
# Fields hugebench owns in a row, and the types a reader may rely on (None is allowed too).
ROW_TYPES = {"run_id": str, "cell_id": str, "sweep_id": str, "experiment": str, "workload": str, "status": str,
             "repetition": int, "order_index": int, "warmup": bool, "error": str, "host": str}


def open_store_file(path: str | os.PathLike, what: str = "results file"):
    """``path`` opened for binary reading, or a HugebenchError naming it and what is wrong (missing,
    unreadable, a FIFO, a device such as ``/dev/zero``, a directory): nothing but a regular file is read."""
    try:
        return open_regular(path, what)
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
        return json.loads(raw, parse_int=_bounded_int, parse_constant=lambda _: None,
                          parse_float=_finite_float)
    except RecursionError:  # not reachable after the depth check; kept so that no reader ever sees one
        raise ValueError("nested too deep") from None


_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.S)


def _json_depth(raw: bytes) -> int:
    """The deepest nesting of [ and { outside strings, without parsing (numpy over the bytes: linear, no stack)."""
    if raw.count(b"[") + raw.count(b"{") <= MAX_JSON_DEPTH:
        return 0
    skeleton = np.frombuffer(_JSON_STRING.sub(b'""', raw), dtype=np.uint8)
    steps = (np.isin(skeleton, (ord("["), ord("{"))).astype(np.int64)
             - np.isin(skeleton, (ord("]"), ord("}"))).astype(np.int64))
    return int(np.cumsum(steps).max(initial=0))


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


def row_problem(row: Mapping) -> str | None:
    """Why ``row`` cannot be read as a run row (a field hugebench owns has the wrong type), or None."""
    for key, kind in ROW_TYPES.items():
        value = row.get(key)
        if value is None or (isinstance(value, kind) and (kind is bool or not isinstance(value, bool))):
            continue
        if kind is bool and isinstance(value, int) and value in (0, 1):
            continue
        return f"{key!r} is a {type(value).__name__}, not a {kind.__name__}"
    return None


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


# The context fields reports read, and what they must be (None or missing is always allowed).
_CONTEXT_CHECKS = {
    "sweep_id": (lambda v: isinstance(v, str), "a string"),
    "experiment": (lambda v: isinstance(v, str), "a string"),
    "spec_fingerprint": (lambda v: isinstance(v, str), "a string"),
    "primary_metric": (lambda v: isinstance(v, str), "a string"),
    "primary_better": (lambda v: v in ("lower", "higher"), "lower or higher"),
    "axes": (lambda v: isinstance(v, list) and all(isinstance(a, str) for a in v), "a list of column names"),
    "baseline": (lambda v: isinstance(v, dict), "an object (axis -> value)"),
    "machine": (lambda v: isinstance(v, dict), "an object"),
    "spec": (lambda v: isinstance(v, dict) and _spec_ok(v), "an object whose axes map names to lists, "
             "adaptive and params are objects and expected holds a list of claims"),
    "metrics": (lambda v: isinstance(v, list) and all(isinstance(m, dict) and isinstance(m.get("column"), str)
                                                      for m in v), "a list of {column, label, fmt} objects"),
    "sweep_wall_s": (lambda v: _is_number(v), "a number"),
    "worker_wall_s_sum": (lambda v: _is_number(v), "a number"),
}


def context_problem(document: Any) -> str | None:
    """Why ``document`` cannot be a sweep context, or None."""
    if not isinstance(document, dict):
        return f"a JSON {type(document).__name__}, not an object"
    for key, (check, wanted) in _CONTEXT_CHECKS.items():
        if document.get(key) is not None and not check(document[key]):
            return f"{key!r} must be {wanted}, not {type(document[key]).__name__} {str(document[key])[:40]!r}"
    return None


def _spec_ok(spec: dict) -> bool:
    axes = spec.get("axes")
    return ((axes is None or (isinstance(axes, dict) and all(isinstance(v, list) for v in axes.values())))
            and all(spec.get(k) is None or isinstance(spec[k], dict) for k in ("adaptive", "params"))
            and (spec.get("expected") is None or _expected_ok(spec["expected"])))


def _expected_ok(expected: Any) -> bool:
    claims = expected.get("claims") if isinstance(expected, dict) else None
    return isinstance(expected, dict) and (claims is None or (isinstance(claims, list)
                                                               and all(isinstance(c, dict) for c in claims)))


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
