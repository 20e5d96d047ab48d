"""The report in a real browser: Debian's headless chromium opens the page from disk (offline),
every chart the report lists draws (its plot container and SVG layers exist, with its data) and
the console shows no error."""

from __future__ import annotations

import pytest

from bot.results.read import read_run
from bot.results.report import build_report, write_report
from tests.integration.browser import FIGURES_DRAWN, Browser, chromium_path
from tests.results_fixture import write_journal, write_results

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]  # a first run may install chromium


@pytest.fixture(scope="module")
def browser():
    path, why = chromium_path()
    if path is None:
        pytest.skip(why)
    with Browser(path) as b:
        yield b


@pytest.mark.parametrize("kind", ["results folder", "journal"])
def test_every_chart_of_the_report_draws_without_a_console_error(tmp_path, browser, kind):
    source = write_results(tmp_path / "run") if kind == "results folder" else write_journal(tmp_path / "j.sqlite")
    results = read_run(source)
    page = write_report(results, tmp_path / "report.html")
    ids = build_report(results).figure_ids
    assert len(ids) >= 6
    seen = browser.open(page.as_uri(), FIGURES_DRAWN, screenshot=True)
    assert seen.errors == []
    assert seen.value is not None, "not every figure drew before the deadline"
    assert [f["id"] for f in seen.value] == ids
    assert all(f["plot"] and f["svg"] >= 1 and f["data"] for f in seen.value)
    assert seen.screenshot and seen.screenshot.startswith(b"\x89PNG")


def test_the_browser_check_sees_a_chart_that_did_not_draw_and_a_console_error(tmp_path, browser):
    """The check can fail: a page listing a figure that is not there, and logging an error."""
    page = tmp_path / "broken.html"
    page.write_text('<html><body><div id="fig-x"></div><script>console.error("boom")</script>'
                    '<script type="application/json" id="report-figures">["fig-x"]</script></body></html>')
    browser.timeout = 2.0
    try:
        seen = browser.open(page.as_uri(), FIGURES_DRAWN)
    finally:
        browser.timeout = 60.0
    assert seen.value is None
    assert seen.errors == ["console.error: boom"]
