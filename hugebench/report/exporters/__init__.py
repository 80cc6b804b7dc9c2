"""One exporter per output format, behind one interface; ``report``, ``compare``, ``history``, ``sweep`` and
``try`` offer every format listed here.

What belongs here: the registry. Each format is one module of this package defining ``NAME``, ``SUFFIX``,
``export(report, width=None, color=False) -> str`` (the whole report as that format's text) and, for a
line-oriented format, ``block_text(block, width=None, color=False) -> str`` (one :class:`..blocks.Block`).
Adding a format is adding a module and its name to ``_MODULES`` (docs/architecture.md shows it).
"""

from __future__ import annotations

from types import ModuleType

from hugebench.errors import HugebenchError
from hugebench.report.exporters import csv, html, json, markdown, rich

_MODULES: tuple[ModuleType, ...] = (rich, markdown, csv, json, html)
EXPORTERS: dict[str, ModuleType] = {m.NAME: m for m in _MODULES}
FORMATS = tuple(EXPORTERS)  # every format, for --format
TEXT_FORMATS = tuple(n for n, m in EXPORTERS.items() if hasattr(m, "block_text"))
FILE_FORMATS = (
    "json",
    "csv",
    "markdown",
)  # the --export-FORMAT files of sweep and try (hyperfine's)


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
