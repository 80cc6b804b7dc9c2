"""The report's types as data: :class:`Section` (a title, a table of display text, notes, flags, figures),
:class:`Flag`, :class:`Report`, the caller's :class:`Options` and :class:`MetricSpec` (a metric column and
how one of its values is shown: :func:`format_bytes`, :func:`format_si`).

Nothing of ``hugebench.report`` is imported here: every part that builds sections (``sections``,
``provenance``, ``verdicts``, ``figures``, ``compare``) and every renderer (``rendering``, ``html``) imports
these types from this module, so none of them needs another to know what a section is.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field

import pandas as pd

from hugebench.stats import min_runs_for

DASH = "—"  # an empty cell of a text table


def format_bytes(value: float) -> str:
    """Bytes in binary units: 1536 -> "1.5 KiB", 3 * 2**30 -> "3.0 GiB"."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    units = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")
    magnitude, unit = float(value), 0
    while abs(magnitude) >= 1024 and unit < len(units) - 1:
        magnitude, unit = magnitude / 1024, unit + 1
    return f"{magnitude:.0f} B" if unit == 0 else f"{magnitude:.1f} {units[unit]}"


def format_si(value: float, unit: str = "", digits: int = 3) -> str:
    """A number with an SI prefix and ``digits`` significant digits: 1234567 -> "1.23M", 0.00012 -> "120u"."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if value == 0:
        return f"0{unit}"
    prefixes = {-4: "p", -3: "n", -2: "u", -1: "m", 0: "", 1: "k", 2: "M", 3: "G", 4: "T", 5: "P"}
    exponent = min(max(int(math.floor(math.log10(abs(value)) / 3)), -4), 5)
    scaled = value / 1000.0**exponent
    if (
        round(abs(scaled), max(digits - 1 - int(math.floor(math.log10(abs(scaled)))), 0)) >= 1000
        and exponent < 5
    ):
        exponent, scaled = exponent + 1, scaled / 1000.0
    return f"{scaled:.{digits}g}{prefixes[exponent]}{unit}"


@dataclass(frozen=True)
class MetricSpec:
    """A metric column and how to show it. ``fmt`` is a format spec (".1f", ".0%") or "bytes" / "si"."""

    column: str
    label: str = ""
    fmt: str = ".3g"
    scale: float = 1.0

    @property
    def title(self) -> str:
        return self.label or self.column

    def format(self, value) -> str:
        """The value scaled and formatted; "n/a" for a missing one."""
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return "n/a"
        value = value * self.scale
        if self.fmt == "bytes":
            return format_bytes(value)
        if self.fmt == "si":
            return format_si(value)
        return format(value, self.fmt)

    def to_dict(self) -> dict:
        return asdict(self)

    def __deepcopy__(self, memo) -> MetricSpec:
        # frozen: a copy is the spec itself (pandas deep-copies a table's attrs, which hold the specs, at
        # every column read: rebuilding each spec cost ~0.2 s of a 1 000-cell HTML report, issue 42)
        return self


@dataclass(frozen=True)
class Flag:
    """A warning a reader must not miss. ``in_table``: the table already shows it (a failed status, "no",
    "n<6", a footnote), so text formats do not repeat it; the HTML page lists every flag."""

    text: str
    in_table: bool = False


@dataclass
class Section:
    """One titled part of a report. ``table`` holds display text (None: prose only); ``data`` the numbers
    behind it (CSV, notebooks); ``figures`` (name, matplotlib Figure) pairs, drawn only when asked for."""

    title: str
    table: pd.DataFrame | None = None
    notes: list[str] = field(default_factory=list)
    warnings: list[Flag] = field(default_factory=list)
    summary: list[str] = field(default_factory=list)
    figures: list = field(default_factory=list)
    data: pd.DataFrame | None = None
    experiment: str | None = None
    kind: str = (
        ""  # "main" (the experiment's table), "ratio", "void", "context", ... for callers that pick
    )


@dataclass
class Report:
    """Sections in reading order; ``provenance`` (sweeps, machine, allocators, knobs) closes the HTML page."""

    title: str
    sections: list[Section]
    provenance: list[Section] = field(default_factory=list)

    @property
    def warnings(self) -> list[Flag]:
        return [w for s in self.sections + self.provenance for w in s.warnings]


@dataclass(frozen=True)
class Options:
    """What the caller asked for; ``None`` means the sweep context's value."""

    metrics: Sequence | None = None
    group_by: Sequence[str] | None = None
    baseline: Mapping | None = None
    primary: str | None = None
    level: float = 0.95
    figures: bool = False
    charts: bool = (
        False  # with figures: bar plots as BarChart values the HTML page writes as SVG itself
    )


def verdict_text(row, level: float) -> str:
    """A ratio's verdict as tables print it: "unstable" (resolved by its CI, but resting on a cell the
    stability rule refuses), "yes", "no", or "n<6" (too few runs for a verdict at ``level``)."""
    if isinstance(row.get("unstable"), str):
        return "unstable"
    return {True: "yes", False: "no"}.get(row["resolved"], f"n<{min_runs_for(level)}")
