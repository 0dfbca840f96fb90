"""A person connects a local git repository, starts a batch and watches its progress change without reloading, through
discovery and then authoring and review, until every candidate has settled."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from django.db import connection
from playwright.sync_api import Page, expect

from apps.repositories import jobs, services
from apps.repositories.models import Candidate, CandidateState
from tests.browser.conftest import login, screenshot
from tests.doubles.git_repos import GitRepoBuilder
from tests.factories import PASSWORD, make_user, make_workspace

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _run_later(batch_id: int) -> None:
    """Stand-in for the worker: run the real batch job a moment after the page has shown the queued batch."""

    def run() -> None:
        try:
            jobs.batch_run(batch_id)
        finally:
            connection.close()

    threading.Timer(2.5, run).start()


def test_connect_a_local_repository_start_a_batch_and_watch_it_finish(
    page: Page,
    live_server,  # type: ignore[no-untyped-def]
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    settings,  # type: ignore[no-untyped-def]
) -> None:
    settings.MEDIA_ROOT = tmp_path / "media"
    monkeypatch.setattr(jobs, "enqueue_batch_run", _run_later)
    repo = GitRepoBuilder(tmp_path / "widgets")
    repo.merge_pr(1, "Add parser", repo.sized_files(1, impl_paths=3, lines_per_path=40))
    repo.squash_pr(2, "Add handler", repo.sized_files(2, impl_paths=2, lines_per_path=30))
    repo.squash_pr(3, "Tiny tweak", repo.sized_files(3, impl_paths=1, lines_per_path=3))
    make_workspace(owner=make_user(username="ada"), slug="acme")

    login(page, live_server.url, "ada", PASSWORD)
    page.get_by_role("navigation", name="Workspace").get_by_role("link", name="Repositories").click()
    expect(page.get_by_text("No repositories yet")).to_be_visible()

    # A mistake is reported in the form, in place.
    page.get_by_label("Local git repository").check()
    page.get_by_label("Local path or file:// URL").fill("not/absolute")
    page.get_by_role("button", name="Connect").click()
    expect(page.get_by_role("alert")).to_contain_text("path must be absolute")

    page.get_by_label("Local path or file:// URL").fill(str(repo.path))
    page.get_by_role("button", name="Connect").click()
    expect(page.get_by_role("heading", name=str(repo.path))).to_be_visible()
    expect(page.get_by_text("No batches yet")).to_be_visible()

    page.get_by_label("Easy").fill("1")
    page.get_by_label("Medium").fill("1")
    page.get_by_role("button", name="Start batch").click()
    status = page.get_by_test_id("batch-status")
    expect(status).to_have_text("Queued")
    expect(page.get_by_text("No candidates yet")).to_be_visible()
    expect(page.get_by_role("button", name="Cancel batch")).to_be_visible()
    url_before = page.url

    # The worker runs; the fragment's 2 s poll brings the result in without a reload. Discovery is over, but the
    # proposed candidates still wait for authoring, so the page keeps polling.
    expect(status).to_have_text("Candidates proposed", timeout=20_000)
    assert page.url == url_before
    expect(page.get_by_role("button", name="Cancel batch")).to_have_count(0)
    expect(page.get_by_test_id("listed")).to_have_text("3")
    candidates = page.locator("table.candidates")
    expect(candidates.get_by_role("cell", name="Add parser")).to_be_visible()
    expect(candidates.get_by_role("cell", name="below easy", exact=False)).to_be_visible()
    expect(page.get_by_role("link", name="Refresh")).to_have_count(1)
    expect(page.get_by_test_id("moving")).to_have_text("2 candidates still in authoring, gates or review")
    screenshot(page, "batch")

    # Authoring and review move the candidates on (as the workers would); the page follows them, then stops polling.
    proposed = list(Candidate.objects.filter(state=CandidateState.PROPOSED).order_by("pk"))
    assert len(proposed) == 2
    for candidate in proposed:
        services.candidate_set_state(candidate=candidate, state=CandidateState.AUTHORING)
    expect(page.get_by_test_id("stage-authoring")).to_contain_text("2")
    services.candidate_set_state(candidate=proposed[0], state=CandidateState.IN_REVIEW, reason="submitted")
    expect(page.get_by_test_id("stage-in_review")).to_contain_text("1")
    expect(page.get_by_role("link", name="Refresh")).to_have_count(1)
    services.candidate_set_state(candidate=proposed[0], state=CandidateState.AWAITING_APPROVAL, reason="accepted")
    services.candidate_set_state(candidate=proposed[1], state=CandidateState.FAILED, reason="oracle gate: fails")
    expect(page.get_by_test_id("stage-awaiting_approval")).to_contain_text("1")
    expect(page.get_by_test_id("stage-failed")).to_contain_text("1")
    expect(page.get_by_role("link", name="Refresh")).to_have_count(0)
    expect(page.get_by_test_id("moving")).to_have_count(0)
    assert page.url == url_before

    page.get_by_role("navigation", name="Workspace").get_by_role("link", name="Batches").click()
    page.get_by_role("link", name="Candidates proposed").click()
    expect(page).to_have_url(f"{live_server.url}/w/acme/batches/?status=proposed")
    expect(page.locator("#batch-table .status-proposed")).to_have_count(1)
