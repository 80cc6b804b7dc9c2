"""One exporter per output format, behind one interface; ``report``, ``compare``, ``history``, ``sweep`` and
``try`` offer every format listed here.

What belongs here: the registry. Each format is one module of this package defining ``NAME``, ``SUFFIX``,
``export(report, width=None, color=False) -> str`` (the whole report as that format's text; ``FITS_TERMINAL``
when printing it takes the terminal's width and colours) and, for a
line-oriented format, ``block_text(block, width=None, color=False) -> str`` (one :class:`..blocks.Block`);
a format whose text of a table is its numbers (csv) defines ``frame_text(data) -> str``, used in place of
``block_text``; a file format of ``try`` defines ``record_text(record) -> str`` (one :class:`..blocks.Record`).
Adding a format is adding a module and its name to ``_MODULES`` (docs/architecture.md shows it). Nothing
outside this package branches on a format's name: callers ask the functions below.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

import pandas as pd

from hugebench.errors import HugebenchError
from hugebench.report.blocks import Block, Record
from hugebench.report.exporters import csv, html, json, markdown, rich

_MODULES: tuple[ModuleType, ...] = (
    rich,
    json,
    csv,
    markdown,
    html,
)  # the order --format and --help list
EXPORTERS: dict[str, ModuleType] = {m.NAME: m for m in _MODULES}
FORMATS = tuple(EXPORTERS)  # every format, for --format
TEXT_FORMATS = tuple(n for n, m in EXPORTERS.items() if hasattr(m, "block_text"))
# the --export-FORMAT files of sweep and try (hyperfine's): the formats that draw a Record too
FILE_FORMATS = tuple(n for n, m in EXPORTERS.items() if hasattr(m, "record_text"))


def exporter(fmt: str) -> ModuleType:
    try:
        return EXPORTERS[fmt]
    except KeyError:
        raise HugebenchError(
            f"unknown report format {fmt!r}; choose one of {', '.join(FORMATS)}"
        ) from None


def text_exporter(fmt: str) -> ModuleType:
    """The exporter of a format that draws one block at a time (rich, markdown)."""
    module = exporter(fmt)
    if not hasattr(module, "block_text"):
        raise HugebenchError(
            f"report format {fmt!r} has no per-table text; choose one of {', '.join(TEXT_FORMATS)}"
        )
    return module


def export(report, fmt: str, width: int | None = None, color: bool = False) -> str:
    """``report`` (a :class:`..model.Report`) in format ``fmt``."""
    return exporter(fmt).export(report, width=width, color=color)


def table_text(
    data: pd.DataFrame, block: Callable[[], Block], fmt: str, width: int | None = None
) -> str:
    """One table as ``fmt``'s text: its numbers (``data``) where the format writes numbers (csv), else the
    display ``block()`` drawn (rich, markdown)."""
    module = exporter(fmt)
    if hasattr(module, "frame_text"):
        return module.frame_text(data)
    return text_exporter(fmt).block_text(block(), width)


def export_record(record: Record, fmt: str) -> str:
    """A :class:`..blocks.Record` (``try``'s verdict) as the text of file format ``fmt``."""
    module = exporter(fmt)
    if not hasattr(module, "record_text"):
        raise HugebenchError(
            f"format {fmt!r} cannot export this result; choose one of {', '.join(FILE_FORMATS)}"
        )
    return module.record_text(record)
