"""Releases page: the preview per repository, publish 201/200/409 shown as messages (a stale preview shows the fresh
one), errors inline, past releases with withdraw."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from apps.accounts.models import Workspace
from apps.repositories.models import Repository
from apps.results import releases
from apps.results.models import Release, ReleaseWithdrawal
from tests.results.factories import Lab, make_repository, make_task

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true"}
A, B = "a|terminus-2|medium", "b|terminus-2|medium"


@pytest.fixture
def client(user: User) -> Client:
    c = Client()
    c.force_login(user)
    return c


@pytest.fixture
def scored(lab: Lab, repo: Repository) -> list[Any]:
    """Three approved tasks: a scored on all three, b on two; one task nobody ran."""
    tasks = [make_task(repository=repo) for _ in range(4)]
    for i, task in enumerate(tasks[:3]):
        lab.trial(task, model="a", reward=1.0, cost="0.10")
        if i < 2:
            lab.trial(task, model="b", reward=1.0, cost="0.02")
    return tasks


def page_url(workspace: Workspace, repo: Repository) -> str:
    return f"{reverse('results:releases', args=[workspace.slug])}?repository={repo.pk}"


def publish_url(workspace: Workspace, repo: Repository) -> str:
    return reverse("results:release_publish", args=[workspace.slug, repo.pk])


def form_data(repo: Repository, settings: list[str], **extra: Any) -> dict[str, Any]:
    p = releases.preview(repo)
    return {"settings": settings, "head": p.head, "fingerprint": p.fingerprint, **extra}


def test_empty_releases_page_says_what_to_do_and_is_in_the_navigation(client: Client, workspace: Workspace) -> None:
    url = reverse("results:releases", args=[workspace.slug])
    r = client.get(url)
    assert r.status_code == 200
    assert [t.name for t in r.templates][:2] == ["results/releases.html", "base.html"]
    page = r.content.decode()
    assert "No releases yet" in page and f'href="{url}"' in page


def test_releases_page_shows_the_preview_with_coverage_and_fingerprint(
    client: Client, workspace: Workspace, repo: Repository, scored: list[Any]
) -> None:
    r = client.get(page_url(workspace, repo))
    assert r.status_code == 200
    page = r.content.decode()
    p = releases.preview(repo)
    assert p.fingerprint[:16] in page and "3 of 4 tasks" in page and "2 of 4 tasks" in page
    assert f'value="{A}"' in page and f'value="{B}"' in page
    assert "No releases of" in page
    # Off by default.
    for name in ("publish_tasks", "publish_results_by_task"):
        tag = re.search(rf'<input[^>]*name="{name}"[^>]*>', page)
        assert tag is not None and "checked" not in tag.group(0)
    frag = client.get(page_url(workspace, repo), **HX)
    assert frag.templates[0].name == "results/partials/release_section.html" and "<html" not in frag.content.decode()


def test_publish_201_then_200_unchanged_as_messages(
    client: Client, workspace: Workspace, repo: Repository, scored: list[Any]
) -> None:
    r = client.post(publish_url(workspace, repo), form_data(repo, [A, B]), follow=True)
    release = Release.objects.get()
    assert r.redirect_chain[-1][0] == page_url(workspace, repo)
    page = r.content.decode()
    assert f"Published release #{release.pk}" in page and "Current" in page
    assert (release.publish_tasks, release.publish_results_by_task) == (False, False)
    assert release.task_ids == [scored[0].pk, scored[1].pk]
    again = client.post(publish_url(workspace, repo), form_data(repo, [A, B]), follow=True)
    assert "Nothing changed" in again.content.decode() and Release.objects.count() == 1


def test_publish_with_a_stale_preview_shows_the_fresh_one(
    client: Client, workspace: Workspace, repo: Repository, lab: Lab, scored: list[Any]
) -> None:
    stale = form_data(repo, [A, B])
    lab.trial(scored[2], model="b", reward=1.0, cost="0.02")
    r = client.post(publish_url(workspace, repo), stale, **HX)
    assert r.status_code == 200 and r.templates[0].name == "results/partials/release_preview.html"
    page = r.content.decode()
    fresh = releases.preview(repo)
    assert "fresh preview" in page and fresh.fingerprint in page and stale["fingerprint"] not in page
    assert "3 of 4 tasks" in page and not Release.objects.exists()
    ok = client.post(publish_url(workspace, repo), form_data(repo, [A, B]), **HX)
    assert ok.status_code == 200 and ok["HX-Redirect"] == page_url(workspace, repo)
    assert Release.objects.get().task_ids == [t.pk for t in scored[:3]]


def test_publish_rule_errors_are_inline(
    client: Client, workspace: Workspace, repo: Repository, scored: list[Any]
) -> None:
    r = client.post(publish_url(workspace, repo), form_data(repo, []), **HX)
    assert r.status_code == 200 and "choose at least one configuration" in r.content.decode()
    private = make_repository(workspace=workspace, private=True)
    make_task(repository=private)
    r = client.post(publish_url(workspace, private), form_data(private, []))
    assert r.status_code == 200 and r.templates[0].name == "results/releases.html"
    assert "only a public GitHub repository can be released" in r.content.decode()
    assert not Release.objects.exists()


def test_withdraw_a_release(client: Client, workspace: Workspace, repo: Repository, scored: list[Any]) -> None:
    client.post(publish_url(workspace, repo), form_data(repo, [A]))
    release = Release.objects.get()
    url = reverse("results:release_withdraw", args=[workspace.slug, release.pk])
    r = client.post(url, {"reason": "wrong tasks"}, follow=True)
    assert f"Withdrew release #{release.pk}" in r.content.decode() and "Withdrawn" in r.content.decode()
    assert ReleaseWithdrawal.objects.get(release=release).reason == "wrong tasks"
    twice = client.post(url, {}, follow=True)
    assert "already withdrawn" in twice.content.decode()


def test_another_workspaces_release_and_repository_are_not_found(client: Client, workspace: Workspace) -> None:
    from tests.factories import make_workspace

    other = make_workspace()
    theirs = make_repository(workspace=other)
    assert client.post(publish_url(workspace, theirs), {}).status_code == 404
    release = Release.objects.create(workspace=other, repository=theirs, fingerprint="x", content_hash="y", document={})
    assert client.post(reverse("results:release_withdraw", args=[workspace.slug, release.pk])).status_code == 404


def test_releases_page_runs_a_fixed_number_of_queries(
    client: Client, workspace: Workspace, user: User, repo: Repository, lab: Lab, django_assert_num_queries: Any
) -> None:
    """30 approved tasks scored by two configurations and 10 past releases, every other one withdrawn."""
    tasks = [make_task(repository=repo) for _ in range(30)]
    for task in tasks:
        lab.trial(task, model="a", reward=1.0, cost="0.10")
        lab.trial(task, model="b", reward=0.0, cost="0.02")
    for i in range(10):
        release = Release.objects.create(
            workspace=workspace,
            repository=repo,
            full_name=repo.full_name,
            settings=[A, B],
            task_ids=[t.pk for t in tasks],
            fingerprint=f"{i:064x}",
            content_hash=f"{i:064x}",
            document={"resultsByTask": [{"taskId": t.pk} for t in tasks]},
            published_by=user,
        )
        if i % 2:
            ReleaseWithdrawal.objects.create(release=release, withdrawn_by=user, reason=f"reason {i}")
    url = page_url(workspace, repo)
    client.get(url)  # warm the session
    # Session, user, membership, repositories; the preview (counted tasks, results with their cache check, latest
    # results per task with theirs, the current release, the head); the past releases with who published them and
    # their withdrawals. None per release, task or configuration.
    with django_assert_num_queries(12) as captured:
        r = client.get(url)
    page = r.content.decode()
    assert r.status_code == 200 and "30 of 30 tasks" in page
    assert page.count('<span class="badge">Withdrawn</span>') == 5 and page.count(f"by {user.username}") == 10
    # The past releases come with who published them and their withdrawals, and without their public documents.
    past = [q["sql"] for q in captured.captured_queries if '"auth_user"' in q["sql"] and "results_release" in q["sql"]]
    assert len(past) == 1 and '"results_releasewithdrawal"' in past[0] and '"results_release"."document"' not in past[0]
    with django_assert_num_queries(12):
        assert client.get(url, **HX).status_code == 200
