"""A batch's work: pin the head, list merged PRs, analyse the pool and propose candidates per tier.

`batch_run` is what the job calls. Progress is saved in steps that are each complete on their own (the listing in one
transaction, each PR's analysis in its own row, the proposal in one transaction), so a job that stops for a rate limit,
a crash or a cancel resumes where it was and never leaves half a listing behind.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.db.models.functions import Coalesce
from django.utils import timezone

from apps.repositories import jobs, services
from apps.repositories.analysis import TIER_ORDER, Tier, analyse_files, cap_tier
from apps.repositories.models import (
    Batch,
    BatchKind,
    BatchStatus,
    Candidate,
    CandidateState,
    PullRequest,
)
from apps.repositories.sources import PullInfo, PullNotFound, PullSource, RateLimited, SourceError

log = logging.getLogger(__name__)

MAX_LISTED = 500
MIN_POOL = 25
POOL_FACTOR = 1.5


def pool_size(requested_total: int) -> int:
    """About 1.5× the request, at least 25."""
    return max(MIN_POOL, math.ceil(POOL_FACTOR * requested_total))


class _Stop(Exception):
    """The batch was cancelled (or reclaimed) while the job was running."""


@dataclass
class _Run:
    batch: Batch
    source: PullSource
    sleep: Callable[[float], None]

    def check_cancelled(self) -> None:
        status = Batch.objects.filter(pk=self.batch.pk).values_list("status", flat=True).first()
        if status == BatchStatus.CANCELLED or status is None:
            raise _Stop

    def set_status(self, status: str, message: str = "", **fields: object) -> None:
        # Never overwrite a cancel that landed while we worked.
        updated = (
            Batch.objects.filter(pk=self.batch.pk)
            .exclude(status=BatchStatus.CANCELLED)
            .update(
                status=status,
                status_message=message[:500],
                api_calls=self.source.calls,
                updated_at=timezone.now(),
                **fields,
            )
        )
        if not updated:
            raise _Stop
        self.batch.status = status


def batch_run(*, batch_id: int, sleep: Callable[[float], None] = time.sleep) -> Batch | None:
    """Claim a queued (or rate-limit-waiting) batch and carry it to `proposed`, `failed` or `waiting`.

    Idempotent: a batch another worker holds, or one already finished, is left alone."""
    now = timezone.now()
    claimed = Batch.objects.filter(pk=batch_id, status__in=[BatchStatus.QUEUED, BatchStatus.WAITING]).update(
        status=BatchStatus.LISTING, started_at=Coalesce(F("started_at"), now), resume_at=None, updated_at=now
    )
    if claimed != 1:
        return None
    batch = Batch.objects.select_related("repository", "repository__credential").get(pk=batch_id)
    source = services.source_for(batch.repository)
    run = _Run(batch=batch, source=source, sleep=sleep)
    inline_wait = float(getattr(settings, "GITHUB_RATE_LIMIT_INLINE_WAIT", 300))
    try:
        while True:
            try:
                if batch.kind == BatchKind.ADD_PRS:
                    _add_prs(run)
                else:
                    _discover(run)
                break
            except RateLimited as exc:
                wait = max(0.0, (exc.reset_at - timezone.now()).total_seconds()) + 1
                message = f"waiting for GitHub's rate limit until {exc.reset_at:%Y-%m-%d %H:%M:%S} UTC"
                if wait > inline_wait:
                    # A long wait must not hold a worker: park the batch and schedule a resume at the reset time.
                    run.set_status(BatchStatus.WAITING, message, resume_at=exc.reset_at)
                    transaction.on_commit(partial(jobs.enqueue_batch_resume, batch_id, exc.reset_at))
                    return _reload(batch_id)
                run.set_status(BatchStatus.WAITING, message, resume_at=exc.reset_at)
                run.sleep(wait)
                run.check_cancelled()
                run.set_status(BatchStatus.LISTING, "resumed after GitHub's rate limit", resume_at=None)
    except _Stop:
        return _reload(batch_id)
    except SourceError as exc:
        log.warning("batch %s failed: %s", batch_id, exc.message)
        Batch.objects.filter(pk=batch_id).exclude(status=BatchStatus.CANCELLED).update(
            status=BatchStatus.FAILED,
            status_message="failed",
            error=exc.message,
            api_calls=source.calls,
            finished_at=timezone.now(),
            updated_at=timezone.now(),
        )
    finally:
        close = getattr(source, "close", None)
        if close is not None:
            close()
    return _reload(batch_id)


def _reload(batch_id: int) -> Batch | None:
    return Batch.objects.filter(pk=batch_id).first()


# --- discovery ------------------------------------------------------------------------------------------------------


def _discover(run: _Run) -> None:
    batch = run.batch
    repository = batch.repository
    if not batch.pool:
        run.set_status(BatchStatus.LISTING, "pinning the default branch head and listing merged PRs")
        head = run.source.head_sha(repository.default_branch)
        pulls = run.source.merged_pulls(limit=MAX_LISTED)
        run.check_cancelled()
        # PRs that already are live candidates of another batch would make duplicate tasks: leave them out.
        taken = set(
            Candidate.objects.filter(batch__repository=repository)
            .exclude(batch=batch)
            .exclude(state__in=[CandidateState.SKIPPED, CandidateState.CANCELLED])
            .values_list("pull_request__number", flat=True)
        )
        pool = [p.number for p in pulls if p.number not in taken][: pool_size(batch.requested_total)]
        with transaction.atomic():
            services.pull_request_record_many(repository=repository, infos=pulls)
            batch.head_sha = head
            batch.pool = pool
            batch.listed_count = len(pulls)
            run.set_status(
                BatchStatus.DISCOVERING,
                f"listed {len(pulls)} merged PRs; analysing a pool of {len(pool)}",
                head_sha=head,
                pool=pool,
                listed_count=len(pulls),
            )
    run.set_status(BatchStatus.DISCOVERING, f"analysing a pool of {len(batch.pool)} PRs")
    records = {p.number: p for p in PullRequest.objects.filter(repository=repository, number__in=batch.pool)}
    for number in batch.pool:
        record = records[number]
        if record.analysed_at is None:
            run.check_cancelled()
            _analyse(run, record)
    _propose(run, [records[n] for n in batch.pool])


def _analyse(run: _Run, record: PullRequest) -> None:
    info = PullInfo(
        number=record.number,
        title=record.title,
        body=record.body,
        author=record.author,
        author_is_bot=False,
        merged_at=record.merged_at,
        base_sha=record.base_sha,
        head_sha=record.head_sha,
        merge_sha=record.merge_sha,
    )
    files = run.source.files(info)
    analysis = analyse_files(
        files,
        max_lines=int(getattr(settings, "REPOSITORIES_MAX_DIFF_LINES", 3000)),
        max_files=int(getattr(settings, "REPOSITORIES_MAX_DIFF_FILES", 100)),
    )
    services.pull_request_analyse(pull_request=record, analysis=analysis, changed_files=len(files))
    additions = sum(f.additions for f in files)
    deletions = sum(f.deletions for f in files)
    PullRequest.objects.filter(pk=record.pk).update(additions=additions, deletions=deletions)


def _propose(run: _Run, pool: list[PullRequest]) -> None:
    """Fill hard first (only PRs reaching hard can), then medium, then easy; every other pool PR is skipped with why.

    Within a tier, PRs that reach exactly that tier go first (newest first), so a medium task is a medium change where
    the pool allows; a harder PR is capped to the tier only when no exact one is left."""
    batch = run.batch
    wanted = {Tier.HARD: batch.requested_hard, Tier.MEDIUM: batch.requested_medium, Tier.EASY: batch.requested_easy}
    chosen: dict[int, Tier] = {}
    eligible = [r for r in pool if not r.gate_reason and r.tier_reached]
    for tier in reversed(TIER_ORDER):
        rank = TIER_ORDER.index(tier)
        exact = [r for r in eligible if TIER_ORDER.index(Tier(r.tier_reached)) == rank]
        harder = [r for r in eligible if TIER_ORDER.index(Tier(r.tier_reached)) > rank]
        for record in exact + harder:
            if sum(1 for t in chosen.values() if t is tier) >= wanted[tier]:
                break
            if record.pk not in chosen:
                chosen[record.pk] = tier
    rows = []
    for record in pool:
        if record.pk in chosen:
            tier = chosen[record.pk]
            rows.append(
                Candidate(
                    batch=batch,
                    pull_request=record,
                    tier=tier.value,
                    state=CandidateState.PROPOSED,
                    reason=f"reaches {record.tier_reached}: {_size(record)}",
                )
            )
        else:
            rows.append(
                Candidate(
                    batch=batch,
                    pull_request=record,
                    tier=record.tier_reached if not record.gate_reason else "",
                    state=CandidateState.SKIPPED,
                    reason=_skip_reason(record, wanted),
                )
            )
    got = {t: sum(1 for v in chosen.values() if v is t) for t in TIER_ORDER}
    summary = ", ".join(f"{t.value} {got[t]}/{wanted[t]}" for t in TIER_ORDER if wanted[t])
    short = any(got[t] < wanted[t] for t in TIER_ORDER)
    message = f"proposed {summary}" + ("; the pool fell short and nothing is backfilled" if short else "")
    with transaction.atomic():
        run.check_cancelled()
        Candidate.objects.bulk_create(rows, ignore_conflicts=True)
        run.set_status(BatchStatus.PROPOSED, message, finished_at=timezone.now())


def _size(record: PullRequest) -> str:
    return f"{record.implementation_lines} implementation lines across {len(record.implementation_paths)} paths"


def _skip_reason(record: PullRequest, wanted: dict[Tier, int]) -> str:
    if record.gate_reason:
        return f"size gate: {record.gate_reason}"
    if not record.tier_reached:
        return f"below easy: {_size(record)}"
    reached = Tier(record.tier_reached)
    open_tiers = [t for t in TIER_ORDER if wanted[t] and TIER_ORDER.index(t) <= TIER_ORDER.index(reached)]
    if not open_tiers:
        return f"reaches {reached.value} ({_size(record)}) but no tier up to it was requested"
    return f"not needed: tiers up to {reached.value} already full ({_size(record)})"


# --- add PRs --------------------------------------------------------------------------------------------------------


def _add_prs(run: _Run) -> None:
    batch = run.batch
    repository = batch.repository
    if not batch.head_sha:
        head = run.source.head_sha(repository.default_branch)
        run.set_status(BatchStatus.DISCOVERING, "fetching the chosen PRs", head_sha=head)
        batch.head_sha = head
    unavailable: dict[str, str] = dict(batch.unavailable)
    done = set(batch.candidates.values_list("pull_request__number", flat=True))
    for number in batch.requested_prs:
        if number in done or str(number) in unavailable:
            continue
        run.check_cancelled()
        record = PullRequest.objects.filter(repository=repository, number=number).first()
        if record is None:
            try:
                info = run.source.pull(number)
            except PullNotFound as exc:
                unavailable[str(number)] = exc.message
                Batch.objects.filter(pk=batch.pk).update(unavailable=unavailable)
                continue
            record = services.pull_request_record(repository=repository, info=info)
        if record.analysed_at is None:
            _analyse(run, record)
            record.refresh_from_db()
        # Add PRs authors what was picked: the tier is what the patch reaches (hard at most), easy if below it.
        reached = Tier(record.tier_reached) if record.tier_reached else None
        tier = cap_tier(reached, Tier.HARD) or Tier.EASY
        note = f"chosen by number; {_size(record)}"
        if record.gate_reason:
            note += f"; size gate would skip it: {record.gate_reason}"
        Candidate.objects.get_or_create(
            batch=batch,
            pull_request=record,
            defaults={"tier": tier.value, "state": CandidateState.PROPOSED, "reason": note},
        )
    made = batch.candidates.count()
    message = f"proposed {made} of {len(batch.requested_prs)} chosen PRs"
    if unavailable:
        message += f"; {len(unavailable)} unavailable"
    run.set_status(BatchStatus.PROPOSED, message, unavailable=unavailable, finished_at=timezone.now())
