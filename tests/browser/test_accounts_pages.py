"""A person logs in, lands on their workspace, and creates an API key that is shown once."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import login, screenshot
from tests.factories import PASSWORD, make_user, make_workspace

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_login_lands_on_the_workspace_and_a_new_key_is_shown_once(page: Page, live_server) -> None:  # type: ignore[no-untyped-def]
    user = make_user(username="ada")
    ws = make_workspace(owner=user, slug="acme")
    page.goto(f"{live_server.url}/w/{ws.slug}/")
    expect(page).to_have_url(f"{live_server.url}/login/?next=/w/{ws.slug}/")
    login(page, live_server.url, "ada", "wrong-password")
    expect(page.get_by_text("correct username and password")).to_be_visible()
    login(page, live_server.url, "ada", PASSWORD)
    expect(page.get_by_role("heading", name=ws.name)).to_be_visible()
    page.get_by_role("navigation", name="Workspace").get_by_role("link", name="API keys").click()
    expect(page.get_by_text("No keys yet")).to_be_visible()
    page.get_by_label("Name").fill("laptop")
    page.get_by_role("button", name="Create key").click()
    expect(page.get_by_text("Copy this key now")).to_be_visible()
    key = page.get_by_test_id("new-key").inner_text()
    assert key.startswith("sbk_")
    screenshot(page, "api-keys")
    page.reload()
    assert key not in page.content()
    expect(page.get_by_role("cell", name="laptop")).to_be_visible()
