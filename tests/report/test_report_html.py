"""The section model and the one-file HTML report, read without a browser (see test_report_browser.py for one)."""

from __future__ import annotations

import shutil
from html.parser import HTMLParser

import pytest
from click.testing import CliRunner
from paths import TESTS

from hugebench.cli import main
from hugebench.report import (
    Options,
    build_report,
    load_results,
    report,
)
from hugebench.report.html import render_html
from hugebench.store import ResultStore

DATA = TESTS / "data"
SAMPLE, WORKLOADS = DATA / "sample_results", DATA / "sample_workloads"


class Page(HTMLParser):
    """Every start tag with its attributes, the text, and the text inside each <h2>/<h3>."""

    def __init__(self, text: str):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.text: list[str] = []
        self.headings: list[str] = []
        self._heading = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag in ("h2", "h3"):
            self._heading = []

    def handle_endtag(self, tag):
        if tag in ("h2", "h3") and self._heading is not None:
            self.headings.append("".join(self._heading).strip())
            self._heading = None

    def handle_data(self, data):
        self.text.append(data)
        if self._heading is not None:
            self._heading.append(data)

    def count(self, tag: str) -> int:
        return sum(1 for t, _ in self.tags if t == tag)

    @property
    def all_text(self) -> str:
        return " ".join(self.text)


@pytest.fixture(scope="module")
def page():
    built = build_report(load_results(SAMPLE), Options(figures=True))
    return built, render_html(built)


def test_the_page_fetches_nothing(page):
    _, text = page
    parsed = Page(text)
    assert text.startswith("<!DOCTYPE html>")
    assert not {"script", "link", "img", "iframe", "object", "embed", "image"} & {
        t for t, _ in parsed.tags
    }
    for tag, attrs in parsed.tags:
        for name, value in attrs.items():
            if name.startswith("xmlns"):
                continue  # namespace names, never fetched
            assert name not in ("src", "srcset"), (tag, name, value)
            if name in (
                "href",
                "xlink:href",
            ):  # links and SVG <use> of a marker: inside the page only
                assert value.startswith("#"), (tag, value)
            assert "http:" not in (value or "") and "https:" not in (value or ""), (
                tag,
                name,
                value,
            )
    styles = text[text.index("<style>") : text.index("</style>")]
    assert "@import" not in styles and "url(" not in styles and "@font-face" not in styles
    assert all(
        ref.startswith("url(#") for ref in _urls(text)
    )  # SVG clip paths inside the page only


def _urls(text: str) -> list[str]:
    import re

    return re.findall(r"url\([^)]*\)", text)


def test_every_section_table_figure_and_warning_is_on_the_page(page):
    built, text = page
    parsed = Page(text)
    titles = [s.title for s in built.sections + built.provenance]
    assert titles[:2] == ["tlb-sample (hashlookup)", "alloc-sample (alloctest)"]
    assert all(title in parsed.headings for title in titles)
    assert {"Sweeps", "Machine", "Allocators", "Kernel knobs read back"} <= set(parsed.headings)
    from hugebench.report.figures.heatmap import heat_maps

    maps = sum(len(heat_maps(s)["maps"]) for s in built.sections if s.kind == "main")
    assert maps == 2  # the heat maps at the top, one per experiment (issue 43)
    assert parsed.count("table") == maps + sum(
        s.table is not None for s in built.sections + built.provenance
    )
    figures = sum(len(s.figures) for s in built.sections)
    assert figures >= 2 and parsed.count("svg") == figures and parsed.count("figure") == figures
    words = " ".join(parsed.all_text.split())
    for warning in built.warnings:
        assert " ".join(warning.text.split()) in words
    # what the terminal shows as "failed", "no", "n<6" and footnotes is said in words too
    assert "allocator=mimalloc, thp=never (failed)" in words
    assert "too few for a verdict (n<6): allocator=mimalloc, thp=always" in words
    assert "not resolved (the CI contains 1): allocator=jemalloc, thp=never" in words
    assert "n/a, not supported: Cycles (pmu.cycles), STLB misses (pmu.stlb_misses)" in words
    assert "synthetic test data" in words


def test_each_experiment_gets_a_summary_from_its_numbers(page):
    built, _ = page
    tlb = built.sections[0]
    assert tlb.summary[0].startswith(
        "6 cells, 29 successful runs, 7 failed; primary metric Latency ns"
    )
    assert tlb.summary[1].startswith(
        "Best against the baseline: allocator=mimalloc, thp=always, 68.2, 0.721x"
    )
    assert "too few runs for a verdict" in tlb.summary[1]
    assert (
        tlb.summary[2].startswith("Worst: allocator=jemalloc, thp=never")
        and "not resolved" in tlb.summary[2]
    )
    assert tlb.summary[3].startswith("2 of 4 differences from the baseline are resolved at 95%")


def test_text_from_the_results_is_escaped(tmp_path):
    store = ResultStore(tmp_path / "r")
    store.write_context(
        "s1",
        {
            "experiment": "<i>x</i>",
            "workload": "hashlookup",
            "axes": ["allocator"],
            "baseline": {"allocator": "glibc"},
            "primary_metric": "ns_per_lookup",
        },
    )
    for i, allocator in enumerate(["glibc", "<script>alert(1)</script>"] * 2):
        store.append(
            {
                "run_id": f"r{i}",
                "sweep_id": "s1",
                "experiment": "<i>x</i>",
                "workload": "hashlookup",
                "status": "ok",
                "repetition": i // 2,
                "allocator": allocator,
                "ns_per_lookup": 10.0 + i,
            }
        )
    text = render_html(build_report(load_results(tmp_path / "r")))
    assert "<script>" not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "<i>x</i>" not in text


def test_cli_writes_the_page_into_the_results_directory(tmp_path):
    results = tmp_path / "res"
    shutil.copytree(WORKLOADS, results)
    outcome = CliRunner().invoke(main, ["report", str(results), "--html"])
    assert outcome.exit_code == 0, outcome.output
    assert f"report: {results / 'report.html'}" in outcome.output
    parsed = Page((results / "report.html").read_text())
    for title in (
        "faults-sample (faultstorm)",
        "gcc-sample (command)",
        "fleet-sample (fleet)",
        "probe-sample (tlbprobe)",
        "the Temeraire trade-off, each as a ratio to the baseline [95% CI]",
    ):
        assert title in parsed.headings
    # faultstorm: two line plots; fleet: two series and a scatter; fleet, the command and the probe (no declared
    # line or bar fits their axes): their primary metric by allocator (issue 30: every workload gets figures)
    assert parsed.count("svg") == 8
    other = tmp_path / "elsewhere" / "page.html"
    outcome = CliRunner().invoke(main, ["report", str(results), "--html", str(other)])
    assert (
        outcome.exit_code == 1 and "elsewhere does not exist" in outcome.output
    )  # not made as root
    assert not other.parent.exists()
    other.parent.mkdir()
    outcome = CliRunner().invoke(main, ["report", str(results), "--html", str(other)])
    assert outcome.exit_code == 0 and other.exists()


def test_a_coverage_shortfall_is_a_warning_in_every_format():
    text = report(WORKLOADS, fmt="markdown")
    line = (
        "warning: huge-page coverage under THP always below 90% (part of the memory stayed on 4 KiB pages) in 2 "
        "cell(s): allocator=glibc, thp=always (60%); allocator=jemalloc, thp=always (60%)"
    )
    assert line in text
    assert "allocator=glibc, thp=always (60%)" in render_html(build_report(load_results(WORKLOADS)))


def test_expected_claims_get_a_verdict_section_in_every_format(tmp_path):
    """An experiment whose sweep context carries ``expected:`` gets the verdict table (report/verdicts.py),
    added once to EXPERIMENT_SECTIONS, in rich, markdown and HTML alike."""
    import json

    store = tmp_path / "res"
    shutil.copytree(SAMPLE, store)
    context_path = store / "sweeps" / "tlb-sample-0001.json"
    context = json.loads(context_path.read_text())
    context["spec"]["expected"] = {
        "source": "a paper",
        "metric": "ns_per_lookup",
        "claims": [
            {
                "cell": {"allocator": "jemalloc", "thp": "always"},
                "vs": {"allocator": "glibc", "thp": "never"},
                "ratio": 0.5,
                "value": None,
                "vs_value": None,
                "metric": None,
                "name": None,
                "source": None,
                "note": None,
            },
            {
                "cell": {"allocator": "glibc", "thp": "never"},
                "vs": None,
                "ratio": None,
                "value": 1e9,
                "vs_value": None,
                "metric": None,
                "name": None,
                "source": None,
                "note": None,
            },
        ],
    }
    context_path.write_text(json.dumps(context))
    built = build_report(load_results(store))
    [section] = [s for s in built.sections if s.kind == "verdicts"]
    assert (
        section.title == "tlb-sample: expected vs observed"
        and list(section.data["verdict"])[1] == "contradicted"
    )
    assert any("contradicted" in flag.text for flag in section.warnings)
    for fmt in ("rich", "markdown"):
        text = report(store, fmt=fmt)
        assert (
            "tlb-sample: expected vs observed" in text
            and "contradicted" in text
            and "[1] a paper" in text
        )
    page = render_html(built)
    assert "tlb-sample: expected vs observed" in Page(page).headings and "contradicted" in page
