"""Service rules: enqueue on commit only, candidate transitions, batch counts."""

from __future__ import annotations

from typing import Any

import pytest

from apps.accounts.models import Workspace
from apps.repositories import jobs, services
from apps.repositories.models import Candidate, PullRequest, Repository
from selfbench.errors import Conflict, InvalidInput
from tests.doubles.git_repos import GitRepoBuilder


@pytest.fixture
def repository(workspace: Workspace, git_repo: GitRepoBuilder) -> Repository:
    return services.repository_create(workspace=workspace, kind="local", location=str(git_repo.path))


@pytest.mark.django_db
def test_batch_create_enqueues_the_job_only_on_commit(
    repository: Repository, monkeypatch: pytest.MonkeyPatch, django_capture_on_commit_callbacks: Any
) -> None:
    calls: list[tuple[Any, ...]] = []
    monkeypatch.setattr(jobs, "async_task", lambda *a, **kw: calls.append((a, kw)))
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        batch = services.batch_create(repository=repository, easy=3)
    assert calls == [] and len(callbacks) == 1
    callbacks[0]()
    assert calls[0][0] == ("apps.repositories.jobs.batch_run", batch.pk)
    assert calls[0][1]["group"] == "repositories"


@pytest.mark.django_db
@pytest.mark.parametrize("counts", [{}, {"easy": 301}, {"easy": 100, "medium": 100, "hard": 101}, {"easy": -1}])
def test_batch_create_needs_1_to_300_candidates(repository: Repository, counts: dict[str, int]) -> None:
    with pytest.raises(InvalidInput):
        services.batch_create(repository=repository, **counts)


@pytest.mark.django_db
def test_candidate_set_state_follows_the_pipeline(repository: Repository) -> None:
    from datetime import UTC, datetime

    batch = services.batch_create(repository=repository, easy=1)
    pr = PullRequest.objects.create(
        repository=repository, number=1, title="t", merged_at=datetime.now(UTC), base_sha="a" * 40
    )
    candidate = Candidate.objects.create(batch=batch, pull_request=pr, tier="easy")
    with pytest.raises(Conflict):
        services.candidate_set_state(candidate=candidate, state="approved")
    for state in ("authoring", "verifying", "authoring", "verifying", "in_review", "awaiting_approval", "approved"):
        candidate = services.candidate_set_state(candidate=candidate, state=state, reason=f"now {state}")
    assert candidate.state == "approved" and candidate.reason == "now approved"
    with pytest.raises(InvalidInput):
        services.candidate_set_state(candidate=candidate, state="bogus")


@pytest.mark.django_db
def test_repository_delete_refuses_while_a_batch_runs(repository: Repository) -> None:
    batch = services.batch_create(repository=repository, easy=1)
    with pytest.raises(Conflict):
        services.repository_delete(repository=repository)
    services.batch_cancel(batch=batch)
    services.repository_delete(repository=repository)
    assert not Repository.objects.exists()
