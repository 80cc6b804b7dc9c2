"""``hugebench where --plots DIR``: each hot region's touched memory per interval over the run, one line per
region (the document of ``machine.where_view.as_json``), written as DIR/plots/where-hot.png and .svg."""

from __future__ import annotations

import os
from pathlib import Path

MAX_LINES = 8  # the hottest regions; the rest would be an unreadable tangle


def hot_figure(document: dict):
    """A figure of touched MiB per interval for the hottest regions (the first interval, counted from each
    mapping's birth, left out when there are later ones)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, 4.5))
    ax = fig.add_subplot()
    hot = [r for r in document.get("regions", []) if r.get("hot", 0) > 0][:MAX_LINES]
    for region in hot:
        points = region["hot_over_time"][1:] or region["hot_over_time"]
        ax.plot(
            [t for t, _ in points],
            [b / (1 << 20) for _, b in points],
            marker=".",
            label=f"{region['label']} ({region['verdict']}, pid {region['pid']})",
        )
    ax.set_ylim(bottom=0)
    ax.set_xlabel("seconds since start")
    ax.set_ylabel("MiB touched in the interval")
    ax.set_title(
        f"hot set per region, every {document.get('interval_s', '?')} s", fontsize="medium"
    )
    if hot:
        ax.legend(fontsize="small")
    else:
        ax.text(
            0.5,
            0.5,
            "no region was touched after its first interval",
            ha="center",
            transform=ax.transAxes,
        )
    fig.tight_layout()
    return fig


def plot_hot(document: dict, directory: str | os.PathLike) -> list[Path]:
    from hugebench.report.figures import save

    return save(hot_figure(document), directory, "where-hot")
