"""One self-contained HTML page (tables, figures as inline SVG, every warning, provenance): :mod:`..html`."""

from __future__ import annotations

NAME = "html"
SUFFIX = ".html"


def export(report, width: int | None = None, color: bool = False) -> str:
    from hugebench.report.html import render_html

    return render_html(report)
