"""A person opens the results: the table, the accuracy-against-cost chart with its frontier, a filter, a paired test."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import login, screenshot
from tests.factories import PASSWORD, make_user, make_workspace
from tests.results.test_views import CHEAP, DEAR, populate

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DATASETS = "() => Chart.getChart('accuracy-cost').data.datasets.map(d => [d.label, d.data.length])"


def test_results_chart_filters_and_paired_comparison(page: Page, live_server) -> None:  # type: ignore[no-untyped-def]
    ws = make_workspace(owner=make_user(username="ada"), slug="acme")
    populate(ws)
    login(page, live_server.url, "ada", PASSWORD)
    page.get_by_role("navigation", name="Workspace").get_by_role("link", name="Results").click()

    table = page.locator("#results-table")
    expect(table.get_by_role("row")).to_have_count(4)  # header + three configurations
    expect(table.get_by_role("row", name="gpt-5 · terminus-2 · medium")).to_contain_text("30–95%")
    expect(table.get_by_role("row", name="claude-sonnet-4-5")).to_contain_text("incomplete")
    expect(page.locator("#accuracy-cost")).to_have_attribute("data-points", "2")
    # Chart.js drew both priced configurations on the frontier line; the unpriced one is listed, not plotted.
    assert page.evaluate(DATASETS) == [["Pareto frontier", 2], ["Configurations", 0]]
    expect(page.get_by_text("Not on the chart, because their cost is incomplete")).to_be_visible()
    screenshot(page, "results")

    page.get_by_label("Model", exact=True).select_option("gpt-5-mini")  # htmx swaps the results in place
    expect(table.get_by_role("row")).to_have_count(2)
    expect(page.locator("#accuracy-cost")).to_have_attribute("data-points", "1")
    expect(page).to_have_url(re.compile(r"/w/acme/results/\?.*model=gpt-5-mini"))  # the filter is in the URL

    page.get_by_label("Model", exact=True).select_option("")
    page.get_by_label("Compare", exact=True).select_option(DEAR)
    page.get_by_label("with", exact=True).select_option(CHEAP)
    expect(page.locator("#paired")).to_contain_text("on the 4 tasks both have scored")
    expect(page.locator("#paired table")).to_contain_text("1.000")
