"""The Run page end to end with nothing of ours stood in: a person starts a comparison in the browser, the worker's
real trial job runs terminus-2 through the gateway on a task in podman, and the page's progress reaches done with
the trial's reward and cost. Only the model provider is a double (a scripted terminus-2 model)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from playwright.sync_api import Page, expect

from apps.runs import jobs
from apps.runs.models import Trial, TrialStatus
from tests.browser.conftest import login, screenshot
from tests.doubles.terminus_model import TerminusModel
from tests.factories import PASSWORD
from tests.gateway.conftest import Gateway, gateway_server, gw, upstream  # noqa: F401  (fixtures)
from tests.harbor.test_adapter import _require_containers
from tests.runs.factories import greeting_files, make_approved_task

pytestmark = [pytest.mark.browser, pytest.mark.containers]


@pytest.fixture(scope="module")
def model() -> Iterator[TerminusModel]:
    server = TerminusModel().start()
    yield server
    server.stop()


def _run_in_worker(trial_id: int, **_: Any) -> None:
    """What the worker does with an enqueued trial: the real job, in a thread of its own."""

    def work() -> None:
        try:
            jobs.trial_execute(trial_id)
        finally:
            connection.close()

    threading.Thread(target=work, daemon=True).start()


def test_a_comparison_started_in_the_browser_runs_a_real_trial(
    page: Page,
    live_server,  # type: ignore[no-untyped-def]
    gw: Gateway,  # noqa: F811
    model: TerminusModel,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    settings,  # type: ignore[no-untyped-def]
) -> None:
    _require_containers()
    settings.OPENAI_BASE_URL = model.url
    settings.GATEWAY_PUBLIC_URL = f"{gw.url}/gateway"
    monkeypatch.setattr(jobs, "async_task", lambda func, trial_id, **kw: _run_in_worker(trial_id))
    task = make_approved_task(workspace=gw.workspace, files=greeting_files(tmp_path))
    owner = gw.workspace.memberships.get(role="owner").user

    login(page, live_server.url, owner.username, PASSWORD)
    page.goto(f"{live_server.url}/w/{gw.workspace.slug}/")
    page.get_by_role("navigation", name="Workspace").get_by_role("link", name="Runs").click()
    page.get_by_role("link", name="New run").click()
    row = page.get_by_test_id("model-row")
    row.get_by_label("Model", exact=True).select_option("gpt-5-mini")
    row.get_by_label("Credential", exact=True).select_option(str(gw.credentials["openai"].pk))
    row.get_by_label("terminus-2").check()
    page.get_by_role("button", name="Run Full Comparison").click()

    done = page.get_by_test_id("comparison-done")
    expect(done).to_have_text("1 of 1 trials done", timeout=300_000)
    expect(page.get_by_test_id("comparison-status")).to_have_text("Done")
    trial = Trial.objects.get(task=task)
    assert trial.status == TrialStatus.COMPLETED, (trial.exception_type, trial.exception_message)
    page.get_by_role("link", name="Trial").first.click()
    expect(page.get_by_test_id("trial-reward")).to_have_text("1.0")
    cost = page.get_by_test_id("trial-cost").inner_text()
    assert cost.startswith("$") and cost != "$0" and "incomplete" not in cost, cost
    assert trial.cost_usd is not None and cost == f"${trial.cost_usd:.4f}"  # the ledger's cost, as the page rounds it
    screenshot(page, "trial-real")
