"""Harnesses page: list, save with every rule checked by the service (errors inline), delete."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from apps.accounts.models import Workspace
from apps.harnesses import services
from apps.harnesses.models import Harness

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def client(user: User) -> Client:
    c = Client()
    c.force_login(user)
    return c


def test_empty_list_says_what_a_harness_is_for(client: Client, workspace: Workspace) -> None:
    r = client.get(reverse("harnesses:list", args=[workspace.slug]))
    assert r.status_code == 200 and r.templates[0].name == "harnesses/harness_list.html"
    assert "No saved harnesses yet" in r.content.decode()


def test_save_a_harness(client: Client, workspace: Workspace) -> None:
    r = client.post(
        reverse("harnesses:list", args=[workspace.slug]),
        {"name": "Terse", "agent": "terminus-2", "instructions": "Be brief.", "options": "", "skills": ""},
    )
    assert r.status_code == 302
    harness = Harness.objects.get(workspace=workspace)
    assert (harness.name, harness.agent, harness.instructions, harness.options) == (
        "Terse",
        "terminus-2",
        "Be brief.",
        {},
    )
    assert "Terse" in client.get(reverse("harnesses:list", args=[workspace.slug])).content.decode()


def test_shape_and_rule_errors_are_inline(client: Client, workspace: Workspace) -> None:
    url = reverse("harnesses:list", args=[workspace.slug])
    r = client.post(url, {"name": "X", "agent": "terminus-2", "options": "{nope"}, **HX)
    assert r.status_code == 200 and r.templates[0].name == "harnesses/partials/harness_form.html"
    assert b"<html" not in r.content and "not JSON" in r.content.decode()
    # The service's rule: terminus-2 loads no skills.
    r = client.post(url, {"name": "X", "agent": "terminus-2", "skills": "acme/skills"})
    assert r.status_code == 200 and b"<html" in r.content and "does not load skills" in r.content.decode()
    assert not Harness.objects.exists()


def test_delete_a_harness(client: Client, workspace: Workspace) -> None:
    harness = services.harness_create(workspace=workspace, name="Terse", agent="terminus-2", instructions="x")
    r = client.post(reverse("harnesses:delete", args=[workspace.slug, harness.pk]))
    assert r.status_code == 302 and not Harness.objects.exists()


def test_list_runs_a_fixed_number_of_queries(
    client: Client, workspace: Workspace, django_assert_num_queries: Any
) -> None:
    for i in range(3):
        services.harness_create(workspace=workspace, name=f"H{i}", agent="terminus-2", instructions=f"x{i}")
    url = reverse("harnesses:list", args=[workspace.slug])
    client.get(url)
    with django_assert_num_queries(4):  # session, user, membership, harnesses
        assert client.get(url).status_code == 200
