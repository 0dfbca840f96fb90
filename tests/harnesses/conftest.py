"""Fixtures for saved harnesses: model credentials of the workspace, files under a temp MEDIA_ROOT."""

from __future__ import annotations

from typing import Any

import pytest

from apps.accounts.models import Credential, Workspace
from tests.runs.factories import make_credential


@pytest.fixture(autouse=True)
def _media(settings: Any, tmp_path_factory: pytest.TempPathFactory) -> None:
    media = tmp_path_factory.mktemp("media")
    settings.MEDIA_ROOT = media
    settings.HARBOR_TRIALS_DIR = media / "trials"
    settings.RUNS_SANDBOXES = ["podman"]
    settings.MANAGED_OPENAI_API_KEY = ""
    settings.MANAGED_ANTHROPIC_API_KEY = ""
    settings.MANAGED_OPENROUTER_API_KEY = ""


@pytest.fixture
def openai(workspace: Workspace) -> Credential:
    return make_credential(workspace=workspace, kind="openai")


@pytest.fixture
def anthropic(workspace: Workspace) -> Credential:
    return make_credential(workspace=workspace, kind="anthropic")
