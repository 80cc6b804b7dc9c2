"""What a command's run is scored by: its wall time, a number its output prints, or a JSON field.

``metric: wall`` (default): seconds of the timed window (the whole process, the marked windows, or the load
driver's run for a server); lower is better.
``metric: {regex: 'Requests per second: ([0-9.]+)', name: rps, better: higher}``: the first group of the
LAST match in the program's stdout and stderr (the driver's for a server).
``metric: {json: throughput, name: tput, better: higher}``: a field of the last JSON object printed alone
on a line of stdout (dotted keys reach into nested objects).
``metric: {hdr: FILE, percentile: 99, name: p99_ms, scale: 0.001}``: a percentile of the HdrHistogram log the
driver wrote (``{tmp}/lat.hlog``; all its intervals added up), times ``scale`` (microseconds to ms).
``metric: {driver: redis-benchmark, test: GET}``: every metric of a load driver hugebench knows
(:mod:`.drivers`), its throughput first; ``primary:`` names another to judge by, ``prefix:`` prefixes the names.
``metric: [...]``: several of these; the first (a driver's primary) is the metric a run is judged by, the others
are recorded beside it (and ``try`` guards them).
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass

from hugebench.workloads.command.patterns import last_groups

WINDOW_COLUMN = "window_s"


@dataclass(frozen=True)
class Metric:
    kind: str  # wall | regex | json
    column: str  # the row column that holds it
    better: str = "lower"  # lower | higher
    pattern: str = ""  # regex, the JSON key path, the HdrHistogram log file, or the driver's name
    quantity: str = ""  # driver: the quantity it printed (rps, p99_ms); hdr: the percentile
    test: str = ""  # driver: the section of its output (redis-benchmark's GET, fio's read)
    scale: float = 1.0  # hdr: recorded values times this

    @property
    def label(self) -> str:
        return "Window s" if self.kind == "wall" else self.column


def parse_metric(value) -> Metric:
    """The metric a run is judged by (the first of :func:`parse_metrics`), or ValueError."""
    return parse_metrics(value)[0]


def parse_metrics(value) -> tuple[Metric, ...]:
    """Every metric of the ``metric`` parameter, the judged one first; ValueError saying what is allowed
    (a list item's error names its index: ``metric.1: ...``)."""
    if isinstance(value, list):
        if not value:
            raise ValueError("metric: an empty list; give at least one metric")
        out: list[Metric] = []
        for i, item in enumerate(value):
            try:
                out += _one(item)
            except ValueError as exc:
                raise ValueError(f"metric.{i}: {exc}") from None
    else:
        out = list(_one(value))
    seen = set()
    for m in out:
        if m.column in seen:
            raise ValueError(f"metric: two metrics are named {m.column!r}; give each its own name")
        seen.add(m.column)
    if any(m.kind == "wall" for m in out[1:]):
        raise ValueError("metric: wall may only be the first (the judged) metric of the list")
    return tuple(out)


def _one(value) -> tuple[Metric, ...]:
    if value in (None, "wall"):
        return (Metric("wall", WINDOW_COLUMN),)
    if isinstance(value, dict) and "driver" in value:
        return _driver(value)
    if not isinstance(value, dict):
        raise ValueError(
            "metric must be 'wall', {regex: ..., name: ...}, {json: ..., name: ...}, "
            f"{{hdr: FILE, percentile: 99, name: ...}} or {{driver: NAME}}; got {value!r}"
        )
    kinds = [k for k in ("regex", "json", "hdr") if k in value]
    unknown = set(value) - {"regex", "json", "hdr", "name", "better", "percentile", "scale"}
    if len(kinds) != 1 or unknown:
        raise ValueError(
            "metric takes exactly one of 'regex', 'json', 'hdr' or 'driver', plus 'name' and 'better' "
            f"(lower or higher); got keys {', '.join(map(str, value))}"
        )
    kind = kinds[0]
    pattern = value[kind]
    if not isinstance(pattern, str) or not pattern:
        raise ValueError(f"metric.{kind} must be a non-empty string")
    if kind == "regex":
        try:
            compiled = re.compile(pattern)
        except re.error as exc:
            raise ValueError(
                f"metric.regex {pattern!r} is not a regular expression: {exc}"
            ) from None
        if compiled.groups < 1:
            raise ValueError(
                f"metric.regex {pattern!r} needs a group around the number, e.g. '([0-9.]+)'"
            )
    name = value.get("name", pattern if kind == "json" else None)
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", name):
        raise ValueError(
            f"metric.name must be a column name (letters, digits, _ and .); got {name!r}"
        )
    better = value.get("better", "lower")
    if better not in ("lower", "higher"):
        raise ValueError(f"metric.better must be lower or higher; got {better!r}")
    if kind == "hdr":
        return (_hdr(value, name, better, pattern),)
    if {"percentile", "scale"} & set(value):
        raise ValueError("metric: percentile and scale belong to an hdr: metric")
    return (Metric(kind, name, better, pattern),)


def _hdr(value: dict, name: str, better: str, path: str) -> Metric:
    from hugebench.workloads.command.hdrlog import available

    pct, scale = value.get("percentile"), value.get("scale", 1.0)
    if isinstance(pct, bool) or not isinstance(pct, (int, float)) or not 0 < pct <= 100:
        raise ValueError(f"metric.percentile must be a number in (0, 100], e.g. 99; got {pct!r}")
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not scale > 0:
        raise ValueError(f"metric.scale must be a positive number (0.001: us to ms); got {scale!r}")
    why = available()
    if why:
        raise ValueError(f"metric.hdr: {why}")
    return Metric("hdr", name, better, path, quantity=f"{pct:g}", scale=float(scale))


def _driver(value: dict) -> tuple[Metric, ...]:
    from hugebench.workloads.command.drivers import driver

    unknown = set(value) - {"driver", "test", "primary", "prefix"}
    if unknown:
        raise ValueError(
            f"metric.driver takes test, primary and prefix; got {', '.join(map(str, sorted(unknown)))}"
        )
    known = driver(value["driver"])
    test, prefix = value.get("test", ""), value.get("prefix", "")
    for key, text in (("test", test), ("prefix", prefix)):
        if not isinstance(text, str):
            raise ValueError(f"metric.{key} must be a string; got {text!r}")
    if test and not known.tests:
        raise ValueError(f"metric.test: {known.name} prints one result, it has no tests to pick")
    names = [q for q, _ in known.quantities]
    primary = value.get("primary", names[0])
    if primary not in names:
        raise ValueError(f"metric.primary {primary!r}: {known.name} gives {', '.join(names)}")
    order = [primary] + [q for q in names if q != primary]
    better = dict(known.quantities)
    return tuple(
        Metric("driver", f"{prefix}{q}", better[q], known.name, quantity=q, test=test)
        for q in order
    )


def extract_all(
    metrics: tuple[Metric, ...],
    output: str,
    window_s: float | None,
    cwd: str = ".",
    deadline: float | None = None,
) -> dict[str, tuple[float | None, str | None]]:
    """Each metric's (value, why not) by column, in the order given (the judged one first). A regex still
    matching at ``deadline`` (time.monotonic(): the run's end) raises PatternTimedOut."""
    return {m.column: extract(m, output, window_s, cwd, deadline) for m in metrics}


def extract(
    metric: Metric,
    output: str,
    window_s: float | None,
    cwd: str = ".",
    deadline: float | None = None,
) -> tuple[float | None, str | None]:
    """(value, None), or (None, why it could not be read) — never a made-up number; PatternTimedOut when a
    regex is still matching at ``deadline``."""
    if metric.kind == "driver":
        return _from_driver(metric, output)
    if metric.kind == "hdr":
        from hugebench.workloads.command.hdrlog import percentile

        return percentile(metric.pattern, float(metric.quantity), metric.scale, cwd)
    if metric.kind == "wall":
        return window_s, None if window_s is not None else "no timed window was recorded"
    if metric.kind == "regex":
        left = None if deadline is None else deadline - time.monotonic()
        groups = last_groups(metric.pattern, output, left)
        if groups is None:
            return None, f"metric regex {metric.pattern!r} never matched the program's output"
        return _number(groups[0], f"regex {metric.pattern!r} matched")
    found = _last_json_object(output)
    if found is None:
        return None, "the program printed no JSON object on a line of its own"
    value = found
    for part in metric.pattern.split("."):
        if not isinstance(value, dict) or part not in value:
            return None, f"the last JSON object printed has no {metric.pattern!r}"
        value = value[part]
    return _number(value, f"JSON field {metric.pattern!r} is")


def _from_driver(metric: Metric, output: str) -> tuple[float | None, str | None]:
    from hugebench.workloads.command.drivers import driver

    known = driver(metric.pattern)
    try:
        values = known.parse(output, metric.test)
    except ValueError as exc:
        return None, f"{known.name}: {exc}"
    if metric.quantity in values:
        return values[metric.quantity], None
    if not values:
        return None, f"{known.name}: no result of it was found in the driver's output"
    hint = f" ({known.hint})" if known.hint else ""
    return None, f"{known.name} printed no {metric.quantity}{hint}"


def _number(raw, what: str) -> tuple[float | None, str | None]:
    try:
        number = float(raw)
    except (TypeError, ValueError):
        return None, f"{what} {raw!r}, which is not a number"
    if number != number or number in (float("inf"), float("-inf")):
        return None, f"{what} {raw!r}, which is not a finite number"
    return number, None


def _last_json_object(output: str):
    for line in reversed(output.splitlines()):
        line = line.strip()
        if line.startswith("{") and line.endswith("}"):
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if isinstance(value, dict):
                return value
    return None
