"""Fixtures for comparisons: a workspace with model credentials and approved tasks, files under a temp MEDIA_ROOT."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from apps.accounts.models import Credential, Workspace
from apps.runs import configurations
from apps.runs.configurations import EnvironmentSnapshot, HarnessSnapshot
from apps.tasks.models import Task
from tests.runs.factories import greeting_files, make_approved_task, make_credential


@pytest.fixture(autouse=True)
def _media(settings: Any, tmp_path_factory: pytest.TempPathFactory) -> None:
    media = tmp_path_factory.mktemp("media")
    settings.MEDIA_ROOT = media
    settings.HARBOR_TRIALS_DIR = media / "trials"
    settings.RUNS_SANDBOXES = ["podman"]


@dataclass
class Setup:
    workspace: Workspace
    openai: Credential
    anthropic: Credential
    tasks: list[Task]

    def body(self, **overrides: Any) -> dict[str, Any]:
        body: dict[str, Any] = {
            "id": str(uuid.uuid4()),
            "models": [{"catalogId": "gpt-5-mini", "credentialId": self.openai.pk, "harnesses": ["terminus-2"]}],
            "sandbox": "podman",
            "tasks": [{"runId": t.batch_id, "taskId": t.pk} for t in self.tasks],
        }
        body.update(overrides)
        return body


def make_setup(workspace: Workspace, tmp_path: Path, n_tasks: int = 2) -> Setup:
    files = greeting_files(tmp_path)
    return Setup(
        workspace=workspace,
        openai=make_credential(workspace=workspace, kind="openai"),
        anthropic=make_credential(workspace=workspace, kind="anthropic"),
        tasks=[make_approved_task(workspace=workspace, files=files) for _ in range(n_tasks)],
    )


@pytest.fixture
def setup(workspace: Workspace, tmp_path: Path) -> Setup:
    return make_setup(workspace, tmp_path)


@pytest.fixture
def saved(monkeypatch: pytest.MonkeyPatch) -> Callable[..., None]:
    """Stand-in rows for saved harnesses and environments until apps.harnesses/ablations have tables (issue 7)."""

    def install(harnesses: list[HarnessSnapshot] = [], environments: list[EnvironmentSnapshot] = []) -> None:  # noqa: B006
        h = {x.id: x for x in harnesses}
        e = {x.id: x for x in environments}
        monkeypatch.setattr(
            configurations, "load_harnesses", lambda *, workspace, ids: {i: h[i] for i in ids if i in h}
        )
        monkeypatch.setattr(
            configurations, "load_environments", lambda *, workspace, ids: {i: e[i] for i in ids if i in e}
        )

    return install
