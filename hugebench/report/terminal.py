"""Rich text for a terminal: a table fitted to its width, colour where it helps, plain when piped.

:func:`terminal` says how wide the terminal is and whether it takes colour; :func:`fit` shapes a table's display
text for that width (columns that are n/a everywhere, constant columns and, last, secondary metrics leave, each
named in a note; headers are abbreviated; a CI goes under its value); :func:`rich_text` draws it with rich.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence

from hugebench.report.model import DASH


def terminal(stream=None) -> tuple[int | None, bool]:
    """(width, colour) of the terminal a report goes to: ``$COLUMNS`` if set, else the terminal's width when
    ``stream`` (stdout) is one, else None (piped into a file: natural width, lines whole); colour only on a
    terminal and without ``$NO_COLOR``."""
    import os
    import shutil
    import sys

    stream = stream or sys.stdout
    tty = hasattr(stream, "isatty") and stream.isatty()
    columns = os.environ.get("COLUMNS", "")
    width = (
        int(columns)
        if columns.isdigit() and int(columns) >= 20
        else (shutil.get_terminal_size().columns if tty else None)
    )
    return width, tty and "NO_COLOR" not in os.environ


# Shorter headers for a narrow terminal (the footnotes keep the long names).
ABBREVIATIONS = {
    "Huge-page coverage": "HP cov.",
    "HP coverage": "HP cov.",
    "p10 chunk ns": "p10 ns",
    "Minor faults": "Min. faults",
    "vs baseline": "vs base",
    "resolved": "res.",
    "Latency ns": "ns",
    "STLB misses": "STLB miss",
    "Allocator": "Alloc.",
    "THP defrag": "defrag",
    "status": "stat.",
}
_NOTHING = ("n/a", DASH, "")


def fit(headers, rows, notes, width, optional=()) -> tuple[list[str], list[list[str]], list[str]]:
    """A table for a terminal ``width`` wide. Columns that say n/a in every row go (a note names them, their
    footnotes stay); if it is still too wide: headers are abbreviated, a column with one value in every row
    becomes a note, a confidence interval goes on the line under its value, and, last, ``optional`` columns
    (secondary metrics) go from the right until every word fits, named in a note."""
    if not headers or not rows:
        return headers, rows, notes
    empty = [
        i
        for i in range(len(headers))
        if all(str(r[i]).strip() in _NOTHING for r in rows)
        and any(str(r[i]).strip() == "n/a" for r in rows)
    ]  # a blank axis value stays
    notes = (
        [f"Not shown (n/a in every row): {', '.join(headers[i] for i in empty)}."] if empty else []
    ) + notes
    headers, rows = _without(headers, rows, empty)
    if _natural_width(headers, rows) <= width:
        return headers, rows, notes
    headers = [_abbreviate(h) for h in headers]
    same = [
        i
        for i in range(len(headers))
        if len(rows) > 1
        and len({str(r[i]) for r in rows}) == 1
        and headers[i] not in ("n", "status", ABBREVIATIONS["status"])
    ]
    if same:
        notes = [
            f"In every row: {', '.join(f'{headers[i]} = {rows[0][i]}' for i in same)}."
        ] + notes
    headers, rows = _without(headers, rows, same)
    if _natural_width(headers, rows) > width:
        rows = [[re.sub(r" (\[[^\]]*\])$", r"\n\1", str(c)) for c in r] for r in rows]
    short = {_abbreviate(h) for h in optional}
    narrow: list[str] = []
    for i in reversed(range(len(headers))):
        if _word_width(headers, rows) <= width:
            break
        if headers[i] in short:
            narrow.insert(0, headers[i])
            headers, rows = _without(headers, rows, [i])
    if narrow:
        notes = [
            f"Not shown for lack of width: {', '.join(narrow)} (a wider terminal or --format markdown "
            "shows them)."
        ] + notes
    return headers, rows, notes


def _column_widths(headers, rows, width) -> Sequence[int | None]:
    """Column widths that keep every word whole when the terminal allows (rich alone shares the space out
    evenly and breaks "jemalloc" across lines): each column its longest word, then the spare width to the
    columns that need the least of it to fit on one line. All None (rich decides) when words cannot fit."""
    n = len(headers)
    if not n or _word_width(headers, rows) > width:
        return [None] * n
    least = [_longest_word(headers, rows, i) for i in range(n)]
    natural = [
        max(
            [len(headers[i])] + [len(line) for r in rows for line in str(r[i]).splitlines() or [""]]
        )
        for i in range(n)
    ]
    spare = width - (sum(least) + 3 * n + 1)
    given = list(least)
    for i in sorted(range(n), key=lambda i: natural[i] - least[i]):
        extra = min(max(natural[i] - least[i], 0), spare)
        given[i] += extra
        spare -= extra
    return given


def _word_width(headers, rows) -> int:
    """Characters of the table with every column as wide as its longest word (rich breaks words below that)."""
    return sum(_longest_word(headers, rows, i) for i in range(len(headers))) + 3 * len(headers) + 1


def _longest_word(headers, rows, i) -> int:
    return min(
        max(
            [len(w) for r in rows for w in str(r[i]).split()]
            + [len(w) for w in headers[i].split()]
            + [1]
        ),
        20,
    )


def _without(headers, rows, drop) -> tuple[list[str], list[list[str]]]:
    return (
        [h for i, h in enumerate(headers) if i not in drop],
        [[c for i, c in enumerate(r) if i not in drop] for r in rows],
    )


def _abbreviate(header: str) -> str:
    base, mark, rest = header.partition(" [")
    return ABBREVIATIONS.get(base, base) + (mark + rest if mark else "")


def _natural_width(headers, rows) -> int:
    """Characters of the widest line of the table at its natural width (cells on one line)."""
    widths = [
        max([len(h)] + [len(line) for r in rows for line in str(r[i]).splitlines() or [""]])
        for i, h in enumerate(headers)
    ]
    return sum(widths) + 3 * len(widths) + 1


# Cell text that gets a colour on a terminal: a reader's eye goes to failures and verdicts first.
_STYLES = {
    "failed": "bold red",
    "timeout": "bold red",
    "crashed": "bold red",
    "skipped": "yellow",
    "yes": "green",
    "no": "yellow",
    "baseline": "cyan",
}


def _cell(text: str, color: bool):
    from rich.text import Text

    if not color:
        return Text(text)  # never markup: "[link=...]" in a store's value is text, not a link
    style = _STYLES.get(text) or ("dim" if text.startswith("n<") or text in _NOTHING else "")
    return Text(text, style=style)


def rich_text(title, headers, rows, notes, width, color=False) -> str:
    from rich.console import Console
    from rich.padding import Padding
    from rich.table import Table
    from rich.text import Text

    table = Table(
        title=None
        if title is None
        else Text(title, style="bold" if color else ""),  # text, no markup
        title_justify="left",
        title_style="bold" if color else "",
    )
    widths = _column_widths(headers, rows, width) if width else [None] * len(headers)
    for header, fixed in zip(headers, widths):
        table.add_column(Text(header), overflow="fold", no_wrap=width is None, width=fixed)
    for row in rows:
        table.add_row(*(_cell(str(c), color) for c in row))
    buffer = io.StringIO()
    console = Console(
        file=buffer,
        width=width or 10_000,
        color_system="standard" if color else None,
        force_terminal=color,
        no_color=not color,
    )
    if headers:
        console.print(table)
    elif title:
        console.print(title, markup=False, highlight=False, style="bold" if color else None)
    for note in notes:
        style = "yellow" if color and note.startswith("warning:") else None
        indent = len(note) - len(
            note.lstrip(" ")
        )  # a continued summary keeps its indent when it wraps
        console.print(
            Padding(Text(note.lstrip(" "), style=style or ""), (0, 0, 0, indent), expand=False)
        )
    return "\n".join(line.rstrip() for line in buffer.getvalue().splitlines()) + "\n"


def wrap_lines(lines: list[str], width: int | None) -> list[str]:
    """Prose for a terminal: each line wrapped to ``width`` at spaces, continued lines indented two more than the first; a word
    longer than the width (a path) is kept whole. Lines already ending in a shell continuation are kept."""
    import textwrap

    if not width:
        return list(lines)
    out = []
    for text in lines:
        for line in text.split("\n"):
            if len(line) <= width or line.endswith(" \\"):
                out.append(line)
                continue
            indent = " " * (len(line) - len(line.lstrip()))
            out += textwrap.wrap(
                line,
                width,
                subsequent_indent=indent + "  ",
                break_long_words=False,
                break_on_hyphens=False,
            )
    return out
