"""Tasks from repositories candidates: the checkout, the links, and the candidate following the task's state."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.utils import timezone

from apps.authoring import services as authoring_services
from apps.repositories.models import Batch, Candidate, PullRequest, Repository
from apps.tasks import jobs, services
from apps.tasks.models import TaskState
from tests.tasks.gitrepo import make_calc_repo

pytestmark = pytest.mark.django_db


def test_a_proposed_candidate_gets_a_task_whose_state_the_candidate_follows(
    workspace, settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    settings.MEDIA_ROOT = tmp_path / "media"
    repo, prs = make_calc_repo(tmp_path)
    pr = prs["good"]
    repository = Repository.objects.create(workspace=workspace, kind="local", location=str(repo))
    batch = Batch.objects.create(repository=repository, requested_easy=1)
    pull = PullRequest.objects.create(
        repository=repository,
        number=pr.number,
        title=pr.title,
        body=pr.body,
        merged_at=timezone.now(),
        base_sha=pr.base_sha,
        head_sha=pr.head_sha,
    )
    candidate = Candidate.objects.create(batch=batch, pull_request=pull, tier="easy")
    enqueued: list[int] = []
    monkeypatch.setattr(jobs, "enqueue_task_author", enqueued.append)
    with django_capture_on_commit_callbacks(execute=True):
        assert authoring_services.candidates_start(batch_id=batch.pk) == 1
    assert authoring_services.candidates_start(batch_id=batch.pk) == 0
    (task,) = candidate.tasks.all()
    assert enqueued == [task.pk]
    assert task.candidate == candidate and task.repository == repository and task.batch == batch
    assert (Path(task.source_path) / ".git").exists() and task.head_sha == pr.head_sha

    services.task_set_state(task=task, state=TaskState.AUTHORING)
    services.task_set_state(task=task, state=TaskState.FAILED, reason="static checks: nope")
    candidate.refresh_from_db()
    assert candidate.state == "failed" and candidate.reason == "static checks: nope"
