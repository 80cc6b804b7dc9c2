"""A terminal's text, drawn by rich; fitted to ``width`` when given (:mod:`..terminal`), ANSI colours with
``color``."""

from __future__ import annotations

from hugebench.report.blocks import Block, section_block
from hugebench.report.terminal import fit, rich_text

NAME = "rich"
SUFFIX = ".txt"
FITS_TERMINAL = True  # printed, it takes the terminal's width and colours


def block_text(block: Block, width: int | None = None, color: bool = False) -> str:
    headers, rows, notes = block.headers, block.rows, block.notes
    if width is not None:
        headers, rows, notes = fit(headers, rows, notes, width, block.optional)
    return rich_text(block.title, headers, rows, notes, width, color)


def export(report, width: int | None = None, color: bool = False) -> str:
    return "\n\n".join(block_text(section_block(s), width, color) for s in report.sections)
