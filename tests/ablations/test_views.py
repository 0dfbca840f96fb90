"""Environments (repo ablations) page: list with build counts, create (errors inline), Build Missing Tasks, delete."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from apps.ablations import services
from apps.ablations.models import Environment, EnvironmentBuild
from apps.accounts.models import Workspace
from apps.repositories.models import Repository
from tests.ablations.conftest import approved

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def client(user: User) -> Client:
    c = Client()
    c.force_login(user)
    return c


def test_without_a_repository_the_page_says_connect_one(client: Client, workspace: Workspace) -> None:
    page = client.get(reverse("ablations:list", args=[workspace.slug])).content.decode()
    assert "No repo ablations yet" in page and "Connect a" in page


def test_create_schedules_a_build_per_approved_task_and_shows_counts(
    client: Client, workspace: Workspace, repository: Repository, tmp_path: Path, enqueued: list[int]
) -> None:
    approved(repository, tmp_path)
    approved(repository, tmp_path)
    url = reverse("ablations:list", args=[workspace.slug])
    r = client.post(url, {"repository": repository.pk, "name": "No agent notes", "script": "rm -f AGENTS.md"})
    assert r.status_code == 302
    environment = Environment.objects.get()
    assert EnvironmentBuild.objects.filter(environment=environment, state="pending").count() == 2
    page = client.get(url).content.decode()
    assert "No agent notes" in page and "<td>0</td><td>2</td>" in page  # 0 ready, 2 pending


def test_empty_script_is_an_inline_error(client: Client, workspace: Workspace, repository: Repository) -> None:
    url = reverse("ablations:list", args=[workspace.slug])
    r = client.post(url, {"repository": repository.pk, "name": "Nothing", "script": "   \n"}, **HX)
    assert r.status_code == 200 and b"<html" not in r.content
    assert "say what to run in /app" in r.content.decode() and not Environment.objects.exists()


def test_build_missing_and_delete(
    client: Client, workspace: Workspace, repository: Repository, tmp_path: Path, enqueued: list[int]
) -> None:
    environment = services.environment_create(repository=repository, name="Bump", script="true")
    approved(repository, tmp_path)  # approved after the ablation was made: missing there
    r = client.post(reverse("ablations:build_missing", args=[workspace.slug, environment.pk]))
    assert r.status_code == 302 and EnvironmentBuild.objects.filter(environment=environment).count() == 1
    r = client.post(reverse("ablations:delete", args=[workspace.slug, environment.pk]))
    assert r.status_code == 302 and not Environment.objects.exists()


def test_environment_of_another_workspace_is_404(client: Client, workspace: Workspace, tmp_path: Path) -> None:
    from tests.factories import make_workspace

    other = make_workspace()
    repo = Repository.objects.create(workspace=other, kind="local", location=str(tmp_path / "o"))
    environment = services.environment_create(repository=repo, name="Theirs", script="true")
    r = client.post(reverse("ablations:delete", args=[workspace.slug, environment.pk]))
    assert r.status_code == 404 and Environment.objects.filter(pk=environment.pk).exists()


def test_list_page_queries_are_fixed_plus_the_build_counts(
    client: Client, workspace: Workspace, repository: Repository, django_assert_max_num_queries: Any
) -> None:
    for i in range(3):
        services.environment_create(repository=repository, name=f"E{i}", script="true")
    url = reverse("ablations:list", args=[workspace.slug])
    client.get(url)
    # build_counts reads each environment's builds and approved tasks (2 per environment); the rest is fixed.
    with django_assert_max_num_queries(5 + 2 * 3):
        assert client.get(url).status_code == 200
