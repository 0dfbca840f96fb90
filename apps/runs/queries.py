"""Reads shared by the API and pages: lists with their counts, progress per evaluation and configuration."""

from __future__ import annotations

import uuid
from typing import Any

from django.db.models import Count, Prefetch, Q, QuerySet

from apps.accounts.models import Workspace
from apps.runs.models import Comparison, Evaluation, Trial, TrialArtifact, TrialStatus
from apps.tasks.models import Task, TaskState

_COUNTS = {
    "total": Count("id"),
    "queued": Count("id", filter=Q(status=TrialStatus.QUEUED)),
    "running": Count("id", filter=Q(status=TrialStatus.RUNNING)),
    "completed": Count("id", filter=Q(status=TrialStatus.COMPLETED)),
    "failed": Count("id", filter=Q(status=TrialStatus.FAILED)),
    "cancelled": Count("id", filter=Q(status=TrialStatus.CANCELLED)),
}


def runnable_tasks(*, workspace: Workspace) -> QuerySet[Task]:
    """The tasks a comparison can run: approved, with verified files (the options API and the Run page list these)."""
    return (
        Task.objects.filter(workspace=workspace, state=TaskState.APPROVED, version__isnull=False)
        .select_related("repository")
        .order_by("pk")
    )


def _with_done(counts: dict[str, int]) -> dict[str, Any]:
    done = counts["completed"] + counts["failed"] + counts["cancelled"]
    return {**counts, "done": done, "finished": counts["total"] > 0 and done == counts["total"]}


def comparisons(*, workspace: Workspace) -> QuerySet[Comparison]:
    return Comparison.objects.filter(workspace=workspace).prefetch_related(
        Prefetch("evaluations", queryset=Evaluation.objects.only("pk", "comparison_id", "position"))
    )


def evaluation_counts(evaluation_ids: list[int]) -> dict[int, dict[str, Any]]:
    rows: Any = Trial.objects.filter(evaluation_id__in=evaluation_ids).values("evaluation_id").annotate(**_COUNTS)
    counts = {row["evaluation_id"]: _with_done({k: row[k] for k in _COUNTS}) for row in rows}
    empty = _with_done({k: 0 for k in _COUNTS})
    return {pk: counts.get(pk, empty) for pk in evaluation_ids}


def comparison_progress(comparison: Comparison) -> dict[str, Any]:
    """Progress overall, per evaluation and per configuration (agent × configuration) within each."""
    evaluations = list(comparison.evaluations.all())
    per_config: dict[int, list[dict[str, Any]]] = {e.pk: [] for e in evaluations}
    rows: Any = (
        Trial.objects.filter(evaluation__comparison=comparison)
        .values("evaluation_id", "agent", "configuration_key", "configuration_label")
        .annotate(**_COUNTS)
        .order_by("evaluation_id", "agent", "configuration_key")
    )
    totals = {k: 0 for k in _COUNTS}
    for row in rows:
        counts = {k: row[k] for k in _COUNTS}
        for k in _COUNTS:
            totals[k] += counts[k]
        per_config[row["evaluation_id"]].append(
            {
                "agent": row["agent"],
                "configuration": row["configuration_key"],
                "label": row["configuration_label"],
                **_with_done(counts),
            }
        )
    counts_by_eval = evaluation_counts([e.pk for e in evaluations])
    return {
        **_with_done(totals),
        "evaluations": [
            {
                "id": e.pk,
                "catalogId": e.catalog_id,
                "status": e.status,
                **counts_by_eval[e.pk],
                "configurations": per_config[e.pk],
            }
            for e in evaluations
        ],
    }


def evaluations(*, workspace: Workspace) -> QuerySet[Evaluation]:
    return Evaluation.objects.filter(workspace=workspace).select_related("comparison").order_by("-created_at", "-pk")


def evaluation_with_trials(*, workspace: Workspace, evaluation_id: int) -> Evaluation | None:
    trials = Trial.objects.select_related("task", "task_version").prefetch_related(
        Prefetch("artifacts", queryset=TrialArtifact.objects.only("pk", "trial_id", "name", "size", "truncated"))
    )
    return (
        Evaluation.objects.filter(workspace=workspace, pk=evaluation_id)
        .select_related("comparison")
        .prefetch_related(Prefetch("trials", queryset=trials))
        .first()
    )


def artifact(*, evaluation: Evaluation, name: str) -> TrialArtifact | None:
    """`name` is `<trial id>/<path in the trial directory>`, as the evaluation's trials list them."""
    trial_part, _, path = name.partition("/")
    try:
        trial_uuid = uuid.UUID(trial_part)
    except ValueError:
        return None
    return TrialArtifact.objects.filter(trial__evaluation=evaluation, trial__uuid=trial_uuid, name=path).first()
