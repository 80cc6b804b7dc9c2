"""The probe's own plot: ns per access vs working set, one line per page size, the verdict annotated;
and the under-layer other latency plots draw from the cached curves."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hugebench.workloads.tlbprobe.curves import Curve

if (
    TYPE_CHECKING
):  # matplotlib is imported where a figure is drawn: the report's own charts read the levels
    from matplotlib.figure import Figure

COLORS = {"4k": "tab:red", "thp": "tab:blue", "hugetlb-2m": "tab:green", "hugetlb-1g": "tab:purple"}
STYLE = {"chase": "-", "mlp": ":"}


def _line(ax, curve: Curve, label: str, style: str) -> None:
    xs = [p["working_set_bytes"] / 2**20 for p in curve.points]
    ys = [p["median"] for p in curve.points]
    lo = [
        max(0.0, p["median"] - p["ci_lo"]) if p["ci_lo"] == p["ci_lo"] else 0 for p in curve.points
    ]
    hi = [
        max(0.0, p["ci_hi"] - p["median"]) if p["ci_hi"] == p["ci_hi"] else 0 for p in curve.points
    ]
    ax.errorbar(
        xs,
        ys,
        yerr=[lo, hi],
        fmt="o" + style,
        ms=3,
        capsize=2,
        color=COLORS.get(curve.backing),
        label=label,
    )


def probe_figure(all_curves: list[Curve], verdict: dict, title: str = "hugebench probe") -> Figure:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 4.2), layout="constrained")
    left, right = fig.subplots(1, 2)
    for curve in all_curves:
        if not curve.points:
            continue
        if curve.pattern == "reach":
            _line(right, curve, curve.backing, "-")
        else:
            suffix = "" if curve.pattern == "chase" else " (16 chains)"
            _line(left, curve, curve.backing + suffix, STYLE[curve.pattern])
    for ax, name in (
        (left, "dependent random access (chase; dotted: 16 chains)"),
        (right, "TLB reach: one cached line per 4 KiB page"),
    ):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("working set (MiB)")
        ax.set_ylabel("ns per access")
        ax.set_title(name, fontsize="medium")
        ax.grid(True, which="both", alpha=0.3)
        if ax.lines:
            ax.legend(fontsize="small")
    refused = [
        f"{c.pattern}/{c.backing} @ {r['working_set_bytes'] >> 20} MiB"
        for c in all_curves
        for r in c.refused
    ]
    note = f"huge pages extend TLB reach here: {verdict['answer']}: {verdict['reason']}"
    if refused:
        note += f"\nrefused (pages not as asked): {', '.join(refused[:6])}"
    right.text(
        0.02,
        0.98,
        _wrap(note),
        transform=right.transAxes,
        va="top",
        fontsize="x-small",
        bbox={"facecolor": "white", "alpha": 0.8, "edgecolor": "0.7"},
    )
    fig.suptitle(title)
    return fig


def _wrap(text: str, width: int = 70) -> str:
    import textwrap

    return "\n".join(textwrap.fill(line, width) for line in text.splitlines())


def draw_under(ax, summary: dict, pattern: str = "chase") -> bool:
    """Grey lines of the cached probe's 4 KiB and huge-page curves on ``ax`` (x: working set in bytes), so a
    measured latency sits over what a random access costs here. Returns whether anything was drawn."""
    drawn = False
    for curve in summary.get("curves", []):
        if curve["pattern"] != pattern or not curve["points"]:
            continue
        xs = [p["working_set_bytes"] for p in curve["points"]]
        ys = [p["median"] for p in curve["points"]]
        ax.plot(
            xs,
            ys,
            ls="--" if curve["backing"] == "4k" else ":",
            color="0.6",
            lw=1,
            zorder=0,
            label=f"probe {curve['backing']}",
        )
        drawn = True
    return drawn


def probe_levels(rows, summary: dict | None, size_column: str = "peak_rss_bytes") -> list:
    """(ns, backing) of the probe's 4 KiB and huge-page chase latency at the cells' working set (their median
    peak RSS), in the summary's order; [] without a summary or a working set."""
    import numpy as np

    from hugebench.workloads.tlbprobe.curves import Curve

    if not summary or size_column not in rows or rows[size_column].dropna().empty:
        return []
    size = float(np.median(rows[size_column].dropna()))
    levels = []
    for curve in summary.get("curves", []):
        ns = (
            Curve("chase", curve["backing"], curve["points"]).at(size)
            if curve["pattern"] == "chase"
            else None
        )
        if ns is not None:
            levels.append((ns, curve["backing"]))
    return levels


def probe_label(ns: float, backing: str) -> str:
    """A probe level's text beside a bar chart."""
    return f"probe {backing} {ns:.0f} ns"


def underlay_bars(ax, rows, summary: dict | None, size_column: str = "peak_rss_bytes") -> bool:
    """Under a latency bar chart: the probe's 4 KiB and huge-page chase latency at the cells' working set
    (their median peak RSS, :func:`probe_levels`), as horizontal grey lines. Returns whether anything was
    drawn."""
    levels = probe_levels(rows, summary, size_column)
    for ns, backing in levels:
        ax.axhline(ns, color="0.55", lw=0.9, ls="--" if backing == "4k" else ":", zorder=0)
    # Labelled beside the plot, right of the axes: inside they ran into the last group's bars and the legend.
    bottom, top = ax.get_ylim()
    previous, shift = None, 0
    for ns, backing in sorted(levels):
        shift = shift + 7 if previous is not None and (ns - previous) < 0.04 * (top - bottom) else 0
        ax.annotate(
            probe_label(ns, backing),
            (1.0, ns),
            xycoords=("axes fraction", "data"),
            xytext=(3, shift),
            textcoords="offset points",
            ha="left",
            va="center",
            fontsize="xx-small",
            color="0.45",
        )
        previous = ns
    return bool(levels)
