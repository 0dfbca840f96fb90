"""Provenance bench: list 500 merged PRs from the GitHub double and run one discovery batch over them.

Prints wall time and API calls, and checks that no per-PR call is made for PRs outside the pool.
Run: DATABASE_URL=postgres://postgres@127.0.0.1:5432/sb_bench DEBUG=1 .venv/bin/python bench/provenance_bench.py
(it creates and drops a throwaway test database next to DATABASE_URL's).
"""

from __future__ import annotations

import os
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "selfbench.settings")
os.environ.setdefault("DEBUG", "1")

import django

django.setup()

from django.conf import settings  # noqa: E402
from django.db import connection  # noqa: E402

from tests.doubles.github_api import FakeFile, FakePull, FakeRepo, GitHubDouble, running  # noqa: E402

TOTAL_PRS = 640  # every 10th closed unmerged and every 25th by a bot, so 500 merged non-bot PRs need ~6 pages


def populate(repo: FakeRepo) -> None:
    base = datetime(2024, 1, 1, tzinfo=UTC)
    for n in range(1, TOTAL_PRS + 1):
        paths = 1 + n % 4
        lines = 15 + (n * 7) % 60
        files = [FakeFile(f"src/pkg/m{n}_{i}.py", additions=lines, deletions=lines // 5) for i in range(paths)]
        files.append(FakeFile(f"tests/test_m{n}.py", additions=20))
        repo.pulls.append(
            FakePull(
                number=n,
                title=f"Change {n}: token=ghp_{'A' * 36} must not leak" if n % 50 == 7 else f"Change {n}",
                body="Some description.\n\n- [x] tests pass",
                author="renovate[bot]" if n % 25 == 0 else f"dev{n % 7}",
                author_type="Bot" if n % 25 == 0 else "User",
                merged=n % 10 != 0,
                merged_at=base + timedelta(hours=n),
                files=files,
            )
        )


def main() -> None:
    from apps.accounts import services as account_services
    from apps.accounts.models import Credential
    from apps.repositories import discovery, services
    from apps.repositories.models import Candidate, PullRequest
    from tests.factories import make_user

    old_name = connection.settings_dict["NAME"]
    test_db = connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)
    try:
        for double in running(GitHubDouble()):
            settings.GITHUB_API_URL = double.url
            repo = double.add_repo(FakeRepo(full_name="bench/big"))
            populate(repo)
            user = make_user()
            workspace = account_services.workspace_create(slug="bench", name="bench", owner=user)
            credential = Credential.objects.create(workspace=workspace, name="gh", kind="github", secret=double.token)
            repository = services.repository_create(
                workspace=workspace, kind="github", full_name="bench/big", credential_id=credential.pk
            )

            # 1. Listing alone.
            double.requests.clear()
            source = services.source_for(repository)
            t0 = time.perf_counter()
            pulls = source.merged_pulls(limit=500)
            list_wall = time.perf_counter() - t0
            list_calls = len(double.requests)

            # 2. A whole discovery batch (pin head, list 500, save provenance, analyse the pool, propose).
            double.requests.clear()
            batch = services.batch_create(repository=repository, easy=10, medium=5, hard=5)
            t0 = time.perf_counter()
            batch = discovery.batch_run(batch_id=batch.pk)
            batch_wall = time.perf_counter() - t0
            assert batch is not None
            pool = set(batch.pool)
            per_pr = [r for r in double.requests if "/pulls/" in r]
            outside = [r for r in per_pr if int(r.split("/pulls/")[1].split("/")[0]) not in pool]
            redacted = PullRequest.objects.filter(repository=repository, title__contains="[REDACTED:").count()
            print(f"merged PRs in the double: {sum(1 for p in repo.pulls if p.merged)} of {TOTAL_PRS} closed")
            print(f"listing: {len(pulls)} merged non-bot PRs in {list_wall * 1000:.0f} ms, {list_calls} API calls")
            print(
                f"batch (easy 10, medium 5, hard 5): status={batch.status} in {batch_wall * 1000:.0f} ms, "
                f"{len(double.requests)} API calls (batch.api_calls={batch.api_calls})"
            )
            print(
                f"  list pages: {sum(1 for r in double.requests if '/pulls?' in r)}, "
                f"per-PR calls: {len(per_pr)} (pool {len(pool)}), per-PR calls outside the pool: {len(outside)}"
            )
            print(
                f"  provenance records: {PullRequest.objects.filter(repository=repository).count()}, "
                f"titles redacted: {redacted}"
            )
            print(f"  candidates: {Candidate.objects.filter(batch=batch).count()}; {batch.status_message}")
            assert not outside, outside
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)
        del test_db


if __name__ == "__main__":
    main()
