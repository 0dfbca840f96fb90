"""Services on the real database: idempotency under concurrent POSTs, dispatch limits, leases and the reaper."""

from __future__ import annotations

import threading
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

from apps.accounts.models import Workspace
from apps.runs import jobs, services
from apps.runs.models import Comparison, Evaluation, Trial, TrialStatus
from tests.factories import make_api_key, make_workspace
from tests.runs.conftest import Setup, make_setup


@pytest.fixture
def enqueued(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    ids: list[int] = []
    monkeypatch.setattr(jobs, "async_task", lambda func, trial_id, **kw: ids.append(trial_id))
    return ids


@pytest.mark.django_db(transaction=True)
def test_twenty_identical_posts_at_once_start_one_comparison(tmp_path: Path, enqueued: list[int]) -> None:
    assert connection.vendor == "postgresql"
    setup = make_setup(make_workspace(), tmp_path)
    key = make_api_key(workspace=setup.workspace).raw
    body = setup.body(
        models=[
            {"catalogId": "gpt-5-mini", "credentialId": setup.openai.pk, "harnesses": ["terminus-2", "codex"]},
            {"catalogId": "gpt-5", "credentialId": setup.openai.pk, "harnesses": ["terminus-2"]},
        ]
    )
    barrier = threading.Barrier(20)
    replies: list[Any] = []
    lock = threading.Lock()

    def post() -> None:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
        barrier.wait()
        try:
            r = client.post(f"/api/w/{setup.workspace.slug}/evaluations/comparisons", body, format="json")
            with lock:
                replies.append((r.status_code, r.json()))
        finally:
            connection.close()

    threads = [threading.Thread(target=post) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(replies) == 20
    assert {status for status, _ in replies} == {202}, replies
    assert {data["id"] for _, data in replies} == {body["id"]}
    assert len({tuple(data["evaluationIds"]) for _, data in replies}) == 1
    assert Comparison.objects.count() == 1
    assert Evaluation.objects.count() == 2
    assert Trial.objects.count() == 2 * 2 + 2  # nothing twice
    assert len(enqueued) == len(set(enqueued))  # no trial enqueued twice


def _queued(setup: Setup, api: APIClient, n_models: int = 3) -> list[int]:
    models = [
        {"catalogId": m, "credentialId": setup.openai.pk, "harnesses": ["terminus-2"]}
        for m in ("gpt-5-mini", "gpt-5", "gpt-5.1")[:n_models]
    ]
    r = api.post(f"/api/w/{setup.workspace.slug}/evaluations/comparisons", setup.body(models=models), format="json")
    assert r.status_code == 202, r.json()
    return list(Trial.objects.order_by("pk").values_list("pk", flat=True))


@pytest.mark.django_db
def test_dispatch_respects_the_workspace_and_sandbox_limits(
    api: APIClient, setup: Setup, settings: Any, enqueued: list[int], django_capture_on_commit_callbacks: Any
) -> None:
    settings.RUNS_WORKSPACE_CONCURRENCY = 2
    settings.RUNS_SANDBOX_CONCURRENCY = {"podman": 3}
    with django_capture_on_commit_callbacks(execute=True):
        ids = _queued(setup, api)
    assert len(ids) == 6
    assert enqueued == ids[:2]  # the workspace's limit
    # A second workspace may use the sandbox's third slot, and no more.
    other = make_setup(make_workspace(), Path(settings.MEDIA_ROOT))
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {make_api_key(workspace=other.workspace).raw}")
    with django_capture_on_commit_callbacks(execute=True):
        _queued(other, client, n_models=1)
    assert len(enqueued) == 3
    # Dispatching again enqueues nothing new; a finished trial frees its slot.
    with django_capture_on_commit_callbacks(execute=True):
        assert services.trials_dispatch() == []
    Trial.objects.filter(pk=ids[0]).update(status=TrialStatus.COMPLETED)
    with django_capture_on_commit_callbacks(execute=True):
        assert services.trials_dispatch() == [ids[2]]


@pytest.mark.django_db
def test_a_trial_is_claimed_once(api: APIClient, setup: Setup) -> None:
    ids = _queued(setup, api, n_models=1)
    assert services.trial_claim(trial_id=ids[0]) is not None
    assert services.trial_claim(trial_id=ids[0]) is None
    assert jobs.trial_execute(ids[0]) is None  # a second delivery of the job does nothing
    trial = Trial.objects.get(pk=ids[0])
    assert trial.status == TrialStatus.RUNNING and trial.lease_expires_at is not None


@pytest.mark.django_db
def test_a_killed_worker_is_rerun_then_failed_with_a_cause(
    api: APIClient, setup: Setup, settings: Any, django_capture_on_commit_callbacks: Any, enqueued: list[int]
) -> None:
    settings.RUNS_MAX_ATTEMPTS = 2
    ids = _queued(setup, api, n_models=1)
    # A worker claims the trial, then dies: no heartbeat renews its lease.
    assert services.trial_claim(trial_id=ids[0]) is not None
    assert services.trials_reap()["requeued"] == 0  # the lease still holds
    later = timezone.now() + timedelta(seconds=services.lease_seconds() + 1)
    with django_capture_on_commit_callbacks(execute=True):
        assert services.trials_reap(now=later) == {"requeued": 1, "failed": 0, "redispatched": 0}
    trial = Trial.objects.get(pk=ids[0])
    assert trial.status == TrialStatus.QUEUED and trial.attempt == 2
    assert "stopped heartbeating" in trial.exception_message
    assert ids[0] in enqueued  # dispatched again
    # The second worker dies too: the trial fails with the cause, and the comparison can finish.
    Trial.objects.filter(pk=ids[1]).update(status=TrialStatus.COMPLETED)
    assert services.trial_claim(trial_id=ids[0]) is not None
    even_later = timezone.now() + timedelta(seconds=services.lease_seconds() + 1)
    assert services.trials_reap(now=even_later)["failed"] == 1
    trial = Trial.objects.get(pk=ids[0])
    assert trial.status == TrialStatus.FAILED and trial.failure_cause == "worker_lost"
    assert Comparison.objects.get().status == "done"


@pytest.mark.django_db(transaction=True)
def test_a_heartbeat_keeps_the_lease(api: APIClient, setup: Setup, settings: Any) -> None:
    settings.RUNS_HEARTBEAT_SECONDS = 0.1
    ids = _queued(setup, api, n_models=1)
    trial = services.trial_claim(trial_id=ids[0])
    assert trial is not None
    first = trial.lease_expires_at
    import time

    with services._Heartbeat(trial):
        time.sleep(0.5)
    assert Trial.objects.get(pk=ids[0]).lease_expires_at > first  # type: ignore[operator]


@pytest.mark.django_db
def test_a_job_dispatched_but_never_started_is_dispatched_again(
    api: APIClient, setup: Setup, django_capture_on_commit_callbacks: Any, enqueued: list[int]
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        ids = _queued(setup, api, n_models=1)
    assert enqueued == ids
    Trial.objects.update(dispatched_at=timezone.now() - timedelta(hours=1))
    with django_capture_on_commit_callbacks(execute=True):
        assert services.trials_reap()["redispatched"] == 2
    assert enqueued == ids + ids


def test_workspace_fixture_is_postgres(workspace: Workspace) -> None:
    assert connection.vendor == "postgresql"
