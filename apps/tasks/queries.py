"""Task reads shared by the API and pages."""

from __future__ import annotations

from django.db.models import Prefetch, QuerySet

from apps.accounts.models import Workspace
from apps.tasks.models import GateRun, Task


def tasks_of(workspace: Workspace) -> QuerySet[Task]:
    return Task.objects.filter(workspace=workspace).select_related("version", "repository", "batch")


def task_list(
    *,
    workspace: Workspace,
    state: str | None = None,
    tier: str | None = None,
    repository_id: int | None = None,
    batch_id: int | None = None,
) -> QuerySet[Task]:
    rows = tasks_of(workspace)
    if state:
        rows = rows.filter(state=state)
    if tier:
        rows = rows.filter(tier=tier)
    if repository_id is not None:
        rows = rows.filter(repository_id=repository_id)
    if batch_id is not None:
        rows = rows.filter(batch_id=batch_id)
    return rows


def task_detail(*, workspace: Workspace, task_id: int) -> Task | None:
    runs = GateRun.objects.order_by("started_at", "pk")
    return tasks_of(workspace).prefetch_related(Prefetch("gate_runs", queryset=runs)).filter(pk=task_id).first()
