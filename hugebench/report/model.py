"""The report's types as data: :class:`Section` (a title, a table of display text, notes, flags, figures),
:class:`Flag`, :class:`Report` and the caller's :class:`Options`.

Nothing of ``hugebench.report`` is imported here: every part that builds sections (``sections``,
``provenance``, ``verdicts``, ``figures``, ``compare``) and every renderer (``rendering``, ``html``) imports
these types from this module, so none of them needs another to know what a section is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pandas as pd

DASH = "—"  # an empty cell of a text table


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
    kind: str = ""  # "main" (the experiment's table), "ratio", "void", "context", ... for callers that pick


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
