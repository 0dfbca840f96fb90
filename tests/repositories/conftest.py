"""Fixtures for repositories: the GitHub double (settings point at it), a github credential, generated git repos."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from apps.accounts.models import Credential, CredentialKind, Workspace
from apps.repositories import jobs
from tests.doubles.git_repos import GitRepoBuilder
from tests.doubles.github_api import FakeRepo, GitHubDouble, running


@pytest.fixture
def github(settings: Any) -> Iterator[GitHubDouble]:
    double = GitHubDouble()
    for d in running(double):
        settings.GITHUB_API_URL = double.url
        # Keep retries real but quick: the backoff doubles from 10 ms.
        settings.GITHUB_RETRY_BACKOFF = 0.01
        yield d


@pytest.fixture
def github_credential(workspace: Workspace, github: GitHubDouble) -> Credential:
    return Credential.objects.create(workspace=workspace, name="gh", kind=CredentialKind.GITHUB, secret=github.token)


@pytest.fixture
def fake_repo(github: GitHubDouble) -> FakeRepo:
    return github.add_repo(FakeRepo(full_name="acme/widgets"))


@pytest.fixture
def git_repo(tmp_path: Path) -> GitRepoBuilder:
    return GitRepoBuilder(tmp_path / "origin")


@pytest.fixture
def run_jobs_inline(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Make `enqueue_batch_run` run the job at once (still only on commit); returns the batch ids it ran."""
    ran: list[int] = []

    def run_now(batch_id: int) -> None:
        ran.append(batch_id)
        jobs.batch_run(batch_id)

    monkeypatch.setattr(jobs, "enqueue_batch_run", run_now)
    return ran


@pytest.fixture(autouse=True)
def _media_root(settings: Any, tmp_path: Path) -> None:
    settings.MEDIA_ROOT = tmp_path / "media"
