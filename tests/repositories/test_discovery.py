"""Batches against the GitHub double: listing, bot skipping, redaction, tiers, skip reasons, waits and failures."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from apps.accounts.models import Credential, Workspace
from apps.repositories import discovery, services
from apps.repositories.models import Batch, BatchStatus, Candidate, CandidateState, PullRequest, Repository
from tests.doubles.github_api import FakeFile, FakePull, FakeRepo, GitHubDouble, sized_pull

pytestmark = pytest.mark.django_db(transaction=False)


@pytest.fixture
def repository(workspace: Workspace, github_credential: Credential, fake_repo: FakeRepo) -> Repository:
    return services.repository_create(
        workspace=workspace, kind="github", full_name="acme/widgets", credential_id=github_credential.pk
    )


def _populate(repo: FakeRepo) -> None:
    """Newest first: 3 hard, 3 medium, 4 easy, 2 too small, gate failures, a bot, an unmerged PR, then filler."""
    n = 200
    specs: list[FakePull] = []
    for _ in range(3):
        specs.append(sized_pull(n, impl_paths=3, lines_per_path=40))  # 120 lines / 3 paths: hard
        n -= 1
    for _ in range(3):
        specs.append(sized_pull(n, impl_paths=2, lines_per_path=30))  # 60 / 2: medium
        n -= 1
    for _ in range(4):
        specs.append(sized_pull(n, impl_paths=1, lines_per_path=25))  # 25 / 1: easy
        n -= 1
    for _ in range(2):
        specs.append(sized_pull(n, impl_paths=1, lines_per_path=5))  # 5 lines: below easy
        n -= 1
    specs.append(sized_pull(n, impl_paths=2, lines_per_path=30, tests=0))  # no tests
    n -= 1
    specs.append(sized_pull(n, impl_paths=0, lines_per_path=0, tests=3))  # only tests
    n -= 1
    binary = sized_pull(n, impl_paths=0, lines_per_path=0, tests=0)
    binary.files = [FakeFile("assets/a.png", binary=True), FakeFile("assets/b.woff2", binary=True)]
    specs.append(binary)
    n -= 1
    specs.append(sized_pull(n, impl_paths=5, lines_per_path=1000))  # huge
    n -= 1
    specs.append(sized_pull(n, impl_paths=3, lines_per_path=40, author="dependabot[bot]", author_type="Bot"))
    n -= 1
    specs.append(sized_pull(n, impl_paths=3, lines_per_path=40, merged=False))
    n -= 1
    while n > 150:
        specs.append(sized_pull(n, impl_paths=1, lines_per_path=25))
        n -= 1
    repo.pulls.extend(specs)


def test_discovery_batch_yields_candidates_per_tier_and_records_every_skip(
    repository: Repository,
    fake_repo: FakeRepo,
    github: GitHubDouble,
    run_jobs_inline: list[int],
    django_capture_on_commit_callbacks: Any,
) -> None:
    _populate(fake_repo)
    fake_repo.head_sha = "ab" * 20
    with django_capture_on_commit_callbacks(execute=True):
        batch = services.batch_create(repository=repository, easy=2, medium=2, hard=2)
    batch.refresh_from_db()
    assert batch.status == BatchStatus.PROPOSED, batch.error
    assert batch.head_sha == "ab" * 20
    # 50 PRs in the double: one is unmerged and one a bot's, so 48 are listed; the pool is max(25, 1.5×6) = 25.
    assert batch.listed_count == 48
    assert len(batch.pool) == 25
    assert PullRequest.objects.filter(repository=repository).count() == 48
    assert not PullRequest.objects.filter(author="dependabot[bot]").exists()

    proposed = Candidate.objects.filter(batch=batch, state=CandidateState.PROPOSED)
    by_tier = {t: sorted(c.pull_request.number for c in proposed if c.tier == t) for t in ("easy", "medium", "hard")}
    assert by_tier == {"hard": [199, 200], "medium": [196, 197], "easy": [193, 194]}
    skipped = {c.pull_request.number: c.reason for c in Candidate.objects.filter(batch=batch, state="skipped")}
    assert skipped[198].startswith("not needed: tiers up to hard already full")
    assert skipped[195].startswith("not needed: tiers up to medium already full")
    assert skipped[190].startswith("below easy: 5 implementation lines")
    assert skipped[188] == "size gate: no tests: the PR changes no test files"
    assert skipped[187] == "size gate: only tests: the PR changes no implementation files"
    assert skipped[186].startswith("size gate: binary-only")
    assert skipped[185].startswith("size gate: huge diff: 5015 lines")
    assert len(skipped) + proposed.count() == 25
    assert "hard 2/2" in batch.status_message and "fell short" not in batch.status_message

    # No per-PR call for PRs outside the pool: one files call per pool PR, no single-PR fetches.
    assert github.calls("/files") == 25
    assert github.calls("/pulls/") == 25
    assert github.calls("/pulls?") == 1
    assert batch.api_calls == len(github.requests) - 2  # minus the repository check at creation


def test_provenance_keeps_the_exact_title_and_body_with_credentials_redacted(
    repository: Repository, fake_repo: FakeRepo, run_jobs_inline: list[int], django_capture_on_commit_callbacks: Any
) -> None:
    token = "ghp_" + "Z9" * 18
    body = f"Fixes the login flow.\r\n\r\nRepro: `GITHUB_TOKEN={token} make test`\n\n- [x] tests"
    fake_repo.pulls.append(sized_pull(7, impl_paths=1, lines_per_path=30, title="Fix `login()` — ünïcode ✓", body=body))
    with django_capture_on_commit_callbacks(execute=True):
        services.batch_create(repository=repository, easy=1)
    record = PullRequest.objects.get(repository=repository, number=7)
    assert record.title == "Fix `login()` — ünïcode ✓"
    assert record.body == body.replace(token, "[REDACTED:github_token]")
    assert record.redactions == ["github_token"]
    assert record.author == "alice"


def test_a_short_pool_is_recorded_not_backfilled(
    repository: Repository, fake_repo: FakeRepo, run_jobs_inline: list[int], django_capture_on_commit_callbacks: Any
) -> None:
    fake_repo.pulls.extend(
        [sized_pull(1, impl_paths=3, lines_per_path=40), sized_pull(2, impl_paths=1, lines_per_path=25)]
    )
    with django_capture_on_commit_callbacks(execute=True):
        batch = services.batch_create(repository=repository, easy=1, hard=3)
    batch.refresh_from_db()
    assert batch.status == BatchStatus.PROPOSED
    assert "hard 1/3" in batch.status_message and "nothing is backfilled" in batch.status_message
    # A rejected candidate stays a rejection; nothing new is proposed for it.
    candidate = Candidate.objects.get(batch=batch, tier="hard")
    for state in ("authoring", "in_review"):
        candidate = services.candidate_set_state(candidate=candidate, state=state)
    services.candidate_set_state(candidate=candidate, state="rejected", reason="reviewer: tests pin internals")
    assert Candidate.objects.filter(batch=batch).count() == 2


def test_listing_paginates_and_stops_at_500_merged_prs(
    repository: Repository, fake_repo: FakeRepo, github: GitHubDouble
) -> None:
    base = datetime(2024, 1, 1, tzinfo=UTC)
    fake_repo.pulls.extend(
        FakePull(
            number=i,
            title=f"PR {i}",
            merged=i % 10 != 0,
            merged_at=base + timedelta(hours=i),
            files=[FakeFile("src/a.py", 25), FakeFile("tests/test_a.py", 5)],
        )
        for i in range(1, 701)
    )
    source = services.source_for(repository)
    pulls = source.merged_pulls(limit=500)
    assert len(pulls) == 500
    assert pulls[0].number == 699  # newest first; 700 was not merged
    assert [p.merged_at for p in pulls] == sorted((p.merged_at for p in pulls), reverse=True)
    assert github.calls("/pulls?") == 6  # 6 pages of 100 hold 540 merged PRs


def test_rate_limit_makes_the_batch_wait_then_resume(
    repository: Repository, fake_repo: FakeRepo, github: GitHubDouble
) -> None:
    fake_repo.pulls.extend(sized_pull(i, impl_paths=1, lines_per_path=25) for i in range(1, 6))
    batch = Batch.objects.create(repository=repository, requested_easy=2)
    github.fail_next("/repos/acme/widgets/pulls/3/files", "rate_limit", reset_in=1)
    github.fail_next("/repos/acme/widgets/pulls", "secondary_rate_limit", reset_in=1)
    seen: list[tuple[str, str]] = []

    def sleep(seconds: float) -> None:
        b = Batch.objects.get(pk=batch.pk)
        seen.append((b.status, b.status_message))

    result = discovery.batch_run(batch_id=batch.pk, sleep=sleep)
    assert result is not None and result.status == BatchStatus.PROPOSED
    assert len(seen) == 2
    assert all(status == BatchStatus.WAITING and "rate limit" in msg for status, msg in seen)
    assert Candidate.objects.filter(batch=batch, state="proposed").count() == 2
    assert Candidate.objects.filter(batch=batch).count() == 5


def test_a_long_rate_limit_parks_the_batch_and_schedules_a_resume(
    repository: Repository,
    fake_repo: FakeRepo,
    github: GitHubDouble,
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
    django_capture_on_commit_callbacks: Any,
) -> None:
    from apps.repositories import jobs

    fake_repo.pulls.append(sized_pull(1, impl_paths=1, lines_per_path=25))
    settings.GITHUB_RATE_LIMIT_INLINE_WAIT = 5
    scheduled: list[tuple[int, datetime]] = []
    monkeypatch.setattr(jobs, "enqueue_batch_resume", lambda batch_id, at: scheduled.append((batch_id, at)))
    batch = Batch.objects.create(repository=repository, requested_easy=1)
    github.fail_next("/repos/acme/widgets/pulls", "rate_limit", reset_in=3600)
    with django_capture_on_commit_callbacks(execute=True):
        result = discovery.batch_run(batch_id=batch.pk)
    assert result is not None and result.status == BatchStatus.WAITING
    assert result.resume_at is not None and "waiting for GitHub's rate limit" in result.status_message
    assert scheduled and scheduled[0][0] == batch.pk
    assert not PullRequest.objects.exists()  # nothing half-written
    # The scheduled resume claims the waiting batch and finishes it.
    result = discovery.batch_run(batch_id=batch.pk)
    assert result is not None and result.status == BatchStatus.PROPOSED


def test_network_errors_are_retried_then_the_batch_fails_with_the_reason(
    repository: Repository, fake_repo: FakeRepo, github: GitHubDouble
) -> None:
    fake_repo.pulls.append(sized_pull(1, impl_paths=1, lines_per_path=25))
    batch = Batch.objects.create(repository=repository, requested_easy=1)
    github.fail_next("/repos/acme/widgets/pulls", "drop", times=2)
    result = discovery.batch_run(batch_id=batch.pk)
    assert result is not None and result.status == BatchStatus.PROPOSED  # two drops, third attempt works

    batch2 = Batch.objects.create(repository=repository, requested_easy=1)
    PullRequest.objects.all().delete()
    github.fail_next("/repos/acme/widgets/pulls", "drop", times=4)
    result = discovery.batch_run(batch_id=batch2.pk)
    assert result is not None and result.status == BatchStatus.FAILED
    assert "GitHub unreachable after 4 attempts" in result.error
    assert not PullRequest.objects.exists()
    assert not result.candidates.exists()


def test_batch_run_is_idempotent(repository: Repository, fake_repo: FakeRepo, github: GitHubDouble) -> None:
    fake_repo.pulls.append(sized_pull(1, impl_paths=1, lines_per_path=25))
    batch = Batch.objects.create(repository=repository, requested_easy=1)
    assert discovery.batch_run(batch_id=batch.pk) is not None
    calls = len(github.requests)
    assert discovery.batch_run(batch_id=batch.pk) is None
    assert len(github.requests) == calls


def test_cancel_stops_pending_work(repository: Repository, fake_repo: FakeRepo, github: GitHubDouble) -> None:
    fake_repo.pulls.extend(sized_pull(i, impl_paths=1, lines_per_path=25) for i in range(1, 30))
    batch = Batch.objects.create(repository=repository, requested_easy=5)
    github.fail_next("/repos/acme/widgets/pulls/20/files", "rate_limit", reset_in=1)

    def cancel_while_waiting(seconds: float) -> None:
        services.batch_cancel(batch=batch)

    result = discovery.batch_run(batch_id=batch.pk, sleep=cancel_while_waiting)
    assert result is not None and result.status == BatchStatus.CANCELLED and result.cancelled_at
    assert not result.candidates.exists()
    files_calls = github.calls("/files")
    assert files_calls < 25  # it stopped at the wait instead of analysing the rest of the pool


def test_add_prs_authors_chosen_numbers_directly(
    repository: Repository,
    fake_repo: FakeRepo,
    github: GitHubDouble,
    run_jobs_inline: list[int],
    django_capture_on_commit_callbacks: Any,
) -> None:
    fake_repo.pulls.extend(
        [
            sized_pull(10, impl_paths=3, lines_per_path=40),
            sized_pull(11, impl_paths=1, lines_per_path=3),
            sized_pull(12, impl_paths=1, lines_per_path=30, merged=False),
        ]
    )
    with django_capture_on_commit_callbacks(execute=True):
        batch = services.batch_add_prs(repository=repository, numbers=[10, 11, 12, 99])
    batch.refresh_from_db()
    assert batch.status == BatchStatus.PROPOSED
    cands = {c.pull_request.number: c for c in batch.candidates.select_related("pull_request")}
    assert set(cands) == {10, 11}
    assert cands[10].tier == "hard" and cands[10].state == "proposed"
    assert cands[11].tier == "easy"
    assert set(batch.unavailable) == {"12", "99"}
    assert "not merged" in batch.unavailable["12"]
    assert github.calls("/pulls?") == 0  # no listing for add-PRs
