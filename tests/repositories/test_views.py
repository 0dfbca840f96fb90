"""Repository and batch pages: connect, start a batch, Add PRs, the live progress fragment, errors inline."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from apps.accounts.models import Credential, Workspace
from apps.repositories import services
from apps.repositories.models import Batch, BatchKind, BatchStatus, Candidate, PullRequest, Repository
from apps.tasks import services as task_services
from apps.tasks.models import Task, TaskState
from tests.doubles.git_repos import GitRepoBuilder
from tests.doubles.github_api import FakeRepo
from tests.factories import make_workspace

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def client(user: User) -> Client:
    c = Client()
    c.force_login(user)
    return c


def _history(repo: GitRepoBuilder) -> None:
    repo.merge_pr(1, "Add parser", repo.sized_files(1, impl_paths=3, lines_per_path=40))
    repo.squash_pr(2, "Add handler", repo.sized_files(2, impl_paths=2, lines_per_path=30))
    repo.squash_pr(4, "Add widget", repo.sized_files(4, impl_paths=1, lines_per_path=25))
    repo.merge_pr(6, "Tiny tweak", repo.sized_files(6, impl_paths=1, lines_per_path=3))


def _local(workspace: Workspace, repo: GitRepoBuilder) -> Repository:
    return services.repository_create(workspace=workspace, kind="local", location=str(repo.path))


def test_repository_pages_require_login_and_membership(workspace: Workspace, user: User) -> None:
    url = reverse("repositories:list", args=[workspace.slug])
    r = Client().get(url)
    assert r.status_code == 302 and r["Location"].startswith(reverse("accounts:login"))
    c = Client()
    c.force_login(user)
    other = make_workspace()
    assert c.get(reverse("repositories:list", args=[other.slug])).status_code == 404


def test_empty_repository_list_says_what_to_do(client: Client, workspace: Workspace) -> None:
    r = client.get(reverse("repositories:list", args=[workspace.slug]))
    assert r.status_code == 200
    assert [t.name for t in r.templates][:2] == ["repositories/repository_list.html", "base.html"]
    page = r.content.decode()
    assert "No repositories yet" in page and "Connect a repository" in page
    assert "No GitHub credential yet" in page  # and a link to add one
    # The side navigation now lists Repositories and Batches.
    assert f'href="{reverse("repositories:batches", args=[workspace.slug])}"' in page


def test_connect_a_local_repository_redirects_to_its_page(
    client: Client, workspace: Workspace, git_repo: GitRepoBuilder
) -> None:
    url = reverse("repositories:list", args=[workspace.slug])
    r = client.post(url, {"kind": "local", "location": str(git_repo.path), "agent_minutes": 30})
    repository = Repository.objects.get(workspace=workspace)
    assert r.status_code == 302 and r["Location"] == reverse(
        "repositories:detail", args=[workspace.slug, repository.pk]
    )
    page = client.get(r["Location"]).content.decode()
    assert "Start a batch" in page and "No batches yet" in page


def test_connect_errors_come_back_inline_at_200(client: Client, workspace: Workspace) -> None:
    url = reverse("repositories:list", args=[workspace.slug])
    r = client.post(url, {"kind": "local", "location": "relative/path", "agent_minutes": 30})
    assert r.status_code == 200
    assert "path must be absolute" in r.content.decode() and b"<html" in r.content
    r = client.post(url, {"kind": "local", "location": "/nowhere/at/all", "agent_minutes": 30}, **HX)
    assert r.status_code == 200
    assert r.templates[0].name == "repositories/partials/connect_form.html"
    assert b"<html" not in r.content and b'id="connect-form"' in r.content
    assert not Repository.objects.exists()


def test_connect_over_htmx_redirects_the_whole_page(
    client: Client, workspace: Workspace, git_repo: GitRepoBuilder
) -> None:
    r = client.post(
        reverse("repositories:list", args=[workspace.slug]),
        {"kind": "local", "location": f"file://{git_repo.path}", "agent_minutes": 30},
        **HX,
    )
    repository = Repository.objects.get()
    assert r.status_code == 200 and r["HX-Redirect"] == reverse(
        "repositories:detail", args=[workspace.slug, repository.pk]
    )


def test_connect_github_with_a_credential_from_the_select(
    client: Client, workspace: Workspace, github_credential: Credential, fake_repo: FakeRepo
) -> None:
    url = reverse("repositories:list", args=[workspace.slug])
    page = client.get(url).content.decode()
    assert f'<option value="{github_credential.pk}">gh</option>' in page
    r = client.post(
        url, {"kind": "github", "full_name": "acme/widgets", "credential_id": github_credential.pk, "agent_minutes": 30}
    )
    assert r.status_code == 302
    assert Repository.objects.get().full_name == "acme/widgets"
    r = client.post(url, {"kind": "github", "full_name": "acme/nope", "credential_id": "", "agent_minutes": 30})
    assert r.status_code == 200 and "needs credentialId" in r.content.decode()


def test_start_batch_redirects_to_the_batch_and_bad_counts_show_inline(
    client: Client, workspace: Workspace, git_repo: GitRepoBuilder, run_jobs_inline: list[int]
) -> None:
    repository = _local(workspace, git_repo)
    url = reverse("repositories:batch_start", args=[workspace.slug, repository.pk])
    r = client.post(url, {"easy": 0, "medium": 0, "hard": 0}, **HX)
    assert r.status_code == 200 and b"<html" not in r.content
    assert "must add up to 1–300" in r.content.decode()
    r = client.post(url, {"easy": 0, "medium": 0, "hard": 0})
    assert r.status_code == 200 and b"<html" in r.content and "must add up to 1–300" in r.content.decode()
    r = client.post(url, {"easy": 2, "medium": 1, "hard": 0})
    batch = Batch.objects.get()
    assert r.status_code == 302 and r["Location"] == reverse("repositories:batch", args=[workspace.slug, batch.pk])
    assert batch.requested == {"easy": 2, "medium": 1, "hard": 0} and batch.status == BatchStatus.QUEUED


def test_add_prs_parses_numbers_and_reports_junk(
    client: Client, workspace: Workspace, git_repo: GitRepoBuilder
) -> None:
    repository = _local(workspace, git_repo)
    url = reverse("repositories:prs_add", args=[workspace.slug, repository.pk])
    r = client.post(url, {"prs": "12, x"}, **HX)
    assert r.status_code == 200 and "whole numbers" in r.content.decode() and b"<html" not in r.content
    r = client.post(url, {"prs": "#4, 2 4"})
    batch = Batch.objects.get()
    assert r.status_code == 302 and batch.kind == BatchKind.ADD_PRS and batch.requested_prs == [4, 2]


def test_batch_page_lists_candidates_per_stage_with_tier_and_reason(
    client: Client,
    workspace: Workspace,
    git_repo: GitRepoBuilder,
    run_jobs_inline: list[int],
    django_capture_on_commit_callbacks: Any,
) -> None:
    _history(git_repo)
    repository = _local(workspace, git_repo)
    with django_capture_on_commit_callbacks(execute=True):
        batch = services.batch_create(repository=repository, easy=1, medium=1, hard=1)
    r = client.get(reverse("repositories:batch", args=[workspace.slug, batch.pk]))
    assert r.status_code == 200
    page = r.content.decode()
    assert "Candidates proposed" in page and "Proposed <span" in page and "Skipped <span" in page
    assert "#1" in page and "Add parser" in page and "hard" in page and "below easy" in page
    # Discovery has ended, but the proposed candidates wait for authoring: the page keeps polling.
    assert 'hx-trigger="every 2s"' in page and "Cancel batch" not in page


def test_progress_fragment_polls_while_active_and_stops_when_the_batch_ends(
    client: Client, workspace: Workspace, git_repo: GitRepoBuilder
) -> None:
    repository = _local(workspace, git_repo)
    batch = services.batch_create(repository=repository, easy=1)
    url = reverse("repositories:batch_progress", args=[workspace.slug, batch.pk])
    r = client.get(url, **HX)
    assert r.status_code == 200 and b"<html" not in r.content
    assert 'hx-trigger="every 2s"' in r.content.decode()
    # The poller is a link to the whole page: it works (as a reload) without JavaScript.
    assert f'href="{reverse("repositories:batch", args=[workspace.slug, batch.pk])}"' in r.content.decode()
    services.batch_cancel(batch=batch)
    r = client.get(url, **HX)
    assert r.status_code == 286  # htmx swaps in the final state and stops polling
    assert "Cancelled" in r.content.decode() and 'hx-trigger="every 2s"' not in r.content.decode()
    assert client.get(url).status_code == 200


def _settled_discovery_with_tasks(workspace: Workspace, repository: Repository, n: int) -> tuple[Batch, list[Task]]:
    """A batch whose discovery has ended with `n` candidates, each with its task (as authoring starts them)."""
    batch = services.batch_create(repository=repository, easy=n)
    Batch.objects.filter(pk=batch.pk).update(status=BatchStatus.PROPOSED, finished_at=timezone.now())
    tasks = []
    for number in range(1, n + 1):
        pr = PullRequest.objects.create(
            repository=repository, number=number, title=f"PR {number}", merged_at=timezone.now(), base_sha="a" * 40
        )
        candidate = Candidate.objects.create(batch=batch, pull_request=pr, tier="easy")
        tasks.append(
            Task.objects.create(
                workspace=workspace,
                candidate=candidate,
                repository=repository,
                batch=batch,
                source_path="/nonexistent",
                base_sha="a" * 40,
                head_sha="b" * 40,
                title=pr.title,
            )
        )
    return batch, tasks


def test_progress_keeps_polling_through_authoring_and_review_and_stops_when_all_have_settled(
    client: Client, workspace: Workspace, git_repo: GitRepoBuilder
) -> None:
    batch, (first, second) = _settled_discovery_with_tasks(workspace, _local(workspace, git_repo), 2)
    url = reverse("repositories:batch_progress", args=[workspace.slug, batch.pk])
    page_url = reverse("repositories:batch", args=[workspace.slug, batch.pk])

    def poll() -> tuple[int, str]:
        r = client.get(url, **HX)
        return r.status_code, r.content.decode()

    task_services.task_set_state(task=first, state=TaskState.AUTHORING)
    task_services.task_set_state(task=second, state=TaskState.AUTHORING)
    status, html = poll()
    assert status == 200 and 'hx-trigger="every 2s"' in html and "<html" not in html
    # Every hx-get is also a link: without JavaScript the poller is a reload of the whole page.
    pollers = re.findall(r"<[^>]*\bhx-get=[^>]*>", html)
    assert len(pollers) == 1 and pollers[0].startswith("<a ") and f'href="{page_url}"' in pollers[0]
    assert "Candidates proposed" in html and "2 candidates still in authoring, gates or review" in html
    assert re.search(r'data-testid="stage-authoring"><td>Authoring</td><td>2</td>', html)
    assert re.search(r'data-testid="stage-in_review"><td>In review</td><td>0</td>', html)

    task_services.task_set_state(task=first, state=TaskState.IN_REVIEW, reason="submitted")
    task_services.task_set_state(task=second, state=TaskState.VERIFYING)
    status, html = poll()
    assert status == 200 and 'hx-trigger="every 2s"' in html
    assert re.search(r'data-testid="stage-in_review"><td>In review</td><td>1</td>', html)
    assert re.search(r'data-testid="stage-verifying"><td>Verifying</td><td>1</td>', html)

    task_services.task_set_state(task=first, state=TaskState.AWAITING_APPROVAL, reason="accepted by the reviewer")
    status, html = poll()
    assert status == 200 and 'hx-trigger="every 2s"' in html and "1 candidate still in" in html

    task_services.task_set_state(task=second, state=TaskState.FAILED, reason="oracle gate: tests fail")
    status, html = poll()
    assert status == 286  # everything has settled: htmx swaps in the last state and stops polling
    assert 'hx-trigger="every 2s"' not in html and "still in authoring" not in html
    assert re.search(r'data-testid="stage-awaiting_approval"><td>Awaiting approval</td><td>1</td>', html)
    assert re.search(r'data-testid="stage-failed"><td>Failed</td><td>1</td>', html)
    # The whole page agrees, and works without htmx.
    page = client.get(page_url)
    assert page.status_code == 200 and 'hx-trigger="every 2s"' not in page.content.decode()
    assert client.get(url).status_code == 200


def test_cancel_from_the_batch_page(client: Client, workspace: Workspace, git_repo: GitRepoBuilder) -> None:
    batch = services.batch_create(repository=_local(workspace, git_repo), easy=1)
    r = client.post(reverse("repositories:batch_cancel", args=[workspace.slug, batch.pk]))
    assert r.status_code == 302
    batch.refresh_from_db()
    assert batch.status == BatchStatus.CANCELLED


def test_batch_of_another_workspace_is_404(client: Client, git_repo: GitRepoBuilder) -> None:
    other = make_workspace()
    batch = services.batch_create(repository=_local(other, git_repo), easy=1)
    for name in ("repositories:batch", "repositories:batch_progress"):
        assert client.get(reverse(name, args=[other.slug, batch.pk])).status_code == 404


def test_batch_list_filters_by_status_on_the_same_url(
    client: Client, workspace: Workspace, git_repo: GitRepoBuilder
) -> None:
    repository = _local(workspace, git_repo)
    services.batch_create(repository=repository, easy=1)
    services.batch_cancel(batch=services.batch_create(repository=repository, hard=2))
    url = reverse("repositories:batches", args=[workspace.slug])
    r = client.get(url)
    assert r.status_code == 200 and r.templates[0].name == "repositories/batch_list.html"
    assert r.content.decode().count("status-queued") == 1 and "Vary" in r and "HX-Request" in r["Vary"]
    r = client.get(url, {"status": "cancelled"}, **HX)
    assert r.templates[0].name == "repositories/partials/batch_section.html" and b"<html" not in r.content
    assert b"status-cancelled" in r.content and b"status-queued" not in r.content
    r = client.get(url, {"status": "failed"}, **HX)
    assert "No batches here" in r.content.decode()


# Session, user, membership, the rows, and the connect form's credentials or the candidate counts: none per row.
@pytest.mark.parametrize(("name", "queries"), [("repositories:list", 5), ("repositories:batches", 5)])
def test_list_pages_run_a_fixed_number_of_queries(
    name: str,
    queries: int,
    client: Client,
    workspace: Workspace,
    tmp_path: Any,
    django_assert_num_queries: Any,
) -> None:
    url = reverse(name, args=[workspace.slug])
    for i in range(3):
        repository = _local(workspace, GitRepoBuilder(tmp_path / f"repo{i}"))
        services.batch_create(repository=repository, easy=1)
    client.get(url)  # warm the session
    with django_assert_num_queries(queries):
        assert client.get(url).status_code == 200
