"""Authoring pages: start a batch with its author and reviewer (atomically, errors inline), evals and vibe evals."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from apps.accounts.models import Credential, Workspace
from apps.authoring import services
from apps.authoring.models import (
    MAX_ATTACHMENT_BYTES,
    MAX_ATTACHMENTS,
    Attachment,
    AuthoringSettings,
    Eval,
    VibeEval,
)
from apps.repositories import jobs as repository_jobs
from apps.repositories.models import Batch, Repository
from apps.tasks.models import TaskState
from tests.authoring.conftest import Repo

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


# --- evals and vibe evals ---------------------------------------------------------------------------------------------


VIBE = {
    "description": "The agent wrote the total to stdout instead of report.json.",
    "author_agent": "terminus-2",
    "author_model": "gpt-5-mini",
    "reasoning": "low",
    "reviewer_model": "gpt-5",
}


def test_empty_eval_list_says_what_to_do_and_is_in_the_navigation(client: Client, workspace: Workspace) -> None:
    url = reverse("authoring:evals", args=[workspace.slug])
    r = client.get(url)
    assert r.status_code == 200
    assert [t.name for t in r.templates][:2] == ["authoring/eval_list.html", "base.html"]
    page = r.content.decode()
    assert "No evals yet" in page and "Create an eval" in page
    assert f'href="{url}"' in page  # the side navigation's Evals item


def test_create_an_eval_then_its_errors_inline(client: Client, workspace: Workspace) -> None:
    url = reverse("authoring:evals", args=[workspace.slug])
    r = client.post(url, {"name": "cli habits", "description": "What agents get wrong on the CLI"})
    found = Eval.objects.get()
    assert r.status_code == 302 and r["Location"] == reverse("authoring:eval", args=[workspace.slug, found.pk])
    again = client.post(url, {"name": "cli habits"}, **HX)
    assert again.status_code == 200 and again.templates[0].name == "authoring/partials/eval_form.html"
    assert "<html" not in again.content.decode() and "exists" in again.content.decode()
    assert Eval.objects.count() == 1
    listed = client.get(url).content.decode()
    assert "cli habits" in listed and "no vibe evals yet" in listed


def test_eval_page_adds_a_vibe_eval_and_lists_it_with_its_state(
    client: Client, workspace: Workspace, enqueued: list[int], django_capture_on_commit_callbacks: Any
) -> None:
    found = Eval.objects.create(workspace=workspace, name="cli habits")
    url = reverse("authoring:eval", args=[workspace.slug, found.pk])
    page = client.get(url)
    assert page.status_code == 200 and page.templates[0].name == "authoring/eval_detail.html"
    assert "No vibe evals yet" in page.content.decode()
    with django_capture_on_commit_callbacks(execute=False):
        r = client.post(url, VIBE)
    assert r.status_code == 302 and r["Location"] == url
    vibe = VibeEval.objects.get()
    assert vibe.eval == found and vibe.task.state == TaskState.AUTHORING
    assert (vibe.settings.author_model, vibe.settings.reviewer_model) == ("gpt-5-mini", "gpt-5")
    listed = client.get(url).content.decode()
    assert "stdout instead of report.json" in listed and "Authoring" in listed
    evals = client.get(reverse("authoring:evals", args=[workspace.slug])).content.decode()
    assert "Authoring <strong>1</strong>" in evals


def test_a_vibe_eval_rule_error_is_inline_and_keeps_nothing(client: Client, workspace: Workspace) -> None:
    found = Eval.objects.create(workspace=workspace, name="cli habits")
    url = reverse("authoring:eval", args=[workspace.slug, found.pk])
    r = client.post(url, {**VIBE, "reviewer_model": "gpt-5-mini"}, **HX)
    assert r.status_code == 200 and r.templates[0].name == "authoring/partials/vibe_eval_form.html"
    assert "must differ" in r.content.decode()
    assert not VibeEval.objects.exists() and not AuthoringSettings.objects.exists()
    missing = client.post(url, {**VIBE, "description": ""}, **HX)
    assert missing.status_code == 200 and "This field is required" in missing.content.decode()


def test_eval_page_takes_real_attached_files_and_lists_them(
    client: Client, workspace: Workspace, django_capture_on_commit_callbacks: Any
) -> None:
    found = Eval.objects.create(workspace=workspace, name="cli habits")
    url = reverse("authoring:eval", args=[workspace.slug, found.pk])
    form = client.get(url).content.decode()
    assert 'enctype="multipart/form-data"' in form and 'type="file" name="attachments" multiple' in form
    files = [
        SimpleUploadedFile("session.log", b"$ calc total\n3\n", content_type="text/plain"),
        SimpleUploadedFile("report.json", b'{"total": 3}', content_type="application/json"),
    ]
    with django_capture_on_commit_callbacks(execute=False):
        r = client.post(url, {**VIBE, "attachments": files})
    assert r.status_code == 302 and r["Location"] == url
    vibe = VibeEval.objects.get()
    stored = {a.name: bytes(a.content) for a in vibe.attachments.all()}
    assert stored == {"session.log": b"$ calc total\n3\n", "report.json": b'{"total": 3}'}
    assert sorted(Attachment.objects.values_list("size", flat=True)) == [12, 15]
    listed = client.get(url).content.decode()
    assert "session.log" in listed and "report.json" in listed and "12\xa0bytes" in listed


def test_repository_vibe_eval_form_takes_an_attachment_over_htmx(
    client: Client, workspace: Workspace, repo: Repo, django_capture_on_commit_callbacks: Any
) -> None:
    repository = Repository.objects.create(workspace=workspace, kind="local", location=str(repo.path))
    url = reverse("authoring:repository_vibe_evals", args=[workspace.slug, repository.pk])
    assert 'enctype="multipart/form-data"' in client.get(url).content.decode()
    trace = SimpleUploadedFile("trace.txt", b"agent forgot multiply")
    with django_capture_on_commit_callbacks(execute=False):
        r = client.post(url, {**VIBE, "ref": "HEAD", "attachments": trace}, **HX)
    assert r.status_code == 200 and r["HX-Redirect"] == url
    vibe = VibeEval.objects.get()
    assert vibe.repository == repository and [(a.name, bytes(a.content)) for a in vibe.attachments.all()] == [
        ("trace.txt", b"agent forgot multiply")
    ]
    assert "trace.txt" in client.get(url).content.decode()


@pytest.mark.parametrize(
    ("files", "message"),
    [
        (lambda: [SimpleUploadedFile("huge.log", b"x" * (MAX_ATTACHMENT_BYTES + 1))], "1.5 MiB in all"),
        (
            lambda: [SimpleUploadedFile(f"half{i}.log", b"x" * (MAX_ATTACHMENT_BYTES // 2 + 1)) for i in range(2)],
            "1.5 MiB in all",
        ),
        (
            lambda: [SimpleUploadedFile(f"f{i}.txt", b"x") for i in range(MAX_ATTACHMENTS + 1)],
            f"at most {MAX_ATTACHMENTS} attachments",
        ),
        (lambda: [SimpleUploadedFile("a.txt", b"1"), SimpleUploadedFile("a.txt", b"2")], "two attachments are named"),
        (lambda: [SimpleUploadedFile(".env", b"SECRET=1")], "must be a plain file name"),
    ],
)
def test_attachments_over_the_limits_are_a_form_error_and_keep_nothing(
    client: Client,
    workspace: Workspace,
    django_capture_on_commit_callbacks: Any,
    files: Any,
    message: str,
) -> None:
    found = Eval.objects.create(workspace=workspace, name="cli habits")
    url = reverse("authoring:eval", args=[workspace.slug, found.pk])
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        r = client.post(url, {**VIBE, "attachments": files()}, **HX)
    assert r.status_code == 200 and r.templates[0].name == "authoring/partials/vibe_eval_form.html"
    page = r.content.decode()
    assert "<html" not in page and message in page
    assert not VibeEval.objects.exists() and not AuthoringSettings.objects.exists()
    assert not Attachment.objects.exists() and callbacks == []
    # Without htmx: the whole page again, at 200, with the error.
    whole = client.post(url, {**VIBE, "attachments": files()})
    assert whole.status_code == 200 and message in whole.content.decode() and not VibeEval.objects.exists()


def test_the_api_enforces_the_same_attachment_limits(api: Any, workspace: Workspace, settings: Any) -> None:
    found = Eval.objects.create(workspace=workspace, name="cli habits")
    url = f"/api/w/{workspace.slug}/evals/{found.pk}/vibe-evals"

    def body(*files: tuple[str, bytes]) -> dict[str, Any]:
        return {
            "description": "The agent wrote the total to stdout instead of report.json.",
            "settings": {"authorAgent": "terminus-2", "authorModel": "gpt-5-mini", "reviewerModel": "gpt-5"},
            "attachments": [{"name": n, "contentBase64": base64.b64encode(data).decode()} for n, data in files],
        }

    # The limit fits in the API's JSON body, base64 encoded with room to spare, so the service's rule answers.
    assert len(base64.b64encode(b"x" * (MAX_ATTACHMENT_BYTES + 1))) < settings.DATA_UPLOAD_MAX_MEMORY_SIZE - 10_000
    for files, message in [
        ([("huge.log", b"x" * (MAX_ATTACHMENT_BYTES + 1))], "1.5 MiB in all"),
        ([(f"f{i}.txt", b"x") for i in range(MAX_ATTACHMENTS + 1)], f"at most {MAX_ATTACHMENTS} attachments"),
        ([("a.txt", b"1"), ("a.txt", b"2")], "two attachments are named"),
        # Over Django's body limit: still a 400 that says why, not a 500.
        ([("huge.log", b"x" * settings.DATA_UPLOAD_MAX_MEMORY_SIZE)], "request body is over"),
    ]:
        r = api.post(url, body(*files), format="json")
        assert r.status_code == 400 and message in r.json()["detail"], r.content[:300]
    assert not VibeEval.objects.exists() and not AuthoringSettings.objects.exists()
    ok = api.post(url, body(("session.log", b"x" * MAX_ATTACHMENT_BYTES)), format="json")
    assert ok.status_code == 201 and ok.json()["attachments"] == [{"name": "session.log", "size": MAX_ATTACHMENT_BYTES}]


def test_another_workspaces_eval_is_not_found(client: Client, workspace: Workspace) -> None:
    from tests.factories import make_workspace

    theirs = Eval.objects.create(workspace=make_workspace(), name="theirs")
    assert client.get(reverse("authoring:eval", args=[workspace.slug, theirs.pk])).status_code == 404


def test_repository_vibe_evals_page_pins_a_vibe_eval_to_the_ref(
    client: Client, workspace: Workspace, repo: Repo, django_capture_on_commit_callbacks: Any
) -> None:
    repository = Repository.objects.create(workspace=workspace, kind="local", location=str(repo.path))
    url = reverse("authoring:repository_vibe_evals", args=[workspace.slug, repository.pk])
    detail = client.get(reverse("repositories:detail", args=[workspace.slug, repository.pk])).content.decode()
    assert url in detail
    page = client.get(url)
    assert page.status_code == 200 and "No vibe evals for this repository yet" in page.content.decode()
    with django_capture_on_commit_callbacks(execute=False):
        r = client.post(url, {**VIBE, "ref": "HEAD"})
    assert r.status_code == 302
    vibe = VibeEval.objects.get()
    assert vibe.repository == repository and vibe.resolved_sha == repo.head
    bad = client.post(url, {**VIBE, "ref": "no-such-branch"}, **HX)
    assert bad.status_code == 200 and "is not a commit, branch or HEAD" in bad.content.decode()
    assert VibeEval.objects.count() == 1


def test_the_vibe_eval_api_keeps_nothing_on_a_rule_error(
    api: Any, workspace: Workspace, repository: Repository
) -> None:
    """The API calls the same one-transaction service as the page: a ref that does not resolve (found only after the
    settings were saved) leaves no settings behind."""
    body = {
        "description": "The agent renamed a public function without a deprecation shim.",
        "ref": "no-such-branch",
        "settings": {"authorAgent": "terminus-2", "authorModel": "gpt-5-mini", "reviewerModel": "gpt-5"},
    }
    r = api.post(f"/api/w/{workspace.slug}/repositories/{repository.pk}/vibe-evals", body, format="json")
    assert r.status_code == 400, r.content
    assert "no-such-branch" in r.json()["detail"]
    assert not AuthoringSettings.objects.exists() and not VibeEval.objects.exists()


# --- query counts -----------------------------------------------------------------------------------------------------


def _vibe_evals(workspace: Workspace, n: int, **where: Any) -> None:
    """`n` vibe evals through the page's service, each with an attachment (their first rounds are never enqueued)."""
    for i in range(n):
        services.vibe_eval_author(
            workspace=workspace,
            description=f"Mistake {i}: the agent wrote the total to stdout.",
            attachments={f"log{i}.txt": b"x" * (i + 1)},
            author_agent="terminus-2",
            author_model="gpt-5-mini",
            author_credential_id=None,
            reviewer_model="gpt-5",
            reviewer_credential_id=None,
            **where,
        )


def test_evals_list_runs_a_fixed_number_of_queries(
    client: Client, workspace: Workspace, django_assert_num_queries: Any
) -> None:
    for i in range(10):
        _vibe_evals(workspace, 3, eval=Eval.objects.create(workspace=workspace, name=f"eval {i}"))
    url = reverse("authoring:evals", args=[workspace.slug])
    client.get(url)  # warm the session
    # Session, user, membership; the evals with their task counts; their task states grouped. None per eval.
    with django_assert_num_queries(5):
        r = client.get(url)
    assert r.status_code == 200 and r.content.decode().count("Authoring <strong>3</strong>") == 10


def test_eval_page_runs_a_fixed_number_of_queries(
    client: Client, workspace: Workspace, django_assert_num_queries: Any
) -> None:
    found = Eval.objects.create(workspace=workspace, name="cli habits")
    _vibe_evals(workspace, 30, eval=found)
    url = reverse("authoring:eval", args=[workspace.slug, found.pk])
    client.get(url)
    # Session, user, membership, the eval, the form's credentials; the vibe evals with their tasks and settings; their
    # attachments (names and sizes). None per vibe eval.
    with django_assert_num_queries(7) as captured:
        r = client.get(url)
    page = r.content.decode()
    assert r.status_code == 200 and page.count("<tr>") == 1 + 30 and "log0.txt" in page and "log29.txt" in page
    attachments = [q["sql"] for q in captured.captured_queries if "authoring_attachment" in q["sql"]]
    assert len(attachments) == 1 and '"content"' not in attachments[0]  # the files themselves stay in the database


def test_repository_vibe_evals_page_runs_a_fixed_number_of_queries(
    client: Client, workspace: Workspace, repo: Repo, django_assert_num_queries: Any
) -> None:
    repository = Repository.objects.create(workspace=workspace, kind="local", location=str(repo.path))
    _vibe_evals(workspace, 30, repository=repository, ref=repo.head)
    url = reverse("authoring:repository_vibe_evals", args=[workspace.slug, repository.pk])
    client.get(url)
    with django_assert_num_queries(7):
        r = client.get(url)
    assert r.status_code == 200 and r.content.decode().count(f"<code>{repo.head[:10]}</code>") == 30
