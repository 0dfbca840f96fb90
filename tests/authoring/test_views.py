"""Authoring pages: start a batch with its author and reviewer (atomically, errors inline), evals and vibe evals."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from apps.accounts.models import Credential, Workspace
from apps.authoring.models import AuthoringSettings
from apps.repositories import jobs as repository_jobs
from apps.repositories.models import Batch, Repository

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def client(user: User) -> Client:
    c = Client()
    c.force_login(user)
    return c


@pytest.fixture
def repository(workspace: Workspace, tmp_path: Any) -> Repository:
    return Repository.objects.create(workspace=workspace, kind="local", location=str(tmp_path))


@pytest.fixture
def credential(workspace: Workspace) -> Credential:
    return Credential.objects.create(workspace=workspace, name="openai key", kind="openai", secret="sk-test-000000")


@pytest.fixture
def enqueued(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    queue: list[int] = []
    monkeypatch.setattr(repository_jobs, "enqueue_batch_run", queue.append)
    return queue


def _start_url(workspace: Workspace, repository: Repository) -> str:
    return reverse("authoring:batch_start", args=[workspace.slug, repository.pk])


def test_start_batch_page_offers_catalog_models_credentials_and_agents(
    client: Client, workspace: Workspace, repository: Repository, credential: Credential
) -> None:
    r = client.get(_start_url(workspace, repository))
    assert r.status_code == 200
    assert [t.name for t in r.templates][:2] == ["authoring/batch_start.html", "base.html"]
    page = r.content.decode()
    assert 'value="gpt-5-mini"' in page and "openai key" in page and "Managed model" in page
    assert 'value="terminus-2"' in page
    # The repository page links here.
    detail = client.get(reverse("repositories:detail", args=[workspace.slug, repository.pk])).content.decode()
    assert _start_url(workspace, repository) in detail


def test_start_batch_creates_the_batch_and_its_settings_and_enqueues_on_commit(
    client: Client,
    workspace: Workspace,
    repository: Repository,
    credential: Credential,
    enqueued: list[int],
    django_capture_on_commit_callbacks: Any,
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        r = client.post(
            _start_url(workspace, repository),
            {
                "easy": 2,
                "medium": 1,
                "hard": 0,
                "author_agent": "terminus-2",
                "author_model": "gpt-5-mini",
                "author_credential_id": credential.pk,
                "reasoning": "low",
                "reviewer_model": "gpt-5",
                "reviewer_credential_id": "",
            },
        )
    batch = Batch.objects.get()
    assert r.status_code == 302 and r["Location"] == reverse("repositories:batch", args=[workspace.slug, batch.pk])
    assert (batch.requested_easy, batch.requested_medium, batch.requested_hard) == (2, 1, 0)
    settings = AuthoringSettings.objects.get(batch=batch)
    assert (settings.author_model, settings.author_credential, settings.reasoning) == ("gpt-5-mini", credential, "low")
    assert (settings.reviewer_model, settings.reviewer_credential) == ("gpt-5", None)
    assert enqueued == [batch.pk]


def test_start_batch_without_models_is_a_plain_batch(
    client: Client, workspace: Workspace, repository: Repository, enqueued: list[int]
) -> None:
    r = client.post(
        _start_url(workspace, repository),
        {"easy": 1, "medium": 0, "hard": 0, "author_agent": "terminus-2", "reasoning": "medium"},
        **HX,
    )
    batch = Batch.objects.get()
    assert r.status_code == 200 and r["HX-Redirect"] == reverse("repositories:batch", args=[workspace.slug, batch.pk])
    assert not AuthoringSettings.objects.exists()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"easy": 1, "author_model": "gpt-5", "reviewer_model": "gpt-5"}, "must differ"),
        ({"easy": 0, "author_model": "gpt-5-mini", "reviewer_model": "gpt-5"}, "must add up to"),
        ({"easy": 1, "author_model": "gpt-5-mini"}, "or neither"),
    ],
)
def test_a_rule_error_is_shown_inline_and_creates_nothing(
    client: Client,
    workspace: Workspace,
    repository: Repository,
    enqueued: list[int],
    django_capture_on_commit_callbacks: Any,
    data: dict[str, Any],
    message: str,
) -> None:
    form = {"easy": 0, "medium": 0, "hard": 0, "author_agent": "terminus-2", "reasoning": "medium", **data}
    with django_capture_on_commit_callbacks(execute=True):
        r = client.post(_start_url(workspace, repository), form, **HX)
    assert r.status_code == 200
    assert r.templates[0].name == "authoring/partials/batch_form.html"
    page = r.content.decode()
    assert "<html" not in page and message in page and 'role="alert"' in page
    assert not Batch.objects.exists() and not AuthoringSettings.objects.exists()
    assert enqueued == []


def test_another_workspaces_repository_is_not_found(client: Client, repository: Repository) -> None:
    from tests.factories import make_workspace

    other = make_workspace()
    mine = reverse("authoring:batch_start", args=[repository.workspace.slug, repository.pk + 1000])
    assert client.get(mine).status_code == 404
    assert client.get(reverse("authoring:batch_start", args=[other.slug, repository.pk])).status_code == 404
