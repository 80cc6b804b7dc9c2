"""GitHub markdown: a ``###`` title, a pipe table, notes as paragraphs; every user value escaped."""

from __future__ import annotations

import re

from hugebench.report.blocks import Block, Record, section_block

NAME = "markdown"
SUFFIX = ".md"

# What markdown (GitHub's, CommonMark) would read as markup in a user's value: raw HTML (a tag, comment,
# declaration or processing instruction: "<" followed by a letter, / ! or ?), an entity, emphasis, code,
# strikethrough, a link or image, a table bar, a backslash; at the start of a line also a heading, quote, list
# or rule. Our own text ("n<6", "[1.2, 1.3]", "ns_per_lookup", "-1.5") is none of these and stays as it is.
_INLINE = re.compile(
    r"""<(?=[A-Za-z/!?])|&(?=#?[A-Za-z0-9]+;)|[\\`*~|]|\](?=[(\[])|!(?=\[)"""
    r"""|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])"""
)
_BLOCK = re.compile(r"^(\s*)([#>+=-]|\d+[.)](?=\s|$))")
_ENTITIES = {"<": "&lt;", "&": "&amp;"}


def markdown_text(text, block: bool = False) -> str:
    """``text`` on one line with everything markdown would render as markup (or HTML) escaped; ``block``: it
    starts a line of its own (a title or a note), so a leading # > - + = or "1." is escaped too."""
    flat = " ".join(str(text).splitlines())
    escaped = _INLINE.sub(lambda m: _ENTITIES.get(m.group(), "\\" + m.group()), flat)
    if not block:
        return escaped
    return _BLOCK.sub(lambda m: m.group(1) + m.group(2)[:-1] + "\\" + m.group(2)[-1], escaped)


def block_text(block: Block, width: int | None = None, color: bool = False) -> str:
    def line(cells):
        return "| " + " | ".join(markdown_text(c) for c in cells) + " |"

    out = [f"### {markdown_text(block.title)}", ""] if block.title else []
    if block.headers:
        out += [line(block.headers), "|" + "|".join("---" for _ in block.headers) + "|"]
        out += [line(r) for r in block.rows]
    return "\n".join(out + [""] + [markdown_text(n, block=True) for n in block.notes]) + "\n"


def export(report, width: int | None = None, color: bool = False) -> str:
    return "\n\n".join(block_text(section_block(s)) for s in report.sections)


def record_text(record: Record) -> str:
    """A record's title, intro, its answer as a code block, then its table."""
    lines = [f"# {record.title}", "", *record.intro, "```", record.text, "```", ""]
    lines.append("| " + " | ".join(record.columns) + " |")
    lines.append("|" + "---|" * len(record.columns))
    for row in record.rows:
        lines.append("| " + " | ".join(str(v).replace("|", "\\|") for v in row) + " |")
    return "\n".join(lines) + "\n"
