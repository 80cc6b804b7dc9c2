"""A bar chart as a value (:class:`BarChart`, decided by ``barchart.bar_chart``) and its inline ``<svg>``
element for the HTML page, written directly.

The page's bar charts were matplotlib figures saved as SVG: ~4 s of CPU for the 24 plots of a 1 000-cell
report (importing matplotlib's figure machinery, building artists, a measuring pass, the SVG backend's
per-artist drawing), against ~0.1 s for this writer (measured in docs/results.md, issue 42). It draws what
the chart value decides (bars in matplotlib's default colours, CI whiskers, ratio and status labels, tick
labels, axis labels, title, legend, ratio key) with matplotlib's sizes and its tick locator and formatter for
the y axis (``matplotlib.ticker`` only: the ticks read as in ``plots/``). Text stays text (``<text>``
elements, escaped); the element has no ids, scripts or links, so several charts share a page safely. Text
extents for the layout come from matplotlib's DejaVu Sans metrics (``font_manager``), as Agg measures them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from xml.sax.saxutils import escape

import numpy as np

from hugebench.workloads.tlbprobe.figure import probe_label

COLOURS = (  # matplotlib's default cycle ("C0".."C9", tab10)
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
)  # fmt: skip
SHADES = {"black": "#000000", "0.45": "#737373"}
FONT = "DejaVu Sans, Bitstream Vera Sans, Arial, sans-serif"
LABEL, LEGEND, SMALL, TINY = (
    10.0,
    8.33,
    6.94,
    5.79,
)  # points: "medium" ... "xx-small" at font.size 10
PAD, TICK, TICK_PAD, LABEL_PAD, TITLE_PAD = (
    5.76,
    3.5,
    3.5,
    4.0,
    6.0,
)  # points, as in bars/matplotlib
LEADING = 1.2  # a line's height over its font size


@dataclass(frozen=True)
class Series:
    """The bars of one value of the colour axis: matplotlib's colour ``C{index}``, a legend entry."""

    label: str
    index: int
    xs: list[float]
    heights: list[float]


@dataclass(frozen=True)
class Mark:
    """A text on a bar: a ratio over its CI (``status`` False) or a run's status rotated at the axis."""

    x: float
    y: float
    text: str
    color: str
    status: bool = False


@dataclass
class BarChart:
    """A grouped bar chart as data (``barchart.bar_chart`` decides it); ``size`` in inches."""

    size: tuple[float, float]
    width: float  # of a bar, in x units (a group is 1 wide)
    series: list[Series]
    errors: tuple[list[float], np.ndarray, np.ndarray]  # (xs, heights, [below, above])
    marks: list[Mark]
    xticks: list[float]
    xticklabels: list[str]
    xlabel: str
    ylabel: str
    title: str | None = None
    legend_title: str | None = (
        None  # a legend only with group axes (one axis: each tick names its bar)
    )
    ratio_key: list[str] = field(default_factory=list)
    levels: list[tuple[float, str]] = field(default_factory=list)  # the probe's (ns, backing) lines

    def get_figwidth(self) -> float:
        return self.size[0]

    def texts(self) -> list[str]:
        """Every text the chart shows but the y tick labels (which the writer's tick locator picks)."""
        legend = [self.legend_title, *(s.label for s in self.series)] if self.legend_title else []
        return [
            *(t for t in self.xticklabels if t),
            self.xlabel,
            self.ylabel,
            *([self.title] if self.title else []),
            *legend,
            *(m.text for m in self.marks if m.text),
            *self.ratio_key,
            *(probe_label(ns, backing) for ns, backing in self.levels),
        ]


def chart_svg(chart: BarChart) -> str:
    """The chart as one ``<svg>`` element (no XML prologue), sized in points as matplotlib sizes it."""
    width, height = chart.size[0] * 72, chart.size[1] * 72
    title = _wrap(chart.title.split(" "), width - 1.5 * 72, LABEL, " ") if chart.title else []
    key = _wrap(chart.ratio_key, width, SMALL, ";  ") if chart.ratio_key else []
    top = PAD + len(title) * LEADING * LABEL + TITLE_PAD
    bottom = PAD + len(key) * LEADING * SMALL + 2 * LEADING * LABEL + TICK + TICK_PAD + LABEL_PAD
    plot_h = max(36.0, height - top - bottom)
    y_lo, y_hi = _y_limits(chart)
    ticks, labels, offset = _y_ticks(y_lo, y_hi, plot_h)
    widest = max((text_width(t, LABEL) for t in labels), default=0.0)
    left = PAD + LEADING * LABEL + LABEL_PAD + TICK + TICK_PAD + widest
    legend = _legend_size(chart)
    beside = max((text_width(t, TINY) + 3 for t in _level_labels(chart)), default=0.0)
    right = PAD + beside + (legend[0] + 7.2 if legend else 0.0)
    box = (left, top, max(36.0, width - left - right), plot_h)
    frame = _Frame(box, _x_limits(chart), (y_lo, y_hi))
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.1f}pt" height="{height:.1f}pt" '
        f'viewBox="0 0 {width:.1f} {height:.1f}" font-family="{FONT}">',
        f'<rect width="{width:.1f}" height="{height:.1f}" fill="#ffffff"/>',
        *_grid_and_y_axis(frame, ticks, labels, offset),
        *_levels(chart, frame),
        *_bars(chart, frame),
        *_marks(chart, frame),
        f'<rect x="{left:.2f}" y="{top:.2f}" width="{box[2]:.2f}" height="{plot_h:.2f}" '
        'fill="none" stroke="#000000" stroke-width="0.8"/>',
        *_x_axis(chart, frame, widest),
        *_titles(chart, frame, title, key, width, height),
        *(_legend(chart, frame, legend, beside) if legend else []),
        "</svg>",
    ]
    return "\n".join(parts) + "\n"  # ends as matplotlib's SVG does: the page around it unchanged


class _Frame:
    """The plot's box in points (x, y from the top, width, height) and its data limits."""

    def __init__(self, box, xlim, ylim):
        self.box, self.xlim, self.ylim = box, xlim, ylim

    def x(self, value: float) -> float:
        lo, hi = self.xlim
        return self.box[0] + (value - lo) / (hi - lo) * self.box[2]

    def y(self, value: float) -> float:
        lo, hi = self.ylim
        return self.box[1] + self.box[3] - (value - lo) / (hi - lo) * self.box[3]


def text_width(text: str, size: float) -> float:
    """Width in points of ``text`` at ``size`` points in matplotlib's default font (DejaVu Sans): the sum of
    its characters' unhinted advances (laying the text out as Agg does cost ~1 ms a text, a third of the
    page's charts; the sum is within ~4 % of it, and a browser draws the page in its own fonts anyway)."""
    return size * sum(_advance(c) for c in text)


def _advance(char: str, cache: dict = {}) -> float:  # noqa: B006 (one table for the process)
    """The advance of ``char`` at 1 point."""
    if char not in cache:
        if not cache:
            cache[None] = _font()
        font, flags = cache[None]
        cache[char] = font.load_char(ord(char), flags=flags).linearHoriAdvance / 65536 / 1000
    return cache[char]


def _font():
    """matplotlib's default font at 1 000 points, and the flag that loads a glyph unhinted."""
    from matplotlib.font_manager import FontProperties, findfont, get_font

    try:
        from matplotlib.ft2font import LoadFlags

        flags = LoadFlags.NO_HINTING
    except ImportError:  # matplotlib < 3.10
        from matplotlib.ft2font import LOAD_NO_HINTING as flags
    font = get_font(findfont(FontProperties()))
    font.set_size(1000, 72)
    return font, flags


def _wrap(parts: Sequence[str], width: float, size: float, sep: str) -> list[str]:
    """``parts`` joined by ``sep`` into lines that fit ``width`` points (``bars.fit_lines``' rule)."""
    lines: list[str] = []
    for part in parts:
        candidate = f"{lines[-1]}{sep}{part}" if lines else part
        if lines and text_width(candidate, size) <= 0.92 * width:
            lines[-1] = candidate
        else:
            lines.append(part)
    return lines


def _x_limits(chart: BarChart) -> tuple[float, float]:
    """matplotlib's: the bars' extent with a 5 % margin either side."""
    xs = [x for s in chart.series for x in s.xs] or [0.0]
    lo, hi = min(xs) - chart.width / 2, max(xs) + chart.width / 2
    return lo - 0.05 * (hi - lo), hi + 0.05 * (hi - lo)


def _y_limits(chart: BarChart) -> tuple[float, float]:
    """matplotlib's with ``margins(y=0.15)``: the bars and whiskers, 15 % more; bars stand on 0."""
    _, heights, (below, above) = chart.errors
    values = [
        0.0,
        *(h - b for h, b in zip(heights, below)),
        *(h + a for h, a in zip(heights, above)),
    ]
    lo, hi = min(values), max(values)
    span = hi - lo
    if span <= 0:
        return (lo - 1, hi + 1) if lo else (0.0, 1.0)
    return (lo if lo >= 0 else lo - 0.15 * span), hi + 0.15 * span


def _y_ticks(lo: float, hi: float, plot_h: float) -> tuple[list[float], list[str], str]:
    """matplotlib's default y ticks (``AutoLocator``: at most one per 20 points, 9 at most) and their labels
    (``ScalarFormatter``, with its offset or multiplier text, "" if none)."""
    from matplotlib.ticker import MaxNLocator, ScalarFormatter

    locator = MaxNLocator(
        nbins=max(min(int(plot_h // (2 * LABEL)), 9), 1), steps=[1, 2, 2.5, 5, 10]
    )
    eps = (hi - lo) * 1e-10
    ticks = [float(t) for t in locator.tick_values(lo, hi) if lo - eps <= t <= hi + eps]
    formatter = ScalarFormatter()
    formatter.create_dummy_axis()
    axis = formatter.axis
    assert axis is not None  # create_dummy_axis made it
    axis.set_view_interval(lo, hi)
    axis.set_data_interval(lo, hi)
    labels = formatter.format_ticks(ticks)
    return ticks, labels, formatter.get_offset()


def _text(x, y, text, size, anchor="middle", color="#000000", rotate=False, role="") -> str:
    """A ``<text>``; ``role`` ("ytick", "title", "key") names a line of a text broken into several."""
    turn = f' transform="rotate(-90 {x:.2f} {y:.2f})"' if rotate else ""
    kind = f' class="{role}"' if role else ""
    return (
        f'<text x="{x:.2f}" y="{y:.2f}" font-size="{size:.2f}" text-anchor="{anchor}" '
        f'fill="{color}"{turn}{kind}>{escape(text)}</text>'
    )


def _grid_and_y_axis(frame: _Frame, ticks, labels, offset) -> list[str]:
    left, top, width, _ = frame.box
    out = []
    for tick, label in zip(ticks, labels):
        y = frame.y(tick)
        out.append(
            f'<path d="M{left:.2f} {y:.2f}h{width:.2f}" stroke="#b0b0b0" stroke-width="0.8" '
            'stroke-opacity="0.3"/>'
        )
        out.append(f'<path d="M{left:.2f} {y:.2f}h{-TICK}" stroke="#000000" stroke-width="0.8"/>')
        out.append(
            _text(left - TICK - TICK_PAD, y + 0.35 * LABEL, label, LABEL, "end", role="ytick")
        )
    if offset:
        out.append(_text(left, top - 3, offset, LABEL, "start", role="ytick"))
    return out


def _level_labels(chart: BarChart) -> list[str]:
    return [probe_label(ns, backing) for ns, backing in sorted(chart.levels)]


def _levels(chart: BarChart, frame: _Frame) -> list[str]:
    """The probe's latencies as grey lines across the plot (dashed: 4 KiB), labelled beside it; labels
    closer than 4 % of the axis are moved 7 points apart (``tlbprobe.figure.underlay_bars``' rule)."""
    left, _, width, _ = frame.box
    out, previous, shift = [], None, 0
    span = frame.ylim[1] - frame.ylim[0]
    for (ns, backing), label in zip(sorted(chart.levels), _level_labels(chart)):
        dash = "3.3 1.4" if backing == "4k" else "0.9 1.5"
        y = frame.y(ns)
        out.append(
            f'<path d="M{left:.2f} {y:.2f}h{width:.2f}" stroke="#8c8c8c" stroke-width="0.9" '
            f'stroke-dasharray="{dash}"/>'
        )
        shift = shift + 7 if previous is not None and (ns - previous) < 0.04 * span else 0
        out.append(
            _text(left + width + 3, y - shift + 0.35 * TINY, label, TINY, "start", "#737373")
        )
        previous = ns
    return out


def _bars(chart: BarChart, frame: _Frame) -> list[str]:
    out, base = [], frame.y(0.0)
    half = chart.width / 2
    for series in chart.series:
        colour = COLOURS[series.index % len(COLOURS)]
        for x, h in zip(series.xs, series.heights):
            x0, x1, y = frame.x(x - half), frame.x(x + half), frame.y(h)
            out.append(
                f'<rect x="{x0:.2f}" y="{min(y, base):.2f}" width="{x1 - x0:.2f}" '
                f'height="{abs(base - y):.2f}" fill="{colour}"/>'
            )
    xs, heights, (below, above) = chart.errors
    whiskers = []
    for x, h, b, a in zip(xs, heights, below, above):
        px, y0, y1 = frame.x(x), frame.y(h - b), frame.y(h + a)
        whiskers.append(
            f"M{px:.2f} {y0:.2f}V{y1:.2f}M{px - 3:.2f} {y0:.2f}h6M{px - 3:.2f} {y1:.2f}h6"
        )
    if whiskers:
        out.append(
            f'<path d="{"".join(whiskers)}" stroke="#000000" stroke-width="1.5" fill="none"/>'
        )
    return out


def _marks(chart: BarChart, frame: _Frame) -> list[str]:
    out = []
    for mark in chart.marks:
        if not mark.text:
            continue
        x, y = frame.x(mark.x), frame.y(mark.y)
        colour = SHADES.get(mark.color, mark.color)
        if mark.status:  # rotated, reading upwards from the axis
            out.append(_text(x + 0.35 * SMALL, y, mark.text, SMALL, "start", colour, rotate=True))
        else:  # 3 points over the whisker
            out.append(_text(x, y - 3 - 0.24 * SMALL, mark.text, SMALL, "middle", colour))
    return out


def _x_axis(chart: BarChart, frame: _Frame, widest: float) -> list[str]:
    """The x ticks and their labels, the x label, and the y label left of the widest y tick label."""
    left, top, width, height = frame.box
    base = top + height
    out = []
    for x, label in zip(chart.xticks, chart.xticklabels):
        px = frame.x(x)
        out.append(f'<path d="M{px:.2f} {base:.2f}v{TICK}" stroke="#000000" stroke-width="0.8"/>')
        out.append(_text(px, base + TICK + TICK_PAD + 0.8 * LABEL, label, LABEL))
    label_y = base + TICK + TICK_PAD + LEADING * LABEL + LABEL_PAD + 0.8 * LABEL
    out.append(_text(left + width / 2, label_y, chart.xlabel, LABEL))
    y_x = left - TICK - TICK_PAD - LABEL_PAD - widest - 0.25 * LABEL
    out.append(_text(y_x, top + height / 2, chart.ylabel, LABEL, rotate=True))
    return out


def _titles(chart, frame: _Frame, title, key, width, height) -> list[str]:
    left, top, plot_w, _ = frame.box
    out = []
    for i, line in enumerate(title):
        y = top - TITLE_PAD - (len(title) - 1 - i) * LEADING * LABEL - 0.24 * LABEL
        out.append(_text(left + plot_w / 2, y, line, LABEL, role="title"))
    for i, line in enumerate(key):
        y = height - PAD - (len(key) - 1 - i) * LEADING * SMALL - 0.24 * SMALL
        out.append(_text(width / 2, y, line, SMALL, color=SHADES["0.45"], role="key"))
    return out


def _legend_size(chart: BarChart) -> tuple[float, float] | None:
    if chart.legend_title is None:
        return None
    texts = [chart.legend_title, *(s.label for s in chart.series)]
    inner = max(text_width(t, LEGEND) for t in texts[1:]) + 2.8 * LEGEND if texts[1:] else 0.0
    wide = max(text_width(texts[0], LEGEND), inner) + 0.8 * LEGEND
    return wide, len(texts) * LEADING * LEGEND + (len(texts) - 1) * 0.5 * LEGEND + 0.8 * LEGEND


def _legend(chart: BarChart, frame: _Frame, size, beside: float) -> list[str]:
    left, top, plot_w, _ = frame.box
    x0, (wide, tall) = left + plot_w + beside + 7.2, size
    out = [
        f'<rect x="{x0:.2f}" y="{top:.2f}" width="{wide:.2f}" height="{tall:.2f}" rx="2" '
        'fill="#ffffff" fill-opacity="0.8" stroke="#cccccc" stroke-width="0.8"/>'
    ]
    step = (LEADING + 0.5) * LEGEND
    y = top + 0.4 * LEGEND + LEGEND
    out.append(_text(x0 + wide / 2, y, chart.legend_title, LEGEND))
    for series in chart.series:
        y += step
        colour = COLOURS[series.index % len(COLOURS)]
        out.append(
            f'<rect x="{x0 + 0.4 * LEGEND:.2f}" y="{y - 0.7 * LEGEND:.2f}" width="{2 * LEGEND:.2f}" '
            f'height="{0.7 * LEGEND:.2f}" fill="{colour}"/>'
        )
        out.append(_text(x0 + 3.2 * LEGEND, y, series.label, LEGEND, "start"))
    return out
