"""Saved harnesses over the API: CRUD with camelCase JSON, rule errors as 400/409, workspace isolation."""

from __future__ import annotations

from rest_framework.test import APIClient

from apps.accounts.models import Credential, Workspace
from apps.harnesses.models import Harness
from tests.factories import make_workspace


def _base(workspace: Workspace) -> str:
    return f"/api/w/{workspace.slug}/harnesses"


def test_harness_crud(api: APIClient, workspace: Workspace, openai: Credential) -> None:
    body = {
        "name": "Delegating Codex",
        "agent": "codex",
        "skills": ["acme/skills@v1"],
        "instructions": "Write a test first.",
        "options": {"reasoning_summary": "concise"},
        "subagent": {"catalogId": "gpt-5-mini"},
    }
    r = api.post(_base(workspace), body, format="json")
    assert r.status_code == 201, r.json()
    created = r.json()
    assert created["agent"] == "codex" and created["skills"] == ["acme/skills@v1"]
    assert created["instructionsInSystemPrompt"] is True
    assert created["subagent"] == {
        "catalogId": "gpt-5-mini",
        "credentialId": None,
        "prompt": "Delegate a meaningful part of each task to subagents: they run on another model through the same "
        "gateway.",
    }
    assert len(created["fingerprint"]) == 64 and created["sameConfigurationAs"] == []

    twin = api.post(_base(workspace), {**body, "name": "Same changes"}, format="json").json()
    assert twin["fingerprint"] == created["fingerprint"] and twin["sameConfigurationAs"] == [created["id"]]

    listed = api.get(_base(workspace)).json()
    assert [h["name"] for h in listed] == ["Delegating Codex", "Same changes"]
    assert listed[0]["sameConfigurationAs"] == [twin["id"]]

    r = api.patch(
        f"{_base(workspace)}/{created['id']}", {"subagent": {"catalogId": "gpt-5-mini", "prompt": ""}}, format="json"
    )
    assert r.status_code == 200 and r.json()["subagent"]["prompt"] == ""
    assert r.json()["fingerprint"] != created["fingerprint"] and r.json()["instructions"] == "Write a test first."
    r = api.patch(f"{_base(workspace)}/{created['id']}", {"subagent": None}, format="json")
    assert r.json()["subagent"] is None

    assert api.get(f"{_base(workspace)}/{created['id']}").json()["name"] == "Delegating Codex"
    assert api.delete(f"{_base(workspace)}/{created['id']}").status_code == 204
    assert api.get(f"{_base(workspace)}/{created['id']}").status_code == 404


def test_rule_violations_are_clear_errors(api: APIClient, workspace: Workspace) -> None:
    r = api.post(_base(workspace), {"name": "x", "agent": "terminus-2", "skills": ["acme/s"]}, format="json")
    assert r.status_code == 400
    assert r.json()["detail"] == "skills: terminus-2 does not load skills; only claude-code, codex and pi do"
    r = api.post(_base(workspace), {"name": "x", "agent": "pi", "subagent": {"catalogId": "gpt-5"}}, format="json")
    assert r.status_code == 400 and "claude-code and codex only" in r.json()["detail"]
    r = api.post(_base(workspace), {"name": "x", "agent": "codex", "options": {"nope": 1}}, format="json")
    assert r.status_code == 400 and r.json()["errors"]["options"]
    r = api.post(_base(workspace), {"name": "x", "agent": "claude", "colour": "red"}, format="json")
    assert r.status_code == 400 and set(r.json()["errors"]) == {"colour"}
    r = api.post(_base(workspace), {"name": "x", "agent": "aider"}, format="json")
    assert r.status_code == 400 and "agent" in r.json()["errors"]
    assert api.post(_base(workspace), {"name": "x", "agent": "pi"}, format="json").status_code == 201
    r = api.post(_base(workspace), {"name": "x", "agent": "codex"}, format="json")
    assert r.status_code == 409 and r.json()["error"] == "conflict"
    assert Harness.objects.count() == 1


def test_another_workspaces_harnesses_are_invisible(api: APIClient, workspace: Workspace) -> None:
    other = Harness.objects.create(workspace=make_workspace(), name="theirs", agent="pi", fingerprint="x")
    assert api.get(f"{_base(workspace)}/{other.pk}").status_code == 404
    assert api.delete(f"{_base(workspace)}/{other.pk}").status_code == 404
    assert api.get(_base(workspace)).json() == []


def test_a_read_key_cannot_write(read_key: str, workspace: Workspace) -> None:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {read_key}")
    assert client.get(_base(workspace)).status_code == 200
    assert client.post(_base(workspace), {"name": "x", "agent": "pi"}, format="json").status_code == 403
