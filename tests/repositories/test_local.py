"""Local git repositories: merge and squash commits are PRs, bots are skipped, and a batch runs end to end."""

from __future__ import annotations

from typing import Any

import pytest

from apps.accounts.models import Workspace
from apps.repositories import services
from apps.repositories.models import BatchStatus, Candidate, PullRequest
from apps.repositories.sources import LocalGitSource
from tests.doubles.git_repos import GitRepoBuilder


def _history(repo: GitRepoBuilder) -> None:
    repo.merge_pr(1, "Add parser", repo.sized_files(1, impl_paths=3, lines_per_path=40), body="Closes #9.\n\nDetails.")
    repo.commit("Fix typo directly on main", {"README.md": "# demo!\n"})
    repo.squash_pr(
        2,
        "Add Go handler",
        repo.sized_files(2, impl_paths=2, lines_per_path=30, lang="go"),
        body="password=hunter2hunter2 was in the old config",
    )
    repo.squash_pr(
        3,
        "Bump deps",
        {"src/app/dep.py": "x = 1\n" * 30, "tests/test_dep.py": "y = 1\n"},
        author="dependabot[bot]",
        email="49699333+dependabot[bot]@users.noreply.github.com",
    )
    repo.squash_pr(4, "Add TS widget", repo.sized_files(4, impl_paths=1, lines_per_path=25, lang="ts"))
    repo.squash_pr(5, "Add logo", {"assets/logo.png": bytes(range(256)) * 4})
    repo.merge_pr(6, "Tiny tweak", repo.sized_files(6, impl_paths=1, lines_per_path=3))


def test_local_source_reads_merge_and_squash_commits(git_repo: GitRepoBuilder) -> None:
    _history(git_repo)
    source = LocalGitSource(location=f"file://{git_repo.path}", default_branch="main")
    source.head_sha("main")
    pulls = {p.number: p for p in source.merged_pulls(limit=500)}
    assert list(pulls) == [6, 5, 4, 2, 1]  # newest first; the bot's #3 and the plain commit are not PRs
    assert pulls[1].title == "Add parser" and pulls[1].body == "Closes #9.\n\nDetails." and pulls[1].author == "bob"
    assert pulls[1].base_sha != pulls[1].head_sha and pulls[1].merge_sha == git_repo.shas[1]
    assert pulls[2].title == "Add Go handler" and pulls[2].author == "Alice Dev"
    files = {f.path: f for f in source.files(pulls[1])}
    assert files["src/app/mod_1_0.py"].additions == 40
    assert any(f.binary for f in source.files(pulls[5]))


@pytest.mark.django_db
def test_local_batch_yields_expected_candidates_and_skip_reasons(
    workspace: Workspace, git_repo: GitRepoBuilder, run_jobs_inline: list[int], django_capture_on_commit_callbacks: Any
) -> None:
    _history(git_repo)
    repository = services.repository_create(workspace=workspace, kind="local", location=str(git_repo.path))
    with django_capture_on_commit_callbacks(execute=True):
        batch = services.batch_create(repository=repository, easy=1, medium=1, hard=1)
    batch.refresh_from_db()
    assert batch.status == BatchStatus.PROPOSED, batch.error
    assert batch.head_sha == git_repo.head()
    cands = {c.pull_request.number: c for c in Candidate.objects.filter(batch=batch).select_related("pull_request")}
    assert (cands[1].tier, cands[1].state) == ("hard", "proposed")
    assert (cands[2].tier, cands[2].state) == ("medium", "proposed")
    assert (cands[4].tier, cands[4].state) == ("easy", "proposed")
    assert cands[5].reason.startswith("size gate: binary-only")
    assert cands[6].reason.startswith("below easy")
    assert PullRequest.objects.get(number=2).body == "password=[REDACTED:secret_assignment] was in the old config"


@pytest.mark.django_db
def test_repository_checkout_gives_a_tree_at_the_commit(workspace: Workspace, git_repo: GitRepoBuilder) -> None:
    _history(git_repo)
    repository = services.repository_create(workspace=workspace, kind="local", location=f"file://{git_repo.path}")
    base = PullRequest(base_sha=git_repo.git("rev-parse", f"{git_repo.shas[2]}^"))
    path = services.repository_checkout(repository=repository, sha=git_repo.shas[2])
    assert (path / "src/app/mod_2_0.go").exists()
    assert not (path / "src/app/mod_4_0.ts").exists()
    before = services.repository_checkout(repository=repository, sha=base.base_sha)
    assert not (before / "src/app/mod_2_0.go").exists()
    assert services.repository_checkout(repository=repository, sha=git_repo.shas[2]) == path  # cached


@pytest.mark.django_db
def test_github_checkout_clones_the_repos_clone_url_with_the_token_kept_out_of_config(
    workspace: Workspace, git_repo: GitRepoBuilder, github: Any, github_credential: Any
) -> None:
    from tests.doubles.github_api import FakeRepo

    _history(git_repo)
    github.add_repo(FakeRepo(full_name="acme/local", head_sha=git_repo.head(), clone_url=f"file://{git_repo.path}"))
    repository = services.repository_create(
        workspace=workspace, kind="github", full_name="acme/local", credential_id=github_credential.pk
    )
    path = services.repository_checkout(repository=repository, sha=git_repo.shas[1])
    assert (path / "src/app/mod_1_2.py").exists()
    mirror_config = (path.parent.parent / "mirror.git" / "config").read_text()
    assert github_credential.secret not in mirror_config
