"""``{name}`` substitution in a command's argv, environment, setup, server and ready condition.

A field is a parameter of the run (fixed or an axis), ``tmp`` (the run's private directory) or ``python``
(hugebench's own interpreter, which can import ``hugebench.window``); ``{{`` and
``}}`` are literal braces. Anything else (``{a.b}``, ``{x!r}``, ``{n:>4}``, an unknown name) is an error,
found when the experiment file is loaded, not when the program runs.
"""

from __future__ import annotations

import string
from collections.abc import Iterable, Mapping

BUILTIN_FIELDS = ("tmp", "python")
_FORMATTER = string.Formatter()


def fields(value) -> set[str]:
    """Every ``{name}`` used in a string, or in the strings of a (nested) list or mapping."""
    found: set[str] = set()
    for text in _strings(value):
        try:
            parsed = list(_FORMATTER.parse(text))
        except ValueError as exc:
            raise ValueError(f"{text!r}: {exc} (write {{{{ and }}}} for literal braces)") from None
        for _, name, spec, conversion in parsed:
            if name is None:
                continue
            if not name.isidentifier() or spec or conversion:
                raise ValueError(f"{text!r}: '{{{name}}}' is not a plain {{name}} field")
            found.add(name)
    return found


def check(value, known: Iterable[str]) -> None:
    """ValueError naming the first field of ``value`` that is neither a parameter nor a built-in field."""
    known = set(known) | set(BUILTIN_FIELDS)
    unknown = sorted(fields(value) - known)
    if unknown:
        raise ValueError(
            f"'{{{unknown[0]}}}' names no parameter; known: {', '.join(sorted(known))}"
        )


def substitute(value, values: Mapping[str, object]):
    """``value`` with every field replaced (strings inside lists and mappings too)."""
    if isinstance(value, str):
        return value.format_map({k: str(v) for k, v in values.items()})
    if isinstance(value, list):
        return [substitute(v, values) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v, values) for k, v in value.items()}
    return value


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
