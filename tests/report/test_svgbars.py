"""The HTML page's own bar charts (report/svgbars.py) say what the figure code decides (report/barchart.py):
every tick label, ratio label, status, title, legend entry, ratio key and probe label, as text; and the
matplotlib figures of ``plots/`` are drawn from the same decisions."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from paths import TESTS

import hugebench
from hugebench.report import Options, build_report, load_results
from hugebench.report.figures.barchart import MAX_LEVELS, bar_chart
from hugebench.report.figures.svgbars import BarChart, chart_svg
from hugebench.report.html import render_html
from hugebench.report.tables import MetricSpec, build_table

SAMPLE = TESTS / "data" / "sample_results"
SVG = "{http://www.w3.org/2000/svg}"
BASE = {"allocator": "glibc", "thp": "never"}


@pytest.fixture(scope="module")
def tlb():
    rows = hugebench.load(SAMPLE)
    return rows[rows["experiment"] == "tlb-sample"]


def _table(rows, keys=("allocator", "thp"), baseline=BASE):
    return build_table(rows, list(keys), [MetricSpec("ns_per_lookup")], baseline)


def svg_texts(svg: str, role: str | None = None) -> list[str]:
    """The text of every ``<text>`` element (of ``role``: "ytick", "title", "key", "" for the others)."""
    root = ET.fromstring(svg)
    return [
        t.text or "" for t in root.iter(f"{SVG}text") if role is None or t.get("class", "") == role
    ]


def _check(chart: BarChart) -> list[str]:
    """The chart's SVG holds exactly the chart's texts (the title and the ratio key broken into lines that
    join to them) plus increasing numeric y tick labels; returns the tick labels."""
    svg = chart_svg(chart)
    single = [t for t in chart.texts() if t != chart.title and t not in chart.ratio_key]
    assert Counter(svg_texts(svg, "")) == Counter(single)
    assert " ".join(svg_texts(svg, "title")) == (chart.title or "")
    assert ";  ".join(svg_texts(svg, "key")) == ";  ".join(chart.ratio_key)
    ticks = svg_texts(svg, "ytick")
    values = [float(t.replace("\u2212", "-")) for t in ticks]
    assert len(values) >= 2 and values == sorted(values), ticks
    return ticks


def test_ratio_and_status_labels_come_from_the_table(tlb):
    table = _table(tlb)
    chart = bar_chart(
        table, ["allocator", "thp"], "ns_per_lookup", ylabel="ns per lookup", title="t"
    )
    marks = {m.text for m in chart.marks}
    # the sample's cells: the baseline, a resolved, an unresolved, a too-few-runs ratio and a failed cell
    assert {"base", "0.74×", "≈1.01×", "0.72×?", "failed"} <= marks
    assert chart.xticklabels == ["glibc", "jemalloc", "mimalloc"]
    assert [s.label for s in chart.series] == ["always", "never"] and chart.legend_title == "thp"
    assert chart.ratio_key[0] == "ratio to allocator=glibc, thp=never"
    for mark in chart.marks:  # each label from its row: the ratio printed as the table holds it
        if mark.text.endswith("×"):
            row = table[np.isclose(table["ratio"], float(mark.text.strip("≈×?")), atol=0.005)]
            assert len(row), mark.text
    _check(chart)


def test_the_svg_says_what_the_chart_says(tlb):
    for keys in (["allocator", "thp"], ["thp"], ["allocator"]):
        table = _table(tlb, keys, {k: BASE[k] for k in keys})
        chart = bar_chart(table, keys, "ns_per_lookup", ylabel="ns", title="a long title " * 20)
        _check(chart)
        assert (chart.legend_title is None) == (len(keys) == 1)
        assert len(svg_texts(chart_svg(chart), "title")) > 1, (
            "a title wider than the plot is broken"
        )


def test_probe_levels_are_labelled_as_in_plots(tlb):
    chart = bar_chart(_table(tlb), ["allocator", "thp"], "ns_per_lookup")
    chart.levels = [(61.0, "4k"), (60.4, "thp")]
    shown = svg_texts(chart_svg(chart), "")
    assert "probe 4k 61 ns" in shown and "probe thp 60 ns" in shown
    _check(chart)


def test_the_matplotlib_figure_draws_the_same_chart(tlb):
    """``plots/`` and notebooks keep matplotlib: its figure is drawn from the same BarChart."""
    from hugebench.report.figures.bars import chart_figure

    chart = bar_chart(_table(tlb), ["allocator", "thp"], "ns_per_lookup", title="quick: latency")
    fig = chart_figure(chart)
    (ax,) = fig.axes
    drawn = [t.get_text() for t in ax.get_xticklabels()] + [ax.get_xlabel(), ax.get_ylabel()]
    drawn += [ax.get_title()] + [ax.get_legend().get_title().get_text()]
    drawn += [t.get_text() for t in ax.get_legend().get_texts()]
    drawn += [t.get_text() for t in ax.texts if t.get_text()]
    key = " ".join(fig.get_supxlabel().split())
    assert Counter(drawn) == Counter(t for t in chart.texts() if t not in chart.ratio_key)
    assert all(part in key for part in chart.ratio_key)


def test_many_colours_are_cut_and_said_in_the_title():
    rows = pd.DataFrame(
        [
            {"g": "a", "c": c, "status": "ok", "ns_per_lookup": 10.0 + c, "warmup": False}
            for c in range(MAX_LEVELS + 3)
        ]
    )
    table = build_table(rows, ["g", "c"], [MetricSpec("ns_per_lookup")])
    chart = bar_chart(table, ["g", "c"], "ns_per_lookup", title="many")
    assert (
        len(chart.series) == MAX_LEVELS
        and f"the first {MAX_LEVELS} of 15 values of c" in chart.title
    )
    _check(chart)


def test_the_page_inlines_each_chart_as_its_figure_code_decided(tmp_path):
    results = load_results(SAMPLE)
    built = build_report(results, Options(figures=True, charts=True))
    charts = [fig for s in built.sections for _, fig in s.figures if isinstance(fig, BarChart)]
    assert charts, "the sample store's tlb experiment declares bar plots"
    page = render_html(built)
    inline = re.findall(r"<svg.*?</svg>", page, flags=re.S)
    for chart in charts:
        assert chart_svg(chart).strip() in inline
        _check(chart)
    assert (
        "<script" not in page
        and "<img" not in page
        and ' id="' not in "".join(chart_svg(chart) for chart in charts)
    )
