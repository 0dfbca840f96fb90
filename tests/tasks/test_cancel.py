"""Cancelling a task (or the batch of its candidate) stops its gates: the state rules on the real database, with
Harbor's run_trial and the container removal (the container boundary) replaced. The same in real podman:
test_cancel_containers.py."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from apps.repositories import services as repository_services
from apps.repositories.models import Batch, Candidate, CandidateState, PullRequest, Repository
from apps.tasks import jobs, services
from apps.tasks.models import GateRun, GateStatus, Task, TaskState
from selfbench import harbor_adapter
from selfbench.errors import Conflict, InvalidInput
from tests.tasks.test_services import make_task, make_version, outcome


@pytest.fixture
def removed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Trial names whose containers were removed."""
    names: list[str] = []

    def remove(*, trial_name: str, environment_type: str | None = None) -> int:
        names.append(trial_name)
        return 1

    monkeypatch.setattr(harbor_adapter, "trial_containers_remove", remove)
    return names


@pytest.fixture
def enqueued(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, str]]:
    gates: list[tuple[int, str]] = []
    monkeypatch.setattr(jobs, "enqueue_task_gate", lambda task_id, gate: gates.append((task_id, gate)))
    return gates


def no_trial(**kw: Any) -> harbor_adapter.TrialOutcome:
    raise AssertionError(f"no trial may run: {kw.get('trial_name')}")


def make_candidate(workspace) -> Candidate:  # type: ignore[no-untyped-def]
    repository = Repository.objects.create(workspace=workspace, kind="local", location="/nonexistent")
    batch = Batch.objects.create(repository=repository, requested_easy=1)
    pull = PullRequest.objects.create(
        repository=repository, number=1, title="Add multiply", merged_at=timezone.now(), base_sha="a", head_sha="b"
    )
    return Candidate.objects.create(batch=batch, pull_request=pull, tier="easy")


# --- the service ------------------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_task_cancel_records_running_gates_cancelled_and_removes_their_containers(
    workspace, settings, tmp_path: Path, removed: list[str], django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    settings.MEDIA_ROOT = tmp_path
    candidate = make_candidate(workspace)
    repository_services.candidate_set_state(candidate=candidate, state=CandidateState.AUTHORING)
    repository_services.candidate_set_state(candidate=candidate, state=CandidateState.VERIFYING)
    task = make_task(workspace, state=TaskState.VERIFYING, candidate=candidate)
    version = make_version(task, tmp_path)
    done = GateRun.objects.create(task=task, version=version, gate="build", status=GateStatus.PASSED, trial_name="b")
    running = GateRun.objects.create(task=task, version=version, gate="smoke", trial_name="task1-smoke-1-abc")

    with django_capture_on_commit_callbacks(execute=True):
        task = services.task_cancel(task=task, reason="not this one")

    assert task.state == TaskState.CANCELLED and task.reason == "not this one"
    running.refresh_from_db()
    done.refresh_from_db()
    assert running.status == GateStatus.CANCELLED and running.reason == "cancelled: not this one"
    assert running.finished_at is not None
    assert done.status == GateStatus.PASSED
    assert removed == ["task1-smoke-1-abc"]
    candidate.refresh_from_db()
    assert candidate.state == CandidateState.CANCELLED and candidate.reason == "not this one"


@pytest.mark.django_db
def test_task_cancel_refuses_a_finished_task_and_does_nothing_twice(
    workspace, removed: list[str], django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    approved = make_task(workspace, state=TaskState.APPROVED, reason="approved")
    with pytest.raises(Conflict):
        services.task_cancel(task=approved, reason="too late")
    task = make_task(workspace, state=TaskState.VERIFYING)
    with pytest.raises(InvalidInput):
        services.task_cancel(task=task, reason=" ")
    services.task_cancel(task=task, reason="first")
    GateRun.objects.create(task=task, gate="smoke", trial_name="later")
    with django_capture_on_commit_callbacks(execute=True):
        task = services.task_cancel(task=task, reason="second")
    assert task.reason == "first" and removed == []


@pytest.mark.django_db
def test_a_cancelled_task_stays_cancelled_whatever_a_late_job_says(workspace) -> None:  # type: ignore[no-untyped-def]
    task = make_task(workspace, state=TaskState.VERIFYING)
    services.task_cancel(task=task, reason="stop")
    for state, reason in [(TaskState.FAILED, "smoke gate: exited 1"), (TaskState.IN_REVIEW, "all five gates passed")]:
        task = services.task_set_state(task=task, state=state, reason=reason)
        assert task.state == TaskState.CANCELLED and task.reason == "stop"


# --- jobs that start after a cancel --------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_gate_job_on_a_cancelled_task_does_nothing(
    workspace, settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, enqueued: list[tuple[int, str]]
) -> None:  # type: ignore[no-untyped-def]
    settings.MEDIA_ROOT = tmp_path
    task = make_task(workspace, state=TaskState.VERIFYING)
    make_version(task, tmp_path)
    services.task_cancel(task=task, reason="stop")
    monkeypatch.setattr(harbor_adapter, "run_trial", no_trial)
    jobs.task_gate(task.pk, "nop")
    proposed = make_task(workspace)
    services.task_cancel(task=proposed, reason="stop")
    jobs.task_author(proposed.pk)
    assert not GateRun.objects.exists() and enqueued == []
    assert set(Task.objects.values_list("state", flat=True)) == {TaskState.CANCELLED}


@pytest.mark.django_db
def test_a_gate_job_whose_batch_was_cancelled_cancels_its_task_and_runs_nothing(
    workspace, settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, enqueued: list[tuple[int, str]]
) -> None:  # type: ignore[no-untyped-def]
    settings.MEDIA_ROOT = tmp_path
    candidate = make_candidate(workspace)
    task = make_task(workspace, state=TaskState.VERIFYING, candidate=candidate, batch=candidate.batch)
    make_version(task, tmp_path)
    repository_services.batch_cancel(batch=candidate.batch)
    monkeypatch.setattr(harbor_adapter, "run_trial", no_trial)
    task = services.task_run_gate(task=task, gate="oracle")
    assert task.state == TaskState.CANCELLED and task.reason == "batch cancelled"
    assert not GateRun.objects.exists() and enqueued == []


# --- a cancel while a gate runs ------------------------------------------------------------------------------------


class SlowTrial:
    """A trial that runs until its containers are removed, then ends as Harbor's does when its sandbox vanishes."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.started = threading.Event()
        self.stopped = threading.Event()
        self.names: list[str] = []

    def run_trial(self, **kw: Any) -> harbor_adapter.TrialOutcome:
        self.names.append(kw["trial_name"])
        self.started.set()
        assert self.stopped.wait(20), "the trial was never stopped"
        return outcome(
            self.tmp_path,
            failure_cause="sandbox_failed",
            exception_type="RuntimeError",
            exception_message="container not found",
        )

    def remove(self, *, trial_name: str, environment_type: str | None = None) -> int:
        self.stopped.set()
        return 1


def _gate_in_a_worker(task_id: int, gate: str) -> threading.Thread:
    def work() -> None:
        try:
            jobs.task_gate(task_id, gate)
        finally:
            connection.close()

    worker = threading.Thread(target=work)
    worker.start()
    return worker


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("how", ["task", "batch"])
def test_a_cancel_while_a_gate_runs_stops_its_trial_and_no_later_gate_starts(
    how: str,
    workspace,
    settings,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    enqueued: list[tuple[int, str]],
) -> None:  # type: ignore[no-untyped-def]
    settings.MEDIA_ROOT = tmp_path
    settings.TASKS_CANCEL_POLL_SECONDS = 0.05
    trial = SlowTrial(tmp_path)
    monkeypatch.setattr(harbor_adapter, "run_trial", trial.run_trial)
    monkeypatch.setattr(harbor_adapter, "trial_containers_remove", trial.remove)
    candidate = make_candidate(workspace)
    task = make_task(workspace, state=TaskState.VERIFYING, candidate=candidate, batch=candidate.batch)
    make_version(task, tmp_path)

    worker = _gate_in_a_worker(task.pk, "smoke")
    assert trial.started.wait(10)
    row = GateRun.objects.get(task=task)
    assert row.status == GateStatus.RUNNING and row.trial_name == trial.names[0]
    if how == "task":
        services.task_cancel(task=task, reason="a person stopped it")
    else:
        repository_services.batch_cancel(batch=candidate.batch)
    worker.join(10)

    assert not worker.is_alive()
    assert trial.stopped.is_set() and len(trial.names) == 1  # stopped, and not retried as an infrastructure error
    row.refresh_from_db()
    task.refresh_from_db()
    candidate.refresh_from_db()
    reason = "a person stopped it" if how == "task" else "batch cancelled"
    assert row.status == GateStatus.CANCELLED and row.reason == f"cancelled: {reason}"
    assert task.state == TaskState.CANCELLED and task.reason == reason
    assert candidate.state == CandidateState.CANCELLED
    assert enqueued == []


# --- the API ------------------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_api_cancels_an_unfinished_task_with_a_reason(
    api, workspace, removed: list[str], django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    task = make_task(workspace, state=TaskState.VERIFYING)
    GateRun.objects.create(task=task, gate="nop", trial_name="task-nop-1")
    base = f"/api/w/{workspace.slug}/tasks"
    with django_capture_on_commit_callbacks(execute=True):
        r = api.post(f"{base}/{task.pk}/cancel", {"reason": "wrong PR"}, format="json")
    assert r.status_code == 200 and r.json()["state"] == "cancelled" and r.json()["reason"] == "wrong PR"
    assert removed == ["task-nop-1"]
    assert api.get(f"{base}/{task.pk}").json()["gateRuns"][0]["status"] == "cancelled"
    done = make_task(workspace, state=TaskState.FAILED, reason="smoke gate: exited 1")
    assert api.post(f"{base}/{done.pk}/cancel", {}, format="json").status_code == 409
    other = make_task(workspace, state=TaskState.PROPOSED)
    r = api.post(f"{base}/{other.pk}/cancel", {}, format="json")
    assert r.status_code == 200 and r.json()["reason"] == "cancelled by a person"
