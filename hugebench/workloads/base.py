"""The workload registry's types: a workload's parameters, the report sections it declares as data, and the registry.

A :class:`Workload` is either a function of ``hugebench._core`` (taking its parameters plus ``counters`` and
``hook`` as keyword arguments, returning a dict) or a ``runner`` ("module:function") the worker calls with its
request. ``hook(phase, edge)`` is called from the calling thread with the GIL held, with edge ``"begin"`` right
before a phase's timer starts and ``"end"`` right after it stops, so the worker can snapshot /proc and rusage
per phase without touching the timed region.

Each workload lives in a module of its own (``hugebench/workloads/<name>.py``, or any module of yours) that
calls :func:`register`; the report renders what a workload declares (columns, plots, tables) and no workload
imports the report.
"""

from __future__ import annotations

import importlib
import math
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

STARTUP_S = 0.6  # a worker's interpreter, imports and /proc reads (the time models' fixed part)
# Report columns most built-in workloads show after their own: (column, label, fmt).
COMMON_METRICS = (
    ("hp_coverage", "HP coverage", ".0%"),
    ("peak_rss_bytes", "Peak RSS", "bytes"),
    ("minflt", "Minor faults", "si"),
)
CHUNK_P10 = (
    "chunk_ns_p10",
    "p10 chunk ns",
    ".1f",
)  # a chunked timed loop's fastest tenth (csrc/common/timing.h)


@dataclass(frozen=True)
class Param:
    """One workload parameter: its type, default and (optionally) the values allowed."""

    type: type[Any]
    default: Any
    choices: tuple = ()
    minimum: float | None = None
    help: str = ""
    maximum: float | None = None

    def check(self, name: str, value: Any) -> Any:
        """Return the value coerced to the parameter type, or raise ValueError with the reason."""
        if self.type is not bool and isinstance(value, bool):
            raise ValueError(
                f"{name} must be {self.type.__name__}, got {value!r} (YAML reads unquoted "
                "yes/no/on/off/true/false as a boolean: quote the word)"
            )
        if self.type is float and isinstance(value, int):
            value = float(value) if abs(value) < 2**1000 else math.inf
        if self.type is float and isinstance(value, str) and _EXPONENT.fullmatch(value.strip()):
            value = float(value)  # 1.0e9: YAML 1.1 reads an exponent without its sign as text
        if self.type is int and isinstance(value, str):
            value = parse_count(value)
        if not isinstance(value, self.type):
            raise ValueError(f"{name} must be {self.type.__name__}, got {value!r}")
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"{name} must be a finite number, got {value!r}")
        if self.type is int and not -MAX_INT <= value <= MAX_INT:
            raise ValueError(f"{name} must be at most {MAX_INT} (a 64-bit integer), got {value!r}")
        if self.choices and value not in self.choices:
            raise ValueError(
                f"{name} must be one of {', '.join(map(str, self.choices))}; got {value!r}"
            )
        if self.minimum is not None and value < self.minimum:
            raise ValueError(f"{name} must be >= {self.minimum}, got {value!r}")
        if self.maximum is not None and value > self.maximum:
            raise ValueError(f"{name} must be <= {self.maximum:g}, got {value:g}")
        return value


_EXPONENT = re.compile(r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)[eE][-+]?[0-9]+")


def loop_params(
    *,
    seed: str,
    chunks: str = "equal slices the timed phase is split into",
    default_chunks: int = 64,
) -> dict[str, Param]:
    """The two parameters of a C++ timed loop (csrc/common/timing.h): ``chunks``, the equal slices its time is
    split into (the ``chunk_ns_*`` columns), and ``seed``, of its random choices; ``seed`` and ``chunks`` are
    their help texts."""
    return {
        "chunks": Param(int, default_chunks, minimum=1, help=chunks),
        "seed": Param(int, 1, minimum=0, help=seed),
    }


MAX_INT = 2**63 - 1  # what the C++ workloads take
_SUFFIXES = {"k": 10**3, "m": 10**6, "g": 10**9, "ki": 2**10, "mi": 2**20, "gi": 2**30}
_COUNT = re.compile(r"([+-]?)(\d+(?:\.\d*)?|\.\d+)\s*(ki|mi|gi|k|m|g)?")


def parse_count(text: str) -> int:
    """Parse '10M', '1.5G', '64Ki', '4GiB' or '30000' into an int (decimal k/M/G, binary Ki/Mi/Gi).

    Raises ValueError for anything else, including inf, nan and exponents (1e400).
    """
    s = text.strip().lower().removesuffix("b").replace("_", "")
    match = _COUNT.fullmatch(s) if len(s) <= 40 else None
    if match is None:
        raise ValueError(f"{text[:40]!r} is not a count like 30000, 10M, 1.5G or 64Ki")
    sign, number, suffix = match.groups()
    value = Fraction(number) * _SUFFIXES.get(suffix, 1)
    if value.denominator != 1:
        raise ValueError(f"{text!r} is not a whole number")
    return -int(value) if sign == "-" else int(value)


@dataclass(frozen=True)
class BarPlot:
    """Grouped bars of the median of ``y`` per cell of ``groups``, annotated with the ratio to the baseline.

    The last group axis picks a bar's colour, the others name the groups; every other sweep axis that varies
    gets a figure of its own. A knob axis matches its shorthand column too (``thp.enabled`` a ``thp`` column).
    """

    groups: tuple[str, ...]
    y: str
    label: str  # the y axis label
    title: str  # after "<experiment>: "
    name: str  # file name: <experiment>-<name>[-<axis><value>...]


@dataclass(frozen=True)
class XYPlot:
    """One mark per run, not a median: ``kind`` "series" draws each run's list columns ``y`` against ``x`` (a
    time series), "scatter" one point per run. Coloured by ``hue``; a figure per other varying axis."""

    kind: str  # "series" or "scatter"
    x: str
    y: str
    hue: str
    xlabel: str
    ylabel: str
    title: str
    name: str


@dataclass(frozen=True)
class RatioTable:
    """An extra report table: each column's median as a ratio to the baseline cell, with its CI, and a flag on
    the cells where both ``flag`` columns rise (e.g. more time in malloc *and* more throughput)."""

    columns: tuple[tuple[str, str], ...]  # (column, label)
    title: str
    flag: tuple[str, str] | tuple[()] = ()  # (cost column, gain column), or none
    flag_label: str = "flag"


@dataclass(frozen=True)
class Column:
    """One column of a :class:`TableSection`: the number's column, its header and its format ("" as text)."""

    column: str
    label: str
    fmt: str = ""


@dataclass(frozen=True)
class RatioCI:
    """A ratio column of a :class:`TableSection` with its confidence interval (``<column>.ci_lo``/``.ci_hi``)
    and, beside it, the verdict column ``verdict`` (True: the CI excludes 1, False: it holds 1, None: too few
    runs to say, shown as ``undecided``). A line whose ``base`` columns are equal is the base: "base"."""

    column: str
    label: str  # "{level:.0%}" is replaced by the report's confidence level
    fmt: str = ".3f"
    base: tuple[str, str] | tuple[()] = ()
    verdict: str = ""
    verdict_label: str = "resolved"
    undecided: str = ""


@dataclass(frozen=True)
class TableSection:
    """A table of a workload's own in the report, declared as data: ``compute(rows, axes, level)`` returns
    its numbers (a DataFrame, one line per record, CIs included, the sweep's axes as columns; empty: no
    section); the report shows the axes it has, then ``columns`` (:class:`Column` or :class:`RatioCI`)."""

    title: str
    compute: Callable
    columns: tuple = ()
    ci: str = (
        ""  # how the intervals are made, for a reader of the declaration (e.g. "runs, then rounds")
    )


# Keyword-only construction where the interpreter has it (3.10+); 3.9 (Debian 11, RHEL 9) builds the same class
# with every default after the required fields, so positional use is an error only from 3.10 on.
_KW_ONLY = {"kw_only": True} if sys.version_info >= (3, 10) else {}


@dataclass(frozen=True, **_KW_ONLY)
class Workload:
    """A workload: the ``_core`` function name (or a ``runner``), its parameters, the phase that is timed, its
    time and memory models, its derived columns and what the report shows of it.

    Fields that follow from others may be left out: ``function`` is the workload's name (a ``_core`` function
    of that name) unless it has a ``runner``; ``primary_metric`` is the first of ``metrics``; ``module`` is
    the module that calls :func:`register`.
    """

    name: str
    params: dict[str, Param]
    timed_phase: str
    function: str = ""  # the _core function; "" with a runner, else the workload's name
    primary_metric: str = ""  # "": the first column of `metrics`
    ops_column: str = ""  # result column counting the timed phase's operations (for per-op metrics)
    memory_estimate: Any = None  # callable(params) -> bytes, for the plan's memory preflight
    doc: str = ""
    metrics: tuple = ()  # report columns: (column, label, fmt) — the primary metric first
    plots: tuple = ()  # (x, y, hue, y label) line plots written by `hugebench report --plots`
    bars: tuple[BarPlot, ...] = ()  # grouped bar plots written by `hugebench report --plots`
    xy_plots: tuple[
        XYPlot, ...
    ] = ()  # per-run series and scatter plots written by `hugebench report --plots`
    ratio_tables: tuple[
        RatioTable, ...
    ] = ()  # extra tables of `hugebench report` (ratios to the baseline)
    extra_metrics: Any = None  # callable(row) -> dict of workload-specific derived columns
    time_estimate: Any = (
        None  # callable(params) -> seconds of one run on a small VM (for `hugebench plan`)
    )
    # A workload that runs no _core code: "module:function" the worker calls with (request, its directory).
    runner: str = ""
    open_params: bool = (
        False  # parameters beyond `params` are allowed (strings, numbers: {name} fields)
    )
    check_params: Any = None  # callable(params) raising ValueError, run when the file is loaded
    prepare_params: Any = None  # callable(params, experiment file's directory) -> params
    primary_for: Any = (
        None  # callable(params) -> (column, label, fmt, better): a primary metric of the file's
    )
    metrics_for: Any = (
        None  # callable(params) -> report columns, for a workload whose columns follow its params
    )
    tables: tuple[
        TableSection, ...
    ] = ()  # tables of its own the report shows (hashsets: kinds side by side)
    module: str = ""  # the module that registers it (the worker imports it to find the workload)
    better: str = (
        "lower"  # which direction of primary_metric is an improvement (higher for throughput)
    )

    def __post_init__(self) -> None:
        if not self.function and not self.runner:
            object.__setattr__(self, "function", self.name)
        if not self.primary_metric and self.metrics:
            object.__setattr__(self, "primary_metric", self.metrics[0][0])

    def report_metrics(self, params: dict) -> tuple[str, tuple, str]:
        """(primary column, report columns with the primary first, 'lower' or 'higher' is better)."""
        metrics = self.metrics_for(params) if self.metrics_for else self.metrics
        if self.primary_for is None:
            return self.primary_metric, metrics, self.better
        column, label, fmt, better = self.primary_for(params)
        return column, ((column, label, fmt),) + tuple(m for m in metrics if m[0] != column), better


REGISTRY: dict[str, Workload] = {}  # name -> workload, in the order registered


def register(workload: Workload) -> Workload:
    """Add ``workload`` to the registry and return it; a name is registered once. Its ``module`` (the one a
    worker process imports to find it) is, unless given, the module that calls this function, as
    :func:`collections.namedtuple` finds its caller's: call it at the top level of the workload's module."""
    if not workload.module:
        workload = replace(workload, module=sys._getframe(1).f_globals.get("__name__", ""))
    known = REGISTRY.get(workload.name)
    if known is not None and known.module != workload.module:
        raise ValueError(f"workload {workload.name!r} is already registered by {known.module}")
    REGISTRY[workload.name] = workload
    return workload


def get(name: str, module: str = "") -> Workload:
    """Return the workload called ``name`` or raise KeyError listing the known ones. ``module``: the module
    that registers it, imported first when the name is not known yet (a worker process)."""
    if name not in REGISTRY and module:
        importlib.import_module(module)
    try:
        return REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown workload {name!r}; known: {', '.join(sorted(REGISTRY))}") from None
