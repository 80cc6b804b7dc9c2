"""The HTML report in a real headless Chromium (Debian's, installed by .ci/setup), driven by Playwright.

The page is opened from file:// with every request that is not the page itself aborted and recorded; it must
render (a screenshot), log no console error, raise no page error, and have its sections, tables and plots.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from paths import TESTS

from hugebench.cli import main

DATA = TESTS / "data"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"

pytestmark = pytest.mark.skipif(
    not Path(CHROMIUM).exists(),
    reason="no chromium here (apt-get install chromium; .ci/setup does as root)",
)


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="playwright not installed (pip install '.[test]')"
    )
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield launched
        launched.close()


def _open(browser, page_file: Path):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    seen = {"console": [], "errors": [], "requests": []}
    page.on("console", lambda message: seen["console"].append((message.type, message.text)))
    page.on("pageerror", lambda error: seen["errors"].append(str(error)))

    def route(request_route):
        seen["requests"].append(request_route.request.url)
        if request_route.request.url == page_file.as_uri():
            request_route.continue_()
        else:
            request_route.abort()

    page.route("**/*", route)
    page.goto(page_file.as_uri(), wait_until="load")
    return page, seen


@pytest.mark.parametrize("command", [["report", "{a}"], ["compare", "{a}", "{b}"]])
def test_report_page_renders_in_chromium(browser, tmp_path, command):
    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(DATA / "sample_results", a)
    shutil.copytree(DATA / "sample_results_b", b)
    page_file = tmp_path / "page.html"
    argv = [part.format(a=a, b=b) for part in command] + ["--html", str(page_file)]
    outcome = CliRunner().invoke(main, argv)
    assert outcome.exit_code == 0, outcome.output
    page, seen = _open(browser, page_file)
    shot = tmp_path / "page.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 50_000
    assert [m for m in seen["console"] if m[0] in ("error", "warning")] == [] and seen[
        "errors"
    ] == []
    assert seen["requests"] == [page_file.as_uri()], "the page fetched something besides itself"
    sections = page.locator("section.report-section").count()
    assert sections >= 6 and page.locator("h1").inner_text().startswith(f"hugebench {command[0]}")
    assert page.locator("section.report-section table").count() >= 4
    assert page.locator("#all-warnings li").count() >= 1
    plots = page.locator("figure.plot svg")
    assert plots.count() >= 1
    for i in range(plots.count()):  # each inline SVG is laid out with a real size
        box = plots.nth(i).bounding_box()
        assert box and box["width"] > 300 and box["height"] > 150
    page.close()


def test_the_first_screen_is_the_heat_maps_and_the_summary(browser, tmp_path):
    """Above the fold at 1280x800 (issue 43): each experiment's heat map of the ratio to the baseline, its
    coverage beside it and the in-words summary; the tables start below; the warnings are folded."""
    page_file = tmp_path / "page.html"
    outcome = CliRunner().invoke(
        main, ["report", str(DATA / "sample_results"), "--html", str(page_file)]
    )
    assert outcome.exit_code == 0, outcome.output
    page, seen = _open(browser, page_file)
    page.set_viewport_size({"width": 1280, "height": 800})
    assert seen["errors"] == []
    fold = 800

    def top(locator) -> float:
        box = locator.bounding_box()
        assert box, "not laid out"
        return box["y"]

    maps = page.locator("#at-a-glance table.heat")
    assert maps.count() == 2  # one per experiment of the sample store
    first = maps.first
    assert top(first) + first.bounding_box()["height"] < fold
    assert top(page.locator("#at-a-glance .summary").first) < fold
    assert top(page.locator("section.report-section").first) > fold  # the tables come after
    assert not page.locator("#all-warnings ul.warnings").is_visible()  # folded until asked
    assert not page.locator("section.report-section details ul.warnings").first.is_visible()
    width = page.evaluate("document.scrollingElement.scrollWidth")
    assert width <= 1280, "the first screen scrolls sideways"
    # coloured only where resolved: glibc THP always is resolved faster, mimalloc THP always has too few runs
    cells = first.locator("tbody tr")
    glibc = cells.nth(0).locator("td")
    mimalloc = cells.nth(2).locator("td")
    assert glibc.nth(0).get_attribute("class") == "better" and "rgba(60, 150, 75" in (
        glibc.nth(0).get_attribute("style") or ""
    )
    assert mimalloc.nth(0).get_attribute("class") == "grey"
    assert mimalloc.nth(0).get_attribute("title") == "too few runs"
    assert glibc.nth(1).inner_text().strip() == "baseline"
    coverage = first.locator("td.cov")
    assert coverage.count() == 6 and coverage.first.inner_text().strip() == "93%"
    page.screenshot(path=str(tmp_path / "glance.png"))
    page.close()
