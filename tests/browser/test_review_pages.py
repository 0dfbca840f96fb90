"""A person works through the review queue with the keyboard: open a task, approve it, reject the next with a note."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import login, screenshot
from tests.factories import PASSWORD, make_user, make_workspace
from tests.tasks.test_views import awaiting

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_review_queue_with_keyboard_shortcuts(
    page: Page,
    live_server,  # type: ignore[no-untyped-def]
    tmp_path: Path,
    settings,  # type: ignore[no-untyped-def]
) -> None:
    settings.MEDIA_ROOT = tmp_path / "media"
    ws = make_workspace(owner=make_user(username="ada"), slug="acme")
    awaiting(ws, "Add multiply")
    awaiting(ws, "Add divide")

    login(page, live_server.url, "ada", PASSWORD)
    page.get_by_role("navigation", name="Workspace").get_by_role("link", name="Tasks").click()
    rows = page.locator("#task-table tr[data-row]")
    expect(rows).to_have_count(2)
    expect(rows.nth(0)).to_have_class("selected")
    page.keyboard.press("j")
    expect(rows.nth(1)).to_have_class("selected")
    page.keyboard.press("k")
    page.keyboard.press("o")

    expect(page.get_by_role("heading", name="Add multiply")).to_be_visible()
    expect(page.locator(".diff .gi").first).to_be_visible()  # highlighted reference patch
    page.get_by_text("Log of oracle #1").click()
    expect(page.get_by_text("SB-REWARD 1.0")).to_be_visible()
    screenshot(page, "review")

    page.keyboard.press("a")  # approve: on to the next task in the queue
    expect(page.get_by_role("heading", name="Add divide")).to_be_visible()

    page.get_by_role("button", name="Reject").click()  # no note: the error shows in place
    expect(page.get_by_role("alert")).to_contain_text("a rejection needs a note")
    page.evaluate("document.activeElement.blur()")
    page.keyboard.press("r")
    expect(page.locator("#reject textarea")).to_be_focused()
    page.keyboard.type("tests pin internals")
    page.get_by_role("button", name="Reject").click()
    expect(page.get_by_text("Nothing awaits your approval")).to_be_visible()

    page.get_by_role("link", name="Approved", exact=True).click()
    expect(page.get_by_role("cell", name="Add multiply")).to_be_visible()
    expect(page).to_have_url(f"{live_server.url}/w/acme/tasks/?state=approved")
