"""Workspace scope, key scopes and credentials over the API."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from apps.accounts.keys import hash_key
from apps.accounts.models import ApiKey, Credential
from tests.factories import make_api_key, make_user, make_workspace

pytestmark = pytest.mark.django_db


def client_with(key: str, header: str = "bearer") -> APIClient:
    c = APIClient()
    if header == "bearer":
        c.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    else:
        c.credentials(HTTP_X_API_KEY=key)
    return c


def test_no_credentials_is_401(workspace) -> None:
    r = APIClient().get(f"/api/w/{workspace.slug}/")
    assert r.status_code == 401
    assert "API key" in r.json()["detail"]


def test_bad_key_is_401(workspace) -> None:
    r = client_with("sbk_not-a-real-key").get(f"/api/w/{workspace.slug}/")
    assert r.status_code == 401


def test_key_works_as_bearer_and_as_x_api_key(workspace, write_key) -> None:
    for header in ("bearer", "x-api-key"):
        r = client_with(write_key, header).get(f"/api/w/{workspace.slug}/")
        assert r.status_code == 200, r.content
        assert r.json()["slug"] == workspace.slug


def test_other_workspaces_key_gets_404_for_everything(workspace) -> None:
    other = make_workspace()
    other_key = make_api_key(workspace=other).raw
    c = client_with(other_key)
    cred = Credential.objects.create(workspace=workspace, name="x", kind="openai", secret="sk-secret-000000")
    key = ApiKey.objects.filter(workspace=workspace).first() or make_api_key(workspace=workspace).api_key
    for method, path in [
        ("get", ""),
        ("get", "api-keys"),
        ("get", "members"),
        ("get", "credentials"),
        ("get", f"credentials/{cred.pk}"),
        ("patch", f"credentials/{cred.pk}"),
        ("delete", f"credentials/{cred.pk}"),
        ("post", f"api-keys/{key.pk}/revoke"),
    ]:
        r = getattr(c, method)(f"/api/w/{workspace.slug}/{path}", {}, format="json")
        assert r.status_code == 404, (method, path, r.status_code)
    assert Credential.objects.filter(pk=cred.pk).exists()


def test_session_user_outside_the_workspace_gets_404(workspace) -> None:
    c = APIClient()
    c.force_login(make_user())
    assert c.get(f"/api/w/{workspace.slug}/").status_code == 404


def test_read_key_gets_403_on_writes_and_200_on_reads(workspace, read_key) -> None:
    c = client_with(read_key)
    assert c.get(f"/api/w/{workspace.slug}/credentials").status_code == 200
    r = c.post(
        f"/api/w/{workspace.slug}/credentials",
        {"name": "a", "kind": "openai", "secret": "sk-abc123456789"},
        format="json",
    )
    assert r.status_code == 403
    assert "read-only" in r.json()["detail"]
    assert not Credential.objects.exists()


def test_key_is_shown_once_and_stored_only_as_hash(workspace, user) -> None:
    c = APIClient()
    c.force_login(user)
    r = c.post(f"/api/w/{workspace.slug}/api-keys", {"name": "ci", "scope": "read"}, format="json")
    assert r.status_code == 201
    raw = r.json()["key"]
    assert raw.startswith("sbk_")
    row = ApiKey.objects.get(pk=r.json()["id"])
    assert row.key_hash == hash_key(raw)
    assert raw not in str(ApiKey.objects.filter(pk=row.pk).values().first())
    listed = c.get(f"/api/w/{workspace.slug}/api-keys").json()
    assert all("key" not in k for k in listed)
    assert raw not in str(listed)
    # and the key works, with its scope
    assert client_with(raw).get(f"/api/w/{workspace.slug}/").status_code == 200


def test_an_api_key_cannot_mint_keys(workspace, write_key) -> None:
    r = client_with(write_key).post(f"/api/w/{workspace.slug}/api-keys", {"name": "x"}, format="json")
    assert r.status_code == 403


def test_revoked_key_stops_working(workspace, user) -> None:
    issued = make_api_key(workspace=workspace)
    c = APIClient()
    c.force_login(user)
    assert c.post(f"/api/w/{workspace.slug}/api-keys/{issued.api_key.pk}/revoke").status_code == 200
    assert client_with(issued.raw).get(f"/api/w/{workspace.slug}/").status_code == 401


def test_credential_secret_is_encrypted_and_never_returned(workspace, write_key) -> None:
    c = client_with(write_key)
    secret = "sk-ant-api03-abcdefghijklmnop"
    r = c.post(
        f"/api/w/{workspace.slug}/credentials", {"name": "claude", "kind": "anthropic", "secret": secret}, format="json"
    )
    assert r.status_code == 201, r.content
    assert secret not in r.content.decode()
    assert r.json()["secretHint"] == "…mnop"
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute("select secret from accounts_credential where id = %s", [r.json()["id"]])
        stored = cur.fetchone()[0]
    assert stored.startswith("v1:") and secret not in stored
    assert Credential.objects.get(pk=r.json()["id"]).secret == secret
    assert secret not in c.get(f"/api/w/{workspace.slug}/credentials").content.decode()


def test_credential_validation_lists_every_problem(workspace, write_key) -> None:
    r = client_with(write_key).post(
        f"/api/w/{workspace.slug}/credentials",
        {"name": "c", "kind": "custom", "secret": " ", "authKind": "sign_in"},
        format="json",
    )
    assert r.status_code == 400
    body = r.json()
    assert "secret" in body["detail"]


def test_custom_credential_needs_base_url(workspace, write_key) -> None:
    r = client_with(write_key).post(
        f"/api/w/{workspace.slug}/credentials",
        {"name": "c", "kind": "custom", "secret": "tok-1234567890"},
        format="json",
    )
    assert r.status_code == 400
    assert "baseUrl" in r.json()["detail"]


def test_only_admins_write_credentials(workspace) -> None:
    from apps.accounts import services

    member = make_user()
    services.membership_set(workspace=workspace, user=member, role="member", by=None)
    key = make_api_key(workspace=workspace, created_by=member).raw
    r = client_with(key).post(
        f"/api/w/{workspace.slug}/credentials",
        {"name": "a", "kind": "openai", "secret": "sk-abc123456789"},
        format="json",
    )
    assert r.status_code == 403
    assert "admins" in r.json()["detail"]


def test_duplicate_credential_name_is_409(workspace, write_key) -> None:
    c = client_with(write_key)
    body = {"name": "same", "kind": "openai", "secret": "sk-abc123456789"}
    assert c.post(f"/api/w/{workspace.slug}/credentials", body, format="json").status_code == 201
    assert c.post(f"/api/w/{workspace.slug}/credentials", body, format="json").status_code == 409
