"""The repositories API: create (GitHub checked at once, local), list/get/patch/delete, batches, candidates, add PRs."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from apps.accounts.models import Credential, Workspace
from apps.repositories.models import Batch, Repository
from tests.doubles.git_repos import GitRepoBuilder
from tests.doubles.github_api import FakeRepo, GitHubDouble, sized_pull


def _url(workspace: Workspace, rest: str) -> str:
    return f"/api/w/{workspace.slug}/{rest}"


@pytest.mark.django_db
def test_create_github_repository_checks_token_and_repo(
    api: APIClient, workspace: Workspace, github_credential: Credential, fake_repo: FakeRepo
) -> None:
    r = api.post(
        _url(workspace, "repositories"),
        {"kind": "github", "fullName": "acme/widgets", "credentialId": github_credential.pk},
        format="json",
    )
    assert r.status_code == 201, r.json()
    body = r.json()
    assert body["fullName"] == "acme/widgets" and body["defaultBranch"] == "main" and body["agentMinutes"] == 30
    assert body["private"] is True and "secret" not in str(body)


@pytest.mark.django_db
def test_bad_token_is_a_clear_400_and_nothing_is_saved(
    api: APIClient, workspace: Workspace, github: GitHubDouble, fake_repo: FakeRepo
) -> None:
    bad = Credential.objects.create(workspace=workspace, name="old", kind="github", secret="ghp_" + "x" * 36)
    r = api.post(_url(workspace, "repositories"), {"fullName": "acme/widgets", "credentialId": bad.pk}, format="json")
    assert r.status_code == 400
    assert "rejected the token" in r.json()["detail"]
    assert not Repository.objects.exists()


@pytest.mark.django_db
def test_missing_repository_is_a_clear_400_and_nothing_is_saved(
    api: APIClient, workspace: Workspace, github_credential: Credential
) -> None:
    r = api.post(
        _url(workspace, "repositories"), {"fullName": "acme/nope", "credentialId": github_credential.pk}, format="json"
    )
    assert r.status_code == 400
    assert "acme/nope not found" in r.json()["detail"]
    assert not Repository.objects.exists()


@pytest.mark.django_db
def test_non_github_credential_is_refused(api: APIClient, workspace: Workspace, github: GitHubDouble) -> None:
    other = Credential.objects.create(workspace=workspace, name="oa", kind="openai", secret="sk-" + "a1" * 20)
    r = api.post(_url(workspace, "repositories"), {"fullName": "acme/widgets", "credentialId": other.pk}, format="json")
    assert r.status_code == 400 and "not github" in r.json()["detail"]


@pytest.mark.django_db
def test_local_repository_crud(api: APIClient, workspace: Workspace, git_repo: GitRepoBuilder) -> None:
    r = api.post(_url(workspace, "repositories"), {"kind": "local", "path": f"file://{git_repo.path}"}, format="json")
    assert r.status_code == 201, r.json()
    repo_id = r.json()["id"]
    assert r.json()["defaultBranch"] == "main"
    assert api.get(_url(workspace, "repositories")).json()[0]["id"] == repo_id
    r = api.patch(_url(workspace, f"repositories/{repo_id}"), {"agentMinutes": 45}, format="json")
    assert r.status_code == 200 and r.json()["agentMinutes"] == 45
    r = api.patch(_url(workspace, f"repositories/{repo_id}"), {"agentMinutes": 91}, format="json")
    assert r.status_code == 400
    r = api.patch(_url(workspace, f"repositories/{repo_id}"), {"defaultBranch": "nope"}, format="json")
    assert r.status_code == 400 and "not found" in r.json()["detail"]
    assert api.delete(_url(workspace, f"repositories/{repo_id}")).status_code == 204
    assert api.get(_url(workspace, f"repositories/{repo_id}")).status_code == 404


@pytest.mark.django_db
def test_not_a_git_repository_is_a_400(api: APIClient, workspace: Workspace, tmp_path: Any) -> None:
    r = api.post(_url(workspace, "repositories"), {"kind": "local", "path": str(tmp_path)}, format="json")
    assert r.status_code == 400 and "not a git repository" in r.json()["detail"]


@pytest.mark.django_db
def test_batches_api_create_get_candidates_cancel(
    api: APIClient,
    workspace: Workspace,
    github_credential: Credential,
    fake_repo: FakeRepo,
    run_jobs_inline: list[int],
    django_capture_on_commit_callbacks: Any,
) -> None:
    fake_repo.pulls.extend(sized_pull(i, impl_paths=2, lines_per_path=30) for i in range(1, 8))
    repo_id = api.post(
        _url(workspace, "repositories"),
        {"fullName": "acme/widgets", "credentialId": github_credential.pk},
        format="json",
    ).json()["id"]
    bad = api.post(_url(workspace, f"repositories/{repo_id}/batches"), {"candidateCounts": {"easy": 0}}, format="json")
    assert bad.status_code == 400 and "1–300" in bad.json()["detail"]
    bad = api.post(
        _url(workspace, f"repositories/{repo_id}/batches"),
        {"candidateCounts": {"easy": 200, "hard": 101}},
        format="json",
    )
    assert bad.status_code == 400
    with django_capture_on_commit_callbacks(execute=True):
        r = api.post(
            _url(workspace, f"repositories/{repo_id}/batches"),
            {"candidateCounts": {"easy": 1, "medium": 2}},
            format="json",
        )
    assert r.status_code == 202
    assert r.json()["status"] == "queued" and r.json()["candidateCounts"] == {"easy": 1, "medium": 2, "hard": 0}
    batch_id = r.json()["id"]
    got = api.get(_url(workspace, f"batches/{batch_id}")).json()
    assert got["status"] == "proposed"
    assert got["stages"]["proposed"] == 3 and got["stages"]["skipped"] == 4 and got["stages"]["approved"] == 0
    assert got["listedPrs"] == 7 and got["poolSize"] == 7
    cands = api.get(_url(workspace, f"batches/{batch_id}/candidates")).json()
    assert {c["tier"] for c in cands if c["state"] == "proposed"} == {"easy", "medium"}
    assert all(c["reason"] for c in cands)
    listed = api.get(_url(workspace, f"repositories/{repo_id}/batches")).json()
    assert listed[0]["id"] == batch_id
    r = api.post(_url(workspace, f"batches/{batch_id}/cancel"))
    assert r.status_code == 200 and r.json()["cancelledAt"]
    assert r.json()["stages"]["cancelled"] == 3 and r.json()["stages"]["proposed"] == 0


@pytest.mark.django_db
def test_add_prs_api(
    api: APIClient,
    workspace: Workspace,
    git_repo: GitRepoBuilder,
    run_jobs_inline: list[int],
    django_capture_on_commit_callbacks: Any,
) -> None:
    git_repo.squash_pr(5, "Add feature", git_repo.sized_files(5, impl_paths=1, lines_per_path=30))
    repo_id = api.post(
        _url(workspace, "repositories"), {"kind": "local", "path": str(git_repo.path)}, format="json"
    ).json()["id"]
    with django_capture_on_commit_callbacks(execute=True):
        r = api.post(_url(workspace, f"repositories/{repo_id}/prs"), {"prs": [5, 6]}, format="json")
    assert r.status_code == 202 and r.json()["kind"] == "add_prs"
    got = api.get(_url(workspace, f"batches/{r.json()['id']}")).json()
    assert got["stages"]["proposed"] == 1 and list(got["unavailablePrs"]) == ["6"]


@pytest.mark.django_db
def test_other_workspaces_batches_are_404(api: APIClient, workspace: Workspace, git_repo: GitRepoBuilder) -> None:
    from tests.factories import make_workspace

    other = make_workspace()
    repo = Repository.objects.create(workspace=other, kind="local", location=str(git_repo.path))
    batch = Batch.objects.create(repository=repo, requested_easy=1)
    assert api.get(_url(workspace, f"batches/{batch.pk}")).status_code == 404
    assert api.get(_url(workspace, f"repositories/{repo.pk}")).status_code == 404
