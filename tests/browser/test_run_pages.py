"""A person starts a comparison on the Run page and watches its progress bars fill without reloading."""

from __future__ import annotations

import threading
from decimal import Decimal
from pathlib import Path

import pytest
from django.db import connection
from django.utils import timezone
from playwright.sync_api import Page, expect

from apps.runs import jobs, services
from apps.runs.models import Trial, TrialStatus
from tests.browser.conftest import login, screenshot
from tests.factories import PASSWORD, make_user, make_workspace
from tests.runs.conftest import make_setup

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

_order: list[int] = []


def _finish_later(trial_id: int) -> None:
    """Stand-in for the worker's trial job (real Harbor runs are covered by tests/runs' container tests): each
    dispatched trial completes a few seconds apart with a reward and a cost, and the comparison is refreshed."""
    _order.append(trial_id)

    def finish() -> None:
        try:
            now = timezone.now()
            Trial.objects.filter(pk=trial_id).update(
                status=TrialStatus.COMPLETED,
                reward=1.0,
                cost_usd=Decimal("0.0042"),
                cost_complete=True,
                model_verified=True,
                input_tokens=900,
                output_tokens=60,
                started_at=now,
                finished_at=now,
            )
            comparison_id = Trial.objects.values_list("evaluation__comparison_id", flat=True).get(pk=trial_id)
            services.comparison_refresh(comparison_id=comparison_id)
        finally:
            connection.close()

    threading.Timer(3.0 * len(_order), finish).start()


def test_start_a_comparison_and_watch_its_progress(
    page: Page,
    live_server,  # type: ignore[no-untyped-def]
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    settings,  # type: ignore[no-untyped-def]
) -> None:
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.HARBOR_TRIALS_DIR = tmp_path / "media" / "trials"
    settings.RUNS_SANDBOXES = ["podman"]
    _order.clear()
    monkeypatch.setattr(jobs, "enqueue_trial_execute", _finish_later)
    ws = make_workspace(owner=make_user(username="ada"), slug="acme")
    setup = make_setup(ws, tmp_path, n_tasks=2)

    login(page, live_server.url, "ada", PASSWORD)
    page.get_by_role("navigation", name="Workspace").get_by_role("link", name="Runs").click()
    expect(page.get_by_text("No runs yet")).to_be_visible()
    page.get_by_role("link", name="New run").click()
    expect(page.get_by_role("heading", name="Run", exact=True)).to_be_visible()
    row = page.get_by_test_id("model-row")
    row.get_by_label("Model", exact=True).select_option("gpt-5-mini")
    row.get_by_label("Credential", exact=True).select_option(str(setup.openai.pk))
    row.get_by_label("terminus-2").check()
    expect(page.get_by_role("group", name="Tasks").get_by_role("checkbox")).to_have_count(2)
    screenshot(page, "run")

    # No harness ticked: the form says so in place and nothing starts.
    row.get_by_label("terminus-2").uncheck()
    page.get_by_role("button", name="Run Full Comparison").click()
    expect(page.get_by_text("This field is required.")).to_be_visible()
    page.get_by_test_id("model-row").get_by_label("terminus-2").check()
    page.get_by_role("button", name="Run Full Comparison").click()

    done = page.get_by_test_id("comparison-done")
    expect(done).to_have_text("0 of 2 trials done")
    url_before = page.url
    expect(done).to_have_text("1 of 2 trials done", timeout=15_000)
    expect(page.get_by_test_id("comparison-status")).to_have_text("Running")
    expect(done).to_have_text("2 of 2 trials done", timeout=15_000)
    expect(page.get_by_test_id("comparison-status")).to_have_text("Done")
    expect(page.get_by_role("link", name="Refresh")).to_have_count(0)  # polling stopped
    assert page.url == url_before
    screenshot(page, "comparison")

    page.get_by_role("link", name="Trial").first.click()
    expect(page.get_by_test_id("trial-reward")).to_have_text("1.0")
    expect(page.get_by_test_id("trial-cost")).to_have_text("$0.0042")
