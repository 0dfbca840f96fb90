"""Fixtures for repo ablations: a local repository with approved tasks, files under a temp MEDIA_ROOT."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from apps.ablations import jobs
from apps.accounts.models import Workspace
from apps.repositories.models import Repository
from apps.tasks.models import Task
from tests.runs.factories import greeting_files, make_approved_task


@pytest.fixture(autouse=True)
def _media(settings: Any, tmp_path_factory: pytest.TempPathFactory) -> None:
    media = tmp_path_factory.mktemp("media")
    settings.MEDIA_ROOT = media
    settings.HARBOR_TRIALS_DIR = media / "trials"
    settings.RUNS_SANDBOXES = ["podman"]


@pytest.fixture
def repository(workspace: Workspace, tmp_path: Path) -> Repository:
    return Repository.objects.create(workspace=workspace, kind="local", location=str(tmp_path / "repo"))


def approved(repository: Repository, tmp_path: Path) -> Task:
    return make_approved_task(workspace=repository.workspace, files=greeting_files(tmp_path), repository=repository)


@pytest.fixture
def enqueued(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Build ids the service enqueued after commit (the worker would run them; tests call the job themselves)."""
    ids: list[int] = []
    monkeypatch.setattr(jobs, "async_task", lambda func, build_id, **kw: ids.append(build_id))
    return ids
