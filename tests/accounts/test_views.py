"""Pages: login required, workspace isolation, API keys shown once."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from apps.accounts.models import ApiKey
from tests.factories import PASSWORD, make_user, make_workspace

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("name", ["accounts:dashboard", "accounts:api_keys", "accounts:members"])
def test_workspace_pages_require_login(workspace, name: str) -> None:
    r = Client().get(reverse(name, kwargs={"slug": workspace.slug}))
    assert r.status_code == 302
    assert r["Location"].startswith(reverse("accounts:login"))


def test_login_page_logs_in_and_lands_on_the_workspace(user, workspace) -> None:
    c = Client()
    assert c.get(reverse("accounts:login")).status_code == 200
    r = c.post(reverse("accounts:login"), {"username": user.username, "password": PASSWORD}, follow=True)
    assert r.status_code == 200
    assert r.redirect_chain[-1][0] == reverse("accounts:dashboard", kwargs={"slug": workspace.slug})


def test_wrong_password_shows_a_form_error(user) -> None:
    r = Client().post(reverse("accounts:login"), {"username": user.username, "password": "nope"})
    assert r.status_code == 200
    assert "correct username and password" in r.content.decode()


def test_logout_is_a_post(user) -> None:
    c = Client()
    c.force_login(user)
    r = c.post(reverse("accounts:logout"))
    assert r.status_code == 302
    assert c.get(reverse("accounts:home")).status_code == 302


def test_other_workspace_page_is_404(user) -> None:
    other = make_workspace()
    c = Client()
    c.force_login(user)
    assert c.get(reverse("accounts:dashboard", kwargs={"slug": other.slug})).status_code == 404


def test_api_key_page_shows_the_key_once(user, workspace) -> None:
    c = Client()
    c.force_login(user)
    url = reverse("accounts:api_keys", kwargs={"slug": workspace.slug})
    r = c.post(url, {"name": "laptop", "scope": "write"}, follow=True)
    assert r.status_code == 200
    key = ApiKey.objects.get(name="laptop")
    page = r.content.decode()
    start = page.index("sbk_")
    raw = page[start : page.index("<", start)].strip()
    assert key.key_hash != raw and len(raw) > 20
    assert raw not in c.get(url).content.decode()


def test_home_creates_a_workspace_and_reports_a_taken_slug(user, workspace) -> None:
    c = Client()
    c.force_login(make_user())
    r = c.post(reverse("accounts:home"), {"slug": workspace.slug, "name": "x"})
    assert r.status_code == 200
    assert "already exists" in r.content.decode()
    r = c.post(reverse("accounts:home"), {"slug": "fresh-one", "name": "Fresh"})
    assert r.status_code == 302


def test_create_workspace_command_prints_a_working_key(capsys) -> None:
    from django.core.management import call_command
    from rest_framework.test import APIClient

    call_command("create_workspace", "acme", "--owner", "alice", "--password", "pw-123456789")
    out = capsys.readouterr().out
    raw = out.split("api key (shown once): ")[1].strip()
    c = APIClient()
    c.credentials(HTTP_X_API_KEY=raw)
    assert c.get("/api/w/acme/").json()["slug"] == "acme"


def test_schema_and_docs_are_published(db) -> None:
    c = Client()
    r = c.get("/api/schema/")
    assert r.status_code == 200
    assert b"/api/w/{slug}/credentials" in r.content
    assert c.get("/api/docs/").status_code == 200


def test_credentials_page_saves_encrypted_and_reports_rule_errors_inline(user, workspace) -> None:
    from apps.accounts.models import Credential

    c = Client()
    c.force_login(user)
    url = reverse("accounts:credentials", kwargs={"slug": workspace.slug})
    r = c.post(url, {"name": "mine", "kind": "custom", "auth_kind": "api_key", "secret": "tok-1234567890"})
    assert r.status_code == 200
    assert "baseUrl" in r.content.decode()
    assert not Credential.objects.exists()
    r = c.post(url, {"name": "oai", "kind": "openai", "auth_kind": "api_key", "secret": "sk-proj-abcdef123456"})
    assert r.status_code == 302
    page = c.get(url).content.decode()
    assert "oai" in page and "sk-proj-abcdef123456" not in page and "…3456" in page


def test_members_cannot_add_credentials_from_the_page(workspace) -> None:
    from apps.accounts import services

    member = make_user()
    services.membership_set(workspace=workspace, user=member, role="member", by=None)
    c = Client()
    c.force_login(member)
    url = reverse("accounts:credentials", kwargs={"slug": workspace.slug})
    assert "Only workspace owners and admins" in c.get(url).content.decode()
    r = c.post(url, {"name": "oai", "kind": "openai", "auth_kind": "api_key", "secret": "sk-proj-abcdef123456"})
    assert "only workspace owners and admins" in r.content.decode()
