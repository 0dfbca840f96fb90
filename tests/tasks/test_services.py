"""Task services on the real database; Harbor's run_trial (the container boundary) is replaced where noted."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from apps.tasks import gates, jobs, services, storage
from apps.tasks.models import GateRun, GateStatus, Task, TaskState, TaskVersion
from selfbench import harbor_adapter
from selfbench.errors import Conflict, InvalidInput

pytestmark = pytest.mark.django_db


def make_task(workspace, *, state: str = TaskState.PROPOSED, reason: str = "", tier: str = "easy", **kw: Any) -> Task:  # type: ignore[no-untyped-def]
    return Task.objects.create(
        workspace=workspace,
        source_path="/nonexistent",
        source_repository=kw.pop("source_repository", "acme/calc"),
        pr_number=kw.pop("pr_number", 1),
        base_sha="a" * 40,
        head_sha="b" * 40,
        title="Add multiply",
        state=state,
        reason=reason,
        tier=tier,
        **kw,
    )


def make_version(task: Task, media: Path) -> TaskVersion:
    digest, _ = storage.store({"task.toml": b'schema_version = "1.4"\n', "instruction.md": b"do it\n"})
    version = TaskVersion.objects.create(
        task=task, content_hash=digest, fail_to_pass=["t::a"], pass_to_pass=["t::b"], verified_at=timezone.now()
    )
    Task.objects.filter(pk=task.pk).update(version=version)
    task.refresh_from_db()
    return version


def outcome(tmp_path: Path, **kw: Any) -> harbor_adapter.TrialOutcome:
    fields: dict[str, Any] = {
        "trial_name": "t",
        "trial_dir": tmp_path,
        "reward": None,
        "rewards": None,
        "failure_cause": None,
        "exception_type": None,
        "exception_message": None,
        "started_at": None,
        "finished_at": None,
        "timings": {},
        "n_input_tokens": None,
        "n_cache_tokens": None,
        "n_output_tokens": None,
        "cost_usd": None,
        "agent_exit_code": None,
        "agent_output": None,
        "verifier_output": None,
        "trajectory_path": None,
        "agent_log_dir": None,
        "raw": {},
    }
    fields.update(kw)
    return harbor_adapter.TrialOutcome(**fields)


def test_task_approve_needs_a_task_awaiting_approval(workspace) -> None:  # type: ignore[no-untyped-def]
    task = make_task(workspace, state=TaskState.VERIFYING)
    with pytest.raises(Conflict):
        services.task_approve(task=task, user=None)
    task = make_task(workspace, state=TaskState.AWAITING_APPROVAL)
    task = services.task_approve(task=task, user=None, note="ship it")
    assert task.state == TaskState.APPROVED and task.decision_note == "ship it" and task.decided_at


def test_task_reject_needs_a_note_and_records_it_as_the_reason(workspace, user) -> None:  # type: ignore[no-untyped-def]
    task = make_task(workspace, state=TaskState.AWAITING_APPROVAL)
    with pytest.raises(InvalidInput):
        services.task_reject(task=task, user=user, note=" ")
    task = services.task_reject(task=task, user=user, note="tests pin internals")
    assert task.state == TaskState.REJECTED
    assert task.reason == "rejected by a person: tests pin internals" and task.decided_by == user


def test_terminal_states_need_a_reason(workspace) -> None:  # type: ignore[no-untyped-def]
    task = make_task(workspace)
    with pytest.raises(InvalidInput):
        services.task_set_state(task=task, state=TaskState.FAILED)


def test_an_infrastructure_error_is_retried_three_times_then_infrastructure_failed(
    workspace, settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    settings.MEDIA_ROOT = tmp_path
    task = make_task(workspace, state=TaskState.VERIFYING)
    make_version(task, tmp_path)
    calls: list[str] = []

    def broken(**kw: Any) -> harbor_adapter.TrialOutcome:
        calls.append(kw["trial_name"])
        return outcome(
            tmp_path, failure_cause="sandbox_failed", exception_type="RuntimeError", exception_message="podman died"
        )

    monkeypatch.setattr(harbor_adapter, "run_trial", broken)
    task = services.task_run_gate(task=task, gate="nop")
    assert task.state == TaskState.INFRASTRUCTURE_FAILED
    assert task.reason.startswith("nop gate: infrastructure failed 3 times")
    assert len(calls) == 3
    assert (
        list(GateRun.objects.filter(task=task).values_list("status", flat=True))
        == [GateStatus.INFRASTRUCTURE_ERROR] * 3
    )


def test_a_dockerfile_that_does_not_build_fails_the_gate_without_retries(
    workspace, settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    settings.MEDIA_ROOT = tmp_path
    task = make_task(workspace, state=TaskState.VERIFYING)
    make_version(task, tmp_path)
    message = 'Error: building at STEP "RUN pip3 install -r requirements.txt": exit status 1'
    monkeypatch.setattr(
        harbor_adapter,
        "run_trial",
        lambda **kw: outcome(
            tmp_path, failure_cause="sandbox_failed", exception_type="RuntimeError", exception_message=message
        ),
    )
    task = services.task_run_gate(task=task, gate="build")
    assert task.state == TaskState.FAILED and task.reason.startswith("build gate: the image does not build")
    assert GateRun.objects.filter(task=task).count() == 1


def test_a_passing_gate_schedules_the_next_one(
    workspace, settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    settings.MEDIA_ROOT = tmp_path
    task = make_task(workspace, state=TaskState.VERIFYING)
    make_version(task, tmp_path)
    monkeypatch.setattr(
        harbor_adapter, "run_trial", lambda **kw: outcome(tmp_path, agent_exit_code=0, agent_output="smoke-ok")
    )
    enqueued: list[tuple[int, str]] = []
    monkeypatch.setattr(jobs, "enqueue_task_gate", lambda task_id, gate: enqueued.append((task_id, gate)))
    with django_capture_on_commit_callbacks(execute=True):
        services.task_run_gate(task=task, gate="smoke")
    assert enqueued == [(task.pk, "nop")]
    run = GateRun.objects.get(task=task)
    assert run.status == GateStatus.PASSED and "smoke-ok" in run.log and run.duration_sec is not None


def test_a_gate_left_running_by_a_killed_worker_is_recovered(
    workspace, settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    settings.MEDIA_ROOT = tmp_path
    task = make_task(workspace, state=TaskState.VERIFYING)
    version = make_version(task, tmp_path)
    stale = GateRun.objects.create(task=task, version=version, gate="oracle", attempt=1)
    GateRun.objects.filter(pk=stale.pk).update(started_at=timezone.now() - timedelta(hours=4))
    stuck = make_task(workspace, state=TaskState.AUTHORING)
    Task.objects.filter(pk=stuck.pk).update(updated_at=timezone.now() - timedelta(hours=4))
    enqueued: list[tuple[int, str]] = []
    monkeypatch.setattr(jobs, "enqueue_task_gate", lambda task_id, gate: enqueued.append((task_id, gate)))
    with django_capture_on_commit_callbacks(execute=True):
        services.task_recover_stale()
    stale.refresh_from_db()
    stuck.refresh_from_db()
    assert stale.status == GateStatus.INFRASTRUCTURE_ERROR and enqueued == [(task.pk, "oracle")]
    assert stuck.state == TaskState.FAILED and stuck.reason == "the worker stopped while authoring"


def test_a_storage_race_while_building_is_infrastructure_not_a_broken_dockerfile(tmp_path: Path) -> None:
    storage_race = (
        'Error: identifier is not a container: building at STEP "COPY smoke.sh /opt/selfbench/smoke.sh": checking on '
        "destination /var/lib/containers/storage/overlay/x/merged/opt/selfbench: no such file or directory"
    )
    broken = 'Error: building at STEP "RUN pip3 install -r requirements.txt": while running runtime: exit status 1'
    assert not any(p.search(storage_race) for p in gates.BUILD_ERROR_PATTERNS)
    assert any(p.search(broken) for p in gates.BUILD_ERROR_PATTERNS)


def test_the_stale_work_janitor_is_scheduled() -> None:
    # Run the data migration's function itself: a transactional test earlier in the same worker flushes every table,
    # migration data included, so the row may be gone by now even though the migration created it.
    from importlib import import_module

    from django.apps import apps as django_apps
    from django_q.models import Schedule

    migration = import_module("apps.tasks.migrations.0002_recover_stale_schedule")
    Schedule.objects.filter(name="tasks-recover-stale").delete()
    migration.create(django_apps, None)
    migration.create(django_apps, None)  # idempotent
    schedule = Schedule.objects.get(name="tasks-recover-stale")
    assert schedule.func == "apps.tasks.jobs.tasks_recover_stale" and schedule.minutes == 10
