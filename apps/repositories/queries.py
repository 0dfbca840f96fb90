"""Reads shared by pages and the API: batches with their candidate counts per stage and whether they still move."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from django.db.models import Count, QuerySet

from apps.accounts.models import Workspace
from apps.repositories.models import CANDIDATE_MOVING, Batch, Candidate, Repository


def repositories_of(workspace: Workspace) -> QuerySet[Repository]:
    return Repository.objects.filter(workspace=workspace)


def batches_of(workspace: Workspace) -> QuerySet[Batch]:
    return Batch.objects.filter(repository__workspace=workspace)


def with_stage_counts(batches: Iterable[Batch]) -> list[Batch]:
    """Attach `stage_counts` ({state: n}), `moving_count` (candidates not yet settled: waiting for or in authoring,
    gates or review) and `is_live` (discovery runs or a candidate moves) to each batch, with one grouped query."""
    rows = list(batches)
    counts: dict[int, dict[str, int]] = defaultdict(dict)
    grouped = (
        Candidate.objects.filter(batch__in=[b.pk for b in rows])
        .values("batch_id", "state")
        .annotate(n=Count("id"))
        .order_by()
    )
    for row in grouped:
        counts[row["batch_id"]][row["state"]] = row["n"]
    for batch in rows:
        stage_counts = counts.get(batch.pk, {})
        moving = sum(n for state, n in stage_counts.items() if state in CANDIDATE_MOVING)
        batch.stage_counts = stage_counts  # type: ignore[attr-defined]
        batch.moving_count = moving  # type: ignore[attr-defined]
        batch.is_live = batch.is_active or moving > 0  # type: ignore[attr-defined]
    return rows


def candidates_of(batch: Batch) -> QuerySet[Candidate]:
    return Candidate.objects.filter(batch=batch).select_related("pull_request").order_by("state", "id")
