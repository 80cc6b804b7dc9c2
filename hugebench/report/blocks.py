"""A section as a format-neutral block: title, header texts, rows of cell texts, notes, droppable headers.

What belongs here: turning a :class:`.model.Section` (or a bare table) into the text every line-oriented
format draws. Nothing here knows a format: :mod:`.exporters` draws blocks, one module per format. A block's
texts (titles, headers, cells and notes hold a store's values) are escaped when it is made, by
:func:`hugebench._util.printable`: no format draws a control character a store holds.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from hugebench._util import printable
from hugebench.report.model import DASH


@dataclass(frozen=True)
class Block:
    title: str | None
    headers: list[str]
    rows: list[list[str]]
    notes: list[str]
    optional: set[str] = field(default_factory=set)  # headers a narrow terminal may leave out

    def __post_init__(self) -> None:
        shown = {
            "title": None if self.title is None else _shown(self.title),
            "headers": [_shown(h) for h in self.headers],
            "rows": [[_shown(c) for c in row] for row in self.rows],
            "notes": [_shown(n) for n in self.notes],
            "optional": {_shown(h) for h in self.optional},
        }
        for name, value in shown.items():
            object.__setattr__(self, name, value)


def _shown(text) -> str:
    return printable(text, None, lines=True)


def is_missing(value) -> bool:
    """None and NaN are missing (in any of their JSON or pandas forms); a list is a value."""
    try:
        return value is None or bool(pd.isna(value))
    except (TypeError, ValueError):  # a list or other container is a value, not a missing one
        return False


def cell_text(value) -> str:
    """A table cell as text: display strings as they are, numbers compactly, missing values as a dash."""
    if isinstance(value, str):
        return value
    if is_missing(value):
        return DASH
    if isinstance(value, (float, np.floating)):
        return f"{value:.4g}"
    return str(value)


def section_block(section) -> Block:
    """One section's block: its notes, the warnings its table does not already show, and under an
    experiment's main table the summary in words (the HTML page's)."""
    notes = list(section.notes) + [
        f"warning: {flag.text}" for flag in section.warnings if not flag.in_table
    ]
    if section.kind == "main":  # an experiment's table; compare and verdict sections say theirs
        notes += [
            f"In words: {line}" if i == 0 else f"  {line}" for i, line in enumerate(section.summary)
        ]
    if section.table is None:
        return Block(section.title, [], [], notes)
    rows = [[cell_text(v) for v in row] for row in section.table.itertuples(index=False)]
    headers = [str(c) for c in section.table.columns]
    return Block(section.title, headers, rows, notes, _secondary(section, headers))


def _secondary(section, headers) -> set[str]:
    """Headers a narrow terminal may leave out: a main table's metrics other than the primary one."""
    attrs = section.data.attrs if section.kind == "main" and section.data is not None else {}
    titles = {m.title for m in attrs.get("metrics", ()) if m.column != attrs.get("primary")}
    return {h for h in headers if h.split(" [")[0] in titles}


def rows_of(table: pd.DataFrame) -> list[dict]:
    """A table's rows as plain dicts (column -> value), for reading row by row: ``iterrows`` builds a Series
    a row and deep-copies the table's ``attrs`` into each, which costs more than the report's statistics."""
    return table.to_dict("records")


@dataclass(frozen=True)
class Record:
    """A result that is not a report, as every file format draws it (``try``'s verdict): a title, lines that
    introduce it, its answer as preformatted text, one table of plain values (``columns``, ``rows``) and its
    whole form as plain data (JSON's)."""

    title: str
    intro: list[str]
    text: str
    columns: tuple[str, ...]
    rows: list[list]
    data: dict
