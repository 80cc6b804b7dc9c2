"""``hugebench where --html FILE``: where's answer as a page of the report's own kind (``report.html``): the
per-region table, the lines the terminal printed (the hot set against the TLB's reach, the rule and its
deploy line, the sampler's cost) and the picture of each hot region's touched memory over time
(``figures.where_plot``), inline as SVG.

Built from ``machine.where_view.as_json``'s document, so the page, ``--json`` and ``--plots`` show one
answer.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

import pandas as pd

from hugebench.report.model import Report, Section, format_bytes


def page(document: dict, lines: Sequence[str]) -> Report:
    """The page's report: one section, its table one row per region, ``lines`` as its notes."""
    from hugebench.report.figures.where_plot import hot_figure

    regions = document.get("regions", [])
    table = pd.DataFrame(
        [
            {
                "pid": str(r["pid"]),
                "region": r["label"],
                "kind": r["kind"],
                "size": format_bytes(r["size"]),
                "resident": format_bytes(r["rss"]),
                "hot": format_bytes(r["hot"]),
                "on 2 MiB": f"{r['huge_share']:.0%}",
                "thp": r.get("thp") or "",
                "verdict": r["verdict"],
                "why": r["why"],
            }
            for r in regions
        ],
        columns=[
            "pid",
            "region",
            "kind",
            "size",
            "resident",
            "hot",
            "on 2 MiB",
            "thp",
            "verdict",
            "why",
        ],
    )
    command = shlex.join(document.get("argv", []))
    section = Section(
        title=f"Where huge pages pay: {command}",
        table=table,
        notes=list(lines),
        figures=[("hot set per region over time", hot_figure(document))],
        kind="where",
    )
    return Report(title=f"hugebench where -- {command}", sections=[section])
