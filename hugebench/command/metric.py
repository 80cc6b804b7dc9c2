"""What a command's run is scored by: its wall time, a number its output prints, or a JSON field.

``metric: wall`` (default): seconds of the timed window (the whole process, the marked windows, or the load
driver's run for a server); lower is better.
``metric: {regex: 'Requests per second: ([0-9.]+)', name: rps, better: higher}``: the first group of the
LAST match in the program's stdout and stderr (the driver's for a server).
``metric: {json: throughput, name: tput, better: higher}``: a field of the last JSON object printed alone
on a line of stdout (dotted keys reach into nested objects).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

WINDOW_COLUMN = "window_s"


@dataclass(frozen=True)
class Metric:
    kind: str  # wall | regex | json
    column: str  # the row column that holds it
    better: str = "lower"  # lower | higher
    pattern: str = ""  # regex, or the JSON key path

    @property
    def label(self) -> str:
        return "Window s" if self.kind == "wall" else self.column


def parse_metric(value) -> Metric:
    """A Metric from the ``metric`` parameter, or ValueError saying what is allowed."""
    if value in (None, "wall"):
        return Metric("wall", WINDOW_COLUMN)
    if not isinstance(value, dict):
        raise ValueError(
            f"metric must be 'wall', {{regex: ..., name: ...}} or {{json: ..., name: ...}}; got {value!r}"
        )
    kinds = [k for k in ("regex", "json") if k in value]
    unknown = set(value) - {"regex", "json", "name", "better"}
    if len(kinds) != 1 or unknown:
        raise ValueError(
            "metric takes exactly one of 'regex' or 'json', plus 'name' and 'better' "
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
    return Metric(kind, name, better, pattern)


def extract(metric: Metric, output: str, window_s: float | None) -> tuple[float | None, str | None]:
    """(value, None), or (None, why it could not be read) — never a made-up number."""
    if metric.kind == "wall":
        return window_s, None if window_s is not None else "no timed window was recorded"
    if metric.kind == "regex":
        matches = list(re.finditer(metric.pattern, output, re.MULTILINE))
        if not matches:
            return None, f"metric regex {metric.pattern!r} never matched the program's output"
        return _number(matches[-1].group(1), f"regex {metric.pattern!r} matched")
    found = _last_json_object(output)
    if found is None:
        return None, "the program printed no JSON object on a line of its own"
    value = found
    for part in metric.pattern.split("."):
        if not isinstance(value, dict) or part not in value:
            return None, f"the last JSON object printed has no {metric.pattern!r}"
        value = value[part]
    return _number(value, f"JSON field {metric.pattern!r} is")


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
