"""A cancel stops a gate's real podman trial: the smoke gate of a task whose smoke.sh sleeps 60 s, cancelled while it
sleeps (by a person, or by cancelling the candidate's batch), ends within seconds with none of its containers left,
the gate recorded cancelled, the task cancelled with the reason and no later gate scheduled."""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path

import pytest
from django.db import connection
from django.utils import timezone

from apps.repositories import services as repository_services
from apps.repositories.models import Batch, Candidate, PullRequest, Repository
from apps.tasks import jobs, services, storage
from apps.tasks.models import GateRun, GateStatus, Task, TaskState, TaskVersion
from tests.harbor.tasks import BASE_IMAGE
from tests.harbor.test_adapter import _require_containers

pytestmark = [pytest.mark.containers, pytest.mark.django_db(transaction=True)]

SLEEPY_TASK: dict[str, bytes] = {
    "task.toml": b"""schema_version = "1.4"

[task]
name = "selfbench/sleepy-smoke"

[verifier]
timeout_sec = 120.0

[agent]
timeout_sec = 300.0

[environment]
build_timeout_sec = 300.0
workdir = "/app"
""",
    "instruction.md": b"Nothing to do.\n",
    "environment/Dockerfile": f"FROM {BASE_IMAGE}\nWORKDIR /app\nCOPY smoke.sh /opt/selfbench/smoke.sh\n".encode(),
    "environment/smoke.sh": b"#!/bin/bash\necho smoke-sleeping\nsleep 60\necho smoke-ok\n",
    "tests/test.sh": b"#!/bin/bash\nmkdir -p /logs/verifier\necho 0 > /logs/verifier/reward.txt\n",
}


def containers(name: str) -> list[str]:
    listed = subprocess.run(
        ["podman", "ps", "-a", "--format", "{{.Names}}", "--filter", f"name={name.lower()}"],
        capture_output=True,
        text=True,
        check=True,
    )
    return listed.stdout.split()


def sleeping(name: str) -> bool:
    """smoke.sh is running in the trial's main container."""
    for container in containers(name):
        top = subprocess.run(["podman", "top", container, "args"], capture_output=True, text=True, check=False)
        if "sleep 60" in top.stdout:
            return True
    return False


@pytest.mark.parametrize("how", ["task", "batch"])
def test_a_cancel_stops_a_running_gate_and_removes_its_containers(
    how: str, workspace, settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    _require_containers()
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.HARBOR_TRIALS_DIR = tmp_path / "trials"
    settings.SANDBOX_ENVIRONMENT = "podman"
    settings.TASKS_CANCEL_POLL_SECONDS = 0.5
    enqueued: list[tuple[int, str]] = []
    monkeypatch.setattr(jobs, "enqueue_task_gate", lambda task_id, gate: enqueued.append((task_id, gate)))

    repository = Repository.objects.create(workspace=workspace, kind="local", location="/nonexistent")
    batch = Batch.objects.create(repository=repository, requested_easy=1)
    pull = PullRequest.objects.create(
        repository=repository, number=7, title="Sleepy", merged_at=timezone.now(), base_sha="a", head_sha="b"
    )
    candidate = Candidate.objects.create(batch=batch, pull_request=pull, tier="easy")
    digest, _ = storage.store(SLEEPY_TASK)
    task = Task.objects.create(
        workspace=workspace,
        candidate=candidate,
        batch=batch,
        repository=repository,
        source_path="/nonexistent",
        base_sha="a" * 40,
        head_sha="b" * 40,
        title="Sleepy smoke",
        state=TaskState.VERIFYING,
    )
    version = TaskVersion.objects.create(task=task, content_hash=digest)
    Task.objects.filter(pk=task.pk).update(version=version)

    def work() -> None:
        try:
            jobs.task_gate(task.pk, "smoke")
        finally:
            connection.close()

    worker = threading.Thread(target=work)
    worker.start()
    deadline = time.monotonic() + 300
    name = ""
    while not (name and sleeping(name)):
        assert worker.is_alive(), "the gate ended before smoke.sh slept"
        assert time.monotonic() < deadline, "smoke.sh never started"
        time.sleep(0.5)
        name = GateRun.objects.filter(task=task).values_list("trial_name", flat=True).first() or ""
    slept_from = time.monotonic()

    if how == "task":
        services.task_cancel(task=task, reason="cancelled by a person")
    else:
        repository_services.batch_cancel(batch=batch)
    cancelled_at = time.monotonic()
    worker.join(60)
    took = time.monotonic() - cancelled_at

    assert not worker.is_alive()
    print(f"\n{how} cancel: the gate job ended {took:.1f} s after the cancel")
    assert took < 15, f"the gate took {took:.1f} s to stop"
    assert time.monotonic() - slept_from < 60  # smoke.sh did not sleep its 60 s out
    assert containers(name) == []
    row = GateRun.objects.get(task=task)
    task.refresh_from_db()
    reason = "cancelled by a person" if how == "task" else "batch cancelled"
    assert row.status == GateStatus.CANCELLED and row.reason == f"cancelled: {reason}"
    assert task.state == TaskState.CANCELLED and task.reason == reason
    assert enqueued == []
