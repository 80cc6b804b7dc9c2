"""A report as one self-contained HTML page: tables, inline SVG plots, warnings, summaries, provenance.

The page references nothing outside itself (no scripts, style sheets, fonts or images to fetch): figures are
matplotlib's SVG inlined with their text kept as text, the style sheet is in the page. It is rendered by a
Jinja2 template with autoescaping on, so text from the results (allocator names, error messages, paths)
can never become markup; only the SVG that matplotlib wrote is inserted as it is.
"""

from __future__ import annotations

import datetime as _dt
import errno
import io
import os
import re
from pathlib import Path

from hugebench._util import write_atomic
from hugebench.errors import HugebenchError
from hugebench.report.blocks import cell_text
from hugebench.report.model import Report, Section
from hugebench.safefs import is_stream

TEMPLATE = "report.html.j2"
WIDE_INCHES = (
    7.5  # a figure wider than this gets the page's whole width, narrower ones go two to a row
)


def render_html(report: Report) -> str:
    """The page of ``report``, as text."""
    import jinja2
    from markupsafe import Markup

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("hugebench.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    from hugebench.report.figures.heatmap import heat_maps

    parts = [_part(section, f"s{i}", Markup) for i, section in enumerate(report.sections)]
    glance = [
        {**maps, "anchor": part["anchor"], "summary": part["summary"]}
        for section, part in zip(report.sections, parts)
        if section.kind == "main" and (maps := heat_maps(section))
    ]
    for part in parts:  # a summary shown at the top is not repeated above its table
        part["summary_above"] = any(g["anchor"] == part["anchor"] for g in glance)
    provenance = [_part(section, f"p{i}", Markup) for i, section in enumerate(report.provenance)]
    from hugebench import __version__

    return env.get_template(TEMPLATE).render(
        title=report.title,
        sections=parts,
        glance=glance,
        provenance=provenance,
        warnings=report.warnings,
        generated=_dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        version=__version__,
    )


def write_html(report: Report, path: str | os.PathLike) -> Path:
    """Write the page of ``report`` to ``path`` (its directory must exist); return the path.

    A regular file is replaced whole (a temporary file renamed over it), so a full disk leaves the old page,
    not half of a new one; anything that cannot be written is a HugebenchError naming the path.
    """
    path = Path(path)
    page = render_html(report).encode("utf-8")
    try:
        if path.is_dir():
            raise IsADirectoryError(
                errno.EISDIR, "it is a directory (name a file, e.g. DIR/report.html)"
            )
        if not path.parent.is_dir():  # root creates no directories a user only named
            raise FileNotFoundError(
                errno.ENOENT, f"the directory {path.parent} does not exist; create it first"
            )
        if is_stream(path):  # /dev/stdout, a pipe: written as it is
            with open(path, "wb") as handle:
                handle.write(page)
        else:
            _replace(path, page)
    except OSError as exc:
        raise HugebenchError(
            f"cannot write the HTML report to {path}: {exc.strerror or exc}; "
            "choose another file with --html FILE"
        ) from None
    return path


def _replace(path: Path, data: bytes) -> None:
    write_atomic(path, data)


def svg_markup(fig, name: str) -> str:
    """The figure as an inline ``<svg>`` element: text kept as text (no glyph paths), no XML prologue and no
    RDF metadata, ids salted with ``name`` so several figures in one page never share an id. A bar chart
    value (``Options.charts``) writes itself (:mod:`.svgbars`: no ids at all)."""
    from hugebench.report.figures.svgbars import BarChart, chart_svg

    if isinstance(fig, BarChart):
        return chart_svg(fig)
    from matplotlib import rc_context

    buffer = io.StringIO()
    with rc_context({"svg.fonttype": "none", "svg.hashsalt": name}):
        fig.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})
    text = buffer.getvalue()
    return re.sub(
        r"\s*<metadata>.*?</metadata>", "", text[text.index("<svg") :], count=1, flags=re.S
    )


def _part(section: Section, anchor: str, markup) -> dict:
    table = section.table
    return {
        "anchor": anchor,
        "title": section.title,
        "kind": section.kind or "table",
        "summary": section.summary,
        "summary_above": False,
        "warnings": section.warnings,
        "notes": section.notes,
        "headers": [str(c) for c in table.columns] if table is not None else [],
        "rows": [list(map(cell_text, row)) for row in table.itertuples(index=False)]
        if table is not None
        else [],
        "figures": [
            {
                "name": name,
                "svg": markup(svg_markup(fig, f"{anchor}-{_slug(name)}")),
                "wide": fig.get_figwidth() > WIDE_INCHES,
            }
            for name, fig in section.figures
        ],
    }


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", name).strip("-") or "figure"
