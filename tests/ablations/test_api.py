"""Environments over the API: CRUD under a repository, Build Missing Tasks, build status per task."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rest_framework.test import APIClient

from apps.ablations import jobs
from apps.ablations.models import EnvironmentBuild
from apps.accounts.models import Workspace
from apps.repositories.models import Repository
from apps.tasks import gates
from tests.ablations.conftest import approved
from tests.factories import make_workspace


def test_environment_crud_build_missing_and_status(
    api: APIClient,
    workspace: Workspace,
    repository: Repository,
    tmp_path: Path,
    enqueued: list[int],
    monkeypatch: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    task = approved(repository, tmp_path)
    base = f"/api/w/{workspace.slug}"
    with django_capture_on_commit_callbacks(execute=True):
        r = api.post(
            f"{base}/repositories/{repository.pk}/environments",
            {"name": "No AGENTS.md", "script": "rm -f AGENTS.md"},
            format="json",
        )
    assert r.status_code == 201, r.json()
    env = r.json()
    assert env["repositoryId"] == repository.pk and env["script"] == "rm -f AGENTS.md"
    assert env["tasks"] == {"ready": 0, "pending": 1, "building": 0, "failed": 0, "missing": 0}
    assert len(enqueued) == 1

    status = api.get(f"{base}/environments/{env['id']}/tasks").json()
    assert status == [
        {
            "taskId": task.pk,
            "title": task.title,
            "state": "pending",
            "reason": "",
            "taskVersionId": None,
            "baseVersionId": task.version_id,
            "attempts": 0,
            "updatedAt": status[0]["updatedAt"],
        }
    ]
    monkeypatch.setattr(gates, "run_build", lambda d, n: gates.GateResult(gates.FAILED, "no such file", "", 1, n))
    jobs.environment_build(enqueued[0])
    row = api.get(f"{base}/environments/{env['id']}/tasks").json()[0]
    assert row["state"] == "failed" and row["reason"] == "build gate: no such file" and row["attempts"] == 1

    with django_capture_on_commit_callbacks(execute=True):
        r = api.post(f"{base}/environments/{env['id']}/build-missing")
    assert r.status_code == 202 and r.json() == {"queued": [task.pk]}
    assert len(enqueued) == 2

    r = api.patch(f"{base}/environments/{env['id']}", {"name": "Without AGENTS.md"}, format="json")
    assert r.status_code == 200 and r.json()["name"] == "Without AGENTS.md"
    assert [e["id"] for e in api.get(f"{base}/environments").json()] == [env["id"]]
    assert [e["id"] for e in api.get(f"{base}/repositories/{repository.pk}/environments").json()] == [env["id"]]
    r = api.post(f"{base}/repositories/{repository.pk}/environments", {"name": "Without AGENTS.md", "script": "true"})
    assert r.status_code == 409
    r = api.post(f"{base}/repositories/{repository.pk}/environments", {"name": "x", "script": "  "}, format="json")
    assert r.status_code == 400
    assert api.delete(f"{base}/environments/{env['id']}").status_code == 204
    assert not EnvironmentBuild.objects.exists()
    assert api.get(f"{base}/environments/{env['id']}").status_code == 404


def test_another_workspaces_repositories_and_environments_are_invisible(
    api: APIClient, workspace: Workspace, tmp_path: Path
) -> None:
    other = Repository.objects.create(workspace=make_workspace(), kind="local", location=str(tmp_path))
    base = f"/api/w/{workspace.slug}"
    r = api.post(f"{base}/repositories/{other.pk}/environments", {"name": "x", "script": "true"}, format="json")
    assert r.status_code == 404
    assert api.get(f"{base}/repositories/{other.pk}/environments").status_code == 404
